"""Command-line options read as the project's shell entry points always read them.

Every value is checked where it enters, with a message naming the option: a missing value or the next option
taken as one, a number with a leading zero ("01" named a second seed 1), a name that would make a folder.
"""
from __future__ import annotations

import os
import re

from .messages import Stop, log

_INT = re.compile(r"0|[1-9][0-9]{0,17}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def parse(argv: list[str], values: dict[str, str], flags: tuple[str, ...] = (), usage: str = "") -> dict:
    """``values`` maps each option taking a value to its default (``--max-train`` -> ``max_train``), ``flags`` the
    options without one (False unless given). ``-h``/``--help`` prints ``usage`` and exits."""
    got = {_key(o): d for o, d in values.items()}
    got.update({_key(f): False for f in flags})
    i = 0
    while i < len(argv):
        opt = argv[i]
        if opt in ("-h", "--help"):
            print(usage.strip("\n"))
            raise SystemExit(0)
        if opt in flags:
            got[_key(opt)] = True
            i += 1
        elif opt in values:
            if i + 1 >= len(argv) or not argv[i + 1] or argv[i + 1].startswith("--"):
                raise Stop(f"{opt} needs a value; --help lists the options")
            got[_key(opt)] = argv[i + 1]
            i += 2
        else:
            raise Stop(f"unknown option {opt} (see --help)")
    return got


def _key(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def need_int(option: str, value: str, least: int = 0) -> int:
    """A whole number as the run names write it: no leading zero, at most 18 digits."""
    if not _INT.fullmatch(value):
        raise Stop(f"{option} takes a whole number, got '{value}' (digits, no leading zero, at most 18)")
    if int(value) < least:
        raise Stop(f"{option} must be at least {least}, got {value}")
    return int(value)


def need_ints(option: str, value: str) -> list[int]:
    """A list of numbers (``--seeds "1 2 3"``), none given twice."""
    items = value.split()
    if not items:
        raise Stop(f"{option} needs at least one number")
    seen: list[int] = []
    for v in items:
        n = need_int(option, v)
        if n in seen:
            raise Stop(f"{option} gives {v} twice")
        seen.append(n)
    return seen


def need_name(option: str, value: str) -> str:
    """A value that starts a file name (a ``--tag``): no folder, nothing a shell reads."""
    if not _NAME.fullmatch(value):
        raise Stop(f"{option} takes a name of letters, digits, '.', '_' and '-', got '{value}'")
    return value


def need_choice(option: str, value: str, choices: tuple[str, ...], message: str | None = None) -> str:
    if value not in choices:
        raise Stop(message or f"{option} must be {', '.join(choices[:-1])} or {choices[-1]}, got '{value}'")
    return value


def need_parser(value: str) -> str:
    """--parser names a parser fairseq-syntax-parse has, checked before any stage runs."""
    return need_choice("--parser", value, ("auto", "stanza", "spacy"))


def quick_slice(sizes: dict[str, int], quick: dict[str, int]) -> dict[str, int]:
    """With FAIRSEQ_SYNTAX_QUICK set (fairseq_syntax/quick.py), each size left at 0 ("all") becomes its quick
    size, so the README's commands run in minutes as written; the stage records keep the sizes."""
    if os.environ.get("FAIRSEQ_SYNTAX_QUICK", "") in ("", "0"):
        return sizes
    out = dict(sizes)
    for key, n in quick.items():
        if out[key] == 0:
            out[key] = n
            log(f"FAIRSEQ_SYNTAX_QUICK: {key.upper()}={n}")
    return out
