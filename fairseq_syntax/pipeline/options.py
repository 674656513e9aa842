"""Command-line options read as the project's shell entry points always read them.

Every value is checked where it enters, with a message naming the option: a missing value or the next option
taken as one, a number with a leading zero ("01" named a second seed 1), a name that would make a folder.
"""
from __future__ import annotations

import argparse
import os
import re

from .messages import Stop, log

_INT = re.compile(r"0|[1-9][0-9]{0,17}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class _OptionParser(argparse.ArgumentParser):
    """argparse, answering in the entry points' own words: an error is a Stop naming the option."""

    def error(self, message):
        m = re.match(r"argument (\S+): expected one argument", message)
        if m:
            raise Stop(f"{m.group(1)} needs a value; --help lists the options")
        raise Stop(f"{message} (see --help)")


class _Once(argparse.Action):
    """An option given twice is refused: the last one winning silently hid a mistyped command."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_{self.dest}_given", False):
            raise Stop(f"{option_string} is given twice; give it once")
        setattr(namespace, f"_{self.dest}_given", True)
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


def parse(argv: list[str], values: dict[str, str], flags: tuple[str, ...] = (), usage: str = "") -> dict:
    """``values`` maps each option taking a value to its default (``--max-train`` -> ``max_train``), ``flags`` the
    options without one (False unless given). ``-h``/``--help`` prints ``usage`` and exits. Read by argparse (no
    abbreviations, each option once, no empty value)."""
    p = _OptionParser(add_help=False, allow_abbrev=False, prog=os.environ.get("FAIRSEQ_SYNTAX_ENTRY"))
    for opt, default in values.items():
        p.add_argument(opt, dest=_key(opt), default=default, action=_Once)
    for opt in flags:
        p.add_argument(opt, dest=_key(opt), default=False, action=_Once, nargs=0)
    taking = set(values)
    for k, arg in enumerate(argv):  # -h where an option stands (not as an option's value)
        if arg in ("-h", "--help") and not (k and argv[k - 1] in taking):
            print(usage.strip("\n"))
            raise SystemExit(0)
    got, rest = p.parse_known_args(argv)
    if rest:
        raise Stop(f"unknown option {rest[0]} (see --help)")
    for opt in values:
        if getattr(got, f"_{_key(opt)}_given", False) and getattr(got, _key(opt)) == "":
            raise Stop(f"{opt} needs a value; --help lists the options")
    return {k: v for k, v in vars(got).items() if not (k.startswith("_") and k.endswith("_given"))}


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
