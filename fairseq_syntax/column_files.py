"""One reader for the column files the corpora come in (CoNLL-2003's token columns, GLUE's TSV), read as what they
are: a file read as something else must fail on its first wrong line, named, never turn into other data.

- a UTF-8 byte-order mark is not text (it made ``\\ufeff-DOCSTART-`` a sentence);
- ``\\r\\n``, ``\\r`` and ``\\n`` all end lines (a CR-only CoNLL file was one line: one sentence of one word);
- every non-blank line has the file's one column count (given, or the first line's), else the file, the line and
  the first line that set the count are named (a space or U+00A0 inside a token, or a file cut short, shifted or
  dropped text silently);
- a last line without its line end is named when it is short of columns (a file cut mid-line).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from .text_io import text_lines

BOM = "\ufeff"


@dataclass
class Row:
    line: int
    cells: list  # [] for a blank line


def text_rows(path: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, text without its line end, whether it ended with one) for every line of a UTF-8 file, read by
    text_io.text_lines (which names a missing file, a folder, a line that is not UTF-8); a lone CR ends a line too."""
    n = 0
    for raw in text_lines(path):
        ended = raw.endswith(("\n", "\r"))
        parts = raw.rstrip("\n").removesuffix("\r").split("\r")
        for k, text in enumerate(parts):
            n += 1
            yield n, text.removeprefix(BOM) if n == 1 else text, ended or k < len(parts) - 1


def column_rows(path: str, sep: Optional[str] = None, columns: Optional[int] = None,
                hint: str = "") -> Iterator[Row]:
    """Every line of ``path`` split at ``sep`` (None: any whitespace, as CoNLL files; "\\t": TSV), blank lines as
    empty rows. All non-blank lines have ``columns`` cells, or the first one's count; ``hint`` says what the
    columns are, for the error."""
    first = None
    for n, text, ended in text_rows(path):
        if not text.strip():
            yield Row(n, [])
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
        yield Row(n, cells)
