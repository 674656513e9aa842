#!/usr/bin/env python
"""Training throughput from fairseq training logs, and the ratio of a candidate's to a baseline's.

A run's words/s in fairseq's epoch summary includes each epoch's start (a new DataLoader worker, the epoch's
batches); on Multi30k at 32k tokens an epoch is about 15 updates, so that share is far larger than on WMT and
depends on the task's loader. Both figures are given: ``steady``, the median words/s of the logged intervals
after ``--skip`` updates and after the first (train with ``--log-interval 1`` for one per update; the intervals
that hold an epoch's start are the outliers the median leaves out), and ``overall``, all words after ``--skip``
over all the time they took (each interval's time is its words over its words/s: fairseq's ``wps`` meter
restarts at every log line, so the intervals add up to the whole training time, epoch starts included). Runs are
paired in the order given (round 1: the first baseline and the first candidate, ...); the ratio is the median
over rounds.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, for examples.studies
from fairseq_syntax.pipeline.atomic import atomic_path
from examples.studies.training_log import is_start, open_log

INNER = re.compile(r"\| train_inner \| .*?\bwps=([0-9.]+), .*?\bwpb=([0-9.]+), .*?\bnum_updates=(\d+)")


def intervals(log: str) -> list[tuple[int, int, float, float]]:
    """(first update, last update, words, words/s) of each logged training interval, in order."""
    out, prev, started = [], 0, False
    with open_log(log) as fh:
        for lineno, line in enumerate(fh, 1):
            if is_start(line):
                if started:
                    raise ValueError(f"{log}: line {lineno}: a second start (a resumed run): its first interval's "
                                     "updates are not known; time one uninterrupted process")
                started = True
            m = INNER.search(line)
            if not m:
                continue
            wps, wpb, upd = float(m.group(1)), float(m.group(2)), int(m.group(3))
            if upd <= prev:
                raise ValueError(f"{log}: line {lineno}: update {upd} after {prev}: a resumed or concatenated log")
            if wps <= 0 and out:  # the first interval's words/s is 0 or meaningless (below)
                raise ValueError(f"{log}: line {lineno}: words/s {wps} is not positive")
            out.append((prev + 1, upd, wpb * (upd - prev), wps))
            prev = upd
    return out


def speed(log: str, skip: int) -> dict:
    """Steady (median) and overall words/s of LOG's intervals that start after update ``skip``, never the first:
    fairseq's meter starts within the first update, so the first interval's time leaves that update out."""
    rows = [r for r in intervals(log)[1:] if r[0] > skip]
    if not rows:
        raise ValueError(f"{log}: no train_inner line after update {skip} (train longer, or with --log-interval 1)")
    words = sum(r[2] for r in rows)
    return {"log": log, "from_update": rows[0][0], "to_update": rows[-1][1],
            "updates": rows[-1][1] - rows[0][0] + 1, "intervals": len(rows),
            "steady_wps": round(statistics.median(r[3] for r in rows), 1),
            "overall_wps": round(words / sum(r[2] / r[3] for r in rows), 1)}


def compare(baseline: list[str], candidate: list[str], skip: int) -> dict:
    if len(baseline) != len(candidate):
        raise ValueError(f"{len(baseline)} baseline runs against {len(candidate)} candidate runs: pair them")
    rounds = []
    for b, c in zip(baseline, candidate):
        sb, sc = speed(b, skip), speed(c, skip)
        rounds.append({"baseline": sb, "candidate": sc,
                       "steady_ratio": round(sc["steady_wps"] / sb["steady_wps"], 3),
                       "overall_ratio": round(sc["overall_wps"] / sb["overall_wps"], 3)})
    return {"skip_updates": skip, "rounds": rounds,
            "steady_ratio": round(statistics.median(r["steady_ratio"] for r in rounds), 3),
            "overall_ratio": round(statistics.median(r["overall_ratio"] for r in rounds), 3)}


def line(out: dict) -> str:
    first = out["rounds"][0]["candidate"]
    return (f"{out['steady_ratio']:.3f} steady (median words/s of updates {first['from_update']}-"
            f"{first['to_update']}), "
            f"{out['overall_ratio']:.3f} overall (epoch starts included); median of {len(out['rounds'])} rounds\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", nargs="+", required=True, help="training logs of the baseline, one per round")
    p.add_argument("--candidate", nargs="+", required=True, help="training logs of the candidate, same order")
    p.add_argument("--skip", type=int, default=20, help="updates left out at the start (CUDA start-up, warm-up)")
    p.add_argument("--json", default=None, help="also write the comparison here")
    p.add_argument("--line", action="store_true", help="print the ratios in one line instead of the JSON")
    a = p.parse_args(argv)
    try:
        out = compare(a.baseline, a.candidate, a.skip)
    except (OSError, ValueError) as e:
        p.exit(1, f"train_speed.py: error: {e}\n")
    text = json.dumps(out, indent=1) + "\n"
    if a.json:
        with atomic_path(a.json) as tmp:
            Path(tmp).write_text(text, encoding="utf-8")
    print(line(out) if a.line else text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
