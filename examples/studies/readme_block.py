"""Write a generated table into a Markdown file between two marker lines, so the README's result tables come
from the same command as the summary JSON and are never edited by hand.

    <!-- begin NAME (written by scripts/...; do not edit by hand) -->
    ...replaced...
    <!-- end NAME -->
"""
from __future__ import annotations

import re
from pathlib import Path

from fairseq_syntax.pipeline.atomic import atomic_path


def _block(path: Path, name: str) -> tuple[str, int, int]:
    """The file's text and where its block's inside starts and ends; a file without the two markers, once each and
    in that order, or no such file, is a ValueError that names it."""
    try:
        src = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot be read as the file to write the table into ({e.__class__.__name__})") from e
    begin = re.compile(rf"^<!-- begin {re.escape(name)}\b.*-->[ \t]*$", re.M)
    end = re.compile(rf"^<!-- end {re.escape(name)} -->[ \t]*$", re.M)
    b, e = list(begin.finditer(src)), list(end.finditer(src))
    if len(b) != 1 or len(e) != 1 or e[0].start() < b[0].end():
        def line(ms):
            return ", ".join(str(src.count("\n", 0, m.start()) + 1) for m in ms) or "none"
        raise ValueError(f"{path}: needs one '<!-- begin {name} ... -->' line (found at line {line(b)}) followed by "
                         f"one '<!-- end {name} -->' line (found at line {line(e)}); the generated table goes "
                         "between them")
    return src, b[0].end(), e[0].start()


def has_block(path: Path, name: str) -> bool:
    """Whether ``path`` holds the block ``name`` (its markers once each, in order): optional tables go where a README
    asks for them."""
    try:
        _block(path, name)
    except ValueError:
        return False
    return True


def check_block(path: Path, name: str) -> None:
    """Raise the ValueError replace_block would, before a summary spends minutes on work it could not write."""
    _block(path, name)


def exit_unless_block(parser, path: Path | None, name: str) -> None:
    """check_block for a summarizer's ``--readme``: no such block ends the command with the parser's error line (exit
    1) before any work, not with a traceback after it. No ``--readme`` passes."""
    if path:
        try:
            _block(path, name)
        except ValueError as e:
            parser.exit(1, f"{parser.prog}: error: {e}\n")


def replace_block(path: Path, name: str, text: str) -> None:
    """Replace what lies between ``<!-- begin NAME ... -->`` and ``<!-- end NAME -->`` in ``path`` by ``text``.

    Both markers must be there, once each and in that order; the file is rewritten atomically."""
    src, start, stop = _block(path, name)
    new = src[:start] + "\n" + text.strip("\n") + "\n" + src[stop:]
    if new != src:
        with atomic_path(str(path)) as tmp:
            Path(tmp).write_text(new, encoding="utf-8")
