#!/usr/bin/env python
"""Table of the LAMBADA reader runs (results/lambada/*.eval.json) and paired tests between them.

For every pair of runs with per-instance predictions (``*.pred.jsonl``, from
``fairseq-syntax-lambada-eval --predictions``) on the same split it gives the exact McNemar test: the
instances one run gets right and the other wrong, against a fair coin. Writes ``summary.json``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

ROWS = ("all", "answer_in_context", "pronoun", "proper_noun", "common_noun", "PERSON", "not_NE")


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs."""
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default="results/lambada")
    a = p.parse_args(argv)
    res = Path(a.results)
    runs = {f.name[: -len(".eval.json")]: json.loads(f.read_text()) for f in sorted(res.glob("*.eval.json"))}
    if not runs:
        raise SystemExit(f"no *.eval.json in {res}: run scripts/reproduce_lambada.sh first")
    print("| run | " + " | ".join(ROWS) + " |")
    print("|---" * (len(ROWS) + 1) + "|")
    for name, r in runs.items():
        print(f"| {name} | " + " | ".join(f"{r[k]['accuracy']:.2f} (n={r[k]['n']})" for k in ROWS) + " |")
    preds = {}
    for name in runs:
        f = res / f"{name}.pred.jsonl"
        if f.exists():
            preds[name] = [json.loads(line)["correct"] for line in f.open()]
    tests = []
    for x, y in itertools.combinations(sorted(preds), 2):
        if len(preds[x]) != len(preds[y]):
            print(f"{x} and {y}: different numbers of instances, no paired test")
            continue
        b = sum(u and not v for u, v in zip(preds[x], preds[y]))
        c = sum(v and not u for u, v in zip(preds[x], preds[y]))
        t = {"a": x, "b": y, "only_a_right": b, "only_b_right": c, "mcnemar_p": round(mcnemar_exact(b, c), 4)}
        tests.append(t)
        print(f"{x} vs {y}: only {x} right {b}, only {y} right {c}, exact McNemar p = {t['mcnemar_p']}")
    (res / "summary.json").write_text(json.dumps({"runs": runs, "paired_tests": tests}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
