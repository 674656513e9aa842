"""Which runs a study's table admits (Multi30k, RACE, LAMBADA; the SLA table's per-task form is table_protocol.py).

A table's folder holds ``protocol.json`` (``TAG.protocol.json`` for a ``--tag``'s runs, a table of their own): its
systems, its seeds, its recipe (fairseq options as the training log's configuration spells them: ``max_update``,
``lr``, ``batch_size``...), where the study scores one its split, and optionally its data's fingerprint. A run's
record (run_record.py) is required, held to the same, and compared with the other runs' records. The reproduce
script that makes the folder writes it and checks every later call against it, so a trial (``--max-update 10``)
never trains into the table; the summary admits a run only if it is named ``SYSTEM_seedN`` with a system and seed
of the table, and the last start in its log (the configuration it finished under) holds the recipe and that seed,
and it names each run it leaves out and why.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from fairseq_syntax.pipeline.atomic import write_text
from fairseq_syntax.pipeline.messages import Stop
from .result_files import read_json
from .run_options import _scalar, configurations, same
from .run_record import check_records, record_differences, record_of
from .training_log import training_setup

PROTOCOL_FILE = "protocol.json"
RUN_RE = re.compile(r"(?P<system>.+)_seed(?P<seed>\d+)")


TABLE_SEEDS = [1, 2, 3, 4, 5]  # the seeds a study's table may hold; another is a trial


class NotOfTable(Stop, ValueError):
    """A run, or a call, outside the table's protocol; the message says every reason (a runner stops on it with
    ``error:`` and that line, as on any Stop)."""


def seed_of(text: str) -> int:
    """A seed as the runs' names write it: digits without a leading zero (``_seed01`` would be seed 1 twice)."""
    if not text.isdigit() or text != str(int(text)) or int(text) < 1:
        raise NotOfTable(f"seed {text!r} is not written as a seed is (1, 2, ...; no leading zero)")
    return int(text)


def split_run(name: str) -> tuple[str, int]:
    m = RUN_RE.fullmatch(name)
    if not m:
        raise NotOfTable("not named SYSTEM_seedN")
    return m.group("system"), seed_of(m.group("seed"))


def protocol_path(results, tag: str = "") -> Path:
    return Path(results) / (f"{tag}.{PROTOCOL_FILE}" if tag else PROTOCOL_FILE)


def read_protocol(results, prog: str, tag: str = "") -> dict | None:
    """The folder's protocol, or None (said on stderr: its runs are then not checked)."""
    path = protocol_path(results, tag)
    if not path.exists():
        print(f"{prog}: {path}: none; the runs are not checked against a protocol", file=sys.stderr)
        return None
    prot = read_json(path, ("systems", "seeds", "recipe"))
    if not (isinstance(prot["systems"], list) and isinstance(prot["seeds"], list)
            and all(isinstance(s, int) and not isinstance(s, bool) for s in prot["seeds"])
            and isinstance(prot["recipe"], dict)):
        raise ValueError(f"{path}: expected systems (names), seeds (integers) and recipe (fairseq options)")
    return prot


def refusal(name: str, log, prot: dict | None, systems=None, split=None) -> str | None:
    """Why the run ``name`` (its training log ``log``) is not of the table (None: it is): its name, a system or
    seed outside the table's (``systems`` the summary knows, when there is no protocol), quick mode, another
    scored split, a recipe its log does not hold."""
    try:
        system, seed = split_run(name)
    except NotOfTable as e:
        return str(e)
    why = []
    # the table's own systems (the summary's), which a missing protocol cannot widen; a protocol may narrow them
    known = systems if systems is not None else (prot["systems"] if prot else None)
    if known is not None and system not in known:
        why.append(f"system {system!r} is not one of the table's ({', '.join(known)})")
    elif prot and system not in prot["systems"]:
        why.append(f"system {system!r} is not one of its protocol's ({', '.join(prot['systems'])})")
    if prot and seed not in prot["seeds"]:
        why.append(f"seed {seed} is not one of the table's ({', '.join(map(str, prot['seeds']))})")
    if prot and prot.get("split") and split != prot["split"]:
        why.append(f"scored on {split}, the table on {prot['split']}")
    setup = training_setup(str(log))
    if setup and setup.get("quick"):
        why.append(f"its log's line {setup['quick']}: trained with FAIRSEQ_SYNTAX_QUICK set (2 updates of 2 examples)")
    if prot and not why:
        why += recipe_differences(str(log), {**prot["recipe"], "seed": seed})
        why += record_differences(log, seed, prot["recipe"], prot.get("split"), prot.get("data"))
    return "; ".join(why) + " (a trial: give it its own --out)" if why else None


def recipe_differences(log: str, recipe: dict) -> list[str]:
    """What the last configuration in ``log`` holds against ``recipe``, one line per option that differs."""
    try:
        starts = list(configurations(log))
    except ValueError as e:
        return [str(e)]
    if not starts:
        return [f"{log}: no fairseq configuration (no training log, or not one of fairseq-train)"]
    n, keys = starts[-1]
    out = []
    for key, value in recipe.items():
        got = [_scalar(v) for v in keys.get(key, [])]
        if not got:
            out.append(f"{log}: line {n}: its configuration has no option {key}")
        elif not all(same(v, str(value)) for v in got):
            out.append(f"its log's line {n}: trained with {key}={got[0]}, the table's {key}={value}")
    return out


def admit(names, log_of, prot: dict | None, prog: str, systems, split_of=None, prefix: str = "", *,
          study: str, record_of_name=None, scored=None) -> tuple[list[str], dict, list[str]]:
    """(the names admitted, {name refused: why}, notes on their records); each refusal said on stderr as it is
    found. A run is of the table if ``refusal`` finds nothing against it and its record passes ``check_records``
    beside the others' (``record_of_name``: where a run's record is, when not beside its log; ``scored``: the
    runs that have been scored, which alone have records, where a table also shows runs still training).
    ``prefix``: a ``--tag``'s, which the runs' names carry before SYSTEM_seedN."""
    admitted, refused = [], {}
    for name in names:
        why = refusal(name[len(prefix):], log_of(name), prot, systems, split_of(name) if split_of else None)
        if why:
            refused[name] = why
            print(f"{prog}: refused {name}: {why}", file=sys.stderr)
        else:
            admitted.append(name)
    records = {n: record_of_name(n) if record_of_name else record_of(log_of(n)) for n in admitted
               if scored is None or scored(n)}
    left_out, notes = check_records(records, study, prefix=prefix)
    for name, why in left_out.items():
        refused[name] = why
        print(f"{prog}: refused {name}: {why}", file=sys.stderr)
    return [n for n in admitted if n not in left_out], refused, notes


def write_or_check(results, systems, seeds, recipe: dict, all_systems, all_seeds=TABLE_SEEDS, tag: str = "",
                   split: str | None = None) -> None:
    """Before a reproduce call trains: a new table's folder gets its protocol (the study's systems and seeds, this
    call's recipe and scored split); a call into an existing one must fit it, else NotOfTable naming every
    difference."""
    path = protocol_path(results, tag)
    if not path.exists():
        os.makedirs(results, exist_ok=True)
        write_text(str(path), json.dumps({"systems": list(all_systems), "seeds": list(all_seeds), "recipe": recipe,
                                          **({"split": split} if split else {})}, indent=1) + "\n")
        return
    prot = read_protocol(results, "", tag)
    bad = [f"{k}={v}: the table's runs have {k}={prot['recipe'][k]}" for k, v in recipe.items()
           if k in prot["recipe"] and not same(prot["recipe"][k], str(v))]
    if prot.get("split") and split != prot["split"]:
        bad.append(f"scored on {split}: the table's runs on {prot['split']}")
    bad += [f"system {s} is not one of the table's" for s in systems if s not in prot["systems"]]
    bad += [f"seed {s} is not one of the table's ({', '.join(map(str, prot['seeds']))})" for s in seeds
            if s not in prot["seeds"]]
    if bad:
        raise NotOfTable(f"{'; '.join(bad)} ({path}); a trial goes to its own --out")


def records_line(notes: list[str]) -> str:
    """The line a table's markdown carries about its runs' records, where they differ in what does not decide."""
    return "**Records:** " + "; ".join(notes) + "."


def refused_line(refused: dict[str, str]) -> str:
    """The line a table's markdown carries when runs were left out, so nobody reads the table as holding them."""
    return " ".join(["**Not in the table** (not of its protocol):"] +
                    [f"{name}: {why};" for name, why in sorted(refused.items())])
