#!/usr/bin/env python3
"""The SLA paper's Table 1 or 2 from the runs of examples/encoders/reproduce_sla_table.sh: per task and system the
mean ± std over seeds and each seed's score, each seed's paired test against the baseline of the same seed (exact
McNemar for accuracy: SST-2, RTE, MRPC; a paired bootstrap over sentences for CoLA's MCC, CoNLL-2003's entity F1 and
STS-B's Pearson), Welch's t-test over seeds, the paper's numbers beside ours, and the dev curves that show where the
baseline stopped improving.

    python examples/encoders/summarize_sla_table.py [--table 1|2] --results results/encoders_table1
                                                    [--readme examples/encoders/README.md]

Writes summary.json and summary.md into --results, validation_curves.png and sla_gates.png (the mean SLA and WLA
gate per layer, the paper's Figure 2, from each run's .gates.json) beside them (with matplotlib), and the table into
the README's ``sla-table-summary`` block (Table 2: ``sla-table2-summary``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for examples.studies
from fairseq_syntax.arg_types import int_at_least
from fairseq_syntax.metrics import f1, matthews, pearson, spans
from fairseq_syntax.pipeline.atomic import atomic_path
from examples.studies.early_stopping import validations
from examples.studies.run_protocol import records_line
from examples.studies.run_record import check_records
from examples.studies.readme_block import exit_unless_block, replace_block
from examples.studies.result_files import percent, read_json, read_jsonl
from examples.studies.seed_statistics import (detectable_difference, format_p, format_seed_test, holm,
                                              mcnemar_exact, paired_bootstrap, pooled_sd, seed_test,
                                              signed, significant, welch_interval)
# the tests read METRIC, PAIR_TASKS and TASKS here
from examples.studies.table_protocol import METRIC, PAIR_TASKS, TASKS, read_protocol, refusal  # noqa: F401
from examples.studies.training_log import one_setup, training_setup

SYSTEMS = {"baseline": "BERT-style baseline (roberta_baseline_small)", "wla": "+ WLA (window i ± 3)",
           "sla": "+ SLA (tree distance ≤ 3)", "sgnet": "SG-Net (roberta_sgnet_small)",
           "sgnet_nomask": "SG-Net's layer, no mask (control)",
           "sgnet_random_trees": "SG-Net on random trees (control)",
           "sla_random_trees": "SLA on random trees (control)"}
SHORT = {"baseline": "baseline", "wla": "WLA", "sla": "SLA", "sgnet": "SG-Net", "sgnet_nomask": "SG-Net no mask",
         "sgnet_random_trees": "SG-Net random trees", "sla_random_trees": "SLA random trees"}
CONTROL_OF = {"sgnet_nomask": "sgnet", "sgnet_random_trees": "sgnet", "sla_random_trees": "sla"}
# Welch over seeds is read from 3 seeds a side: on 2 a side CoNLL-2003's WLA read -0.26 F1 (p = 0.009), and
# its third seed took it to -0.11 (p = 0.58)
READ_AT = 3
SEEDS_PLANNED = 5  # the paper's runs per cell, and this table's


def references(system: str) -> list[str]:
    """What a system is tested against: the baseline, and a control also the system it controls."""
    return ["baseline"] + ([CONTROL_OF[system]] if system in CONTROL_OF else [])


# the paper's Table 1, BERT-base (cased for NER), mean of 5 runs: CoLA MCC, SST-2 accuracy, CoNLL-2003 P / R / F1
PAPER = {"baseline": (58.7, 93.1, (91.0, 92.3, 91.6)), "wla": (59.6, 92.8, (91.3, 92.9, 92.1)),
         "sla": (60.0, 93.3, (91.5, 92.9, 92.2)), "sgnet": (59.2, 93.1, (90.9, 92.6, 91.7))}
# the paper's Table 2, BERT-base against + SLA on dev: QNLI, RTE, MRPC accuracy, STS-B Pearson
PAPER2 = {"baseline": (91.7, 68.6, 87.3, 89.5), "sla": (91.4, 67.8, 88.5, 89.9)}
PAPER2_TASKS = ("QNLI", "RTE", "MRPC", "STS-B")
# what each table reads beside its main score (their means are in the table)
SECONDARY = {"CoNLL-2003": ("precision", "recall"), "MRPC": ("f1",), "STS-B": ("spearman",)}
# Each table: its tasks in column order, the task its controls run on, its README block, and its words
TABLES = {
    "1": {"tasks": TASKS, "control_tasks": ("CoNLL-2003",), "block": "sla-table-summary", "paper": PAPER,
          "results": "results/encoders_table1", "study": "sla_table"},
    "2": {"tasks": PAIR_TASKS, "control_tasks": ("MRPC", "STS-B"), "block": "sla-table2-summary", "paper": PAPER2,
          "results": "results/encoders_table2", "study": "sla_table2"},
}


def interval(ci: list[float], paper: float | None) -> str:
    """Welch's 95 % interval of the difference, and where the paper's difference falls against it."""
    text = f", 95% interval [{signed(ci[0])}, {signed(ci[1])}]"
    if paper is None:
        return text
    where = "inside it" if ci[0] <= paper <= ci[1] else ("above it" if paper > ci[1] else "below it")
    return text + f", the paper's {signed(paper, '+.1f')} {where}"


def paper_score(system: str, task: str) -> float:
    """The paper's number for one cell (Table 1's CoNLL-2003: F1)."""
    if task in PAIR_TASKS:
        return PAPER2[system][PAPER2_TASKS.index(task)]
    score = PAPER[system][TASKS.index(task)]
    return score[2] if task == "CoNLL-2003" else score


def curve(log: Path, metric: str) -> list[tuple[int, float]]:
    """(update, dev score) of every validation in a training log (a resumed run's repeat counts once)."""
    return sorted((u, v) for u, (v, _) in validations(str(log), metric, by="update").items())


def item_metric(task: str, rows: list[dict]):
    """The paired bootstrap's metric over a resample ``idx`` of one system's per-sentence rows."""
    if task == "CoNLL-2003":
        counts = np.array([(len(spans(r["gold"]) & spans(r["pred"])), len(spans(r["pred"])), len(spans(r["gold"])))
                           for r in rows], dtype=np.int64)
        return counts, lambda c, idx: f1(*c[idx].sum(0))
    if METRIC[task] == "pearson":  # a regression: gold and predicted scores
        scores = np.array([(r["gold"], r["pred"]) for r in rows], dtype=np.float64)
        return scores, lambda p, idx: pearson(p[idx, 0], p[idx, 1])
    names = sorted({r["gold"] for r in rows} | {r["pred"] for r in rows})
    pairs = np.array([(names.index(r["gold"]), names.index(r["pred"])) for r in rows])
    if task == "CoLA":
        return pairs, lambda p, idx: matthews(p[idx, 0], p[idx, 1])
    return pairs, lambda p, idx: 100.0 * float((p[idx, 0] == p[idx, 1]).mean())


def paired(task: str, a: list[dict], b: list[dict], n_boot: int, names: tuple[str, str]) -> dict:
    if [r["gold"] for r in a] != [r["gold"] for r in b]:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x["gold"] != y["gold"]), min(len(a), len(b)))
        raise ValueError(f"{task}: {names[0]} ({len(a)} sentences) and {names[1]} ({len(b)}) were scored against "
                         f"different gold labels, from sentence {at} on (their .pred.jsonl.gz): not the same split")
    if METRIC[task] == "accuracy":  # exact McNemar on the sentences only one of the two gets right
        only_a = sum(x["correct"] and not y["correct"] for x, y in zip(a, b))
        only_b = sum(y["correct"] and not x["correct"] for x, y in zip(a, b))
        return {"test": "mcnemar", "only_this": only_a, "only_that": only_b,
                "p": significant(mcnemar_exact(only_a, only_b))}
    xa, metric = item_metric(task, a)
    xb, _ = item_metric(task, b)
    t = paired_bootstrap(metric, xa, xb, n_boot=n_boot)
    return {"test": "paired bootstrap", "diff": round(t["diff"], 2), "p": significant(t["p"]), "resamples": n_boot}


def summarize(results: Path, n_boot: int, study: str) -> dict:
    runs: dict = {}
    setups: dict = {}
    where: dict = {}  # device -> the runs trained there
    refused: dict = {}  # runs that are not of the table's protocol, and why
    prot = read_protocol(results)
    candidates = {}
    for ev in sorted(results.glob("*.eval.json")):
        e = read_json(ev, ("task", "system", "seed", "metric", "split", "max_update"))
        name = ev.name[:-len(".eval.json")]
        if name != f"{e['task']}_{e['system']}_seed{e['seed']}" or METRIC.get(e["task"]) != e["metric"]:
            raise ValueError(f"{ev}: holds {e['task']} {e['system']} seed {e['seed']} scored by {e['metric']}, "
                             "not the run its name says")
        percent(ev, e.get(e["metric"]), e["metric"])
        log = results / f"{name}.train.log.gz"
        why = refusal(e, log, prot, SYSTEMS)
        if why:
            refused[name] = why
            print(f"summarize_sla_table.py: refused {name}: {why}", file=sys.stderr)
        else:
            candidates[name] = (ev, e, log)
    # the records, each task's runs compared with each other
    left_out, notes = check_records({n: results / f"{n}.record.json" for n in candidates}, study,
                                    lambda n: candidates[n][1]["task"])
    for name, why in left_out.items():
        refused[name] = why
        print(f"summarize_sla_table.py: refused {name}: {why}", file=sys.stderr)
    for name, (ev, e, log) in candidates.items():
        if name in left_out:
            continue
        stem = results / name
        setup = training_setup(str(log)) if log.exists() else None
        setups[name] = setup
        where.setdefault(e.get("device", "cpu"), []).append(name)
        runs.setdefault(e["task"], {}).setdefault(e["system"], {})[e["seed"]] = {
            "score": round(e[e["metric"]], 2), "_score": e[e["metric"]], "metric": e["metric"], "split": e["split"],
            **{k: round(percent(ev, e.get(k), k), 2) for k in SECONDARY.get(e["task"], ())},
            "best_update": e.get("best_update"), "max_update": e["max_update"], "device": e.get("device", "cpu"),
            "trained": setup, "curve": curve(log, e["metric"]) if log.exists() else [],
            "_rows": read_jsonl(Path(f"{stem}.pred.jsonl.gz"))}
        gates = Path(f"{stem}.gates.json")
        if gates.exists():
            runs[e["task"]][e["system"]][e["seed"]]["gates"] = read_json(gates)
    table = {}
    for task, systems in runs.items():
        for system, seeds in systems.items():
            # the means, stds and Welch tests from the scores as evaluated: two seeds' F1 can differ by less than
            # the 0.01 the table rounds to, and a std of rounded scores would be 0
            exact = [seeds[s]["_score"] for s in sorted(seeds)]
            row = {"seeds": sorted(seeds), "scores": [seeds[s]["score"] for s in sorted(seeds)],
                   "mean": round(statistics.mean(exact), 2),
                   "std": round(statistics.stdev(exact), 2) if len(exact) > 1 else None}
            for k in SECONDARY.get(task, ()):
                row[k] = round(statistics.mean(seeds[s][k] for s in seeds), 2)
            for ref in references(system):
                if ref == system or ref not in systems:
                    continue
                other = systems[ref]
                theirs = [other[s]["_score"] for s in sorted(other)]
                welch = seed_test(exact, theirs)
                if welch and welch["welch_p"] is not None:
                    welch["ci95"] = welch_interval(exact, theirs)
                row[f"vs_{ref}"] = {"welch": welch,
                                    "per_seed": {str(s): paired(task, seeds[s]["_rows"], other[s]["_rows"], n_boot,
                                                                (f"{task}_{system}_seed{s}", f"{task}_{ref}_seed{s}"))
                                                 for s in sorted(seeds) if s in other}}
            curves = [seeds[s]["curve"] for s in sorted(seeds) if seeds[s]["curve"]]
            updates = sorted(set.intersection(*(set(u for u, _ in c) for c in curves))) if curves else []
            row["dev_curve_mean"] = [(u, round(statistics.mean(dict(c)[u] for c in curves), 2)) for u in updates]
            row["best_updates"] = [seeds[s]["best_update"] for s in sorted(seeds)]
            with_gates = {s: seeds[s]["gates"] for s in sorted(seeds) if "gates" in seeds[s]}
            if with_gates:  # the SLA paper's Figure 2: the mean gate per layer, over the seeds' best checkpoints
                per_layer = list(zip(*(g["mean_gate"] for g in with_gates.values())))
                row["gates"] = {"seeds": list(with_gates), "split": next(iter(with_gates.values()))["split"],
                                "mean": [round(statistics.mean(g), 3) for g in per_layer],
                                "std": [round(statistics.stdev(g), 3) if len(g) > 1 else None for g in per_layer]}
                if all("token_std" in g for g in with_gates.values()):  # older gate files lack it
                    row["gates"]["token_std"] = [round(statistics.mean(g), 3) for g in
                                                 zip(*(g["token_std"] for g in with_gates.values()))]
            table.setdefault(task, {})[system] = row
    detectable = {}  # what SEEDS_PLANNED seeds a side can decide, given the seeds' spread so far
    for task, systems in runs.items():
        spread = pooled_sd([[r["_score"] for r in seeds.values()] for seeds in systems.values()])
        if spread:
            detectable[task] = {"pooled_sd": round(spread[0], 3), "df": spread[1], "seeds": SEEDS_PLANNED,
                                "difference": round(detectable_difference(spread[0], SEEDS_PLANNED), 2)}
    read = {(task, system, ref): w for task, sy in table.items() for system, row in sy.items()
            for ref in references(system) if (w := row.get(f"vs_{ref}", {}).get("welch"))
            and w["welch_p"] is not None and min(w["n"]) >= READ_AT}
    for key, p in holm({key: w["welch_p"] for key, w in read.items()}).items():
        read[key].update(holm_p=p, holm_of=len(read))  # the family: every Welch test the reading reads
    for systems in runs.values():
        for seeds in systems.values():
            for r in seeds.values():
                r.pop("_rows"), r.pop("_score")
    return {"table": table, "runs": {t: {s: {str(k): v for k, v in seeds.items()} for s, seeds in sy.items()}
                                     for t, sy in runs.items()}, "paired_bootstrap_resamples": n_boot,
            "detectable": detectable,
            # one precision for the table (fp16 and fp32 runs are refused together), on whichever devices
            "trained": {"setup": one_setup(setups, str(results)), "devices": {d: sorted(n) for d, n in where.items()}},
            **({"records": notes} if notes else {}), **({"refused": refused} if refused else {})}


def cell(row: dict | None, task: str) -> str:
    if row is None:
        return "–"
    s = f"{row['mean']:.2f}" + (f" ± {row['std']:.2f}" if row["std"] is not None else "") + f" ({len(row['scores'])})"
    if task == "CoNLL-2003":
        s = f"{row['precision']:.1f} / {row['recall']:.1f} / " + s
    elif task in SECONDARY:  # MRPC's F1, STS-B's Spearman, after the main score
        s += "".join(f" / {row[k]:.1f}" for k in SECONDARY[task])
    return s


def per_seed(row: dict | None, refs: list[str]) -> str:
    """Each seed's own score, and beside it its paired tests against `refs` of the same seed where there are any
    (the baseline; for a control also the system it controls, named)."""
    if not row:
        return "–"
    parts = []
    for seed, score in zip(row["seeds"], row["scores"]):
        tests = []
        for ref in refs:
            t = row.get(f"vs_{ref}", {}).get("per_seed", {}).get(str(seed))
            if not t:
                continue
            name = "" if ref == "baseline" else f"vs {ref} "
            if t["test"] == "mcnemar":
                tests.append(f"{name}{t['only_this']}/{t['only_that']}, p = {format_p(t['p'], 3)}")
            else:
                tests.append(f"{name}{signed(t['diff'])}, p = {format_p(t['p'], 3)}")
        parts.append(f"s{seed} {score:.2f}" + (f" ({'; '.join(tests)})" if tests else ""))
    return "; ".join(parts)


def trained_on(summary: dict) -> str:
    """Where the runs trained, in words: a run on another machine's GPU keeps the table's precision, not its device."""
    t = summary.get("trained") or {}
    devices = t.get("devices") or {}
    if len(devices) <= 1:
        return f"Trained in {t['setup']}." if t.get("setup") else ""
    parts = []
    for device, names in sorted(devices.items(), key=lambda kv: (kv[0] != "cpu", kv[0])):
        if device == "cpu":
            parts.append(f"{len(names)} runs on the CPU")
            continue
        by_task: dict = {}
        for n in names:
            task, rest = n.split("_", 1)
            system, seed = rest.rsplit("_seed", 1)
            by_task.setdefault(task, {}).setdefault(system, []).append(seed)
        listed = "; ".join(f"{task} " + ", ".join(f"{system} s{'/'.join(sorted(seeds))}"
                                                  for system, seeds in sy.items())
                           for task, sy in by_task.items())
        parts.append(f"{len(names)} on one {device} ({listed})")
    precision = (t.get("setup") or "").split(" on ")[0] or "one precision"
    return f"Trained in {precision}: " + ", ".join(parts) + "."


# Table 2's words where they differ from Table 1's
TABLE2_INTRO = ("MiniLM-L6 (6 layers, 384 wide, uncased WordPieces) fine-tuned from its lifted weights, against the "
                "paper's BERT-base, on sentence pairs read as BERT reads them ([CLS] a [SEP] b [SEP], the second "
                "text of token type 1), each text parsed on its own. Best checkpoint by dev score (validated evenly "
                "over each run and at each epoch's end), scored on dev as the paper does: RTE accuracy, MRPC "
                "accuracy / F1 of the paraphrase class, STS-B Pearson / Spearman (×100). Mean ± sample std over "
                "seeds, (seeds). Welch: the difference of the means against the baseline and Welch's t-test p over "
                "seeds (a control: against the system it controls, in the control columns). QNLI: its train split "
                "is not available offline, so it is not run; the paper's QNLI is in the last column.")
TABLE2_HEADER = ("| system | RTE acc. | MRPC acc. / F1 | STS-B Pearson / Spearman | RTE Δ (Welch) | "
                 "MRPC Δ (Welch) | STS-B Δ (Welch) | control Δ vs its system: MRPC / STS-B (Welch) | "
                 "paper: QNLI / RTE / MRPC / STS-B |")


def markdown(summary: dict, planned: list[str] | None, table: str = "1") -> str:
    t = summary["table"]
    spec = TABLES[table]
    tasks, paper_table = spec["tasks"], spec["paper"]
    done = {f"{task}_{system}_seed{seed}" for task, sy in t.items() for system, r in sy.items()
            for seed in r["seeds"]}
    if table == "1":
        out = ["MiniLM-L6 (6 layers, 384 wide, uncased WordPieces) fine-tuned from its lifted weights, against the "
               "paper's BERT-base (cased for NER). Best checkpoint by dev score (validated evenly over each run and at "
               "each epoch's end); CoLA MCC and SST-2 accuracy on dev, CoNLL-2003 entity precision / recall / F1 on "
               "test (conlleval's counting). Mean ± sample std over seeds, (seeds). Welch: the difference of the "
               "means against the baseline and Welch's t-test p over seeds (a control: against the system it "
               "controls, in the last column).", trained_on(summary), "",
               "| system | CoLA MCC | SST-2 acc. | CoNLL-2003 P / R / F1 | CoLA Δ (Welch) | SST-2 Δ (Welch) | "
               "CoNLL-2003 F1 Δ (Welch) | control Δ F1 vs its system (Welch) | paper: CoLA / SST-2 / CoNLL F1 |",
               "|---|---|---|---|---|---|---|---|---|"]
    else:
        out = [TABLE2_INTRO, trained_on(summary), "", TABLE2_HEADER, "|---|---|---|---|---|---|---|---|---|"]
    if summary.get("records"):
        out[1:1] = [records_line(summary["records"])]
    if summary.get("refused"):  # said before the table, so nobody reads it as holding them
        out[1:1] = [" ".join(["**Not in the table** (not of its protocol):"] +
                             [f"{name}: {why};" for name, why in sorted(summary["refused"].items())])]
    for system, label in SYSTEMS.items():
        rows = {task: t.get(task, {}).get(system) for task in tasks}
        if not any(rows.values()):
            continue
        deltas = [format_seed_test(rows[task]["vs_baseline"]["welch"]) if rows[task] and "vs_baseline" in rows[task]
                  else "–" for task in tasks]
        ref = CONTROL_OF.get(system)
        cdelta = " / ".join(format_seed_test(rows[c][f"vs_{ref}"]["welch"])
                            if ref and rows[c] and f"vs_{ref}" in rows[c] else "–" for c in spec["control_tasks"])
        cdelta = "–" if set(cdelta.split(" / ")) == {"–"} else cdelta
        paper = paper_table.get(system)
        if table == "1":
            paper_cells = f"{paper[0]} / {paper[1]} / {paper[2][2]}" if paper else "–"
        else:
            paper_cells = " / ".join(map(str, paper)) if paper else "–"
        out.append(f"| {label} | " + " | ".join(cell(rows[task], task) for task in tasks) + " | " + " | ".join(deltas)
                   + f" | {cdelta} | " + paper_cells + " |")
    n_boot = summary["paired_bootstrap_resamples"]
    smallest = format_p(significant(1 / (n_boot + 1)), 3)
    if table == "1":
        tests = ("(SST-2: sentences only this / only the baseline gets right, exact McNemar p; CoLA and CoNLL-2003: "
                 "the difference and a paired bootstrap p over sentences")
    else:
        tests = ("(RTE and MRPC: pairs only this / only the baseline gets right, exact McNemar p; STS-B: the "
                 "difference in Pearson and a paired bootstrap p over pairs")
    out += ["", "Per seed: each seed's score and, in brackets, its paired test against the baseline of the same seed "
            f"{tests}, {n_boot:,} resamples, so its smallest p is 1/{n_boot + 1:,}, printed {smallest})"
            "; a control also against the system it controls (vs sgnet, vs sla):", "",
            "| system | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    for system, label in SYSTEMS.items():
        if not any(t.get(task, {}).get(system) for task in tasks):
            continue
        out.append(f"| {label} | " + " | ".join(per_seed(t.get(task, {}).get(system), references(system))
                                                for task in tasks) + " |")
    out += ["", f"**Reading** (told apart: Welch p < 0.05 over seeds, at least {READ_AT} seeds a side; with 2 a side "
            "Welch's p is printed but not read, because two seeds that happen to agree make a system's spread look "
            "smaller than it is. Each seed that lands is another look at the same question, so a p near 0.05 before "
            f"{SEEDS_PLANNED} seeds a side is weak. Beside each p read, Holm's adjustment over every comparison read "
            "in the table: among that many tests a p below 0.05 comes by chance now and then, and only a Holm p below "
            "0.05 stands for the table as a whole. Then Welch's 95% interval of the difference: the differences the "
            "seeds leave possible, and where the paper's difference from its BERT falls against it):", ""]
    for task in tasks:
        untested = []  # one line per task for the pairs with too few seeds, not one line each
        for system in SYSTEMS:
            row = t.get(task, {}).get(system, {})
            for ref in references(system):
                test = row.get(f"vs_{ref}")
                if not test:
                    continue
                w = test["welch"]
                seeds = test["per_seed"].values()
                below = sum(x["p"] < 0.05 for x in seeds)
                if w is None:
                    untested.append(f"{SHORT[system]} vs {SHORT[ref]} {below} of {len(seeds)}")
                    continue
                if w["welch_p"] is None:
                    verdict = f"{signed(w['diff'])}, no Welch p (neither side varies over seeds)"
                elif "holm_p" not in w:  # summarize() reads a test only from READ_AT seeds a side
                    verdict = (f"{signed(w['diff'])}, Welch p = {format_p(w['welch_p'], 3)} on {w['n'][0]} against "
                               f"{w['n'][1]} seeds: not read yet (fewer than {READ_AT} seeds a side)")
                else:
                    verdict = (f"{signed(w['diff'])}, Welch p = {format_p(w['welch_p'], 3)} (Holm over {w['holm_of']}: "
                               f"{format_p(w['holm_p'], 3)}): "
                               + ("told apart" if w["welch_p"] < 0.05 else "not told apart")
                               + (", but not by Holm's p" if w["welch_p"] < 0.05 <= w["holm_p"] else "")
                               + interval(w["ci95"], paper_score(system, task) - paper_score("baseline", task)
                                          if ref == "baseline" and system in paper_table else None))
                out.append(f"- {task}, {SYSTEMS[system]} against {SYSTEMS[ref]}: {verdict}; paired p < 0.05 on "
                           f"{below} of {len(seeds)} seeds.")
        if untested:
            out.append(f"- {task}, not yet tested over seeds (fewer than 2 seeds a side); the seeds with a paired "
                       f"p < 0.05: " + ", ".join(untested) + ".")
    if summary.get("detectable"):
        compared = [s for s in ("wla", "sla", "sgnet") if s in paper_table]
        out += ["", f"What {SEEDS_PLANNED} seeds a side can decide: the smallest difference Welch's test finds with "
                f"80% power (two-sided 0.05, equal spreads), from the seeds' spread so far (pooled over the systems, "
                "each around its own mean), beside the paper's differences from its BERT ("
                + ", ".join(SHORT[s] for s in compared) + "):", ""]
        for task in tasks:
            d = summary["detectable"].get(task)
            if d:
                paper = ", ".join(signed(paper_score(s, task) - paper_score("baseline", task), "+.1f")
                                  for s in compared)
                name = {"mcc": "MCC", "accuracy": "accuracy", "f1": "F1", "pearson": "Pearson"}[METRIC[task]]
                out.append(f"- {task} {name}: spread {d['pooled_sd']:.2f} ({d['df']} df), so a difference of "
                           f"{d['difference']:.2f}; the paper's {paper}.")
    gated = [(task, system, row["gates"])
             for task in tasks for system, row in t.get(task, {}).items() if "gates" in row]
    if gated:
        layers = len(gated[0][2]["mean"])
        out += ["", "Mean gate g per layer (the SLA paper's Figure 2; g near 1: the layer reads its local "
                "neighbourhood, near 0: global attention; it starts near 0.5, with b_g = 0 and W_g ~ N(0, 0.02²)), "
                "averaged over every token of the scored split, mean ± std over the seeds' best checkpoints "
                "(`sla_gates.png`); under it, how far single tokens' gates spread: the std over the tokens, mean over "
                "seeds:", "",
                "| task | system | " + " | ".join(f"layer {i + 1}" for i in range(layers)) + " | seeds |",
                "|---|---|" + "---|" * layers + "---|"]
        for task, system, g in gated:
            out.append(f"| {task} | {SYSTEMS[system]} | " + " | ".join(
                f"{m:.3f}" + (f" ± {sd:.3f}" if sd is not None else "") for m, sd in zip(g["mean"], g["std"]))
                + f" | {len(g['seeds'])} |")
            if "token_std" in g:
                out.append("| | spread over tokens | " + " | ".join(f"{sd:.3f}" for sd in g["token_std"]) + " | |")
    out += ["", "Dev curves (mean over seeds; the baseline must have stopped improving before the budget ends):", ""]
    for task in tasks:
        base = t.get(task, {}).get("baseline")
        if base and base["dev_curve_mean"]:
            c = base["dev_curve_mean"]
            u0, v0 = next((u, v) for u, v in c if u >= 0.8 * c[-1][0])
            best = max(v for _, v in c)
            out.append(f"- {task}, baseline {METRIC[task]}: " + ", ".join(f"{v:.1f}@{u}" for u, v in c)
                       + f"; best checkpoints at updates {', '.join(str(u) for u in base['best_updates'])} of "
                       f"{c[-1][0]}. Over the last fifth of the run (from update {u0}) the best rose by "
                       f"{signed(best - max(v for u, v in c if u <= u0))}.")
    if planned:
        others = len(done - set(planned))
        out += ["", f"Finished: {len(done & set(planned))} of the {len(set(planned))} planned runs."
                + (f" The folder also holds {others} finished runs outside this plan." if others else "")]
    return "\n".join(out) + "\n"


def plot(summary: dict, path: Path, table: str = "1") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [task for task in TABLES[table]["tasks"] if task in summary["table"]]
    if not tasks:
        return
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.5), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for system, row in summary["table"][task].items():
            if row["dev_curve_mean"]:
                u, v = zip(*row["dev_curve_mean"])
                ax.plot(u, v, label=system, linewidth=2 if system == "baseline" else 1)
        ax.set_title(f"{task}: dev {METRIC[task]}")
        ax.set_xlabel("update")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(str(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})


def plot_gates(summary: dict, path: Path, table: str = "1") -> None:
    """The SLA paper's Figure 2: mean gate per layer, WLA against SLA (and SLA on random trees), one panel a task."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [task for task in TABLES[table]["tasks"]
             if any("gates" in row for row in summary["table"].get(task, {}).values())]
    if not tasks:
        return
    style = {"wla": ("tab:blue", "-"), "sla": ("tab:red", "-"), "sla_random_trees": ("tab:gray", "--")}
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.3), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for system, row in summary["table"][task].items():
            if "gates" not in row:
                continue
            g = row["gates"]
            layers = range(1, len(g["mean"]) + 1)
            color, line = style.get(system, (None, ":"))
            ax.errorbar(layers, g["mean"], yerr=[sd or 0 for sd in g["std"]], color=color, linestyle=line,
                        marker="o", capsize=3, label=f"{system} ({len(g['seeds'])})")
        ax.set_title(f"{task}: mean gate per layer")
        ax.set_xlabel("layer")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("gate g (local share)")
    fig.tight_layout()
    with atomic_path(str(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table", choices=sorted(TABLES), default="1", help="the paper's table (default 1)")
    p.add_argument("--results", type=Path, default=None, help="the runs' folder (default results/encoders_tableN)")
    p.add_argument("--readme", type=Path, default=None,
                   help="also write the table into this file's sla-table-summary (Table 2: sla-table2-summary) block")
    p.add_argument("--planned", nargs="+", default=None, metavar="TASK_SYSTEM_seedN",
                   help="the runs the reproduction plans (CoLA_sla_seed1 ...): the summary says how many are finished")
    p.add_argument("--bootstrap", type=int_at_least(10), default=1000, help="paired bootstrap resamples (at least 10; "
                   "p cannot fall below 1/N)")
    a = p.parse_args(argv)
    spec = TABLES[a.table]
    a.results = a.results or Path(__file__).resolve().parents[2] / spec["results"]
    exit_unless_block(p, a.readme, spec["block"])  # answered before any work, not after it
    if not a.results.is_dir():
        p.exit(1, f"summarize_sla_table.py: error: {a.results}: no such folder\n")
    if not any(a.results.glob("*.eval.json")):
        p.exit(1, f"summarize_sla_table.py: error: {a.results}: no finished run (*.eval.json) to summarize; "
                  "run examples/encoders/reproduce_sla_table.sh first\n")
    try:
        summary = summarize(a.results, a.bootstrap, spec["study"])
    except (ValueError, FileNotFoundError) as e:
        p.exit(1, f"summarize_sla_table.py: error: {e}\n")
    md = markdown(summary, a.planned, a.table)
    for name, text in (("summary.json", json.dumps(summary, indent=1) + "\n"), ("summary.md", md)):
        with atomic_path(str(a.results / name)) as tmp:
            Path(tmp).write_text(text, encoding="utf-8")
    try:
        plot(summary, a.results / "validation_curves.png", a.table)
        plot_gates(summary, a.results / "sla_gates.png", a.table)
    except ImportError:
        print("summarize_sla_table.py: matplotlib is not installed; no validation_curves.png or sla_gates.png",
              file=sys.stderr)
    if a.readme:
        replace_block(a.readme, spec["block"], md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
