"""fairseq-syntax-sentence-eval: a sentence-classification checkpoint (GLUE: CoLA, SST-2) on a prepared split,
accuracy and Matthews correlation, and one JSON line per sentence for paired tests between systems.

    fairseq-syntax-sentence-eval work/glue/CoLA/bin --path checkpoints/cola_sgnet/checkpoint_best.pt --split valid \\
        --json valid.eval.json --predictions valid.pred.jsonl

Each line of ``--predictions``: the sentence's number in the split, its gold label and the predicted one (as
the label dictionary writes them) and whether it is right. The numbers are those fairseq-validate logs with
``--report-mcc``, computed here from the same predictions that are written.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

from ..atomic import atomic_path
from ..cli.guards import check_outputs, files_under

TOOL = "fairseq-syntax-sentence-eval"


def predict(checkpoint: str, data: str, split: str, batch_size: int = 64, cpu: bool = False,
            fp16: bool = False) -> tuple[list, list, list]:
    """(gold, predicted, label names): class indices of every sentence of ``split``, in the split's order."""
    import torch
    from fairseq import utils

    import fairseq_syntax

    from ..checkpoint_compat import load_model_for

    fairseq_syntax.register()
    models, cfg, task = load_model_for(checkpoint, data, ("syntax_sentence_prediction",), TOOL)
    model = models[0].eval()
    use_cuda = torch.cuda.is_available() and not cpu
    if fp16:
        model = model.half()
    if use_cuda:
        model = model.cuda()
    labels = task.label_dictionary
    names = labels.symbols[labels.nspecial:]
    dataset = task.load_dataset(split)
    warnings.filterwarnings("ignore", message=".*pin_memory.*", category=UserWarning)
    itr = task.get_batch_iterator(dataset, max_sentences=batch_size, max_positions=task.max_positions(),
                                  ignore_invalid_inputs=False).next_epoch_itr(shuffle=False)
    head = getattr(cfg.task, "classification_head_name", "sentence_classification_head")
    gold, pred = [None] * len(dataset), [None] * len(dataset)
    with torch.no_grad():
        for sample in itr:
            if use_cuda:
                sample = utils.move_to_cuda(sample)
            logits, _ = model(**sample["net_input"], features_only=True, classification_head_name=head)
            for i, g, q in zip(sample["id"].tolist(), sample["target"].view(-1).tolist(),
                               logits.argmax(-1).tolist()):
                gold[i], pred[i] = g, q
    missing = sum(g is None for g in gold)
    if missing:
        raise RuntimeError(f"{split}: {missing} sentences were not scored")
    return gold, pred, names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog=TOOL, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="the bin/ folder of data-prep/glue.sh")
    p.add_argument("--path", required=True, help="checkpoint")
    p.add_argument("--split", default="valid", help="valid (GLUE dev), test, train")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--json", default=None, help="write the scores here")
    p.add_argument("--predictions", default=None, help="write one JSON line per sentence here")
    a = p.parse_args(argv)
    if not os.path.isfile(a.path):
        print(f"{TOOL}: error: {a.path}: no such checkpoint", file=sys.stderr)
        return 1
    try:
        check_outputs([a.json, a.predictions], [a.path, *files_under(a.data)])
        if not os.path.isdir(a.data):
            raise FileNotFoundError(f"{a.data}: no such data folder (the bin/ of data-prep/glue.sh)")
        label_dir = os.path.join(a.data, "label")
        have = sorted(f[:-len(".bin")] for f in os.listdir(label_dir) if f.endswith(".bin")) \
            if os.path.isdir(label_dir) else []
        if a.split not in have:
            raise FileNotFoundError(f"{a.data}: no split {a.split!r} (no label/{a.split}.bin); the splits there: "
                                    f"{', '.join(have) or 'none (is it the bin/ of data-prep/glue.sh?)'}")
        gold, pred, names = predict(a.path, a.data, a.split, a.batch_size, a.cpu, a.fp16)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"{TOOL}: error: {e}", file=sys.stderr)
        return 1
    from ..studies.seed_statistics import matthews

    right = sum(g == q for g, q in zip(gold, pred))
    result = {"split": a.split, "checkpoint": a.path, "sentences": len(gold), "correct": right,
              "accuracy": 100.0 * right / len(gold) if gold else 0.0, "mcc": matthews(gold, pred)}
    print(f"{a.split}\tsentences={len(gold)}\taccuracy={result['accuracy']:.2f}\tmcc={result['mcc']:.2f}")
    if a.json:
        with atomic_path(a.json) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    if a.predictions:
        with atomic_path(a.predictions) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            for i, (g, q) in enumerate(zip(gold, pred)):
                fh.write(json.dumps({"sentence": i, "gold": names[g], "pred": names[q], "correct": int(g == q)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
