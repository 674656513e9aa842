"""One reader for the column files the corpora come in (CoNLL-2003's token columns, GLUE's TSV), read as what they
are: a file read as something else must fail on its first wrong line, named, never turn into other data.

- a UTF-8 byte-order mark is not text (it made ``\\ufeff-DOCSTART-`` a sentence);
- ``\\r\\n``, ``\\r`` and ``\\n`` all end lines (a CR-only CoNLL file was one line: one sentence of one word);
- every non-blank line has the file's one column count (given, or the first line's), else the file, the line and
  the first line that set the count are named (a space or U+00A0 inside a token, or a file cut short, shifted or
  dropped text silently);
- a last line without its newline is named when it is short of columns (a file cut mid-line).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Optional

BOM = "\ufeff"


@dataclass
class Row:
    line: int
    cells: list  # [] for a blank line
    last_without_newline: bool = False


def text_rows(path: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, text without its line end, whether it ended with one) for every line of a UTF-8 file."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not a text file")
    n = 0
    with open(path, "rb") as fh:
        for raw in fh:
            ended = raw.endswith(b"\n")
            body = raw[:-1] if ended else raw
            if body.endswith(b"\r"):
                body = body[:-1]
            parts = body.split(b"\r")  # a lone CR ends a line too
            for k, part in enumerate(parts):
                n += 1
                try:
                    text = part.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise ValueError(f"{path}:{n}: not valid UTF-8 (byte 0x{part[e.start]:02x} at column "
                                     f"{e.start + 1}); convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None
                if n == 1 and text.startswith(BOM):
                    text = text[1:]
                yield n, text, ended or k < len(parts) - 1


def column_rows(path: str, sep: Optional[str] = None, columns: Optional[int] = None,
                hint: str = "") -> Iterator[Row]:
    """Every line of ``path`` split at ``sep`` (None: any whitespace, as CoNLL files; "\\t": TSV), blank lines as
    empty rows. All non-blank lines have ``columns`` cells, or the first one's count; ``hint`` says what the
    columns are, for the error."""
    first = None
    for n, text, ended in text_rows(path):
        if not text.strip():
            yield Row(n, [], not ended)
            continue
        cells = text.split() if sep is None else text.split(sep)
        if columns is None:
            columns, first = len(cells), n
        if len(cells) != columns:
            where = f"the first line's {columns}, line {first}" if first else f"{columns}{f' ({hint})' if hint else ''}"
            cut = " It is the last line, without its newline: the file looks cut short." if not ended else ""
            inside = (" (a space or U+00A0 inside a token?)" if len(cells) > columns and sep is None else
                      " (a tab inside the text?)" if len(cells) > columns else "")
            raise ValueError(f"{path}:{n}: {len(cells)} {'tab-separated ' if sep == chr(9) else ''}columns, expected "
                             f"{where}{inside}.{cut}")
        yield Row(n, cells, not ended)
