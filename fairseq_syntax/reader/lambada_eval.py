"""fairseq-syntax-lambada-eval: pointer-sum accuracy of a lambada_reader checkpoint on one split.

Prints accuracy over all instances and over those whose answer is in the context, then by target
type (pronoun / proper noun / common noun; PERSON / not a named entity), with the averaged (EMA)
weights; ``--json`` writes it, ``--predictions`` one line per instance (for paired tests between models).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..arg_types import split_name
from ..pipeline.atomic import atomic_path
from ..cli.guards import check_outputs, files_under


def evaluate(checkpoint: str, data: str, split: str, batch_size: int = 64, predictions: str | None = None) -> dict:
    import torch  # here, not at the top: --help and argument errors answer at once

    import fairseq_syntax

    from ..checkpoint_compat import load_model_for
    from .dataset import prefix
    from .losses import pointer_log_probs, pointer_sum_predict

    fairseq_syntax.register()
    models, cfg, task = load_model_for(checkpoint, data, ("lambada_reader",), "fairseq-syntax-lambada-eval")
    model = models[0].eval()
    ds = task.load_dataset(split)
    with open(prefix(data, split, "types.jsonl"), encoding="utf-8") as fh:
        types = [json.loads(line) for line in fh]
    if len(types) != len(ds):
        raise ValueError(f"{prefix(data, split, 'types.jsonl')}: {len(types)} lines for {len(ds)} instances")
    correct = torch.zeros(len(ds), dtype=torch.bool)
    answerable = torch.zeros(len(ds), dtype=torch.bool)
    predicted = [""] * len(ds)
    order = list(range(len(ds)))
    with torch.no_grad(), model.averaged_weights():
        for k in range(0, len(order), batch_size):
            batch = ds.collater([ds[i] for i in order[k:k + batch_size]])
            logits, extra = model(**batch["net_input"])
            logp = pointer_log_probs(logits, extra["context_mask"])
            pred = pointer_sum_predict(logp, extra["context_mask"], batch["ctypes"])
            has = batch["answer"].ge(0)
            correct[batch["id"]] = pred.eq(batch["answer"]) & has
            answerable[batch["id"]] = has
            first = batch["ctypes"].eq(pred.unsqueeze(1)).float().argmax(-1)  # a position of the predicted word
            words = batch["net_input"]["context"].gather(1, first.unsqueeze(1)).squeeze(1)
            for i, w in zip(batch["id"].tolist(), words.tolist()):
                predicted[i] = task.dictionary[w]
    if predictions:
        with atomic_path(predictions) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            for i in range(len(ds)):
                fh.write(json.dumps({"id": i, "correct": bool(correct[i]), "answer_in_context": bool(answerable[i]),
                                     "predicted": predicted[i]}) + "\n")

    def acc(sel):
        n = int(sel.sum())
        return {"n": n, "accuracy": round(100.0 * int((correct & sel).sum()) / max(n, 1), 2)}

    everything = torch.ones(len(ds), dtype=torch.bool)
    by = lambda key, val: torch.tensor([t[key] == val for t in types])  # noqa: E731
    return {"split": split, "checkpoint": checkpoint, "all": acc(everything), "answer_in_context": acc(answerable),
            "pronoun": acc(by("pos", "pronoun")), "proper_noun": acc(by("pos", "proper_noun")),
            "common_noun": acc(by("pos", "common_noun")),
            "PERSON": acc(by("entity", "PERSON")), "not_NE": acc(by("entity", "none"))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-lambada-eval", description=__doc__)
    p.add_argument("data", help="the bin/ directory of data-prep/lambada.sh")
    p.add_argument("--path", required=True, help="checkpoint")
    p.add_argument("--split", default="test", type=split_name)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--json", default=None, help="also write the numbers here")
    p.add_argument("--predictions", default=None, help="write one JSON line per instance (id, correct, "
                                                       "answer_in_context, predicted word) here")
    a = p.parse_args(argv)
    if not os.path.exists(a.path):
        print(f"fairseq-syntax-lambada-eval: error: {a.path}: no such checkpoint", file=sys.stderr)
        return 1
    try:
        check_outputs([a.json, a.predictions], [a.path, *files_under(a.data)])
        r = evaluate(a.path, a.data, a.split, a.batch_size, a.predictions)
    except (ValueError, FileNotFoundError) as e:
        print(f"fairseq-syntax-lambada-eval: error: {e}", file=sys.stderr)
        return 1
    for k in ("all", "answer_in_context", "pronoun", "proper_noun", "common_noun", "PERSON", "not_NE"):
        print(f"{a.split}\t{k}\tn={r[k]['n']}\taccuracy={r[k]['accuracy']:.2f}")
    if a.json:
        with atomic_path(a.json) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            json.dump(r, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
