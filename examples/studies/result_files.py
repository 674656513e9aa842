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


class _Constant(Exception):
    pass


def _refuse_constant(name):
    """Python's json reads NaN and Infinity as floats; a score that is one would reach the statistics unnamed."""
    raise _Constant(name)


def _finite_float(text):
    """A number too large for a float (``1e999``) reads as infinity: refused as NaN and Infinity are."""
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _Constant(text)
    return value


def percent(path, value, what: str) -> float:
    """A score in percent (F1, accuracy, MCC ×100, BLEU) as a summary takes it: a number in [-100, 100], else a
    ValueError naming the file (an F1 of 250 would be averaged into a table)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{path}: its {what} is {value!r}, not a number")
    if not -100 <= value <= 100:
        raise ValueError(f"{path}: its {what} is {value}, outside a percentage's range")
    return value


def read_json(path, fields=()):
    """One JSON document; ValueError naming the file and line when it is not, and, given ``fields``, naming those
    a results file lacks (a summary would otherwise stop on a KeyError that names no file)."""
    try:
        obj = json.loads(read_text(path), parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    except _Constant as e:
        raise ValueError(f"{path}: holds {e}, which JSON does not allow (a diverged run?)") from None
    if fields:
        if not isinstance(obj, dict):
            raise ValueError(f"{path}: a JSON {type(obj).__name__}, not an object with {', '.join(fields)}")
        missing = [f for f in fields if f not in obj]
        if missing:
            raise ValueError(f"{path}: an incomplete results file: no {', '.join(missing)}")
    return obj


def read_jsonl(path) -> list:
    """One JSON value per line (blank lines skipped); ValueError naming the file and line of the first bad one."""
    rows = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line, parse_constant=_refuse_constant, parse_float=_finite_float))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {n}: not valid JSON ({e.msg})") from None
        except _Constant as e:
            raise ValueError(f"{path}: line {n}: holds {e}, which JSON does not allow (a diverged run?)") from None
    return rows


def text_stream(path) -> io.StringIO:
    """read_text as a file object, its lines read as a text-mode file reads them (\\r\\n and \\r become \\n)."""
    return io.StringIO(read_text(path), newline=None)


def read_lines(path) -> list[str]:
    """A text file's lines without their newlines, gunzipped when its name ends in ``.gz``."""
    return [line.rstrip("\n") for line in text_stream(path)]


def describe(path, template: str) -> str:
    """``template`` filled from a JSON results file (``str.format`` fields: ``{split}``, ``{all[accuracy]}``), for a
    reproduction's --status; a damaged or incomplete file is described by name instead, so that it does not hide
    the other runs' lines behind a traceback."""
    try:
        fields = read_json(path)
    except ValueError as e:
        return f"its results file is damaged: {e}"
    try:
        return template.format_map(fields)
    except (KeyError, IndexError) as e:
        return f"its results file is damaged: {path}: no {e}"
    except (TypeError, ValueError, AttributeError) as e:  # a field of the wrong kind ("{f1:.2f}" on a string)
        return f"its results file is damaged: {path}: {e}"


if __name__ == "__main__":  # python -m examples.studies.result_files describe PATH TEMPLATE
    import argparse

    ap = argparse.ArgumentParser(prog="python -m examples.studies.result_files")
    ap.add_argument("command", choices=["describe"])
    ap.add_argument("path")
    ap.add_argument("template")
    a = ap.parse_args()
    print(describe(a.path, a.template))
