"""Refuse to skip or resume a training run that was made with other options than this call asks for.

The reproduce scripts skip a finished run and resume a stopped one by its name. Without a check, a call with another
budget or recipe (``--updates 800`` after a run of 400, another ``--lr``) would get the old result back as its own,
or train a run half with one recipe and half with another. fairseq-train writes its whole configuration into the
log at every start, so the log is the record: each configuration line in it must hold the values asked for.

    python -m examples.studies.run_options LOG [--hint TEXT] KEY=VALUE...

KEY is a fairseq option's name as its configuration spells it (``batch_size``, ``lr``, ``arch``, ``seed``), looked
up in every section; ``lr=0.001`` matches fairseq's ``[0.001]``. A log that does not exist, or holds no
configuration yet, has nothing to contradict. The line is read as data (Python's ``ast``), never run. Exit 1 with
the log, the line and the option that differs.
"""
from __future__ import annotations

import argparse
import ast
import sys

from examples.studies.training_log import open_log

MARK = "| fairseq_cli.train | {"


def _value(node: ast.AST, src: str):
    """A configuration value from its parsed form: dicts, fairseq's ``Namespace(...)``, lists, constants; any other
    expression (``inf``) as its source text."""
    if isinstance(node, ast.Dict):
        return {_value(k, src): _value(v, src) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Namespace":
        return {kw.arg: _value(kw.value, src) for kw in node.keywords}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, src) for e in node.elts]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    return ast.get_source_segment(src, node)


def _flatten(d: dict, keys: dict[str, list]) -> dict[str, list]:
    """Every option of every section, by its name: {key: [its values]}."""
    for k, v in d.items():
        if isinstance(v, dict):
            _flatten(v, keys)
        else:
            keys.setdefault(k, []).append(v)
    return keys


def configurations(log: str):
    """(line number, {key: [values in every section]}) for each fairseq-train start recorded in ``log``."""
    try:
        fh = open_log(log)
    except FileNotFoundError:
        return
    with fh:
        for n, line in enumerate(fh, 1):
            at = line.find(MARK)
            if at < 0:
                continue
            src = line[at + len(MARK) - 1:].strip()
            try:
                config = _value(ast.parse(src, mode="eval").body, src)
                if not isinstance(config, dict):
                    raise SyntaxError("not a dict")
                keys = _flatten(config, {})
            except (SyntaxError, RecursionError, MemoryError, TypeError) as e:
                why = e.msg if isinstance(e, SyntaxError) else type(e).__name__
                raise ValueError(f"{log}: line {n}: a fairseq configuration that does not parse ({why})") from None
            yield n, keys


def _scalar(recorded):
    """fairseq keeps some options as one-element lists (``lr``: ``[0.001]``)."""
    return recorded[0] if isinstance(recorded, list) and len(recorded) == 1 else recorded


def same(recorded, wanted: str) -> bool:
    recorded = _scalar(recorded)
    if isinstance(recorded, bool) or recorded is None:
        return str(recorded) == wanted
    try:
        return float(recorded) == float(wanted)
    except (TypeError, ValueError):
        return str(recorded) == wanted


def check(log: str, wanted: dict[str, str]) -> str | None:
    """None when every configuration in ``log`` agrees with ``wanted``; else what differs, with its line."""
    for n, keys in configurations(log):
        for key, value in wanted.items():
            if key not in keys:
                return f"{log}: line {n}: its configuration has no option {key}"
            for recorded in keys[key]:
                if not same(recorded, value):
                    return f"{log}: line {n}: trained with {key}={_scalar(recorded)}; this call asks {key}={value}"
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log")
    p.add_argument("options", nargs="+", metavar="KEY=VALUE")
    p.add_argument("--hint", default="", help="what to do about a difference, appended to the message")
    a = p.parse_args(argv)
    wanted = {}
    for o in a.options:
        key, eq, value = o.partition("=")
        if not eq or not key:
            p.error(f"not KEY=VALUE: {o!r}")
        wanted[key] = value
    try:
        problem = check(a.log, wanted)
    except ValueError as e:
        problem = str(e)
    if problem:
        print(f"error: {problem}" + (f". {a.hint}" if a.hint else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
