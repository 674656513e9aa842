"""Start-up time of the console scripts that need no model, beside ``python -c pass``. A user writes
``--user-dir "$(fairseq-syntax-user-dir)"`` in every command, so it and every ``--help`` and argument error should
answer at once, without importing torch or fairseq.

    .venv/bin/python benchmarks/bench_startup.py [--repeats 5]

Prints the median wall time of each command over the repeats, its ratio to ``python -c pass`` in the same run,
and whether torch was imported (read from ``-X importtime``). Exits 1 if any command takes 1 s or more.
"""
from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def console_scripts() -> list[str]:
    """The package's console scripts, read from setup.py (the same list the install writes)."""
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    return [spec.split("=")[0].strip() for spec in ast.literal_eval(value)]
    raise SystemExit("setup.py: no console_scripts list")


def commands() -> list[tuple[str, list[str]]]:
    out = [("python -c pass", [sys.executable, "-c", "pass"])]
    for name in console_scripts():
        exe = os.path.join(BIN, name)
        if name == "fairseq-syntax-user-dir":
            out.append((name, [exe]))
            continue
        out.append((f"{name} --help", [exe, "--help"]))
        out.append((f"{name} --no-such-option", [exe, "--no-such-option"]))
    return out


def run_once(cmd: list[str]) -> tuple[float, bool]:
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/")
    took = time.perf_counter() - start
    torch = any(line.rsplit("|", 1)[1].strip() == "torch" for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line)
    return took, torch


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    rows = []
    for label, cmd in commands():
        run_once(cmd)  # warm the file cache
        times, torch = [], False
        for _ in range(args.repeats):
            t, imported = run_once(cmd)
            times.append(t)
            torch |= imported
        rows.append((label, statistics.median(times), torch))
    base = rows[0][1]
    print(f"| command | median s ({args.repeats} runs) | × python -c pass | imports torch |")
    print("|---|---|---|---|")
    for label, t, torch in rows:
        print(f"| `{label}` | {t:.3f} | {t / base:.1f} | {'yes' if torch else 'no'} |")
    slow = [label for label, t, _ in rows[1:] if t >= 1.0]
    if slow:
        print(f"1 s or more: {', '.join(slow)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
