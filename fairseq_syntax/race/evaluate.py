"""fairseq-syntax-race-eval: a fine-tuned ranking model on prepared RACE splits, accuracy on RACE-M, RACE-H
and RACE (question-weighted), and one JSON line per question for paired tests between systems.

    fairseq-syntax-race-eval work/race/bin --path checkpoints/race_sgnet/checkpoint_best.pt --split valid \\
        --json valid.eval.json --predictions valid.pred.jsonl

Each line of ``--predictions``: the passage id, level, question number, label, predicted choice, whether it
is right, and the question's length in words (for accuracy by question length). ``--split valid`` (all of
dev) gives all three numbers in one pass; ``valid-middle`` / ``valid-high`` score one level.
"""
from __future__ import annotations

import json
import os
import sys

from ..cli.eval_common import check_eval_inputs, eval_arguments, eval_batches, load_for_eval, write_eval_outputs


def binomial_p_above_chance(correct: int, n: int, chance: float = 0.25) -> float:
    """One-sided exact binomial p of at least ``correct`` right out of ``n`` by guessing."""
    from scipy.stats import binomtest

    return float(binomtest(correct, n, chance, alternative="greater").pvalue) if n else 1.0


def accuracy(rows) -> dict:
    n = len(rows)
    c = sum(r["correct"] for r in rows)
    return {"n": n, "correct": c, "accuracy": round(100.0 * c / n, 2) if n else None,
            "p_above_chance": binomial_p_above_chance(c, n)}


def summarize(rows) -> dict:
    """RACE-M, RACE-H and RACE (all questions of both levels, so weighted by question)."""
    return {"RACE-M": accuracy([r for r in rows if r["level"] == "middle"]),
            "RACE-H": accuracy([r for r in rows if r["level"] == "high"]),
            "RACE": accuracy(rows)}


def evaluate(checkpoint: str, data: str, split: str, batch_size: int = 16, cpu: bool = False,
             fp16: bool = False) -> list[dict]:
    import torch

    model, cfg, task = load_for_eval(checkpoint, data, "syntax_sentence_ranking", "fairseq-syntax-race-eval", cpu, fp16)
    meta_path = os.path.join(data, "label", f"{split}.meta.jsonl")
    if not os.path.exists(meta_path):
        raise FileNotFoundError(f"{meta_path}: no per-question record (prepare with data-prep/race.sh)")
    with open(meta_path, encoding="utf-8") as fh:
        meta = [json.loads(line) for line in fh]
    if not os.path.exists(os.path.join(data, "label", f"{split}.label")):
        raise FileNotFoundError(f"{os.path.join(data, 'label', split)}.label: no labels to score against")
    dataset = task.load_dataset(split)
    head = getattr(cfg.model, "ranking_head_name", "sentence_classification_head")
    out = [None] * len(meta)
    with torch.no_grad():
        for sample in eval_batches(model, task, dataset, batch_size):
            scores = [model(**sample[f"net_input{k}"], classification_head_name=head)[0]
                      for k in range(1, task.args.num_classes + 1)]
            pred = torch.cat(scores, dim=1).float().argmax(dim=1).tolist()
            for i, p, t in zip(sample["id"].tolist(), pred, sample["target"].view(-1).tolist()):
                m = meta[i]
                out[i] = {"id": m["id"], "level": m["level"], "question": m["question"], "label": t, "predicted": p,
                          "correct": int(p == t), "question_words": m["question_words"]}
    if any(r is None for r in out):
        raise RuntimeError(f"{split}: {sum(r is None for r in out)} questions were not scored")
    return out


def main(argv=None) -> int:
    p = eval_arguments("fairseq-syntax-race-eval", __doc__, "the bin/ folder of data-prep/race.sh", "valid",
                       "valid (RACE dev), valid-middle, valid-high, test, test1", 16)
    a = p.parse_args(argv)
    try:
        check_eval_inputs(a, "data-prep/race.sh", "label/{}.label")
        rows = evaluate(a.path, a.data, a.split, a.batch_size, a.cpu, a.fp16)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"fairseq-syntax-race-eval: error: {e}", file=sys.stderr)
        return 1
    result = {"split": a.split, "checkpoint": a.path, **summarize(rows)}
    for name in ("RACE-M", "RACE-H", "RACE"):
        r = result[name]
        if r["n"]:
            print(f"{a.split}\t{name}\tn={r['n']}\taccuracy={r['accuracy']:.2f}\t"
                  f"p_above_chance={r['p_above_chance']:.2g}")
    write_eval_outputs(a, result, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
