#!/usr/bin/env python
"""Mean and spread of the dev scores written by examples/encoders/reproduce_glue.sh (results/encoders/*.score).
A run enters only with its record, which agrees with the other runs of its task (examples/studies/run_record.py)."""
import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from fairseq_syntax.pipeline.atomic import atomic_path  # noqa: E402
from examples.studies.run_record import check_records  # noqa: E402

METRIC = {"CoLA": "mcc", "SST-2": "accuracy"}
FIELDS = ("task", "arch", "seed", "accuracy", "mcc")


def read_score(f: Path) -> dict:
    """One run's line, ``task=… arch=… seed=… accuracy=… mcc=…``; anything else is an error naming the file."""
    lines = f.read_text(encoding="utf-8").splitlines()
    if len(lines) != 1:
        raise SystemExit(f"error: {f}: expected one line, found {len(lines)}")
    try:
        kv = dict(x.split("=", 1) for x in lines[0].split())
    except ValueError:
        raise SystemExit(f"error: {f}: line 1: not KEY=VALUE pairs: {lines[0][:80]!r}") from None
    missing = [k for k in FIELDS if k not in kv]
    if missing:
        raise SystemExit(f"error: {f}: line 1: no {', '.join(missing)}")
    try:
        return {**kv, "seed": int(kv["seed"]), "accuracy": float(kv["accuracy"]), "mcc": float(kv["mcc"])}
    except ValueError as e:
        raise SystemExit(f"error: {f}: line 1: {e}") from None


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default=str(ROOT / "results/encoders"))
    args = p.parse_args()
    runs = defaultdict(list)
    files = sorted(Path(args.results).glob("*.score"))
    if not files:
        raise SystemExit(f"error: no *.score in {args.results}: run examples/encoders/reproduce_glue.sh first")
    scores = {f.name[:-len(".score")]: read_score(f) for f in files}
    for name, kv in scores.items():
        if name != f"{kv['task']}_{kv['arch']}_seed{kv['seed']}":
            raise SystemExit(f"error: {args.results}/{name}.score: holds {kv['task']} {kv['arch']} seed {kv['seed']}, "
                             "not the run its name says")
    refused, notes = check_records({n: Path(args.results) / f"{n}.record.json" for n in scores}, "glue",
                                   lambda n: scores[n]["task"])
    for name, why in refused.items():
        print(f"summarize_glue.py: refused {name}: {why}", file=sys.stderr)
    for name, kv in scores.items():
        if name not in refused:
            runs[(kv["task"], kv["arch"])].append((kv["seed"], kv[METRIC.get(kv["task"], "accuracy")]))
    table = {}
    print("| task | model | metric | seeds | mean | std | per seed |")
    print("|---|---|---|---|---|---|---|")
    for (task, arch), vals in sorted(runs.items()):
        vals.sort()
        scores = [v for _, v in vals]
        mean = statistics.mean(scores)
        std = statistics.stdev(scores) if len(scores) > 1 else 0.0
        table[f"{task}/{arch}"] = {"metric": METRIC.get(task, "accuracy"), "seeds": [s for s, _ in vals],
                                   "scores": scores, "mean": mean, "std": std}
        print(f"| {task} | {arch} | {METRIC.get(task, 'accuracy')} | {len(scores)} | {mean:.2f} | {std:.2f} | "
              + ", ".join(f"{v:.2f}" for v in scores) + " |")
    for note in notes:
        print(f"Records: {note}.")
    if refused:
        print("Not in the table: " + "; ".join(f"{n}: {why}" for n, why in sorted(refused.items())))
    extra = {**({"records": notes} if notes else {}), **({"refused": refused} if refused else {})}
    with atomic_path(str(Path(args.results) / "summary.json")) as tmp:
        Path(tmp).write_text(json.dumps({**table, **extra}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
