"""The SLA table's protocol: its folder's ``protocol.json``, each task's budget and scored split, its systems and
seeds. The call that makes the table's folder writes it; every later call is checked against it, so a trial never
trains into the table, and the summary refuses, named, every run outside it (a trial's --updates-CoNLL-2003 10, a
seed 6, a system the table does not list). The committed table's: CoLA 2,400, SST-2 4,200, CoNLL-2003 2,200
updates, seeds 1-5."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fairseq_syntax.pipeline.atomic import write_text
from .early_stopping import validations
from .result_files import read_json
from .run_record import record_differences

TASKS = ("CoLA", "SST-2", "CoNLL-2003")  # Table 1's
PAIR_TASKS = ("RTE", "MRPC", "STS-B")  # Table 2's
METRIC = {"CoLA": "mcc", "SST-2": "accuracy", "CoNLL-2003": "f1", "RTE": "accuracy", "MRPC": "accuracy",
          "STS-B": "pearson"}
# GLUE's test labels are not public: its tasks are scored on dev, as the SLA paper does
SCORED_SPLIT = {"CoLA": "valid", "SST-2": "valid", "CoNLL-2003": "test", "RTE": "valid", "MRPC": "valid",
                "STS-B": "valid"}
PROTOCOL_FILE = "protocol.json"


def write_or_check(path: str, budget: dict, validations_: int, tasks, seeds, systems, all_seeds, all_systems,
                   table_tasks=TASKS) -> None:
    """A new table's protocol is written (every task of the table, ``table_tasks``); a call into an existing one must
    fit it (budgets of the tasks it trains, validations, seeds, systems), else ValueError naming every difference."""
    if not os.path.exists(path):
        prot = {"tasks": {t: {"max_update": budget[t], "split": SCORED_SPLIT[t]} for t in table_tasks},
                "systems": list(all_systems) if set(systems) <= set(all_systems) else list(systems),
                "seeds": list(all_seeds) if set(seeds) <= set(all_seeds) else list(seeds),
                "validations": validations_}
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        write_text(path, json.dumps(prot, indent=1) + "\n")
        return
    prot = read_json(path, ("tasks", "systems", "seeds"))
    bad = [f"task {t} is not one of the table's ({', '.join(prot['tasks'])})" for t in tasks if t not in prot["tasks"]]
    bad += [f"--updates-{t} {budget[t]}: the table's runs train {prot['tasks'][t]['max_update']} updates (max_update)"
            for t in tasks if t in prot["tasks"] and budget[t] != prot["tasks"][t]["max_update"]]
    if validations_ != prot.get("validations", 10):
        bad.append(f"--validations {validations_}: the table's runs validate {prot.get('validations', 10)} times")
    bad += [f"seed {s} is not one of the table's ({', '.join(map(str, prot['seeds']))})" for s in seeds
            if s not in prot["seeds"]]
    bad += [f"system {s} is not one of the table's" for s in systems if s not in prot["systems"]]
    if bad:
        raise ValueError(f"{'; '.join(bad)} ({path}); a trial goes to its own --out (and --checkpoints)")


def read_protocol(results: Path) -> dict | None:
    path = Path(results) / PROTOCOL_FILE
    if not path.exists():
        print(f"summarize_sla_table.py: {path}: none; the runs are not checked against a protocol", file=sys.stderr)
        return None
    prot = read_json(path, ("tasks", "systems", "seeds"))
    for task, t in prot["tasks"].items():
        if task not in METRIC or not isinstance(t, dict) or set(t) != {"max_update", "split"}:
            raise ValueError(f"{path}: {task}: expected one of {', '.join(METRIC)} with max_update and split")
    return prot


def refusal(e: dict, log: Path, prot: dict | None, systems) -> str | None:
    """Why a run is not of the table's protocol (None: it is), every reason: a system the table (``systems``, the
    summary's own, which a missing protocol cannot widen) or its protocol does not list, a seed the protocol does
    not list, another budget or scored split, or a log that does not reach the budget."""
    listed = [s for s in systems if prot is None or s in prot["systems"]]
    why = []
    if e["system"] not in listed:
        why.append(f"system {e['system']!r} is not one of the table's ({', '.join(listed)})")
    if prot is None:
        return "; ".join(why) + " (a trial: give it its own --out)" if why else None
    if e["seed"] not in prot["seeds"] or isinstance(e["seed"], bool):
        why.append(f"seed {e['seed']!r} is not one of the table's ({', '.join(map(str, prot['seeds']))})")
    want = prot["tasks"].get(e["task"])
    if want is None:
        why.append(f"task {e['task']} is not one of the table's")
    else:
        for key in ("max_update", "split"):
            if e[key] != want[key]:
                why.append(f"its {key} is {e[key]!r}, the table's {want[key]!r}")
        why += record_differences(log, e["seed"], {"max_update": want["max_update"]}, want["split"])
        if log.exists() and e["max_update"] == want["max_update"]:
            reached = max(validations(str(log), METRIC[e["task"]], by="update"), default=None)
            if reached != want["max_update"]:
                why.append(f"its log's last validation is at update {reached}, not the budget's {want['max_update']}")
    return "; ".join(why) + " (a trial: give it its own --out)" if why else None
