"""The LAMBADA summary's Tables 3 and 5 (examples/lambada/summarize.py), worked by hand on tiny runs."""
import gzip
import json

from scipy.stats import ttest_ind

from .conftest import study_script
from .run_files import write_converged_run

SUMMARIZE = "examples/lambada/summarize.py"


def with_rows(res, name, rows, words=None):
    """Overwrite a run's eval.json rows ({row: accuracy}, n = 9 each unless given) and its predicted words."""
    ev = json.loads((res / f"{name}.eval.json").read_text())
    for k, acc in rows.items():
        ev[k] = {"n": ev[k]["n"], "accuracy": acc}
    (res / f"{name}.eval.json").write_text(json.dumps(ev))
    if words is not None:
        lines = "".join(json.dumps({"correct": w == "x", "predicted": w}) + "\n" for w in words)
        (res / f"{name}.pred.jsonl.gz").write_bytes(gzip.compress(lines.encode()))


def test_table3_tests_the_difference_of_the_gains_over_seeds(tmp_path):
    """+ CorefAll gains 10 and 12 points on PERSON but 1 and 2 on not-NE; SA-Early's runs are flat. Each run's
    PERSON − not-NE difference is 10, 10 (CorefAll) against 0, 0 + (0, 2): the contrast is Welch on those
    lists, by hand with scipy."""
    main = study_script(SUMMARIZE).main
    for seed, (person, not_ne) in enumerate(((60.0, 41.0), (62.0, 42.0)), 1):
        write_converged_run(tmp_path, f"converged_sa_early_corefall_seed{seed}", 1000, 40.0)
        with_rows(tmp_path, f"converged_sa_early_corefall_seed{seed}", {"PERSON": person, "not_NE": not_ne})
    for seed, (person, not_ne) in enumerate(((50.0, 40.0), (50.0, 38.0)), 1):
        write_converged_run(tmp_path, f"converged_sa_early_seed{seed}", 2000, 39.0)
        with_rows(tmp_path, f"converged_sa_early_seed{seed}", {"PERSON": person, "not_NE": not_ne})
    main(["--results", str(tmp_path)])
    t3 = json.loads((tmp_path / "summary.json").read_text())["table3"]["converged_sa_early_corefall"]
    assert t3["subsets"]["PERSON"]["gain"]["diff"] == 11.0 and t3["subsets"]["not_NE"]["gain"]["diff"] == 2.5
    c = t3["contrasts"]["PERSON - not_NE"]
    assert c["diff"] == 8.5
    p = ttest_ind([19.0, 20.0], [10.0, 12.0], equal_var=False).pvalue
    assert abs(c["welch_p"] - p) < 1e-3 * p
    assert c["interval"][0] < 8.5 < c["interval"][1] and c["holm_p"] >= c["welch_p"]
    md = (tmp_path / "summary.md").read_text()
    assert "| PERSON | 9 | 50.00 ± 0.00 | 61.00 ± 1.41 | +11.00 (p = " in md
    assert "the gain on PERSON (n = 9) exceeds that on not_NE (n = 9) by 8.50 points" in md
    assert "21 instances hand-labelled" in md


def test_table5_reads_each_signal_against_both_readers_with_holm_and_the_agreement(tmp_path):
    """Narrative on 2 seeds against SA-Early and CorefAll: Holm over the comparisons read (CorefAll vs SA-Early,
    Narrative vs SA-Early, Narrative vs CorefAll: 3); CorefAll and Narrative of seed 1 predict 3 of 4 words alike."""
    main = study_script(SUMMARIZE).main
    accs = {"converged_sa_early": (36.0, 37.0), "converged_sa_early_corefall": (40.0, 41.0),
            "converged_sa_early_narrative": (41.0, 43.0)}
    words = {"converged_sa_early_corefall": ["x", "y", "x", "z"], "converged_sa_early_narrative": ["x", "y", "y", "z"],
             "converged_sa_early": ["y", "y", "y", "y"]}
    for name, pair in accs.items():
        for seed, acc in enumerate(pair, 1):
            write_converged_run(tmp_path, f"{name}_seed{seed}", 1500, acc)
            with_rows(tmp_path, f"{name}_seed{seed}", {}, words[name] if seed == 1 else None)
    main(["--results", str(tmp_path)])
    t5 = json.loads((tmp_path / "summary.json").read_text())["table5"]
    assert t5["family"] == 3
    nar = t5["rows"]["converged_sa_early_narrative"]
    assert nar["vs_unsupervised"]["diff"] == 5.5 and nar["vs_corefall"]["diff"] == 1.5
    raw = {k: v for k, v in (("u", nar["vs_unsupervised"]["welch_p"]), ("c", nar["vs_corefall"]["welch_p"]))}
    assert nar["vs_corefall"]["holm_p"] >= raw["c"] and nar["vs_unsupervised"]["holm_p"] >= raw["u"]
    assert t5["agreement_corefall_narrative"] == {"per_seed": {"1": 75.0}, "mean": 75.0}
    assert t5["rows"]["converged_sa_early_depparse"]["seeds"] == 0
    md = (tmp_path / "summary.md").read_text()
    assert "| + DepParse | 0 | not yet trained | – | – | – | 61.06 |" in md
    assert "seed 1 75.00 %; mean 75.00 % (paper: 89.3 %)" in md
    assert "+ Narrative (2 seeds): +5.50 against SA-Early" in md


def test_tables_3_and_5_admit_only_runs_the_stopping_rule_ended(tmp_path):
    """A + Narrative seed 3 still in training (its eval.json scored by hand) stays out of Table 5, named."""
    main = study_script(SUMMARIZE).main
    for name, accs in (("converged_sa_early", (36.0, 37.0)), ("converged_sa_early_narrative", (41.0, 43.0))):
        for seed, acc in enumerate(accs, 1):
            write_converged_run(tmp_path, f"{name}_seed{seed}", 1500, acc)
    write_converged_run(tmp_path, "converged_sa_early_narrative_seed3", 1500, 90.0)
    log = tmp_path / "converged_sa_early_narrative_seed3.train.log.gz"
    lines = gzip.decompress(log.read_bytes()).decode().splitlines(keepends=True)
    log.write_bytes(gzip.compress("".join(lines[:4]).encode()))  # 3 validations: the rule has not ended it
    main(["--results", str(tmp_path)])
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["table5"]["rows"]["converged_sa_early_narrative"]["seeds"] == 2
    assert s["table5"]["rows"]["converged_sa_early_narrative"]["mean"] == 42.0
    assert "not ended by the stopping rule" in s["refused_from_tables_3_and_5"]["converged_sa_early_narrative_seed3"]
    assert "Not in Tables 3 and 5: converged_sa_early_narrative_seed3" in (tmp_path / "summary.md").read_text()
