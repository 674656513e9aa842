"""fairseq-syntax-ner-eval: a token-labeling checkpoint on a prepared split, scored as conlleval scores it: entity
precision, recall and F1 overall and per type, and one JSON line per sentence for paired tests between systems.

    fairseq-syntax-ner-eval work/conll2003/bin --path checkpoints/ner_sgnet/checkpoint_best.pt --split test \\
        --json test.eval.json --predictions test.pred.jsonl

The gold tags are the split's binarized labels (what the model was trained against); the scheme they are written
in (IOB2, as the copy the tests read is, or IOB1, as the original release) is read off them and printed. Either
is scored the conlleval way: an I- that does not continue an entity of its type opens one. Each line of
``--predictions``: the sentence's number in the split, its words (from ``../raw/{split}.words`` where the
preparation left them), the gold tags and the predicted ones.
"""
from __future__ import annotations

import os
import sys

from ..metrics import entity_scores, tag_scheme
from .eval_common import check_eval_inputs, eval_arguments, eval_batches, load_for_eval, write_eval_outputs

TOOL = "fairseq-syntax-ner-eval"


def predict(checkpoint: str, data: str, split: str, batch_size: int = 32, cpu: bool = False,
            fp16: bool = False) -> tuple[list, list]:
    """(gold, predicted) tag rows of every sentence of ``split``, in the split's order."""
    import torch

    from ..data.token_labels import IGNORE

    model, _, task = load_for_eval(checkpoint, data, "syntax_token_labeling", TOOL, cpu, fp16)
    names = task.label_names()
    dataset = task.load_dataset(split)
    head = task.cfg.classification_head_name
    gold, pred = [None] * len(dataset), [None] * len(dataset)
    with torch.no_grad():
        for sample in eval_batches(model, task, dataset, batch_size):
            logits, _ = model(**sample["net_input"], features_only=True, classification_head_name=head)
            keep = sample["target"].ne(IGNORE)
            best = logits.argmax(-1)
            for row, i in enumerate(sample["id"].tolist()):
                k = keep[row]
                gold[i] = [names[t] for t in sample["target"][row][k].tolist()]
                pred[i] = [names[t] for t in best[row][k].tolist()]
    missing = sum(g is None for g in gold)
    if missing:
        raise RuntimeError(f"{split}: {missing} sentences were not scored")
    return gold, pred


def read_words(data: str, split: str, gold: list) -> list | None:
    path = os.path.join(os.path.dirname(os.path.abspath(data)), "raw", f"{split}.words")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        words = [line.split() for line in fh]
    if len(words) != len(gold) or any(len(w) != len(g) for w, g in zip(words, gold)):
        raise ValueError(f"{path}: does not pair up word for word with the binarized labels of {split!r} "
                         f"({len(words)} sentences against {len(gold)}): prepared from another corpus?")
    return words


def main(argv=None) -> int:
    p = eval_arguments(TOOL, __doc__, "the bin/ folder of data-prep/conll2003.sh", "test",
                       "test (the paper's number), valid, train", 32)
    a = p.parse_args(argv)
    try:
        check_eval_inputs(a, "data-prep/conll2003.sh", "label/{}.bin")
        gold, pred = predict(a.path, a.data, a.split, a.batch_size, a.cpu, a.fp16)
        words = read_words(a.data, a.split, gold)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"{TOOL}: error: {e}", file=sys.stderr)
        return 1
    scores = entity_scores(gold, pred)
    scheme = tag_scheme(gold)
    result = {"split": a.split, "checkpoint": a.path, "scheme": scheme, "sentences": len(gold), **scores}
    print(f"{a.split}\tscheme={scheme} (scored as conlleval)\tsentences={len(gold)}\tentities={scores['gold']}\t"
          f"precision={scores['precision']:.2f}\trecall={scores['recall']:.2f}\tf1={scores['f1']:.2f}\t"
          f"token_accuracy={scores['token_accuracy']:.2f}")
    for kind, s in scores["types"].items():
        print(f"{a.split}\t{kind}\tprecision={s['precision']:.2f}\trecall={s['recall']:.2f}\tf1={s['f1']:.2f}\t"
              f"gold={s['gold']}\tpredicted={s['predicted']}")
    write_eval_outputs(a, result, ({"sentence": i, **({"words": words[i]} if words else {}), "gold": g, "pred": q}
                                   for i, (g, q) in enumerate(zip(gold, pred))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
