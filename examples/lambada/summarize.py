#!/usr/bin/env python
"""Table of the LAMBADA reader runs (results/lambada/*.eval.json) and paired tests between them.

For every pair of runs with per-instance predictions (``*.pred.jsonl.gz``, from
``fairseq-syntax-lambada-eval --predictions``) on the same split it gives the exact McNemar test: the
instances one run gets right and the other wrong, against a fair coin. With ``--instances`` (the
prepared ``test.inst.jsonl``) and ``--stopwords`` it also scores a model-free reference, the most
frequent non-stop word of the context (ties: the latest).

Runs named ``{system}_seed{N}`` are grouped: accuracy mean ± sample std over seeds per system, and for a
supervised system (``..._corefall`` and the like) the McNemar p against its unsupervised twin (the same name
without the signal) of the same seed, and over seeds the difference of the mean accuracies with Welch's t-test p
(seed_statistics.py), which also counts how much seeds differ. How far each run trained comes from its training
log: the best update by validation accuracy, and whether ``--patience`` validations without improvement (or
``--max-update``) ended it, which is what ``examples/lambada/reproduce.sh --converge`` trains to; a run that ended
otherwise, or validated at other spacings than ``--valid-interval`` (whose patience counts shorter stretches), is
reported as a fixed budget, not as converged. Each run's precision and device come from the same
log (training_log.py); runs of different precisions are refused rather than averaged. Under the table, a reading
says the same in words for each supervised system (told apart or not at p < ALPHA), so prose beside the table never
keeps old numbers. Writes ``summary.json`` and ``summary.md``; with ``--readme`` the table and its reading also go
into that file's ``lambada-summary`` block (examples/studies/readme_block.py).
"""
from __future__ import annotations

import sys
import argparse
import itertools
import json
import re
import statistics
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for examples.studies
from examples.studies.early_stopping import convergence
from fairseq_syntax.pipeline.atomic import atomic_path
from examples.studies.readme_block import exit_unless_block, has_block, replace_block
from examples.studies.result_files import percent, read_json, read_jsonl
from examples.studies.run_protocol import admit, read_protocol, records_line, refused_line
from examples.studies.seed_statistics import (format_p, format_seed_test, holm, mcnemar_exact, seed_test,
                                              signed, significant, welch_interval)
from examples.studies.training_log import one_setup, training_setup

ROWS = ("all", "answer_in_context", "pronoun", "proper_noun", "common_noun", "PERSON", "not_NE")
SIGNALS = ("corefall", "depparse", "corefprev", "corefnext", "narrative")  # reproduce.sh's supervised run suffixes
SYSTEMS = ("bidaf", "sa_early", *(f"sa_early_{s}" for s in SIGNALS))  # reproduce.sh's runs
PROG = "examples/lambada/summarize.py"
ALPHA = 0.05  # the level at which the reading calls a difference told apart
# The paper's Tables 3 and 5 (attending-to-entities-lambada.txt): its mean of 4 seeds per reader
PAPER_TABLE5 = {"": 60.54, "corefall": 61.51, "depparse": 61.06, "corefprev": 60.94, "corefnext": 61.27,
                "narrative": 61.86}
PAPER_AGREEMENT = 89.3  # CorefAll and Narrative runs, the share of dev instances predicted alike
TABLE5 = "converged_sa_early"  # the protocol of Table 5: the converged runs and their unsupervised reader
# Table 3's contrasts: does a signal gain more on the first subset than on the second (eval.json's rows).
# The paper's "Pronoun" (2,138 of 4,869 dev targets) can only be proper nouns: both contrasts are shown
CONTRASTS = (("pronoun", "common_noun"), ("proper_noun", "common_noun"), ("PERSON", "not_NE"))


def most_frequent_word(instances: str, stopwords: str) -> dict:
    """Accuracy of answering with the context's most frequent non-stop word (ties: the latest one)."""
    from collections import Counter

    from fairseq_syntax.reader.annotate import read_instances
    from fairseq_syntax.reader.instances import read_stopwords

    stop = read_stopwords(stopwords)
    insts = [inst for _, inst in read_instances(instances)]
    right = 0
    for inst in insts:
        words = [w for w in inst.context if w not in stop and any(ch.isalnum() for ch in w)]
        counts = Counter(words)
        last = {w: i for i, w in enumerate(words)}
        guess = max(counts, key=lambda w: (counts[w], last[w])) if counts else None
        right += guess == inst.answer
    return {"n": len(insts), "accuracy": round(100.0 * right / max(len(insts), 1), 2)}


def split_name(name: str) -> tuple[str, int | None]:
    """``converged_sa_early_corefall_seed2`` -> (``converged_sa_early_corefall``, 2)."""
    m = re.fullmatch(r"(.+)_seed(\d+)", name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


def admitted_runs(res: Path) -> tuple[list[str], dict[str, str], list[str]]:
    """The runs (``*.eval.json``) of the table's protocols, and {run: why} for the others. A ``--tag``'s runs
    (``converged_``) are checked against ``TAG.protocol.json``, the others against ``protocol.json``
    (studies/run_protocol.py)."""
    by_tag: dict[str, list[str]] = {}
    for f in sorted(res.glob("*.eval.json")):
        name = f.name[: -len(".eval.json")]
        system = split_name(name)[0]
        tag = next((system[: -len(s) - 1] for s in sorted(SYSTEMS, key=len, reverse=True)
                    if system.endswith("_" + s) and system != s), "") if system not in SYSTEMS else ""
        by_tag.setdefault(tag, []).append(name)
    admitted, refused, notes = [], {}, []
    for tag, names in by_tag.items():  # each protocol's runs a table of their own, their records compared apart
        ok, no, said = admit(names, lambda n: res / f"{n}.train.log.gz", read_protocol(res, PROG, tag), PROG,
                             SYSTEMS, prefix=f"{tag}_" if tag else "", study="lambada")
        admitted += ok
        refused.update(no)
        notes += [f"{tag or 'the fixed budget'}: {x}" for x in said]
    return sorted(admitted), refused, notes


def twin(system: str) -> str | None:
    """The unsupervised run a supervised one is compared with: the same name without the signal."""
    for sig in SIGNALS:
        if system.endswith("_" + sig):
            return system[: -len(sig) - 1]
    return None


def systems_table(runs: dict, tests: list[dict], res: Path, patience: int, max_update: int, interval: int) -> dict:
    """Per system: seeds, accuracy mean ± std, and per seed how far it trained and the McNemar p against its twin."""
    pvals = {(t["a"], t["b"]): t["mcnemar_p"] for t in tests}
    out: dict[str, dict] = {}
    for name, r in runs.items():
        system, seed = split_name(name)
        conv = convergence(str(res / f"{name}.train.log.gz"), "accuracy", patience, max_update, maximize=True,
                           by="update", spacing=interval)
        base = twin(system)
        base_run = f"{base}_seed{seed}" if base else None
        p = pvals.get((base_run, name), pvals.get((name, base_run)))
        out.setdefault(system, {"runs": {}})["runs"][str(seed)] = {
            "accuracy": r["all"]["accuracy"], "n": r["all"]["n"],
            "trained": {k: conv.get(k) for k in ("validations", "best_update", "best_valid_accuracy", "last_update",
                                                 "validations_after_best", "stopped")},
            "training": training_setup(str(res / f"{name}.train.log.gz")),
            **({"mcnemar_p_vs": {base_run: p}} if p is not None else {})}
    for system, row in out.items():
        accs = [v["accuracy"] for v in row["runs"].values()]
        row.update({"seeds": len(accs), **mean_std(accs),
                    "compared_with": twin(system) if twin(system) in out else None})
    for system, row in out.items():
        if row["compared_with"]:
            twin_runs = out[row["compared_with"]]["runs"].values()
            row["vs_twin"] = seed_test([v["accuracy"] for v in row["runs"].values()],
                                       [v["accuracy"] for v in twin_runs])
            # "converges in fewer updates": the update of the best validation, over seeds (Welch, two-sided)
            row["best_update_vs_twin"] = seed_test(
                [v["trained"]["best_update"] for v in row["runs"].values() if v["trained"]["best_update"]],
                [v["trained"]["best_update"] for v in twin_runs if v["trained"]["best_update"]])
    return out


def markdown(summary: dict) -> str:
    rule = summary["stopping"]
    out = [f"LAMBADA test split (dev passages), accuracy over all instances; mean ± sample std over seeds. "
           f"Converged: stopped after {rule['patience_validations']} validations without a better validation "
           f"accuracy (or at {rule['max_update']:,} updates); the best checkpoint by validation accuracy is scored. "
           "p: exact McNemar against the same reader without supervision, same seed. Δ: the difference of the mean "
           "accuracies against that reader, with Welch's t-test p over seeds; Δ best update: the same for the update "
           "of each run's best validation (two-sided: does the supervised reader converge in fewer updates)."
           + (f" Trained in {summary['trained']}." if summary.get("trained") else ""), "",
           "| run | seeds | accuracy | p per seed | Δ (p over seeds) | best update per seed "
           "| Δ best update (p over seeds) | how far trained |",
           "|---|---|---|---|---|---|---|---|"]
    for system in sorted(summary["systems"], key=lambda s: (twin(s) or s, twin(s) is not None, s)):
        row = summary["systems"][system]
        runs = row["runs"]
        acc = cell(row)
        ps = [p for p in map(twin_p, runs.values()) if p is not None]
        ps_txt = (", ".join(format_p(p) for p in ps) + f" (vs {row['compared_with']})") if ps else "–"
        best = ", ".join(f"{r['trained']['best_update']:,}" if r["trained"]["best_update"] else "–"
                         for r in runs.values())
        stops = {r["trained"]["stopped"] for r in runs.values()}
        last = ", ".join(f"{r['trained']['last_update']:,}" if r["trained"]["last_update"] else "–"
                         for r in runs.values())
        if stops == {"patience"}:
            how = f"converged: {rule['patience_validations']} validations without improvement (last update {last})"
        elif None not in stops:
            how = f"stopped by patience or the {rule['max_update']:,}-update cap (last update {last})"
        else:
            how = f"fixed budget, not converged (last update {last})"
        delta = format_seed_test(row.get("vs_twin"))
        best_delta = format_seed_test(row.get("best_update_vs_twin"), "+,.0f")
        out.append(f"| {system} | {row['seeds']} | {acc} | {ps_txt} | {delta} | {best} | {best_delta} | {how} |")
    if summary.get("records"):
        out += ["", records_line(summary["records"])]
    if summary.get("refused"):
        out += ["", refused_line(summary["refused"])]
    if "most_frequent_context_word" in summary:
        out += ["", f"Reference without a model (the context's most frequent non-stop word): "
                    f"{summary['most_frequent_context_word']['accuracy']:.2f}."]
    readings = [reading(system, summary["systems"]) for system in sorted(summary["systems"])
                if summary["systems"][system]["compared_with"]]
    if readings:
        out += ["", f"**Reading** (told apart: p < {ALPHA}):", ""] + [f"- {r}" for r in readings]
    return "\n".join(out) + "\n"


def twin_p(run: dict) -> float | None:
    """A run's McNemar p against its twin of the same seed (None when there is no twin run to pair)."""
    return next(iter(run.get("mcnemar_p_vs", {}).values()), None)


def told(p: float | None) -> str:
    return "untested" if p is None else "told apart" if p < ALPHA else "not told apart"


def welch_text(t: dict) -> str:
    """seed_test's result as the reading writes it: the difference, then Welch's p and whether it is told apart."""
    p = t["welch_p"]
    return f"(Welch p = {format_p(p, 3) if p is not None else '–'}), {told(p)}"


def reading(system: str, systems: dict) -> str:
    """What the table says of a supervised reader against its twin, in words, so that the README's reading is
    regenerated with its numbers: per seed, over seeds, the seeds' own spread, and the best update."""
    row, base = systems[system], systems[systems[system]["compared_with"]]
    seeds = [s for s in row["runs"] if s in base["runs"]]
    diffs = [row["runs"][s]["accuracy"] - base["runs"][s]["accuracy"] for s in seeds]
    ps = [twin_p(row["runs"][s]) for s in seeds]
    runs = [*row["runs"].values(), *base["runs"].values()]
    stops = {r["trained"]["stopped"] for r in runs}
    budget = ("all converged" if stops == {"patience"}
              else "all stopped by the rule, some by its update cap" if None not in stops
              else "not all converged: a fixed budget, which decides nothing about a trained reader")
    n = len(seeds)
    # while seeds are still training the two may have different counts: the per-seed tests pair only common seeds
    n_seeds = (f"{n} seed{'s' if n != 1 else ''} a side" if len(row["runs"]) == len(base["runs"]) == n
               else f"{len(row['runs'])} against {len(base['runs'])} seeds, {n} paired")
    text = (f"{system} against {row['compared_with']} ({n_seeds}, {budget}): higher on "
            f"{sum(d > 0 for d in diffs)} of {len(seeds)} ({', '.join(signed(d) for d in diffs)} points; "
            f"McNemar p = {', '.join(format_p(p) if p is not None else '–' for p in ps)}, "
            f"{sum(p is not None and p < ALPHA for p in ps)} of {len(seeds)} told apart).")
    accs = [r["accuracy"] for r in base["runs"].values()]
    if len(accs) > 1:
        text += (f" {row['compared_with']}'s own seeds span {max(accs) - min(accs):.2f} points "
                 f"({min(accs):.2f} to {max(accs):.2f}).")
    t = row.get("vs_twin")
    if t is None:
        return text + " No test over seeds: it needs 2 seeds a side."
    noise = " from seed noise" if told(t["welch_p"]) == "not told apart" else ""
    text += f" Over seeds: {signed(t['diff'])} {welch_text(t)}{noise}."
    b = row.get("best_update_vs_twin")
    if b is not None:
        mean_best = [statistics.mean(r["trained"]["best_update"] for r in x["runs"].values()
                                     if r["trained"]["best_update"]) for x in (row, base)]
        text += (f" Best validation at update {mean_best[0]:,.0f} on average against {mean_best[1]:,.0f}: "
                 f"{signed(b['diff'], '+,.0f')} {welch_text(b)}.")
    return text


def per_seed(system: dict) -> dict:
    """``{seed: accuracy}`` of a system's runs."""
    return {s: r["accuracy"] for s, r in system["runs"].items()}


def evals(runs: dict, name: str, system: dict) -> list[dict]:
    """The eval.json of each of a system's runs (every row: all, pronoun, PERSON, ...)."""
    return [runs[f"{name}_seed{s}"] for s in system["runs"]]


def converged_only(systems: dict) -> tuple[dict, dict]:
    """Tables 3 and 5 admit only the converged protocol's runs: those of the ``converged`` systems that the stopping
    rule ended (by patience or its cap); any other such run is named with why, and its system's row recomputed
    without it."""
    out, refused = {}, {}
    for name, row in systems.items():
        if not name.startswith(TABLE5):
            continue
        keep = {s: r for s, r in row["runs"].items() if r["trained"]["stopped"] is not None}
        for s, r in row["runs"].items():
            if s not in keep:
                refused[f"{name}_seed{s}"] = (f"not ended by the stopping rule (last update "
                                              f"{r['trained']['last_update']}): not of the converged protocol")
        if keep:
            accs = [r["accuracy"] for r in keep.values()]
            out[name] = {**row, "runs": keep, "seeds": len(keep), **mean_std(accs)}
    for name, row in out.items():  # the comparison follows its twin's kept runs
        row["compared_with"] = row["compared_with"] if row["compared_with"] in out else None
    return out, refused


def table3(systems: dict, runs: dict) -> dict:
    """The paper's Table 3 for each supervised converged reader against its twin: accuracy per subset over seeds,
    the gain on each subset (Welch over seeds), and whether the gain on one subset exceeds that on another: Welch
    over seeds on each run's difference between the two subsets, which is the difference of the gains."""
    out = {}
    for name, row in systems.items():
        base = systems.get(row["compared_with"] or "")
        if not name.startswith(TABLE5 + "_") or base is None or min(row["seeds"], base["seeds"]) < 2:
            continue
        sup_evals, base_evals = evals(runs, name, row), evals(runs, row["compared_with"], base)
        subsets = {}
        for sub in dict.fromkeys(x for pair in CONTRASTS for x in pair):
            a, b = [r[sub]["accuracy"] for r in sup_evals], [r[sub]["accuracy"] for r in base_evals]
            sizes = {r[sub]["n"] for r in (*sup_evals, *base_evals)}
            if len(sizes) != 1:
                raise ValueError(f"{name}: the {sub} subset has different sizes across runs ({sorted(sizes)}): "
                                 "runs of other prepared data are not one table")
            subsets[sub] = {"n": sizes.pop(), "twin": mean_std(b), "supervised": mean_std(a), "gain": seed_test(a, b)}
        contrasts = {}
        for x, y in CONTRASTS:
            if not (subsets[x]["n"] and subsets[y]["n"]):
                continue  # a subset without instances has no accuracy to compare
            d_sup = [r[x]["accuracy"] - r[y]["accuracy"] for r in sup_evals]
            d_base = [r[x]["accuracy"] - r[y]["accuracy"] for r in base_evals]
            contrasts[f"{x} - {y}"] = {**seed_test(d_sup, d_base), "interval": welch_interval(d_sup, d_base)}
        adjusted = holm({k: c["welch_p"] for k, c in contrasts.items() if c["welch_p"] is not None})
        for k, c in contrasts.items():
            c["holm_p"] = adjusted.get(k)
        out[name] = {"compared_with": row["compared_with"], "seeds": [row["seeds"], base["seeds"]],
                     "subsets": subsets, "contrasts": contrasts}
    return out


def mean_std(xs: list[float]) -> dict:
    return {"mean": round(statistics.mean(xs), 2), "std": round(statistics.stdev(xs), 2) if len(xs) > 1 else None}


def cell(ms: dict) -> str:
    return f"{ms['mean']:.2f}" + (f" ± {ms['std']:.2f}" if ms["std"] is not None else "")


def table3_markdown(t3: dict) -> str:
    if not t3:
        return "No supervised reader has 2 converged seeds a side yet.\n"
    out = ["LAMBADA test split (dev passages) by the target word's type; mean ± sample std over the converged seeds. "
           "POS: the Universal POS tag of the target in its own sentence, from the data-prep parse (spaCy "
           "`en_core_web_sm` 3.8 on the target sentence with its answer). PERSON: an entity span of the NER of "
           "neuralcoref's pipeline (spaCy 2.1 `en_core_web_sm`) over a context occurrence of the target, or, where "
           "there is none, a context occurrence in a coreference chain with a personal pronoun (he, she, him, her, "
           "his, hers, himself, herself); not NE: neither. Gain: the supervised reader's mean minus the unsupervised "
           "one's, Welch's p over seeds. Contrast: whether the gain on the first subset exceeds that on the second, "
           "Welch over seeds on each run's accuracy difference between the two subsets (the difference of the gains), "
           "its 95 % interval, and Holm's p over the contrasts of that reader. The paper's 21 instances hand-labelled "
           "as requiring coreference are not public and are not reproduced.", ""]
    for name, t in t3.items():
        out += [f"**{name}** against {t['compared_with']} ({t['seeds'][0]} against {t['seeds'][1]} seeds)", "",
                "| subset | n | unsupervised | supervised | gain (p over seeds) |", "|---|---|---|---|---|"]
        for sub, r in t["subsets"].items():
            out.append(f"| {sub} | {r['n']:,} | {cell(r['twin'])} | {cell(r['supervised'])} | "
                       f"{format_seed_test(r['gain'])} |")
        out += ["", "| contrast | gain difference | 95 % interval | Welch p | Holm p |", "|---|---|---|---|---|"]
        for k, c in t["contrasts"].items():
            iv = f"[{c['interval'][0]:+.2f}, {c['interval'][1]:+.2f}]" if c["interval"] else "–"
            out.append(f"| gain on {k.replace(' - ', ' minus gain on ')} | {signed(c['diff'])} | {iv} | "
                       f"{format_p(c['welch_p'], 3) if c['welch_p'] is not None else '–'} | "
                       f"{format_p(c['holm_p'], 3) if c['holm_p'] is not None else '–'} |")
        out += ["", "**Reading**: " + table3_reading(t), ""]
    return "\n".join(out)


def table3_reading(t: dict) -> str:
    parts = []
    for k, c in t["contrasts"].items():
        x, y = k.split(" - ")
        n = t["subsets"][x]["n"], t["subsets"][y]["n"]
        verdict = ("told apart (Holm)" if c["holm_p"] is not None and c["holm_p"] < ALPHA else
                   "not told apart: its interval holds a larger gain and a smaller one" if c["interval"]
                   and c["interval"][0] < 0 < c["interval"][1] else "not told apart once Holm counts the contrasts")
        parts.append(f"the gain on {x} (n = {n[0]:,}) {'exceeds' if c['diff'] > 0 else 'falls short of'} that on "
                     f"{y} (n = {n[1]:,}) by {abs(c['diff']):.2f} points, {verdict}")
    small = [f"{k} ({r['n']})" for k, r in t["subsets"].items() if 0 < r["n"] < 100]
    text = "; ".join(parts) + "." if parts else "No contrast: a subset has no instances."
    if small:
        fewest = min(r["n"] for r in t["subsets"].values() if r["n"])
        text += f" A subset under 100 instances moves by {100 / fewest:.2f} points an instance: {', '.join(small)}."
    return text[0].upper() + text[1:]


def agreement(words: dict, a: str, b: str) -> dict:
    """The share of instances two systems' runs of the same seed predict alike (the paper's 89.3 %)."""
    per_seed = {}
    for name, w in words.items():
        system, seed = split_name(name)
        other = f"{b}_seed{seed}"
        if system == a and other in words and len(words[other]) == len(w):
            per_seed[str(seed)] = round(100.0 * sum(x == y for x, y in zip(w, words[other])) / len(w), 2)
    return {"per_seed": per_seed, "mean": round(statistics.mean(per_seed.values()), 2) if per_seed else None}


def table5(systems: dict, words: dict) -> dict:
    """The paper's Table 5: every converged reader of SA-Early, supervised or not, against the unsupervised one and
    against + CorefAll, Welch over seeds with Holm over every comparison the table reads."""
    base, coref = systems.get(TABLE5), systems.get(f"{TABLE5}_corefall")
    rows = {}
    for sig, paper in PAPER_TABLE5.items():
        name = f"{TABLE5}_{sig}" if sig else TABLE5
        if name not in systems:
            rows[name] = {"signal": sig or "none", "seeds": 0, "paper": paper}
            continue
        row = systems[name]
        accs = list(per_seed(row).values())
        r = {"signal": sig or "none", "seeds": row["seeds"], **mean_std(accs), "paper": paper,
             "per_seed": per_seed(row)}
        if sig:
            r["mcnemar_p_vs_unsupervised"] = {s: twin_p(v) for s, v in row["runs"].items()}
            if base:
                r["vs_unsupervised"] = seed_test(accs, list(per_seed(base).values()))
            if coref and sig != "corefall":
                r["vs_corefall"] = seed_test(accs, list(per_seed(coref).values()))
                r["vs_corefall_interval"] = welch_interval(accs, list(per_seed(coref).values()))
            if base:
                r["vs_unsupervised_interval"] = welch_interval(accs, list(per_seed(base).values()))
        rows[name] = r
    tests = {(n, k): r[k]["welch_p"] for n, r in rows.items() for k in ("vs_unsupervised", "vs_corefall")
             if r.get(k) and r[k]["welch_p"] is not None}
    for (n, k), p in holm(tests).items():
        rows[n][k]["holm_p"] = p
    return {"rows": rows, "family": len(tests),
            "agreement_corefall_narrative": agreement(words, f"{TABLE5}_corefall", f"{TABLE5}_narrative")}


def table5_markdown(t5: dict) -> str:
    def test(r, key):
        t = r.get(key)
        if not t:
            return "–"
        holm_p = t.get("holm_p")
        return format_seed_test(t) + (f", Holm {format_p(holm_p, 3)}" if holm_p is not None else "")

    out = ["LAMBADA test split (dev passages), accuracy of the converged readers (the protocol of the table above: "
           "stopped after 5 validations without a better one, best checkpoint scored); mean ± sample std over seeds. "
           "p per seed: exact McNemar against the unsupervised reader of the same seed. Δ: difference of the means, "
           f"Welch's p over seeds, and Holm's p over the {t5['family']} comparison{'s' if t5['family'] != 1 else ''} "
           "of this table read so far. The paper: its "
           "mean of 4 seeds (at ~700k training instances; here 35,638).", "",
           "| reader | seeds | accuracy | p per seed | Δ vs SA-Early | Δ vs + CorefAll | paper |",
           "|---|---|---|---|---|---|---|"]
    for name, r in t5["rows"].items():
        label = "SA-Early" if r["signal"] == "none" else f"+ {SIGNAL_NAMES[r['signal']]}"
        if not r["seeds"]:
            out.append(f"| {label} | 0 | not yet trained | – | – | – | {r['paper']:.2f} |")
            continue
        ps = r.get("mcnemar_p_vs_unsupervised", {})
        ps_txt = ", ".join(format_p(p) if p is not None else "–" for p in ps.values()) or "–"
        out.append(f"| {label} | {r['seeds']} | {cell(r)} | {ps_txt} | {test(r, 'vs_unsupervised')} | "
                   f"{test(r, 'vs_corefall')} | {r['paper']:.2f} |")
    ag = t5["agreement_corefall_narrative"]
    out += ["", "Agreement of + CorefAll and + Narrative runs of the same seed (the same predicted word): " +
            (", ".join(f"seed {s} {v:.2f} %" for s, v in ag["per_seed"].items()) + f"; mean {ag['mean']:.2f} %"
             if ag["per_seed"] else "no seed has both runs yet") + f" (paper: {PAPER_AGREEMENT} %).", "",
            f"**Reading** (told apart: Holm p < {ALPHA}):", ""]
    out += [f"- {line}" for line in table5_reading(t5)]
    return "\n".join(out) + "\n"


SIGNAL_NAMES = {"corefall": "CorefAll", "depparse": "DepParse", "corefprev": "CorefPrev", "corefnext": "CorefNext",
                "narrative": "Narrative"}


def table5_reading(t5: dict) -> list[str]:
    rows, lines = t5["rows"], []
    for name, r in rows.items():
        if r["signal"] in ("none", "corefall"):
            continue
        label = f"+ {SIGNAL_NAMES[r['signal']]}"
        if r["seeds"] < 2:
            lines.append(f"{label}: {r['seeds']} converged seed{'s' if r['seeds'] != 1 else ''} of 4; no test over "
                         "seeds yet.")
            continue
        parts = []
        for key, other, paper_diff in (("vs_unsupervised", "SA-Early", r["paper"] - PAPER_TABLE5[""]),
                                       ("vs_corefall", "+ CorefAll", r["paper"] - PAPER_TABLE5["corefall"])):
            t, iv = r.get(key), r.get(f"{key}_interval")
            if not t or t.get("holm_p") is None:
                continue
            if t["holm_p"] < ALPHA:
                parts.append(f"{signed(t['diff'])} against {other}, told apart (Holm p = {format_p(t['holm_p'], 3)})")
            elif iv:
                parts.append(f"{signed(t['diff'])} against {other}, not told apart (Holm p = "
                             f"{format_p(t['holm_p'], 3)}; the 95 % interval [{iv[0]:+.2f}, {iv[1]:+.2f}] "
                             f"{'holds' if iv[0] <= paper_diff <= iv[1] else 'excludes'} the paper's "
                             f"{signed(paper_diff)})")
        lines.append(f"{label} ({r['seeds']} seeds): " + "; ".join(parts) + ".")
    return lines or ["No supervised reader besides + CorefAll has converged seeds yet."]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default="results/lambada")
    p.add_argument("--instances", default=None, help="test.inst.jsonl of data-prep/lambada.sh, for the reference")
    p.add_argument("--stopwords", default=None, help="the stop-word list the data were filtered with")
    p.add_argument("--patience", type=int, default=5, help="the --converge rule: validations without improvement")
    p.add_argument("--max-update", type=int, default=30000, help="the --converge rule's cap")
    p.add_argument("--valid-interval", type=int, default=500, help="the --converge rule's updates between validations")
    p.add_argument("--readme", default=None, help="also write the table into this file's lambada-summary block")
    a = p.parse_args(argv)
    exit_unless_block(p, a.readme, "lambada-summary")  # answered before any work, not after it
    res = Path(a.results)
    try:
        names, refused_runs, record_notes = admitted_runs(res)
        runs = {name: read_json(res / f"{name}.eval.json", ROWS) for name in names}
        for name, r in runs.items():
            for k in ROWS:
                percent(res / f"{name}.eval.json", r[k].get("accuracy") if isinstance(r[k], dict) else r[k],
                        f"{k} accuracy")
        pred_rows = {name: read_jsonl(res / f"{name}.pred.jsonl.gz") for name in runs
                     if (res / f"{name}.pred.jsonl.gz").exists()}
        preds = {name: [r["correct"] for r in rows] for name, rows in pred_rows.items()}
        words = {name: [r.get("predicted") for r in rows] for name, rows in pred_rows.items()}
    except ValueError as e:
        p.exit(1, f"examples/lambada/summarize.py: error: {e}\n")
    if not runs:
        raise SystemExit(f"no *.eval.json in {res}: run examples/lambada/reproduce.sh first")
    print("| run | " + " | ".join(ROWS) + " |")
    print("|---" * (len(ROWS) + 1) + "|")
    for name, r in runs.items():
        print(f"| {name} | " + " | ".join(f"{r[k]['accuracy']:.2f} (n={r[k]['n']})" for k in ROWS) + " |")
    tests = []
    for x, y in itertools.combinations(sorted(preds), 2):
        if len(preds[x]) != len(preds[y]):
            print(f"{x} and {y}: different numbers of instances, no paired test")
            continue
        b = sum(u and not v for u, v in zip(preds[x], preds[y]))
        c = sum(v and not u for u, v in zip(preds[x], preds[y]))
        t = {"a": x, "b": y, "only_a_right": b, "only_b_right": c, "mcnemar_p": significant(mcnemar_exact(b, c))}
        tests.append(t)
        print(f"{x} vs {y}: only {x} right {b}, only {y} right {c}, exact McNemar p = {format_p(t['mcnemar_p'])}")
    try:  # a log resumed in another precision, or runs in different precisions, are not one table
        systems = systems_table(runs, tests, res, a.patience, a.max_update, a.valid_interval)
        trained = one_setup({f"{system} seed {seed}": r["training"] for system, row in systems.items()
                             for seed, r in row["runs"].items()}, str(res))
        converged, refused = converged_only(systems)
        paper = {"table3": table3(converged, runs), "table5": table5(converged, words)}
        if refused:
            paper["refused_from_tables_3_and_5"] = refused
    except ValueError as e:
        p.exit(1, f"examples/lambada/summarize.py: error: {e}\n")
    summary = {"runs": runs, "paired_tests": tests,
               "stopping": {"patience_validations": a.patience, "max_update": a.max_update},
               "systems": systems, "trained": trained, **paper,
               **({"records": record_notes} if record_notes else {}),
               **({"refused": refused_runs} if refused_runs else {})}
    if a.instances and a.stopwords:
        summary["most_frequent_context_word"] = most_frequent_word(a.instances, a.stopwords)
        print(f"most frequent non-stop context word: {summary['most_frequent_context_word']['accuracy']:.2f} "
              f"(n={summary['most_frequent_context_word']['n']})")
    md = markdown(summary)
    md3, md5 = table3_markdown(summary["table3"]), table5_markdown(summary["table5"])
    if summary.get("refused_from_tables_3_and_5"):
        md5 += "\nNot in Tables 3 and 5: " + "; ".join(f"{k}: {v}" for k, v in
                                                       sorted(summary["refused_from_tables_3_and_5"].items())) + ".\n"
    full = md + "\n## Table 5: which signal\n\n" + md5 + "\n## Table 3: by the target's type\n\n" + md3
    for name, text in (("summary.json", json.dumps(summary, indent=1) + "\n"), ("summary.md", full)):
        with atomic_path(str(res / name)) as tmp:
            Path(tmp).write_text(text, encoding="utf-8")
    if a.readme:
        replace_block(Path(a.readme), "lambada-summary", md)
        for block, text in (("lambada-table5", md5), ("lambada-table3", md3)):  # where the README has them
            if has_block(Path(a.readme), block):
                replace_block(Path(a.readme), block, text)
    print(full)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
