"""How a run was trained, read from its fairseq training log: precision and device of every (re)start.

The summaries put this beside each run, so a table never averages fp16 GPU runs with fp32 CPU runs unawares,
and a run resumed in another precision is an error rather than a number.
"""
from __future__ import annotations

import datetime
import os
import re

from fairseq_syntax.quick import BANNER as QUICK_BANNER
from examples.studies.result_files import text_stream

GPU_RE = re.compile(r"capabilities = .*; name = (.+?)\s*$")  # fairseq's CUDA environment, rank 0 first
WORLD_RE = re.compile(r"training on (\d+) devices")


def is_start(line: str) -> bool:
    """fairseq's config line, logged once at every (re)start of training."""
    return "'common': {" in line


def open_log(path: str):
    """fairseq's log as written, or gzipped after the run (results/ keeps them compressed; a damaged archive is a
    ValueError naming it, result_files.read_text)."""
    return text_stream(path) if path.endswith(".gz") else open(path, encoding="utf-8")


def precision(common: dict[str, str]) -> str:
    """fairseq's ``common`` flags as one word: bf16, fp16, amp or fp32."""
    on = {k for k, v in common.items() if v == "True"}
    if on & {"bf16", "memory_efficient_bf16"}:
        return "bf16"
    if on & {"fp16", "memory_efficient_fp16"}:
        return "fp16"
    return "amp" if "amp" in on else "fp32"


def training_setup(log: str) -> dict | None:
    """``{"precision", "device", "processes", "starts"}`` from every start logged in ``log`` (None when there is no
    log, or it has no fairseq config, as hand-written test logs), and ``"quick"``: the line of a start made under
    FAIRSEQ_SYNTAX_QUICK (2 updates of 2 examples; fairseq_syntax/quick.py), where there is one. Raises ValueError
    naming the log and line when a resume changed the precision."""
    starts: list[dict] = []
    quick = None
    if not os.path.exists(log):
        return None
    with open_log(log) as fh:
        for n, line in enumerate(fh, 1):
            if QUICK_BANNER in line:
                quick = quick or n
            if is_start(line):
                common = dict(re.findall(r"'(\w+)': (True|False)", line.split("'common': {", 1)[1].split("}", 1)[0]))
                starts.append({"line": n, "precision": precision(common), "device": "CPU", "processes": 1})
            elif starts and (m := GPU_RE.search(line)) and starts[-1]["device"] == "CPU":
                starts[-1]["device"] = m.group(1)
            elif starts and (m := WORLD_RE.search(line)):
                starts[-1]["processes"] = int(m.group(1))
    if not starts:
        return None
    first = starts[0]
    for s in starts[1:]:
        if s["precision"] != first["precision"]:
            raise ValueError(f"{log}: line {s['line']}: the run was resumed in {s['precision']} after training in "
                             f"{first['precision']} (line {first['line']}); train it again from the start")
    devices = list(dict.fromkeys(s["device"] for s in starts))
    return {"precision": first["precision"], "device": ", then ".join(devices),
            "processes": max(s["processes"] for s in starts), "starts": len(starts),
            **({"quick": quick} if quick else {})}


def one_setup(setups: dict[str, dict | None], where: str) -> str | None:
    """The precision shared by the runs of one table, in words (``fp32 on CPU``); ValueError when they differ, or
    when a run was trained in quick mode (a smoke test that ends "done training" after 2 updates)."""
    known = {name: s for name, s in setups.items() if s}
    quick = sorted(f"{name} (its log's line {s['quick']})" for name, s in known.items() if s.get("quick"))
    if quick:
        raise ValueError(f"{where}: {', '.join(quick)}: trained with FAIRSEQ_SYNTAX_QUICK set (2 updates of 2 "
                         "examples), not a run of this table; remove its files (or unset the variable and train it "
                         "again)")
    by_precision: dict[str, list[str]] = {}
    for name, s in known.items():
        by_precision.setdefault(s["precision"], []).append(name)
    if len(by_precision) > 1:
        listed = "; ".join(f"{p}: {', '.join(sorted(names))}" for p, names in sorted(by_precision.items()))
        raise ValueError(f"{where}: runs in different precisions ({listed}); summarize each precision in its own "
                         "results folder (the reproduce scripts' --out)")
    if not known:
        return None
    devices = sorted({s["device"] for s in known.values()})
    return f"{next(iter(by_precision))} on {' and '.join(devices)}"


STAMP_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \| INFO \| train_inner \|.*\bnum_updates=(\d+)")


def last_update(log: str) -> int:
    """The last update a fairseq-train log names (train_inner's num_updates=N, a validation's num_updates N); 0 for
    none yet."""
    with (text_stream(log) if log.endswith(".gz") else open(log, encoding="utf-8", errors="replace")) as fh:
        found = re.findall(r"num_updates[ =]([0-9]+)", fh.read())
    return int(found[-1]) if found else 0


def pace(log: str, span: int = 500) -> tuple[float, int] | None:
    """(seconds an update, over how many updates) from the timestamps of the last ``span`` or so updates that the
    latest fairseq-train process logged, validations and checkpoints between them included: what --status needs to
    say how long a run has left. None before a process has logged two training lines."""
    points: list[tuple[datetime.datetime, int]] = []
    with open_log(log) as fh:
        for line in fh:
            if is_start(line):
                points = []  # a resume: the time between processes is not training
            elif m := STAMP_RE.match(line):
                points.append((datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"), int(m.group(2))))
    if len(points) < 2:
        return None
    last_t, last_u = points[-1]
    first_t, first_u = next(((t, u) for t, u in points[:-1] if last_u - u <= span), points[-2])
    if last_u <= first_u:
        return None
    return (last_t - first_t).total_seconds() / (last_u - first_u), last_u - first_u
