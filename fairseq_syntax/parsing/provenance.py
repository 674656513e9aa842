"""How a binarized data directory was made, and the parser that raw input must therefore go through.

Data-prep writes ``preprocessing.json`` beside the binarized text: the tokenizer, the BPE (its codes and
vocabulary copied in), and the parser of the source parses with its versions. fairseq-interactive and the
hub interface parse raw input with that parser: a model trained on one parser's trees and fed another's
sees inputs unlike its training data, silently. Another parser runs only when asked for, with a warning.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from typing import Callable, Sequence

from ..pipeline.atomic import atomic_path
from .backends import (Parser, describe_provenance, get_parser, installed_version, parser_provenance,
                       stanza_models_present)

logger = logging.getLogger(__name__)

PREPROCESSING_FILE = "preprocessing.json"
FORMAT = 1
# the tokenizer of data-prep (fairseq-syntax-text tokenize); the hub interface runs the same steps
MOSES_PIPELINE = "normalize-punctuation | remove-non-printing-char | tokenizer -a (sacremoses, no escaping)"


def read_preprocessing(data_dir: str) -> "dict | None":
    """The record of ``data_dir`` (None where there is none); a malformed one is an error naming the file."""
    path = os.path.join(data_dir, PREPROCESSING_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            rec = json.load(fh)
    except ValueError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("parser"), dict) or "backend" not in rec["parser"]:
        raise ValueError(f"{path}: no 'parser' record with a 'backend'")
    return rec


def write_preprocessing(dest_dir: str, parse_records: Sequence[tuple[str, dict]], source_lang: str,
                        target_lang: "str | None", bpe_codes: "str | None" = None, bpe_vocab: "str | None" = None,
                        bpe_vocab_threshold: "int | None" = None, subword_style: str = "bpe",
                        tokenizer: "dict | None" = None) -> dict:
    """Write ``dest_dir/preprocessing.json`` from the records of the splits' parses (``(conllu, record)``),
    which must all come from one parser; the BPE codes and vocabulary are copied in beside it."""
    if not parse_records:
        raise ValueError("no parse records given")
    first_name, first = parse_records[0]
    for name, rec in parse_records:
        if rec is None:
            raise ValueError(f"{name}: no record of its input and parser beside it ({name}.provenance.json); "
                             "parse it again with fairseq-syntax-parse")
        a, b = rec.get("parser") or {}, first.get("parser") or {}
        if (a.get("backend"), a.get("model")) != (b.get("backend"), b.get("model")):
            raise ValueError(f"{name} was parsed with {describe_provenance(a)}, but {first_name} with "
                             f"{describe_provenance(b)}: one parser must make all splits")
    rec = {"format": FORMAT, "source_lang": source_lang, "target_lang": target_lang,
           "tokenizer": tokenizer or {"name": "moses", "steps": MOSES_PIPELINE,
                                      "sacremoses": installed_version("sacremoses")},
           "subword_style": subword_style, "parser": first["parser"],
           "parses": {os.path.basename(name): {"input": r.get("input"), "input_sha1": r.get("input_sha1"),
                                               "lines": r.get("lines")} for name, r in parse_records}}
    if bpe_codes:
        rec["bpe"] = {"name": "subword_nmt", "codes": "bpecodes", "subword_nmt": installed_version("subword-nmt")}
        _copy(bpe_codes, os.path.join(dest_dir, "bpecodes"))
        if bpe_vocab:
            rec["bpe"]["vocabulary"] = f"bpe.vocab.{source_lang}"
            rec["bpe"]["vocabulary_threshold"] = bpe_vocab_threshold
            _copy(bpe_vocab, os.path.join(dest_dir, rec["bpe"]["vocabulary"]))
    with atomic_path(os.path.join(dest_dir, PREPROCESSING_FILE)) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        json.dump(rec, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return rec


def _copy(src: str, dst: str) -> None:
    if os.path.abspath(src) == os.path.abspath(dst):
        return
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def parser_for_raw_input(requested: str, data_dir: "str | None",
                         warn: Callable[[str], None] = logger.warning) -> Parser:
    """The parser for raw input to a model trained on ``data_dir``.

    ``requested`` ``auto`` takes the recorded parser; it must be installed, else a ``RuntimeError`` says what
    to install. ``spacy`` or ``stanza`` different from the record runs with a warning. Without a record,
    ``auto`` takes stanza where its models are present, else spaCy, and warns that the parser is unknown.
    """
    rec = read_preprocessing(data_dir) if data_dir else None
    path = os.path.join(data_dir, PREPROCESSING_FILE) if data_dir else "the data directory"
    recorded = rec["parser"] if rec else None
    if recorded is None or recorded["backend"] == "conllu":
        backend = requested
        if requested == "auto":
            backend = "stanza" if stanza_models_present() else "spacy"
            why = (f"no {path}" if rec is None else f"{path}: the training parses were brought as CoNLL-U")
            warn(f"{why}, so the parser of the training data is unknown; parsing raw input with {backend} "
                 "(choose with --parser)")
        return get_parser(backend)
    backend = recorded["backend"]
    if requested not in ("auto", backend):
        warn(f"--parser {requested}: the training data was parsed with {describe_provenance(recorded)} ({path}); "
             f"raw input will be parsed with {requested}, and its trees will differ from those the model was "
             "trained on")
        return get_parser(requested)
    kwargs = {"model": recorded["model"]} if backend == "spacy" and recorded.get("model") else {}
    other = "stanza" if backend == "spacy" else "spacy"
    try:
        parser = get_parser(backend, **kwargs)
    except (RuntimeError, ImportError) as e:
        raise RuntimeError(
            f"the training data was parsed with {describe_provenance(recorded)} ({path}), which is not available "
            f"here: {e}. Install it, or pass --parser {other} (hub: parser='{other}') to parse raw input with "
            "another parser, whose trees will differ from training's") from None
    here = parser_provenance(backend, **kwargs)
    for key in ("model_version", "library_version"):
        if recorded.get(key) and here.get(key) and recorded[key] != here[key]:
            warn(f"the training data was parsed with {describe_provenance(recorded)} ({path}); installed here: "
                 f"{describe_provenance(here)}")
            break
    return parser
