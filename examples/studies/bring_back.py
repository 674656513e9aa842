"""Runs trained on another machine (a GPU of yours, say) merged into a study's results folder: all of them, or none.

Every run of the archive is checked before any file is copied: its files' names (``{task}_{system}_seed{N}``, N
written one way), that it is complete (eval.json, predictions, training log), that its eval.json holds the run its
name says with a finite score in a percentage's range, that it trained in the table's precision and not in quick
mode, and that it shares the table's protocol (each task's budget and scored split, as the table's runs there hold
them). A run the table already has must come back byte-identical: a file is never added to a run that exists, nor
one replaced. One refusal names the run and what is wrong, and nothing is written.

    python -m examples.studies.bring_back ARCHIVE.tgz --into results/encoders_table1_fp16 --precision fp16

ARCHIVE.tgz holds the other machine's results folder as ``results/`` (``tar czf ARCHIVE.tgz results``; another
folder inside it: --member).
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from fairseq_syntax.pipeline.atomic import atomic_path
from .result_files import percent, read_json
from .training_log import training_setup

RUN_FILE = re.compile(r"(?P<run>(?P<task>[A-Za-z0-9-]+)_(?P<system>[a-z_]+?)_seed(?P<seed>0|[1-9][0-9]{0,17}))"
                      r"\.(?P<kind>eval\.json|eval\.txt|pred\.jsonl\.gz|train\.log\.gz|gates\.json|record\.json)")
REQUIRED = ("eval.json", "pred.jsonl.gz", "train.log.gz")
EVAL_FIELDS = ("task", "system", "seed", "metric", "split", "max_update")
PROTOCOL = ("split", "max_update")  # what every run of one task in one table shares


def runs_in(folder: Path, where: str) -> dict[str, dict[str, Path]]:
    """``{run: {kind: path}}`` of a folder's run files; any other entry (a link, a folder, an unknown name) is a
    ValueError naming it."""
    runs: dict[str, dict[str, Path]] = {}
    for p in sorted(folder.iterdir()):
        if p.name in ("summary.json", "summary.md", "protocol.json") or p.suffix == ".png":
            continue  # the table's own files: its protocol is compared whole (check)
        m = RUN_FILE.fullmatch(p.name)
        if p.is_symlink() or not p.is_file() or not m:
            raise ValueError(f"{where}: {p.name}: not a run's file (expected TASK_SYSTEM_seedN.eval.json, "
                             ".eval.txt, .pred.jsonl.gz, .train.log.gz, .gates.json or .record.json, a plain file)")
        runs.setdefault(m["run"], {})[m["kind"]] = p
    return runs


def check(got: Path, into: Path, precision: str, where: str) -> dict[str, dict[str, Path]]:
    """The runs of ``got`` to copy into ``into`` (identical ones already there left out); ValueError otherwise."""
    new = runs_in(got, where)
    have = runs_in(into, str(into)) if into.is_dir() else {}
    theirs, ours = got / "protocol.json", into / "protocol.json"
    if theirs.is_file() and ours.is_file() and read_json(theirs) != read_json(ours):
        raise ValueError(f"{where}: its runs were trained under another protocol than {ours} (budgets, seeds or "
                         "systems): bring them back into another --into")
    protocol: dict[str, dict] = {}
    for run, files in have.items():
        if "eval.json" in files:
            e = read_json(files["eval.json"], EVAL_FIELDS)
            protocol.setdefault(e["task"], {k: e[k] for k in PROTOCOL})
    out = {}
    for run, files in new.items():
        missing = [k for k in REQUIRED if k not in files]
        if missing:
            raise ValueError(f"{where}: {run}: incomplete, no {', '.join(missing)}")
        e = read_json(files["eval.json"], EVAL_FIELDS)
        m = RUN_FILE.fullmatch(files["eval.json"].name)
        if (e["task"], e["system"], str(e["seed"])) != (m["task"], m["system"], m["seed"]):
            raise ValueError(f"{where}: {run}.eval.json holds {e['task']} {e['system']} seed {e['seed']}, not the run "
                             "its name says")
        percent(f"{where}: {run}.eval.json", e.get(e["metric"]), e["metric"])
        setup = training_setup(str(files["train.log.gz"]))
        if setup is None:
            raise ValueError(f"{where}: {run}.train.log.gz: no fairseq configuration in it; not a training log")
        if setup.get("quick"):
            raise ValueError(f"{where}: {run}: trained with FAIRSEQ_SYNTAX_QUICK set (2 updates), not a run of a table")
        if setup["precision"] != precision:
            raise ValueError(f"{where}: {run}: trained in {setup['precision']}, not the table's {precision}")
        want = protocol.setdefault(e["task"], {k: e[k] for k in PROTOCOL})
        if any(e[k] != want[k] for k in PROTOCOL):
            raise ValueError(f"{where}: {run}: " + ", ".join(f"{k} {e[k]}" for k in PROTOCOL) + " where the table's "
                             f"{e['task']} runs have " + ", ".join(f"{k} {want[k]}" for k in PROTOCOL))
        if run in have:
            extra = sorted(set(files) - set(have[run]))
            differ = sorted(k for k in files if k in have[run] and files[k].read_bytes() != have[run][k].read_bytes())
            if extra or differ:
                raise ValueError(f"{where}: {run} is in {into} already, and the archive's "
                                 + (f"{', '.join(differ)} differ{'s' if len(differ) == 1 else ''}" if differ else "")
                                 + (" and " if differ and extra else "")
                                 + (f"{', '.join(extra)} would be added to it" if extra else "")
                                 + ": a run is never changed; bring it back into another --into")
            continue
        out[run] = files
    return out


def bring_back(archive: Path, into: Path, precision: str, member: str = "results") -> int:
    """Check every run of ``archive`` (its folder ``member``), then copy the new ones; returns the files copied."""
    if not archive.is_file():
        raise ValueError(f"{archive}: no such file")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(tmp, filter="data")  # no links out, no absolute paths, no devices
        except tarfile.FilterError as e:
            raise ValueError(f"{archive}: holds a link or a path outside itself ({e}); "
                             "not an archive of runs") from None
        except (tarfile.TarError, EOFError, OSError) as e:
            raise ValueError(f"{archive}: a damaged or cut archive ({e}); bring it back again") from None
        got = Path(tmp) / member
        if not got.is_dir() or got.is_symlink():
            raise ValueError(f"{archive}: holds no {member} folder")
        runs = check(got, into, precision, str(archive))
        into.mkdir(parents=True, exist_ok=True)
        n = 0
        for files in runs.values():
            for p in files.values():
                with atomic_path(str(into / p.name)) as t:
                    shutil.copyfile(p, t)
                n += 1
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bring_back", description=__doc__.split("\n\n")[0])
    p.add_argument("archive", type=Path)
    p.add_argument("--into", type=Path, required=True, help="the table's results folder")
    p.add_argument("--precision", required=True, choices=("fp32", "fp16", "bf16"), help="the table's precision")
    p.add_argument("--member", default="results", help="the runs' folder inside the archive")
    a = p.parse_args(argv)
    try:
        n = bring_back(a.archive, a.into, a.precision, a.member)
    except ValueError as e:
        print(f"bring_back: error: {e}; nothing copied", file=sys.stderr)
        return 1
    print(f"{n} files new in {a.into}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
