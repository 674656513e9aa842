"""Summarize the Multi30k runs of examples/multi30k/reproduce.sh: convergence, sacreBLEU per test set, seeds, p-values.

    python examples/multi30k/summarize.py --data work/multi30k --results results/multi30k

Writes ``summary.json`` and ``summary.md`` into --results, and with ``--readme`` the mean ± std table into the
README's ``multi30k-summary`` block (examples/studies/readme_block.py). Each run's convergence (epochs, best epoch and
update by validation loss, why it stopped) is read from its compressed training log; scores come from the
hypotheses in ``hyp/`` against the raw references of every test set in ``testsets.tsv``. Per system and test
set: mean ± sample std over seeds; per seed: the paired bootstrap p against vanilla of the same seed
(sacreBLEU, 1,000 resamples), which sees only the test set's sampling noise; over seeds: the difference of the
means against vanilla and Welch's t-test p, which also sees the training noise that makes seeds differ (the same
seed does not pair two architectures, so the test is unpaired). Each control (random trees, vanilla + 1 layer,
learned α, first_head) is also compared with SG-Net the same two ways: random trees against SG-Net asks whether
the parse is what matters, vanilla + 1 layer against SG-Net whether the extra layer alone does it. Only finished
runs (stopped by patience or the update cap) are scored; ``--planned`` (the reproduce script's runs) says which
are still missing. Each run's precision and device come from its log (training_log.py); runs trained in
different precisions are refused rather than averaged. The α a learned-α run settled on comes from
``learned_alpha/`` (written by the reproduce script with examples/studies/learned_alpha.py).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for examples.studies
from fairseq_syntax.arg_types import int_at_least
from examples.studies.early_stopping import convergence
from fairseq_syntax.pipeline.atomic import atomic_path
from examples.studies.readme_block import exit_unless_block, replace_block
from examples.studies.run_protocol import admit, read_protocol, records_line, refused_line, split_run
from examples.studies.result_files import read_json, read_lines
from examples.studies.seed_statistics import format_seed_test, seed_test
from examples.studies.training_log import one_setup, training_setup

PROG = "examples/multi30k/summarize.py"
BASELINE = "vanilla"
SGNET = "sgnet"
ORDER = ["vanilla", "sgnet", "sgnet_random_trees", "vanilla_plus1", "sgnet_learn_alpha", "sgnet_first_head"]
LABELS = {
    "vanilla": "vanilla transformer (3+3 layers)",
    "sgnet": "SG-Net (+1 SDOI layer)",
    "sgnet_random_trees": "SG-Net, random trees (control)",
    "vanilla_plus1": "vanilla, 4 encoder layers (parameter-matched)",
    "sgnet_learn_alpha": "SG-Net, learned α",
    "sgnet_first_head": "SG-Net, first_head subwords",
}


def references(system: str) -> list[str]:
    """The systems this one is compared with: vanilla for SG-Net, vanilla and SG-Net for every control."""
    return [] if system == BASELINE else [BASELINE] if system == SGNET else [BASELINE, SGNET]


def summarize(data: Path, results: Path, patience: int, max_update: int, n_boot: int, min_delta: float = 0.0) -> dict:
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    tests = [line.split("\t") for line in read_lines(data / "bin" / "testsets.tsv") if line]
    runs: dict[str, dict[int, dict]] = {}
    logs = {log.name[: -len(".train.log.gz")]: log for log in sorted((results / "logs").glob("*.train.log.gz"))}
    scored = lambda n: all((results / "hyp" / f"{n}.{split}.de.gz").exists() for split, _, _ in tests)  # noqa: E731
    admitted, refused, notes = admit(logs, logs.get, read_protocol(results, PROG), PROG, ORDER, study="multi30k",
                                     record_of_name=lambda n: results / "logs" / f"{n}.record.json", scored=scored)
    for name in admitted:
        log = logs[name]
        system, seed = split_run(name)
        conv = convergence(str(log), "loss", patience, max_update, min_delta=min_delta)
        run = runs.setdefault(system, {})[seed] = {"convergence": conv, "training": training_setup(str(log)),
                                                   "scores": {}}
        alpha = results / "learned_alpha" / f"{system}_seed{seed}.json"  # written by examples/studies/learned_alpha.py
        if conv["stopped"] and alpha.exists():
            run["learned_alpha"] = read_json(alpha)
    trained = one_setup({f"{s} seed {k}": r["training"] for s, seeds in runs.items() for k, r in seeds.items()
                         if r["convergence"]["stopped"]}, str(results / "logs"))
    refs = {split: read_lines(data / "raw" / f"{split}.de") for split, _, _ in tests}
    hyps: dict[tuple, list[str]] = {}
    for system, seeds in runs.items():
        for seed, run in seeds.items():
            for split, _, _ in tests:
                path = results / "hyp" / f"{system}_seed{seed}.{split}.de.gz"
                if run["convergence"]["stopped"] and path.exists():
                    hyps[system, seed, split] = read_lines(path)
                    if len(hyps[system, seed, split]) != len(refs[split]):
                        raise ValueError(f"{path}: {len(hyps[system, seed, split])} lines for "
                                         f"{len(refs[split])} references")
    bleu, chrf = BLEU(), CHRF()
    for (system, seed, split), h in hyps.items():
        runs[system][seed]["scores"][split] = {"BLEU": round(bleu.corpus_score(h, [refs[split]]).score, 2),
                                               "chrF2": round(chrf.corpus_score(h, [refs[split]]).score, 2)}
    signatures = ({"BLEU": str(bleu.get_signature()), "chrF2": str(chrf.get_signature())} if hyps
                  else {"BLEU": None, "chrF2": None})
    # paired bootstrap against vanilla (and, for a control, SG-Net) of the same seed, per test set
    for (system, seed, split), h in hyps.items():
        for ref in references(system):
            base = hyps.get((ref, seed, split))
            if base is None:
                continue
            _, res = PairedTest([(ref, base), (system, h)], {"BLEU": BLEU(), "chrF2": CHRF()}, [refs[split]],
                                test_type="bs", n_samples=n_boot)()
            runs[system][seed]["scores"][split][f"paired_bs_p_vs_{ref}"] = {
                "BLEU": round(res["BLEU"][1].p_value, 4), "chrF2": round(res["chrF2"][1].p_value, 4)}
    table = {}
    for system, seeds in runs.items():
        for split, name, _ in tests:
            for metric in ("BLEU", "chrF2"):
                vals = [seeds[s]["scores"][split][metric] for s in sorted(seeds) if split in seeds[s]["scores"]]
                if vals:
                    cell = table.setdefault(system, {}).setdefault(name, {})[metric] = {
                        "mean": round(statistics.mean(vals), 2),
                        "std": round(statistics.stdev(vals), 2) if len(vals) > 1 else None, "n": len(vals)}
                    for ref in references(system):
                        other = [r["scores"][split][metric] for r in runs.get(ref, {}).values() if split in r["scores"]]
                        cell[f"vs_{ref}"] = seed_test(vals, other)
    cap = results / "hyp" / "max-len-b"  # written by the reproduce script only for a cap other than fairseq's 200
    beam = f"beam 5, at most {int(cap.read_text())} tokens" if cap.exists() else "beam 5"
    return {"test_sets": [{"split": s, "name": n, "sentences": int(k)} for s, n, k in tests],
            "selection": f"best checkpoint by validation loss; {beam}; detokenized (Moses) output",
            "early_stopping": {"patience_epochs": patience, "min_delta": min_delta, "max_update": max_update},
            "trained": trained, "signatures": signatures, "paired_bootstrap_resamples": n_boot,
            "systems": {s: LABELS.get(s, s) for s in runs}, "table": table,
            "runs": {s: {str(k): v for k, v in sorted(seeds.items())} for s, seeds in runs.items()},
            **({"records": notes} if notes else {}), **({"refused": refused} if refused else {})}


def versus(c: dict | None, ref: str = BASELINE) -> str:
    """A table cell: the difference of the means against ``ref``, and Welch's p over seeds."""
    return format_seed_test((c or {}).get(f"vs_{ref}"))


def ordered_systems(summary: dict) -> list[str]:
    """The systems with scores, in ORDER, then any others by name."""
    return [s for s in ORDER if s in summary["table"]] + sorted(set(summary["table"]) - set(ORDER))


def mean_std(c: dict | None) -> str:
    """A table cell: mean ± std over seeds (mean alone for one seed, – for none)."""
    return "–" if c is None else f"{c['mean']:.2f}" + (f" ± {c['std']:.2f}" if c["std"] is not None else "")


def markdown(summary: dict) -> str:
    names = [t["name"] for t in summary["test_sets"]]
    systems = ordered_systems(summary)
    out = ["| system | seeds | " + " | ".join(f"{n} BLEU" for n in names) + " | " +
           " | ".join(f"{n} chrF2" for n in names) + " |",
           "|---|---|" + "---|" * (2 * len(names))]
    for s in systems:
        row = summary["table"][s]
        cells = []
        for metric in ("BLEU", "chrF2"):
            for n in names:
                cells.append(mean_std(row.get(n, {}).get(metric)))
        seeds = max((c["BLEU"]["n"] for c in row.values()), default=0)
        out.append(f"| {LABELS.get(s, s)} | {seeds} | " + " | ".join(cells) + " |")
    out += ["", "Over seeds, against vanilla and (for the controls) against SG-Net: the difference of the means, p: "
            "Welch's t-test over seeds:", "",
            "| system | " + " | ".join(f"{n} {m} vs {r}" for m in ("BLEU", "chrF2") for r in (BASELINE, SGNET)
                                       for n in names) + " |", "|---|" + "---|" * (4 * len(names))]
    for s in systems:
        if s != BASELINE:
            row = summary["table"][s]
            out.append(f"| {LABELS.get(s, s)} | " + " | ".join(
                versus(row.get(n, {}).get(m), r) if r in references(s) else ""
                for m in ("BLEU", "chrF2") for r in (BASELINE, SGNET) for n in names) + " |")
    out += ["", "Per seed (BLEU on each test set; p: paired bootstrap against vanilla of the same seed, and for a "
            "control also against SG-Net of the same seed):", "",
            "| system | seed | best update | stopped | " + " | ".join(names) + " |",
            "|---|---|---|---|" + "---|" * len(names)]
    for s in systems:
        for seed, run in summary["runs"][s].items():
            c = run["convergence"]
            cells = []
            for t in summary["test_sets"]:
                sc = run["scores"].get(t["split"])
                if sc is None:
                    cells.append("–")
                    continue
                ps = [(r, sc[f"paired_bs_p_vs_{r}"]["BLEU"]) for r in references(s) if f"paired_bs_p_vs_{r}" in sc]
                cells.append(f"{sc['BLEU']:.2f}" + (" (" + "; ".join(
                    f"p = {p:.3f}" if r == BASELINE else f"vs {r} p = {p:.3f}" for r, p in ps) + ")" if ps else ""))
            out.append(f"| {s} | {seed} | {c.get('best_update', '–')} | {c['stopped'] or 'running'} | "
                       + " | ".join(cells) + " |")
    out += alpha_lines(summary) + progress(summary)
    if summary.get("records"):
        out += ["", records_line(summary["records"])]
    if summary.get("refused"):
        out += ["", refused_line(summary["refused"])]
    out += ["", f"Trained in {summary['trained']}." if summary.get("trained") else "Training setup: not in the logs.",
            "", f"BLEU signature: `{summary['signatures']['BLEU']}`",
            f"chrF signature: `{summary['signatures']['chrF2']}`", ""]
    return "\n".join(out)


def alpha_lines(summary: dict) -> list[str]:
    """A line giving the α each learned-α run settled on at its scored checkpoint, if any did."""
    found = [(s, k, r["learned_alpha"]) for s in ordered_systems(summary)
             for k, r in summary["runs"][s].items() if "learned_alpha" in r]
    if not found:
        return []
    seeds = "; ".join(f"{LABELS.get(s, s)} seed {k}: " + ", ".join(f"{v:.3f}" for v in a["alpha"].values())
                      + (f" from {a['initial']:g}" if a.get("initial") is not None else "")
                      + (f" (update {a['num_updates']:,})" if a.get("num_updates") else "") for s, k, a in found)
    return ["", "Learned α, the SDOI layer's share of the dual aggregation α·SDOI + (1 − α)·vanilla, at the scored "
            f"checkpoint: {seeds}."]


def planned_runs(spec: str) -> list[tuple[str, int]]:
    """``"vanilla:1 sgnet:1 ..."`` (the reproduce script's --runs) as (system, seed) pairs."""
    out = []
    for item in spec.split():
        system, _, seed = item.partition(":")
        if not system or not seed.isdigit():
            raise ValueError(f"--planned: {item!r} is not SYSTEM:SEED")
        out.append((system, int(seed)))
    return out


def progress(summary: dict) -> list[str]:
    """A line saying how many planned runs are finished and scored, and which are still to come."""
    planned = planned_runs(" ".join(summary.get("planned_runs", [])))
    if not planned:
        return []
    done = {(s, int(k)) for s, seeds in summary["runs"].items() for k, r in seeds.items() if r["scores"]}
    missing = [f"{s} seed {k}" for s, k in planned if (s, k) not in done]
    return ["", f"Finished and scored: {len(planned) - len(missing)} of the {len(planned)} planned runs."
            + (f" Still to come: {', '.join(missing)}." if missing else "")]


def readme_table(summary: dict) -> str:
    """The README's table: BLEU and chrF2 mean ± std per system and test set, the per-seed p-values, and which
    planned runs are still to come."""
    names = [t["name"] for t in summary["test_sets"]]
    systems = ordered_systems(summary)
    rule = summary["early_stopping"]
    beam = summary["selection"].split("; ")[1]
    out = [f"Best checkpoint by validation loss; training stopped after {rule['patience_epochs']} epochs without the "
           f"loss falling by more than {rule['min_delta']:g} (cap {rule['max_update']:,} updates); {beam}, detokenized "
           "sacreBLEU; mean ± sample std over seeds. p: paired bootstrap against vanilla of the same seed, per seed "
           f"({summary['paired_bootstrap_resamples']:,} resamples). Δ: the difference of the mean BLEU against "
           "vanilla, and for a control against SG-Net, with Welch's t-test p over seeds, which, unlike the per-seed "
           "p, also counts the seeds' training noise; the per-seed p against SG-Net are in results/multi30k/summary.md."
           + (f" Trained in {summary['trained']}." if summary.get("trained") else ""), "",
           "| system | seeds | " + " | ".join(f"{n} BLEU (p per seed)" for n in names) + " | "
           + " | ".join(f"{n} Δ BLEU vs vanilla (p over seeds)" for n in names) + " | "
           + " | ".join(f"{n} Δ BLEU vs SG-Net" for n in names) + " | "
           + " | ".join(f"{n} chrF2" for n in names) + " |",
           "|---|---|" + "---|" * (4 * len(names))]
    split_of = {t["name"]: t["split"] for t in summary["test_sets"]}
    for s in systems:
        row, runs = summary["table"][s], summary["runs"][s]
        cells = []
        for metric in ("BLEU", "chrF2"):
            for n in names:
                cell = mean_std(row.get(n, {}).get(metric))
                ps = [runs[k]["scores"][split_of[n]]["paired_bs_p_vs_vanilla"]["BLEU"] for k in runs
                      if "paired_bs_p_vs_vanilla" in runs[k]["scores"].get(split_of[n], {})]
                if metric == "BLEU" and ps:
                    cell += " (" + ", ".join(f"{p:.3f}" for p in ps) + ")"
                cells.append(cell)
            if metric == "BLEU":
                cells += [versus(row.get(n, {}).get("BLEU"), r) for r in (BASELINE, SGNET) for n in names]
        seeds = max((c["BLEU"]["n"] for c in row.values()), default=0)
        out.append(f"| {LABELS.get(s, s)} | {seeds} | " + " | ".join(cells) + " |")
    if not systems:
        out.append("| no run has finished yet | | " + " | ".join("" for _ in range(4 * len(names))) + " |")
    out += alpha_lines(summary) + progress(summary)
    if summary.get("records"):
        out += ["", records_line(summary["records"])]
    if summary.get("refused"):
        out += ["", refused_line(summary["refused"])]
    out += ["", f"sacreBLEU signature: `{summary['signatures']['BLEU']}`"]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=Path("work/multi30k"),
                   help="the data-prep output (bin/testsets.tsv, raw/{split}.de)")
    p.add_argument("--results", type=Path, default=Path("results/multi30k"), help="results/multi30k (logs/, hyp/)")
    p.add_argument("--patience", type=int, default=5)
    p.add_argument("--min-delta", type=float, default=0.01)
    p.add_argument("--max-update", type=int, default=8000)
    p.add_argument("--bootstrap", type=int_at_least(10), default=1000, help="paired bootstrap resamples (at least 10; "
                   "p cannot fall below 1/N)")
    p.add_argument("--planned", default=None,
                   help='the runs planned, "SYSTEM:SEED ...": the table says which are missing')
    p.add_argument("--readme", type=Path, default=None,
                   help="also write the table into this file's multi30k-summary block (examples/multi30k/README.md)")
    args = p.parse_args(argv)
    exit_unless_block(p, args.readme, "multi30k-summary")  # answered before any work, not after it
    if not (args.data and args.results):
        p.error("give --data and --results")
    for folder, what in ((args.results, "results"), (args.data / "bin", "prepared data (data-prep/multi30k.sh)")):
        if not folder.is_dir():
            p.exit(1, f"examples/multi30k/summarize.py: error: {folder}: no such folder of {what}\n")
    try:
        summary = summarize(args.data, args.results, args.patience, args.max_update, args.bootstrap, args.min_delta)
    except ValueError as e:  # a log or hypothesis file that does not fit: its message names it
        p.exit(1, f"examples/multi30k/summarize.py: error: {e}\n")
    if args.planned:
        summary["planned_runs"] = [f"{s}:{k}" for s, k in planned_runs(args.planned)]
    if args.readme:
        replace_block(args.readme, "multi30k-summary", readme_table(summary))
    md = markdown(summary)
    for name, text in (("summary.json", json.dumps(summary, indent=1) + "\n"), ("summary.md", md)):
        with atomic_path(str(args.results / name)) as tmp:
            Path(tmp).write_text(text, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
