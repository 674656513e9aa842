"""The stages the encoder corpora share (GLUE, CoNLL-2003, RACE): the pretrained model's folder, its own subwords
with their heads binarized against its dictionary, and the labels."""
from __future__ import annotations

import os
import shutil

from ..data.pretrained_pieces import SUBWORD_STYLE, scheme_files, scheme_of
from ..pipeline.messages import Stop, log
from .tools import Recipe


def is_pretrained_folder(folder: str) -> bool:
    """A model folder as fairseq distributes one (model.pt and dict.txt: RoBERTa, BART, XLM-R) or as
    fairseq-syntax-convert-hf writes one (dict.txt and vocab.txt)."""
    return os.path.isfile(f"{folder}/dict.txt") and (os.path.isfile(f"{folder}/vocab.txt") or
                                                     os.path.isfile(f"{folder}/model.pt"))


def ensure_pretrained(r: Recipe, pretrained: str) -> None:
    """``pretrained`` holds a model (``is_pretrained_folder``). Absent, empty, or holding only what a conversion
    writes (one cut short: its model.pt without its dict.txt), the installed MiniLM is converted into it again; a
    folder holding anything else (a Hugging Face BERT of the user's) is never written into."""
    from ..cli.convert_hf import foreign_files

    if is_pretrained_folder(pretrained):
        return
    if os.path.exists(pretrained) and (not os.path.isdir(pretrained) or foreign_files(pretrained)):
        raise Stop(f"--pretrained {pretrained} is not a model folder (fairseq's: model.pt and dict.txt; or a "
                   f"converted one: dict.txt and vocab.txt) and is never written into; convert a Hugging Face model "
                   f"with: fairseq-syntax-convert-hf --model-dir {pretrained} --out NEW_DIR, then give --pretrained "
                   f"NEW_DIR")
    cut = os.path.isdir(pretrained) and os.listdir(pretrained)
    log(f"{'a conversion cut short' if cut else 'no converted model'} in {pretrained}: converting the installed MiniLM "
        "(fairseq-syntax-convert-hf)")
    r.tool("fairseq-syntax-convert-hf", "--out", pretrained, quiet_tensorboard=True,
           fail="converting MiniLM failed")


def binarize_inputs(pretrained: str) -> list[str]:
    """What a binarize stage reads from the model's folder: its subword files, which it copies into bin/ for the
    hubs, and its dict.txt, fairseq-preprocess's --srcdict. A change in any redoes the stage."""
    return scheme_files(pretrained) + [f"{pretrained}/dict.txt"]


def record_for_raw_text(r: Recipe, dest: str, parses, pretrained: str) -> None:
    """``dest/preprocessing.json`` (the parser of ``parses``, BERT's basic split, the model's subword style) and a
    copy of the model's subword files, so that a hub parses and encodes raw text as data-prep did."""
    r.tool("fairseq-syntax-provenance", "--destdir", dest, "--parses", *parses, "-s", "input0", "--subword-style",
           SUBWORD_STYLE[scheme_of(pretrained)], "--tokenizer", "bert_basic", fail="recording the preprocessing failed")
    for f in scheme_files(pretrained):
        shutil.copyfile(f, os.path.join(dest, os.path.basename(f)))


def binarize_pieces(r: Recipe, name: str, splits, pretrained: str, workers: int) -> None:
    """The pieces ``OUT/wp/{split}.NAME`` (with the model's dict.txt) and their heads into ``bin.tmp/NAME``."""
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
