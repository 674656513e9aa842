"""Reading the files a study keeps in ``results/`` (evaluation JSON, per-item JSON lines, gzipped logs and
hypotheses), so that a damaged one stops a summary with its name, line and fault instead of a traceback from gzip
or json: a half-copied ``.gz`` or a hand-edited ``.json`` is then found in one step."""
from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path


def read_text(path) -> str:
    """A text file's content, gunzipped when its name ends in ``.gz``. ValueError for a truncated or corrupt archive
    and for bytes that are not UTF-8."""
    path = Path(path)
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                data = fh.read()
        else:
            data = path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise ValueError(f"{path}: a damaged gzip archive ({e}); copy or write it again") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ValueError(f"{path}: line {line}: not UTF-8 text (byte {e.start})") from None


def read_json(path):
    """One JSON document; ValueError naming the file and line when it is not."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None


def read_jsonl(path) -> list:
    """One JSON value per line (blank lines skipped); ValueError naming the file and line of the first bad one."""
    rows = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {n}: not valid JSON ({e.msg})") from None
    return rows


def text_stream(path) -> io.StringIO:
    """read_text as a file object, its lines read as a text-mode file reads them (\\r\\n and \\r become \\n)."""
    return io.StringIO(read_text(path), newline=None)


def read_lines(path) -> list[str]:
    """A text file's lines without their newlines, gunzipped when its name ends in ``.gz``."""
    return [line.rstrip("\n") for line in text_stream(path)]
