"""The stages the BERT-style corpora share (GLUE, CoNLL-2003, RACE): the converted model, WordPieces with their
heads binarized against its dictionary, and the labels."""
from __future__ import annotations

import os

from ..pipeline.messages import Stop, log
from .tools import Recipe


def ensure_pretrained(r: Recipe, pretrained: str) -> None:
    """``pretrained`` holds a converted model (dict.txt, vocab.txt). Absent or empty, the installed MiniLM is
    converted into it; a folder holding anything else (a Hugging Face BERT of the user's) is never written into."""
    if os.path.isfile(f"{pretrained}/dict.txt") and os.path.isfile(f"{pretrained}/vocab.txt"):
        return
    if os.path.exists(pretrained) and (not os.path.isdir(pretrained) or os.listdir(pretrained)):
        raise Stop(f"--pretrained {pretrained} is not a converted model (it needs dict.txt and vocab.txt) and is "
                   f"never written into; convert a Hugging Face model with: fairseq-syntax-convert-hf --model-dir "
                   f"{pretrained} --out NEW_DIR, then give --pretrained NEW_DIR")
    log(f"no converted model in {pretrained}: converting the installed MiniLM (fairseq-syntax-convert-hf)")
    r.tool("fairseq-syntax-convert-hf", "--out", pretrained, quiet_tensorboard=True,
           fail="converting MiniLM failed")


def binarize_pieces(r: Recipe, name: str, splits, pretrained: str, workers: int) -> None:
    """The WordPieces ``OUT/wp/{split}.NAME`` (with the model's dict.txt) and their heads into ``bin.tmp/NAME``."""
    out = r.out
    prefs = [x for s in splits for x in (f"--{s}pref", f"{out}/wp/{s}.{name}")]
    r.tool("fairseq-preprocess", "--only-source", *prefs, "--destdir", f"{out}/bin.tmp/{name}", "--workers", workers,
           "--srcdict", f"{pretrained}/dict.txt", quiet_tensorboard=True, fail="fairseq-preprocess failed")
    r.tool("fairseq-syntax-binarize-heads", "--heads", *[f"{out}/wp/{s}.{name}.heads" for s in splits],
           "--text-prefixes", *[f"{out}/bin.tmp/{name}/{s}" for s in splits], fail="binarizing heads failed")


def binarize_labels(r: Recipe, splits, workers: int, task: str | None = None) -> None:
    """``OUT/raw/{split}.label`` into ``bin.tmp/label``, with a label dictionary of every split (and of the
    task's classes, checked), not of the training split alone."""
    out = r.out
    files = [f"{out}/raw/{s}.label" for s in splits]
    r.tool("fairseq-syntax-classification", "label-dict", *files, *(["--task", task] if task else []), "-o",
           f"{out}/raw/label.dict.txt", fail="the label dictionary failed")
    prefs = [x for s in splits for x in (f"--{s}pref", f"{out}/raw/{s}.label")]
    r.tool("fairseq-preprocess", "--only-source", *prefs, "--destdir", f"{out}/bin.tmp/label", "--workers", workers,
           "--srcdict", f"{out}/raw/label.dict.txt", quiet_tensorboard=True, fail="fairseq-preprocess failed")
