"""fairseq-syntax-sentence-eval: a sentence(-pair) classification or regression checkpoint (GLUE) on a prepared
split: accuracy, Matthews correlation and the positive class's F1 (MRPC) for classes; Pearson and Spearman for a
regression target (STS-B, trained with --regression-target --num-classes 1); and one JSON line per example for
paired tests between systems.

    fairseq-syntax-sentence-eval work/glue/CoLA/bin --path checkpoints/cola_sgnet/checkpoint_best.pt --split valid \\
        --json valid.eval.json --predictions valid.pred.jsonl

Each line of ``--predictions``: the example's number in the split, its gold label and the predicted one (as
the label dictionary writes them) and whether it is right; for regression, the gold and predicted scores. The
numbers are those fairseq-validate logs with ``--report-mcc`` (``--report-pearson``), computed here from the same
predictions that are written.
"""
from __future__ import annotations

import os
import sys

from .eval_common import check_eval_inputs, eval_arguments, eval_batches, load_for_eval, write_eval_outputs

TOOL = "fairseq-syntax-sentence-eval"


def predict(checkpoint: str, data: str, split: str, batch_size: int = 64, cpu: bool = False,
            fp16: bool = False) -> tuple[list, list, list | None]:
    """(gold, predicted, label names) of every example of ``split``, in the split's order: class indices, or
    scores for a regression target (label names None)."""
    import torch

    model, cfg, task = load_for_eval(checkpoint, data, "syntax_sentence_prediction", TOOL, cpu, fp16)
    names = task.label_names()
    regression = names is None
    dataset = task.load_dataset(split)
    head = getattr(cfg.task, "classification_head_name", "sentence_classification_head")
    gold, pred = [None] * len(dataset), [None] * len(dataset)
    with torch.no_grad():
        for sample in eval_batches(model, task, dataset, batch_size):
            logits, _ = model(**sample["net_input"], features_only=True, classification_head_name=head)
            out = logits.view(-1).float().tolist() if regression else logits.argmax(-1).tolist()
            for i, g, q in zip(sample["id"].tolist(), sample["target"].view(-1).tolist(), out):
                gold[i], pred[i] = g, q
    missing = sum(g is None for g in gold)
    if missing:
        raise RuntimeError(f"{split}: {missing} sentences were not scored")
    return gold, pred, names


def main(argv=None) -> int:
    p = eval_arguments(TOOL, __doc__, "the bin/ folder of data-prep/glue.sh", "valid", "valid (GLUE dev), test, train",
                       64)
    a = p.parse_args(argv)
    try:
        # a regression target (STS-B) keeps its scores as text, label/{split}.label, as fairseq's GLUE recipe
        scores = os.path.isdir(f"{a.data}/label") and any(f.endswith(".label") for f in os.listdir(f"{a.data}/label"))
        check_eval_inputs(a, "data-prep/glue.sh", "label/{}.label" if scores else "label/{}.bin")
        gold, pred, names = predict(a.path, a.data, a.split, a.batch_size, a.cpu, a.fp16)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"{TOOL}: error: {e}", file=sys.stderr)
        return 1
    from ..metrics import matthews, pearson, positive_f1, spearman

    if names is None:
        result = {"split": a.split, "checkpoint": a.path, "sentences": len(gold), "pearson": pearson(gold, pred),
                  "spearman": spearman(gold, pred)}
        print(f"{a.split}\tsentences={len(gold)}\tpearson={result['pearson']:.2f}\tspearman={result['spearman']:.2f}")
        write_eval_outputs(a, result, ({"sentence": i, "gold": g, "pred": q}
                                       for i, (g, q) in enumerate(zip(gold, pred))))
        return 0
    right = sum(g == q for g, q in zip(gold, pred))
    result = {"split": a.split, "checkpoint": a.path, "sentences": len(gold), "correct": right,
              "accuracy": 100.0 * right / len(gold) if gold else 0.0, "mcc": matthews(gold, pred)}
    line = f"{a.split}\tsentences={len(gold)}\taccuracy={result['accuracy']:.2f}\tmcc={result['mcc']:.2f}"
    if sorted(names) == ["0", "1"]:  # GLUE's paraphrase tasks (MRPC, QQP) score the F1 of class 1
        result["f1"] = positive_f1(gold, pred, names.index("1"))
        line += f"\tf1={result['f1']:.2f}"
    print(line)
    write_eval_outputs(a, result, ({"sentence": i, "gold": names[g], "pred": names[q], "correct": int(g == q)}
                                   for i, (g, q) in enumerate(zip(gold, pred))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
