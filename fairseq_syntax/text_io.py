"""Reading the text files users hand the CLIs: a missing file or a byte that is not UTF-8 is one line
naming the file (and the line), not a traceback from deep inside a parser."""
from __future__ import annotations

import os
from typing import Iterator


def text_lines(path: str, digest=None) -> Iterator[str]:
    """The lines of a UTF-8 text file (with their newlines). Raises ``ValueError``: ``path: no such file``,
    or ``path:LINE: not valid UTF-8 (byte 0xff at column 24)``. ``digest`` (a hashlib object) is fed the
    raw bytes as they are read, for a digest of a pipe that cannot be read twice."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not a text file")
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if digest is not None:
                digest.update(raw)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{n}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
                                 "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None
