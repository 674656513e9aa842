"""Write a generated table into a Markdown file between two marker lines, so the README's result tables come
from the same command as the summary JSON and are never edited by hand.

    <!-- begin NAME (written by scripts/...; do not edit by hand) -->
    ...replaced...
    <!-- end NAME -->
"""
from __future__ import annotations

import re
from pathlib import Path

from fairseq_syntax.atomic import atomic_path


def replace_block(path: Path, name: str, text: str) -> None:
    """Replace what lies between ``<!-- begin NAME ... -->`` and ``<!-- end NAME -->`` in ``path`` by ``text``.

    Both markers must be there, once each and in that order; the file is rewritten atomically."""
    path = Path(path)
    src = path.read_text(encoding="utf-8")
    begin = re.compile(rf"^<!-- begin {re.escape(name)}\b.*-->[ \t]*$", re.M)
    end = re.compile(rf"^<!-- end {re.escape(name)} -->[ \t]*$", re.M)
    b, e = list(begin.finditer(src)), list(end.finditer(src))
    if len(b) != 1 or len(e) != 1 or e[0].start() < b[0].end():
        def line(ms):
            return ", ".join(str(src.count("\n", 0, m.start()) + 1) for m in ms) or "none"
        raise ValueError(f"{path}: needs one '<!-- begin {name} ... -->' line (found at line {line(b)}) followed by one "
                         f"'<!-- end {name} -->' line (found at line {line(e)}); the generated table goes between them")
    new = src[: b[0].end()] + "\n" + text.strip("\n") + "\n" + src[e[0].start():]
    if new != src:
        with atomic_path(str(path)) as tmp:
            Path(tmp).write_text(new, encoding="utf-8")
