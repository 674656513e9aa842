"""RACE's files to examples: one per question, its article, and four question-with-option texts.

The official release (``RACE.tar.gz`` or the extracted ``RACE/``) holds ``RACE/{train,dev,test}/{high,middle}/
N.txt``, one JSON object per file: ``article``, ``questions``, ``options`` (4 per question), ``answers``
(A–D) and ``id``. The question-with-option text follows fairseq's ``examples/roberta/preprocess_RACE.py``: the
option replaces the blank where the question has one (a run of underscores is one blank), and otherwise
follows the question. A malformed file is an error naming the file and what is wrong.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tarfile
import zlib
from dataclasses import dataclass
from typing import Iterator

LEVELS = ("middle", "high")
ANSWERS = "ABCD"
# our split names for the upstream ones: dev as fairseq's valid, test as fairseq's RACE recipe (test, test1)
UPSTREAM = {"train": "train", "dev": "valid", "test": "test"}
_BLANK = re.compile(r"_+")


@dataclass
class Passage:
    source: str  # "RACE.tar.gz:RACE/dev/middle/1011.txt", for error messages
    split: str  # train, dev or test (upstream)
    level: str  # middle or high
    id: str
    article: str
    questions: list
    options: list
    answers: list  # 0..3


def question_with_option(question: str, option: str) -> str:
    """fairseq's RACE recipe: the option fills the blank (each run of ``_``), else follows the question."""
    if "_" in question:
        return _BLANK.sub(lambda _: option, question)
    return f"{question} {option}"


def _parse(text: str, source: str, split: str, level: str) -> Passage:
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{source}: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{source}: expected a JSON object, got {type(obj).__name__}")
    for key in ("article", "questions", "options", "answers"):
        if key not in obj:
            raise ValueError(f"{source}: no {key!r} field")
    article, questions, options, answers = obj["article"], obj["questions"], obj["options"], obj["answers"]
    if not isinstance(article, str) or not article.strip():
        raise ValueError(f"{source}: the article is empty")
    if not (isinstance(questions, list) and isinstance(options, list) and isinstance(answers, list)):
        raise ValueError(f"{source}: questions, options and answers must be lists")
    if not len(questions) == len(options) == len(answers):
        raise ValueError(f"{source}: {len(questions)} questions, {len(options)} option lists and "
                         f"{len(answers)} answers; they must match")
    labels = []
    for k, (q, opts, a) in enumerate(zip(questions, options, answers), 1):
        if not isinstance(q, str):
            raise ValueError(f"{source}: question {k} is not a string")
        if not isinstance(opts, list) or len(opts) != 4 or not all(isinstance(o, str) for o in opts):
            n = len(opts) if isinstance(opts, list) else type(opts).__name__
            raise ValueError(f"{source}: question {k} has {n} options; RACE has 4 per question")
        if not isinstance(a, str) or a.strip() not in ANSWERS or len(a.strip()) != 1:
            raise ValueError(f"{source}: question {k} has the answer {a!r}, not one of A, B, C, D")
        labels.append(ANSWERS.index(a.strip()))
    return Passage(source, split, level, str(obj.get("id") or os.path.basename(source)), article,
                   questions, options, labels)


def _member_key(name: str):
    """(split, level, number) of ``RACE/dev/middle/1011.txt`` (None for other members)."""
    parts = name.replace("\\", "/").split("/")
    if len(parts) < 3 or not parts[-1].endswith(".txt"):
        return None
    split, level, base = parts[-3], parts[-2], parts[-1][:-4]
    if split not in UPSTREAM or level not in LEVELS:
        return None
    return split, level, int(base) if base.isdigit() else base


def read_race(source: str, splits=("train", "dev", "test"), levels=LEVELS) -> Iterator[Passage]:
    """The passages of ``source`` (``RACE.tar.gz``, the ``RACE/`` folder or its parent), in the order
    (split, level, file number). The tar file is read in place: nothing is extracted to disk. Symlinked folders
    and files are followed, as data-prep's fingerprint follows them; anything but a regular file is refused
    before it is read (a FIFO would hang the reader). A passage id seen twice is an error naming both files:
    evaluation pairs systems on (id, question)."""
    seen: dict[str, str] = {}
    for p in _read_race(source, splits, levels):
        if p.id in seen:
            raise ValueError(f"{p.source}: passage id {p.id!r} is also the id of {seen[p.id]}; ids must be unique")
        seen[p.id] = p.source
        yield p


def _read_race(source: str, splits, levels) -> Iterator[Passage]:
    found = []
    if os.path.isdir(source):
        root = os.path.join(source, "RACE") if os.path.isdir(os.path.join(source, "RACE")) else source
        for dirpath, _, files in os.walk(root, followlinks=True):
            for f in files:
                path = os.path.join(dirpath, f)
                key = _member_key(os.path.relpath(path, os.path.dirname(root)))
                if key and key[0] in splits and key[1] in levels:
                    if not os.path.isfile(path):
                        raise ValueError(f"{path}: not a regular file (a FIFO, socket, device or broken link)")
                    found.append((key, path))
        found.sort(key=lambda x: (x[0][0], x[0][1], str(x[0][2]).zfill(12)))
        for (split, level, _), path in found:
            with open(path, "rb") as fh:
                yield _parse(_decode(fh.read(), path), path, split, level)
        return
    if not os.path.isfile(source):
        raise ValueError(f"{source}: no such file or folder (give RACE.tar.gz or the extracted RACE/ folder)")
    try:
        tar = tarfile.open(source, "r:*")
    except tarfile.TarError as e:
        raise ValueError(f"{source}: not a readable tar archive ({e})") from None
    with tar:
        members = []
        try:
            for m in tar:
                key = _member_key(m.name) if m.isfile() else None
                if key and key[0] in splits and key[1] in levels:
                    members.append((key, m))
            _check_tar_end(tar, source)
        except (EOFError, tarfile.TarError, zlib.error, OSError) as e:
            raise ValueError(f"{source}: the archive is truncated or damaged ({e or type(e).__name__}); "
                             "download it again") from None
        members.sort(key=lambda x: (x[0][0], x[0][1], str(x[0][2]).zfill(12)))
        for (split, level, _), m in members:
            where = f"{source}:{m.name}"
            yield _parse(_decode(tar.extractfile(m).read(), where), where, split, level)


def _check_tar_end(tar: tarfile.TarFile, source: str) -> None:
    """A tar archive ends in two zero blocks after its last member. ``tarfile`` stops quietly at the end of
    the data, so an archive cut at a member boundary would read as a smaller, valid one: here it is an error."""
    tar.fileobj.seek(tar.offset)
    end = tar.fileobj.read(2 * tarfile.BLOCKSIZE)
    if len(end) < 2 * tarfile.BLOCKSIZE or end.count(0) != len(end):
        raise ValueError(f"{source}: the archive is truncated (it ends after {tar.offset} bytes of members "
                         "without tar's end-of-archive blocks); download it again")


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None


def sample_order(passages: list[Passage]) -> list[Passage]:
    """A fixed order independent of file numbering (by SHA-1 of the id), so that a --max-train slice mixes
    both levels and is the same on every machine."""
    return sorted(passages, key=lambda p: hashlib.sha1(p.id.encode("utf-8")).hexdigest())
