#!/usr/bin/env python
"""Table of the RACE runs (results/race/*.eval.json, from examples/race/reproduce.sh) and paired tests between them.

Per system: accuracy on RACE-M, RACE-H and RACE dev (RACE = all questions of both levels, so weighted by
question), mean ± sample std over seeds, and the exact one-sided binomial p of beating chance (25 %) for every
run. Against the baseline of the same seed: the exact McNemar p on the questions one system gets right and the
other wrong (per-question predictions, ``*.pred.jsonl.gz``); over seeds: the difference of the means with
Welch's p (seed_statistics.py), when both sides have two seeds or more. Writes ``summary.json``, ``summary.md``
and, with ``--figure``, accuracy by question length for the baseline against SG-Net (the AAAI paper's Figure 4
reading, here on RACE); with ``--readme`` the table also goes into that file's ``--block`` (``race-summary`` by
default).
"""
from __future__ import annotations

import sys
import argparse
import json
import statistics
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for examples.studies
from fairseq_syntax.pipeline.atomic import atomic_path
from examples.studies.readme_block import exit_unless_block, replace_block
from examples.studies.result_files import percent, read_json, read_jsonl
from examples.studies.run_protocol import admit, read_protocol, records_line, refused_line, split_run
from examples.studies.seed_statistics import format_p, format_seed_test, keyed, mcnemar_exact, seed_test, significant

PROG = "examples/race/summarize.py"
ORDER = ["baseline", "sgnet", "sgnet_alone", "sgnet_nomask", "sgnet_random_trees", "sgnet_2layers",
         "sgnet_2layers_nomask", "sla"]
LABELS = {
    "baseline": "baseline (roberta_baseline_small)",
    "sgnet": "SG-Net, dual aggregation α = 0.5",
    "sgnet_alone": "syntax-guided layer alone (H̄ = H′)",
    "sgnet_nomask": "extra attention layer, no mask (parameter-matched)",
    "sgnet_random_trees": "SG-Net on random trees",
    "sgnet_2layers": "SG-Net, two SDOI layers (the parse reaches `<s>`)",
    "sgnet_2layers_nomask": "two extra attention layers, no mask",
    "sla": "SLA (roberta_sla_small)",
}
# SG-Net's variants, each read against the SG-Net it varies (as the paper's ablation)
VARIANT_OF = {"sgnet_alone": "sgnet", "sgnet_nomask": "sgnet", "sgnet_random_trees": "sgnet",
              "sgnet_2layers": "sgnet", "sgnet_2layers_nomask": "sgnet_2layers"}
LEVELS = ("RACE-M", "RACE-H", "RACE")
SETUP = ("recipe", "updates", "batch_size", "lr", "max_positions", "train_subset")  # one table, one recipe
LENGTH_BINS = ((1, 5), (6, 8), (9, 11), (12, 15), (16, 10 ** 6))


def load_runs(results: Path, tag: str) -> tuple[dict, dict, list]:
    """({system: {seed: its eval.json, with predictions}}, {run refused: why}, notes on the records): a run is
    admitted only if it is of the table's protocol (studies/run_protocol.py), with the systems this summary knows,
    and its record agrees with the others'."""
    prefix = f"{tag}_" if tag else ""
    names = [path.name[: -len(".eval.json")] for path in sorted(results.glob(f"{prefix}*.eval.json"))]
    if not tag:  # a --tag's runs, which have their protocol beside this one, are a table of their own
        tags = [q.name[: -len(".protocol.json")] for q in results.glob("?*.protocol.json")]
        names = [n for n in names if not any(n.startswith(f"{other}_") for other in tags)]
    evals = {n: read_json(results / f"{n}.eval.json", SETUP + LEVELS + ("split",)) for n in names}
    admitted, refused, notes = admit(names, lambda n: results / f"{n}.train.log.gz",
                                     read_protocol(results, PROG, tag), PROG, ORDER, lambda n: evals[n]["split"],
                                     prefix, study="race")
    runs = {}
    for name in admitted:
        path, r = results / f"{name}.eval.json", evals[name]
        for level in LEVELS:  # (a level without questions has no accuracy)
            if isinstance(r[level], dict) and r[level].get("n"):
                percent(path, r[level].get("accuracy"), f"{level} accuracy")
        pred = path.with_name(path.name.replace(".eval.json", ".pred.jsonl.gz"))
        r["predictions"] = keyed(read_jsonl(pred), lambda x: (x["id"], x["question"]), str(pred))
        system, seed = split_run(name[len(prefix):])
        runs.setdefault(system, {})[seed] = r
    return runs, refused, notes


def mcnemar(a: dict, b: dict, level: str | None = None, other: str = "baseline") -> dict:
    keys = [k for k in a if level is None or a[k]["level"] == level]
    if set(keys) - set(b):
        raise ValueError("the two runs were not scored on the same questions")
    only_a = sum(a[k]["correct"] and not b[k]["correct"] for k in keys)
    only_b = sum(b[k]["correct"] and not a[k]["correct"] for k in keys)
    return {"only_system_right": only_a, f"only_{other}_right": only_b,
            "mcnemar_p": significant(mcnemar_exact(only_a, only_b))}


def mcnemar_cell(t: dict, other: str) -> str:
    """A table cell: questions only this system got right / only the other, and the exact p."""
    return f"{t['only_system_right']}/{t[f'only_{other}_right']}, p = {format_p(t['mcnemar_p'], 3)}"


def summarize(runs: dict) -> dict:
    setups = {tuple(r[k] for k in SETUP) for seeds in runs.values() for r in seeds.values()}
    if len(setups) > 1:
        raise ValueError(f"runs of different recipes are not compared in one table: {sorted(setups)}")
    out = {"setup": dict(zip(SETUP, next(iter(setups)))) if setups else None, "systems": {}}
    out["setup"]["devices"] = sorted({r.get("device", "cpu") for seeds in runs.values() for r in seeds.values()})
    out["setup"]["updates_reached"] = {f"{system}_seed{s}": r.get("updates_reached")
                                       for system, seeds in runs.items() for s, r in seeds.items()}
    base = runs.get("baseline", {})
    for system in [s for s in ORDER if s in runs] + sorted(set(runs) - set(ORDER)):
        seeds = runs[system]
        row = {"seeds": sorted(seeds), "per_seed": {}}
        both = all(seeds[min(seeds)][lv]["n"] for lv in ("RACE-M", "RACE-H"))
        for level in LEVELS:
            if level == "RACE" and not both:  # one level scored: "RACE" would only repeat it
                row[level] = {"mean": None, "std": None, "n": 0}
                continue
            accs = [seeds[s][level]["accuracy"] for s in sorted(seeds) if seeds[s][level]["n"]]
            row[level] = {"mean": round(statistics.mean(accs), 2) if accs else None,
                          "std": round(statistics.stdev(accs), 2) if len(accs) > 1 else None,
                          "n": seeds[min(seeds)][level]["n"]}
            if system != "baseline" and base:
                b_accs = [base[s][level]["accuracy"] for s in sorted(base) if base[s][level]["n"]]
                row[level]["vs_baseline_over_seeds"] = seed_test(accs, b_accs)
        for s in sorted(seeds):
            r = seeds[s]
            per = {level: {"accuracy": r[level]["accuracy"], "p_above_chance": significant(r[level]["p_above_chance"])}
                   for level in LEVELS if r[level]["n"] and (level != "RACE" or both)}
            if system != "baseline" and s in base:  # on every question both scored
                per["vs_baseline"] = {"scored": mcnemar(r["predictions"], base[s]["predictions"])}
            other = runs.get(VARIANT_OF.get(system), {})
            if s in other:
                per["vs_reference"] = {"against": VARIANT_OF[system],
                                       "scored": mcnemar(r["predictions"], other[s]["predictions"], other="reference")}
            row["per_seed"][s] = per
        out["systems"][system] = row
    return out


def table(summary: dict) -> str:
    setup = summary["setup"]
    short = {k: v for k, v in setup["updates_reached"].items() if v is not None and v < setup["updates"]}
    stopped = (" Stopped by the time limit before the planned updates: "
               + ", ".join(f"{k} at {v:,}" for k, v in sorted(short.items())) + ".") if short else ""
    lines = [f"Fine-tuned from MiniLM-L6 ({setup['recipe']} recipe: {setup['updates']:,} updates of "
             f"{setup['batch_size']} questions from `{setup['train_subset']}`, lr {setup['lr']:g}, "
             f"{setup['max_positions']} positions; on {', '.join(setup['devices'])}); the last checkpoint on RACE dev, "
             f"accuracy %; p: exact McNemar against the baseline of the same seed; chance is 25 %.{stopped}", "",
             "| system | seeds | RACE-M | RACE-H | RACE | vs baseline, all scored questions (only this right / only "
             "the baseline right, McNemar p, per seed) | RACE-M over seeds (Welch) | SG-Net's variants vs the SG-Net "
             "they vary (only this right / only that right, McNemar p, per seed) |",
             "|---|---|---|---|---|---|---|---|"]
    for system, row in summary["systems"].items():
        cells = []
        for level in LEVELS:
            r = row[level]
            if r["mean"] is None:
                cells.append("–")
            else:
                cells.append(f"{r['mean']:.2f}" + (f" ± {r['std']:.2f}" if r["std"] is not None else ""))
        vs = [mcnemar_cell(per["vs_baseline"]["scored"], "baseline") for per in row["per_seed"].values()
              if "vs_baseline" in per]
        vs_ref = [mcnemar_cell(per["vs_reference"]["scored"], "reference") for per in row["per_seed"].values()
                  if "vs_reference" in per]
        welch = format_seed_test(row["RACE-M"].get("vs_baseline_over_seeds")) if system != "baseline" else "–"
        lines.append(f"| {LABELS.get(system, system)} | {len(row['seeds'])} | " + " | ".join(cells)
                     + f" | {'; '.join(vs) or '–'} | {welch} | {'; '.join(vs_ref) or '–'} |")
    worst = max((per[level]["p_above_chance"], system, level) for system, row in summary["systems"].items()
                for per in row["per_seed"].values() for level in LEVELS if level in per)
    verdict = "every run learned (p < 0.01 against chance)" if worst[0] < 0.01 else \
        "not every run is told apart from chance at p < 0.01"
    lines += ["", f"The largest exact binomial p against 25 %, over every run and level: {format_p(worst[0], 3)} "
                  f"({LABELS.get(worst[1], worst[1])}, {worst[2]}): {verdict}."]
    if summary.get("records"):
        lines += ["", records_line(summary["records"])]
    if summary.get("refused"):
        lines += ["", refused_line(summary["refused"])]
    return "\n".join(lines) + "\n"


def length_figure(runs: dict, out: Path) -> None:
    """Accuracy by question length (words), baseline against SG-Net, pooled over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    labels = [f"{a}–{b}" if b < 10 ** 6 else f"≥{a}" for a, b in LENGTH_BINS]
    for system, style in (("baseline", "o-"), ("sgnet", "s-")):
        if system not in runs:
            continue
        accs, ns = [], []
        for a, b in LENGTH_BINS:
            rows = [x for r in runs[system].values() for x in r["predictions"].values()
                    if a <= x["question_words"] <= b]
            accs.append(100.0 * sum(x["correct"] for x in rows) / len(rows) if rows else float("nan"))
            ns.append(len(rows))
        ax.plot(range(len(labels)), accs, style, label=LABELS[system])
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("question length (words)")
    ax.set_ylabel("RACE dev accuracy (%)")
    ax.axhline(25, color="grey", lw=0.8, ls=":")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(str(out)) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default="results/race")
    p.add_argument("--tag", default="", help="the runs of examples/race/reproduce.sh --tag NAME")
    p.add_argument("--readme", default=None, help="also write the table into this file's --block block")
    p.add_argument("--block", default="race-summary",
                   help="the README block: race-summary (the CPU budget), race-gpu-summary (the GPU recipe)")
    p.add_argument("--figure", default=None, help="accuracy by question length, baseline against SG-Net (PNG)")
    a = p.parse_args(argv)
    exit_unless_block(p, a.readme, a.block)  # answered before any work, not after it
    results = Path(a.results)
    try:  # a damaged or mismatched results file: its message names it
        runs, refused, notes = load_runs(results, a.tag)
        if not runs:
            print(f"examples/race/summarize.py: no runs in {results}")
            return 1
        summary = summarize(runs)
        if notes:
            summary["records"] = notes
        if refused:
            summary["refused"] = refused
    except ValueError as e:
        p.exit(1, f"examples/race/summarize.py: error: {e}\n")
    name = f"{a.tag}_summary" if a.tag else "summary"
    with atomic_path(str(results / f"{name}.json")) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    text = table(summary)
    with atomic_path(str(results / f"{name}.md")) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    if a.readme:
        replace_block(Path(a.readme), a.block, text)
    if a.figure:
        length_figure(runs, Path(a.figure))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
