"""Reading and writing parses as CoNLL-U, so parses from any parser can be brought in.

Only ID, FORM, UPOS, HEAD and DEPREL are used. Multiword-token lines (``1-2``) and
empty nodes (``1.1``) are skipped. One CoNLL-U sentence corresponds to one line
of the text it parses; a line holding several sentences is one CoNLL-U block
with several roots.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..syntax.trees import validate_heads
from ..text_io import text_lines


@dataclass
class ParsedSentence:
    words: list[str]
    heads: list[int]
    deprels: list[str] = field(default_factory=list)
    upos: list[str] = field(default_factory=list)
    line: int = 0  # first line of the block in its CoNLL-U file (1-based), for error messages


def format_conllu(sent: ParsedSentence) -> str:
    """One CoNLL-U block, ending with the blank line."""
    rows = []
    n = len(sent.words)
    deprels = sent.deprels or ["_"] * n
    upos = sent.upos or ["_"] * n
    for i, (w, h, d, u) in enumerate(zip(sent.words, sent.heads, deprels, upos), 1):
        form = w.replace("\t", " ") or "_"
        rows.append(f"{i}\t{form}\t_\t{u or '_'}\t_\t_\t{h}\t{d or '_'}\t_\t_\n")
    return "".join(rows) + "\n"


def read_conllu(fh: Iterable[str], name: str = "<conllu>") -> Iterator[ParsedSentence]:
    """Yield the sentences of a CoNLL-U stream, validated.

    Errors name ``name`` and the line: a malformed row, IDs out of sequence, a bad
    head, a cycle, a block with no root.
    """
    words, heads, deprels, upos = [], [], [], []
    start = 0
    lineno = 0
    comment_at = 0  # first comment line of a block that has no token rows yet

    def finish():
        sent = ParsedSentence(words, validate_heads(heads, f"{name}: sentence at line {start}"), deprels, upos, start)
        return sent

    for lineno, raw in enumerate(fh, 1):
        line = raw.rstrip("\n")
        if not line.strip():
            if words:
                yield finish()
                words, heads, deprels, upos = [], [], [], []
            elif comment_at:  # skipping it would pair every later parse with the wrong text line
                raise ValueError(f"{name}:{comment_at}: a sentence block with comments but no token rows")
            comment_at = 0
            continue
        if line.startswith("#"):
            if not words and not comment_at:
                comment_at = lineno
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise ValueError(f"{name}:{lineno}: expected 10 tab-separated CoNLL-U columns, found {len(cols)}")
        tid = cols[0]
        if "-" in tid or "." in tid:
            continue
        if not words:
            start = lineno
        if not tid.isdigit() or int(tid) != len(words) + 1:
            raise ValueError(f"{name}:{lineno}: token ID {tid!r}, expected {len(words) + 1}")
        try:
            head = int(cols[6])
        except ValueError:
            raise ValueError(f"{name}:{lineno}: head {cols[6]!r} is not an integer") from None
        words.append(cols[1])
        heads.append(head)
        upos.append(cols[3])
        deprels.append(cols[7])
    if words:
        yield finish()
    elif comment_at:
        raise ValueError(f"{name}:{comment_at}: a sentence block with comments but no token rows")


def read_conllu_file(path: str) -> Iterator[ParsedSentence]:
    yield from read_conllu(text_lines(path), path)
