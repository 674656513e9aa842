#!/usr/bin/env python
"""Table of the LAMBADA reader runs (results/lambada/*.eval.json) and paired tests between them.

For every pair of runs with per-instance predictions (``*.pred.jsonl.gz``, from
``fairseq-syntax-lambada-eval --predictions``) on the same split it gives the exact McNemar test: the
instances one run gets right and the other wrong, against a fair coin. With ``--instances`` (the
prepared ``test.inst.jsonl``) and ``--stopwords`` it also scores a model-free reference, the most
frequent non-stop word of the context (ties: the latest). Writes ``summary.json``.
"""
from __future__ import annotations

import argparse
import gzip
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


def most_frequent_word(instances: str, stopwords: str) -> dict:
    """Accuracy of answering with the context's most frequent non-stop word (ties: the latest one)."""
    from collections import Counter

    from fairseq_syntax.reader.annotate import read_instances
    from fairseq_syntax.reader.instances import read_stopwords

    stop = read_stopwords(stopwords)
    insts = [inst for _, inst in read_instances(instances)]
    right = 0
    for inst in insts:
        words = [w for w in inst.context if w not in stop and any(ch.isalnum() for ch in w)]
        counts = Counter(words)
        last = {w: i for i, w in enumerate(words)}
        guess = max(counts, key=lambda w: (counts[w], last[w])) if counts else None
        right += guess == inst.answer
    return {"n": len(insts), "accuracy": round(100.0 * right / max(len(insts), 1), 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default="results/lambada")
    p.add_argument("--instances", default=None, help="test.inst.jsonl of data-prep/lambada.sh, for the reference")
    p.add_argument("--stopwords", default=None, help="the stop-word list the data were filtered with")
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
        f = res / f"{name}.pred.jsonl.gz"
        if f.exists():
            with gzip.open(f, "rt", encoding="utf-8") as fh:
                preds[name] = [json.loads(line)["correct"] for line in fh]
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
    summary = {"runs": runs, "paired_tests": tests}
    if a.instances and a.stopwords:
        summary["most_frequent_context_word"] = most_frequent_word(a.instances, a.stopwords)
        print(f"most frequent non-stop context word: {summary['most_frequent_context_word']['accuracy']:.2f} "
              f"(n={summary['most_frequent_context_word']['n']})")
    (res / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
