#!/usr/bin/env python
"""Mean and spread of the dev scores written by scripts/reproduce_glue.sh (results/glue/*.score)."""
import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRIC = {"CoLA": "mcc", "SST-2": "accuracy"}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default=str(ROOT / "results/glue"))
    args = p.parse_args()
    runs = defaultdict(list)
    for f in sorted(Path(args.results).glob("*.score")):
        kv = dict(x.split("=", 1) for x in f.read_text().split())
        metric = METRIC.get(kv["task"], "accuracy")
        runs[(kv["task"], kv["arch"])].append((int(kv["seed"]), float(kv[metric])))
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
    (Path(args.results) / "summary.json").write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
