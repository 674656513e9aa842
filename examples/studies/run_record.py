"""What shaped a run, kept beside its results as ``NAME.record.json``: the study, system, seed and recipe, the data
it trained on (a fingerprint of the binarized folder), the split it was scored on and its size, precision, device,
quick mode and the code's version. The reproduce scripts write it when a run is scored. Every study's summary
requires it: ``check_records`` compares the records of a table's runs with each other, whole, and the protocol's
checks (run_protocol.py, table_protocol.py) hold each to the table's, so a run on other data, scored on other
examples or from another recipe is named and left out, not averaged in. Runs scored before records were kept have
records written after them from their kept logs and scores (``"written"``), with the data and code they cannot vouch
for left null, and a table says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from fairseq_syntax.pipeline.atomic import write_text
from .result_files import read_json
from .run_options import same
from .training_log import training_setup

ROOT = Path(__file__).resolve().parents[2]
FINGERPRINTED = (".idx", ".txt", ".json", ".tsv", ".label")  # what fixes a binarized corpus, without reading its .bin


def data_fingerprint(bin_dir) -> str:
    """SHA-1 over the binarized folder's indexes, dictionaries, labels and records (names and contents), recursively:
    a .idx holds every sentence's length and offset, so another corpus, slice or tokenization changes it; the
    .bin files (hundreds of MB) are not read."""
    h = hashlib.sha1()
    for top, dirs, files in sorted(os.walk(bin_dir)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(FINGERPRINTED) and not name.startswith("."):
                path = os.path.join(top, name)
                h.update(os.path.relpath(path, bin_dir).encode() + b"\0")
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
                h.update(b"\0")
    return h.hexdigest()


def code_version() -> str:
    """The checkout's commit, ``+changes`` when the package's code differs from it; the package's version where
    this is no git checkout (an installed wheel, a copy of the files)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "fairseq_syntax", "examples"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout.strip()
        return head + ("+changes" if changed else "")
    except (OSError, subprocess.SubprocessError):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"fairseq-syntax {version('fairseq-syntax')}"
        except PackageNotFoundError:
            return "unknown"


def write_record(path, *, study: str, system: str, seed: int, recipe: dict, data: str, split: str, scored: int,
                 log: str) -> dict:
    """The record of a scored run, written atomically; its training setup read from its log."""
    setup = training_setup(log) or {}
    record = {"study": study, "system": system, "seed": seed, "recipe": recipe,
              "data": data_fingerprint(data), "split": split, "scored": scored,
              "precision": setup.get("precision"), "device": setup.get("device"),
              "quick": bool(setup.get("quick")), "code": code_version()}
    write_text(str(path), json.dumps(record, indent=1) + "\n")
    return record


def record_of(log) -> Path:
    """A run's record, beside its kept training log."""
    log = str(log)
    stem = log[: -len(".train.log.gz")] if log.endswith(".train.log.gz") else log
    return Path(stem + ".record.json")


def record_differences(log, seed: int, recipe: dict, split: str | None = None, data: str | None = None) -> list[str]:
    """What a run's record says against the table's protocol (its seed, recipe, split and data fingerprint), one
    line each; a missing or malformed record is one line too (``check_records`` then compares the runs' records
    with each other)."""
    path = record_of(log)
    try:
        r = read_record(path)
    except ValueError as e:
        return [str(e)]
    out = []
    if r["seed"] != seed:
        out.append(f"{path.name}: seed {r['seed']}, the name's {seed}")
    out += [f"{path.name}: {k}={r['recipe'][k]}, the table's {k}={v}" for k, v in recipe.items()
            if k in r["recipe"] and not same(r["recipe"][k], str(v))]
    if split is not None and r["split"] != split:
        out.append(f"{path.name}: scored on {r['split']}, the table on {split}")
    if data is not None and r["data"] is not None and r["data"] != data:
        out.append(f"{path.name}: trained on other data (fingerprint {r['data'][:12]}, the table's {data[:12]})")
    if r["quick"]:
        out.append(f"{path.name}: trained with FAIRSEQ_SYNTAX_QUICK set")
    return out


# what every record holds, with the types each field may have (None: a record written after its run, from its kept
# log and scores, cannot vouch for the data or the code it ran on)
RECORD_SCHEMA = {"study": (str,), "system": (str,), "seed": (int,), "recipe": (dict,), "data": (str, type(None)),
                 "split": (str,), "scored": (int,), "precision": (str, type(None)), "device": (str, type(None)),
                 "quick": (bool,), "code": (str, type(None))}
# what must agree between the runs of one table (of one task, in a table of several), and how a line names it
COMPARED = {"data": "trained on data", "split": "scored on", "scored": "scored", "recipe": "recipe",
            "precision": "precision", "quick": "quick mode"}


def read_record(path) -> dict:
    """A run's record, checked against ``RECORD_SCHEMA``; ValueError naming the file and what is wrong."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"no record ({path.name}, which its reproduce script writes when it scores the run)")
    r = read_json(path, tuple(RECORD_SCHEMA))
    for key, types in RECORD_SCHEMA.items():
        value = r[key]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            want = " or ".join("null" if t is type(None) else {"str": "a string", "int": "an integer",
                                                               "dict": "an object", "bool": "true or false"}[t.__name__]
                               for t in types)
            raise ValueError(f"{path.name}: {key} is {json.dumps(value)[:40]}, expected {want}")
    if r["seed"] < 1 or r["scored"] < 1:
        raise ValueError(f"{path.name}: seed {r['seed']} and scored {r['scored']}: each must be at least 1")
    if r["data"] is not None and not (len(r["data"]) == 40 and all(c in "0123456789abcdef" for c in r["data"])):
        raise ValueError(f"{path.name}: data {r['data'][:40]!r} is not a fingerprint (40 hexadecimal digits)")
    return r


def _shown(key: str, value) -> str:
    if value is None:
        return {"data": "data not recorded", "precision": "precision not recorded"}.get(key, f"{key} not recorded")
    if key == "data":
        return f"data {value[:12]}"
    if key == "scored":
        return f"{value:,} scored"
    if key == "quick":
        return "quick mode" if value else "not in quick mode"
    if key == "recipe":
        return "recipe " + ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    return f"{COMPARED[key]} {value}"


def most_held(values: list):
    """What most of ``values`` hold (a tie: the first of them to appear): what a table holds each run to."""
    return max(values, key=lambda v: (values.count(v), -values.index(v)))


def check_records(records: dict, study: str, group_of=None, prefix: str = "") -> tuple[dict, list[str]]:
    """One check for every study's summary: ({run left out: why}, notes) over ``records`` ({run: its record's
    path}). A run is left out, named, where its record is missing or not of the schema, names another study, or
    another system or seed than its name (``PREFIXsystem_seedN``: its record gives the system with or without the
    table's ``prefix``). Within a group (``group_of(run)``: a task, in a table of several) every field of
    ``COMPARED`` must then agree: each run is held to what most runs hold (a tie: the first run's, in name
    order), and one that differs is left out, naming both. The code's version is a note where runs differ in it,
    as is a record that cannot vouch for its data or code."""
    refused, read = {}, {}
    for name in sorted(records):
        try:
            r = read_record(records[name])
        except ValueError as e:
            refused[name] = str(e)
            continue
        why = []
        if r["study"] != study:
            why.append(f"its record is of the study {r['study']!r}, not {study!r}")
        system = name[:name.rfind("_seed")]
        if r["system"] not in (system, system.removeprefix(prefix)):
            why.append(f"its record names the system {r['system']!r}, not its name's")
        if f"_seed{r['seed']}" != name[name.rfind("_seed"):]:
            why.append(f"its record names seed {r['seed']}, not its name's")
        if why:
            refused[name] = "; ".join(why)
        else:
            read[name] = r
    groups: dict = {}
    for name in read:
        groups.setdefault(group_of(name) if group_of else "", []).append(name)
    for names in groups.values():
        for key in COMPARED:
            values = [json.dumps(read[n][key], sort_keys=True) for n in names]
            common = most_held(values)
            held = json.loads(common)
            for n, v in zip(names, values):
                if v != common and n not in refused:
                    others = values.count(common)
                    refused[n] = (f"{_shown(key, read[n][key])}, where the table's other {others} run"
                                  f"{'s have' if others > 1 else ' has'} {_shown(key, held)}")
    kept = [n for n in read if n not in refused]
    notes = []
    codes = sorted({read[n]["code"] for n in kept if read[n]["code"]})
    if len(codes) > 1:
        notes.append(f"the runs come from {len(codes)} versions of the code: " + ", ".join(
            f"{c[:12]} ({sum(read[n]['code'] == c for n in kept)})" for c in codes))
    unvouched = [n for n in kept if read[n]["data"] is None or read[n]["code"] is None]
    if unvouched:
        notes.append(f"{len(unvouched)} of the {len(kept)} runs have records written after them from their kept logs "
                     "and scores, which cannot vouch for the data or the code they ran on")
    return refused, notes
