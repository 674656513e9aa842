"""The SLA paper's Table 1 reproduction (examples/encoders/reproduce_sla_table.sh) end to end on the CoNLL-2003
slice, and its summarizer's paired tests on hand-made predictions."""
import gzip
import json
import re
import sys

import pytest
import torch

from examples.studies.table_protocol import PAIR_TASKS
from fairseq_syntax.pipeline.locks import FileLock

from .conftest import ROOT, run, study_script
from .run_files import write_run_record
from .test_token_labeling import conll  # noqa: F401  (the prepared slice, shared)


def write_run(res, task, system, seed, gold, pred, metric, score):
    name = f"{task}_{system}_seed{seed}"
    rows = [{"sentence": i, "gold": g, "pred": p, "correct": int(g == p)} for i, (g, p) in enumerate(zip(gold, pred))]
    (res / f"{name}.pred.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    (res / f"{name}.eval.json").write_text(json.dumps({"task": task, "system": system, "seed": seed, "metric": metric,
                                                       metric: score, "split": "valid", "max_update": 16,
                                                       "best_update": 8}))
    write_run_record(res / f"{name}.record.json", "sla_table2" if task in PAIR_TASKS else "sla_table", name,
                     scored=len(gold), split="valid", recipe={"max_update": 16})


def test_summary_pairs_seeds_mcnemar_for_accuracy_and_a_bootstrap_for_mcc(tmp_path):
    """SST-2: SLA right on 0-59 of 100 sentences, the baseline on 0-39 and 60-69: McNemar 20 against 10. CoLA: the
    bootstrap's difference is the MCC difference of the two prediction sets."""
    summarize = study_script("examples/encoders/summarize_sla_table.py")
    res = tmp_path / "res"
    res.mkdir()
    gold = ["1"] * 50 + ["0"] * 50
    flip = {"1": "0", "0": "1"}
    sla = [g if i < 60 else flip[g] for i, g in enumerate(gold)]
    base = [g if i < 40 or 60 <= i < 70 else flip[g] for i, g in enumerate(gold)]
    for seed in (1, 2):
        write_run(res, "SST-2", "sla", seed, gold, sla, "accuracy", 60.0 + seed)
        (res / f"SST-2_sla_seed{seed}.gates.json").write_text(json.dumps(
            {"split": "valid", "tokens": 900, "mean_gate": [0.5, 0.4 + 0.1 * seed], "token_std": [0.1 * seed, 0.2]}))
        write_run(res, "SST-2", "baseline", seed, gold, base, "accuracy", 50.0 - seed)
        write_run(res, "CoLA", "sla", seed, gold, sla, "mcc", 20.0)
        write_run(res, "CoLA", "baseline", seed, gold, base, "mcc", 1.0)
        # a control is also tested against the system it controls: SG-Net's layer without a mask against SG-Net
        write_run(res, "SST-2", "sgnet", seed, gold, sla, "accuracy", 60.0)
        write_run(res, "SST-2", "sgnet_nomask", seed, gold, base, "accuracy", 50.0)
    write_run(res, "CoLA", "wla", 1, gold, base, "mcc", 1.0)  # one seed: in the reading's "not yet tested" line
    planned = [f"{task}_{system}_seed{seed}" for seed in (1, 2, 3) for task, system in (
        ("SST-2", "sla"), ("SST-2", "baseline"), ("CoLA", "sla"), ("CoLA", "baseline"), ("SST-2", "sgnet"))]
    assert summarize.main(["--results", str(res), "--planned", *planned, "--bootstrap", "200"]) == 0
    s = json.loads((res / "summary.json").read_text())
    t = s["table"]["SST-2"]["sla"]["vs_baseline"]
    assert t["per_seed"]["1"] == {"test": "mcnemar", "only_this": 20, "only_that": 10, "p": 0.0987}
    assert t["welch"]["diff"] == 13.0 and t["welch"]["n"] == [2, 2]
    c = s["table"]["CoLA"]["sla"]["vs_baseline"]["per_seed"]["1"]
    assert c["test"] == "paired bootstrap" and 0 < c["p"] <= 1
    assert c["diff"] == pytest.approx(summarize.matthews([int(g) for g in gold], [int(p) for p in sla])
                                      - summarize.matthews([int(g) for g in gold], [int(p) for p in base]), abs=0.01)
    md = (res / "summary.md").read_text()
    # seed 3 is planned, not finished; SG-Net's layer without a mask is finished, not planned
    assert "Finished: 10 of the 15 planned runs. The folder also holds 3 finished runs outside this plan." in md
    assert "| + SLA (tree distance ≤ 3) | 20.00 ± 0.00 (2) |" in md
    # each seed's own score, with its paired test against the baseline of that seed
    assert "| + SLA (tree distance ≤ 3) | s1 20.00 (" in md
    assert "s1 61.00 (20/10, p = 0.099); s2 62.00 (20/10, p = " in md
    assert "| BERT-style baseline (roberta_baseline_small) | s1 1.00; s2 1.00 | s1 49.00; s2 48.00 | – |" in md
    assert "| SG-Net's layer, no mask (control) | – | s1 50.00 (0/0, p = 1.000; vs sgnet 10/20, p = 0.099); " in md
    assert ("- SST-2, SG-Net's layer, no mask (control) against SG-Net (roberta_sgnet_small): -10.00, no Welch p "
            "(neither side varies over seeds); paired p < 0.05 on 0 of 2 seeds.") in md
    # the mean gate per layer over the seeds' best checkpoints (the paper's Figure 2)
    assert s["table"]["SST-2"]["sla"]["gates"] == {"seeds": [1, 2], "split": "valid", "mean": [0.5, 0.55],
                                                   "std": [0.0, 0.071], "token_std": [0.15, 0.2]}
    assert "| SST-2 | + SLA (tree distance ≤ 3) | 0.500 ± 0.000 | 0.550 ± 0.071 | 2 |\n| | spread over tokens | " \
        "0.150 | 0.200 | |" in md
    assert "gates" not in s["table"]["SST-2"]["baseline"] and (res / "sla_gates.png").stat().st_size > 1000
    assert ("- SST-2, + SLA (tree distance ≤ 3) against BERT-style baseline (roberta_baseline_small): +13.00, "
            "Welch p = " in md)
    assert " on 2 against 2 seeds: not read yet (fewer than 3 seeds a side); paired p < 0.05 on 0 of 2 " in md
    assert ("- CoLA, not yet tested over seeds (fewer than 2 seeds a side); the seeds with a paired p < 0.05: WLA vs "
            "baseline 0 of 1.\n") in md


def test_summary_tests_seeds_on_the_scores_as_evaluated_not_as_printed(tmp_path):
    """Two seeds' scores that agree to the 0.01 the table prints still vary: the std and Welch's test come from the
    evaluated scores (a std of the rounded ones is 0, and Welch would have nothing to test)."""
    summarize = study_script("examples/encoders/summarize_sla_table.py")
    res = tmp_path / "res"
    res.mkdir()
    gold = ["1"] * 5 + ["0"] * 5
    for seed, (sla, base) in enumerate(((20.001, 1.002), (20.003, 1.0041)), 1):
        write_run(res, "CoLA", "sla", seed, gold, gold, "mcc", sla)
        write_run(res, "CoLA", "baseline", seed, gold, gold, "mcc", base)
    assert summarize.main(["--results", str(res), "--bootstrap", "10"]) == 0
    row = json.loads((res / "summary.json").read_text())["table"]["CoLA"]["sla"]
    assert row["scores"] == [20.0, 20.0] and row["std"] == 0.0
    assert row["vs_baseline"]["welch"]["diff"] == 19.0 and row["vs_baseline"]["welch"]["welch_p"] < 1e-3


def test_summary_says_which_runs_trained_on_a_gpu_and_refuses_two_precisions(tmp_path, capsys):
    """Runs of the fp32 table may train on another machine's GPU (in fp32): the summary names them beside
    the CPU's count. An fp16 run in the same folder is refused, naming both precisions."""
    summarize = study_script("examples/encoders/summarize_sla_table.py")
    res = tmp_path / "res"
    res.mkdir()
    gold = ["1"] * 5 + ["0"] * 5

    def log(name, fp16, gpu):
        text = ("2026-12-04 06:52:43 | INFO | fairseq_cli.train | {'_name': None, 'common': {'_name': None, "
                f"'cpu': {not gpu}, 'fp16': {fp16}, 'amp': False}}, 'dataset': {{}}}}\n")
        if gpu:
            text += ("2026-12-04 06:52:44 | INFO | fairseq.utils | rank   0: capabilities =  9.0  ; total memory = "
                     "139.801 GB ; name = NVIDIA H200                             \n")
        (res / f"{name}.train.log.gz").write_bytes(gzip.compress(text.encode()))

    for seed in (1, 2):
        for system in ("baseline", "sla"):
            write_run(res, "CoLA", system, seed, gold, gold, "mcc", 20.0 + seed)
            log(f"CoLA_{system}_seed{seed}", False, gpu=(seed, system) == (2, "sla"))
    eval_json = res / "CoLA_sla_seed2.eval.json"
    eval_json.write_text(json.dumps({**json.loads(eval_json.read_text()), "device": "NVIDIA H200"}))
    assert summarize.main(["--results", str(res), "--bootstrap", "10"]) == 0
    s = json.loads((res / "summary.json").read_text())
    assert s["trained"] == {"setup": "fp32 on CPU and NVIDIA H200",
                            "devices": {"cpu": ["CoLA_baseline_seed1", "CoLA_baseline_seed2", "CoLA_sla_seed1"],
                                        "NVIDIA H200": ["CoLA_sla_seed2"]}}
    assert "Trained in fp32: 3 runs on the CPU, 1 on one NVIDIA H200 (CoLA sla s2)." in (res / "summary.md").read_text()
    log("CoLA_sla_seed2", True, gpu=True)
    capsys.readouterr()
    with pytest.raises(SystemExit, match="1"):
        summarize.main(["--results", str(res), "--bootstrap", "10"])
    assert "runs in different precisions (fp16: CoLA_sla_seed2; fp32: CoLA_baseline" in capsys.readouterr().err


def test_a_difference_that_rounds_to_zero_has_no_sign():
    from examples.studies.seed_statistics import format_seed_test, signed

    assert [signed(-0.004), signed(0.004), signed(0.0), signed(-0.006), signed(1.234)] == \
        ["0.00", "0.00", "0.00", "-0.01", "+1.23"]
    assert [signed(-0.04, "+.1f"), signed(-0.3, "+.1f"), signed(-1234.0, "+,.0f")] == ["0.0", "-0.3", "-1,234"]
    assert format_seed_test({"diff": -0.001, "welch_p": 0.977}) == "0.00 (p = 0.977)"


def test_reading_needs_three_seeds_a_side(tmp_path):
    """SLA's three seeds lie far above the baseline's: on 3 against 3 they are told apart; WLA's two, as far above,
    get a Welch p but no verdict, and nothing on 2 seeds is called told apart."""
    summarize = study_script("examples/encoders/summarize_sla_table.py")
    res = tmp_path / "res"
    res.mkdir()
    gold = ["1"] * 5 + ["0"] * 5
    for seed, (base, sla) in enumerate(((30.1, 40.2), (30.4, 40.1), (30.2, 40.5)), 1):
        write_run(res, "CoLA", "baseline", seed, gold, gold, "mcc", base)
        write_run(res, "CoLA", "sla", seed, gold, gold, "mcc", sla)
        if seed < 3:
            write_run(res, "CoLA", "wla", seed, gold, gold, "mcc", sla)
    assert summarize.main(["--results", str(res), "--bootstrap", "10"]) == 0
    md = (res / "summary.md").read_text()
    sla = re.search(r"- CoLA, \+ SLA \(tree distance ≤ 3\) against [^:]*: \+10\.03, Welch p = ([0-9.e-]+) "
                    r"\(Holm over 1: [0-9.e-]+\): told apart, 95% interval \[\+[0-9.]+, \+[0-9.]+\], the paper's "
                    r"\+1\.3 below it;", md)
    assert sla and float(sla.group(1)) < 0.001, md
    wla = re.search(r"- CoLA, \+ WLA \(window i ± 3\) against [^:]*: \+9\.92, Welch p = ([0-9.e-]+) on 2 against 3 "
                    r"seeds: not read yet \(fewer than 3 seeds a side\);", md)
    assert wla and float(wla.group(1)) < 0.05, md
    assert md.count(": told apart") == 1
    # Holm's family is the comparisons read: SLA's alone, so its adjusted p is its own
    t = json.loads((res / "summary.json").read_text())["table"]["CoLA"]
    sla_w, wla_w = t["sla"]["vs_baseline"]["welch"], t["wla"]["vs_baseline"]["welch"]
    assert sla_w["holm_of"] == 1 and sla_w["holm_p"] == sla_w["welch_p"] and "holm_p" not in wla_w


def test_reading_says_when_holms_p_does_not_keep_a_difference(tmp_path):
    """WLA and SG-Net each 2.5 above a baseline of 30, 31, 32 (Welch t = 3.06 on 4 df, p = 0.038): each is told apart
    alone, but over the two Holm's p is 0.075."""
    summarize = study_script("examples/encoders/summarize_sla_table.py")
    res = tmp_path / "res"
    res.mkdir()
    gold = ["1"] * 5 + ["0"] * 5
    for seed, base in enumerate((30.0, 31.0, 32.0), 1):
        for system, score in (("baseline", base), ("wla", base + 2.5), ("sgnet", base + 2.5)):
            write_run(res, "CoLA", system, seed, gold, gold, "mcc", score)
    assert summarize.main(["--results", str(res), "--bootstrap", "10"]) == 0
    md = (res / "summary.md").read_text()
    # the interval: 2.50 -+ t(0.975, 4 df) sqrt(1/3 + 1/3) = 2.50 -+ 2.776 * 0.8165 = [0.23, 4.77]
    assert md.count("+2.50, Welch p = 0.038 (Holm over 2: 0.075): told apart, but not by Holm's p, 95% interval "
                    "[+0.23, +4.77], the paper's") == 2, md
    assert "[+0.23, +4.77], the paper's +0.9 inside it;" in md and "[+0.23, +4.77], the paper's +0.5 inside it;" in md
    # every system's seeds spread by 1 around its mean: 5 seeds a side find 2.02 with 80% power
    d = json.loads((res / "summary.json").read_text())["detectable"]
    assert d == {"CoLA": {"pooled_sd": 1.0, "df": 6, "seeds": 5, "difference": 2.02}}
    assert "- CoLA MCC: spread 1.00 (6 df), so a difference of 2.02; the paper's +0.9, +1.3, +0.5." in md


@pytest.mark.slow
@pytest.mark.long  # minutes: started first (tests/conftest.py)
def test_reproduce_sla_table_trains_scores_summarizes_and_skips(conll, minilm_converted, tmp_path):  # noqa: F811
    """CoNLL-2003 slice, the baseline and SLA on random trees, seeds 1 and 2, 4 updates validated at 2:
    every run scored on test with per-sentence predictions, SLA's gates kept, summarized with paired tests and dev
    curves; a second call trains nothing but computes a missing gate file; another budget is refused before
    anything trains; no machine path in the results."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "conll2003").symlink_to(conll / "data", target_is_directory=True)
    res, readme = tmp_path / "res", tmp_path / "README.md"
    readme.write_text("<!-- begin sla-table-summary -->\n<!-- end sla-table-summary -->\n")
    cmd = ["bash", str(ROOT / "examples/encoders/reproduce_sla_table.sh"), "--tasks", "CoNLL-2003", "--systems",
           "baseline sla_random_trees", "--seeds", "1 2", "--updates-CoNLL-2003", "4", "--validations", "2",
           "--jobs", "2",
           "--data-root", str(root), "--pretrained", str(minilm_converted), "--out", str(res),
           "--checkpoints", str(tmp_path / "ck"), "--readme", str(readme)]
    first = run(cmd, timeout=1800)
    assert first.stderr.count("4 updates of 32, validation every 2") == 4, first.stderr[-3000:]
    s = json.loads((res / "summary.json").read_text())
    rows = s["table"]["CoNLL-2003"]
    assert set(rows) == {"baseline", "sla_random_trees"}
    ctrl = rows["sla_random_trees"]
    assert len(ctrl["scores"]) == 2 and ctrl["vs_baseline"]["welch"]["n"] == [2, 2]
    assert {t["test"] for t in ctrl["vs_baseline"]["per_seed"].values()} == {"paired bootstrap"}
    assert [u for u, _ in rows["baseline"]["dev_curve_mean"]] == [2, 4]
    e = json.loads((res / "CoNLL-2003_baseline_seed1.eval.json").read_text())
    assert e["metric"] == "f1" and e["split"] == "test" and e["scheme"] == "IOB2" and e["best_update"] in (2, 4)
    with gzip.open(res / "CoNLL-2003_sla_random_trees_seed2.pred.jsonl.gz", "rt") as fh:
        assert len(fh.readlines()) == 40
    gates = json.loads((res / "CoNLL-2003_sla_random_trees_seed2.gates.json").read_text())
    assert gates["split"] == "test" and len(gates["mean_gate"]) == 6 and all(0 < g < 1 for g in gates["mean_gate"])
    assert len(gates["token_std"]) == 6 and all(0 < sd < 0.5 for sd in gates["token_std"])
    every = gate_values(tmp_path / "ck/CoNLL-2003_sla_random_trees_seed2/checkpoint_best.pt", root / "conll2003/bin")
    assert gates["tokens"] == every.shape[1]
    assert gates["mean_gate"] == pytest.approx(every.mean(1).tolist(), abs=1e-5)
    assert gates["token_std"] == pytest.approx(every.std(1, unbiased=False).tolist(), abs=1e-5)
    assert not (res / "CoNLL-2003_baseline_seed1.gates.json").exists()
    assert ctrl["gates"]["seeds"] == [1, 2] and "gates" not in rows["baseline"]
    text = readme.read_text()
    assert "Finished: 4 of the 4 planned runs." in text and "| SLA on random trees (control) |" in text
    assert "| CoNLL-2003 | SLA on random trees (control) | " in text
    assert (res / "validation_curves.png").stat().st_size > 1000 and (res / "sla_gates.png").stat().st_size > 1000
    for f in res.iterdir():
        data = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        assert str(tmp_path).encode() not in data, f.name
    (res / "CoNLL-2003_sla_random_trees_seed2.gates.json").unlink()  # as a run finished by an older script
    again = run(cmd)
    assert again.stderr.count("skip") == 4 and "updates of 32" not in again.stderr
    assert json.loads((res / "CoNLL-2003_sla_random_trees_seed2.gates.json").read_text()) == gates
    status = run(cmd + ["--status"]).stdout.splitlines()
    assert len(status) == 5 and all("finished: f1 " in line for line in status[:4]), status
    assert status[4] == "finished 4 of 4"
    other = run(cmd[:cmd.index("--updates-CoNLL-2003") + 1] + ["8"] + cmd[cmd.index("--updates-CoNLL-2003") + 2:],
                check=False)
    assert other.returncode == 1 and "max_update" in other.stderr and "updates of 32" not in other.stderr


def gate_values(checkpoint, data):
    """Every real test token's gate in every layer, [layers, tokens], one sentence at a time."""
    from fairseq import checkpoint_utils

    import fairseq_syntax

    fairseq_syntax.register()
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)],
                                                                    arg_overrides={"data": str(data)})
    gates = [m for name, m in models[0].eval().named_modules() if name.endswith("sla_gate")]
    seen = []
    hooks = [g.register_forward_hook(lambda mod, inp, out: seen.append(out.detach().flatten())) for g in gates]
    task.load_dataset("test")
    with torch.no_grad():
        for batch in task.get_batch_iterator(task.dataset("test"), max_sentences=1).next_epoch_itr(shuffle=False):
            models[0](**batch["net_input"], features_only=True)
    for h in hooks:
        h.remove()
    return torch.stack([torch.cat(seen[i::len(gates)]) for i in range(len(gates))]).double()


def test_status_reads_a_running_runs_last_update(tmp_path):
    """--status: a finished run by its score, a begun one by the last update its log shows (a train_inner
    line, num_updates=N), its best dev score so far, the time it has left at the pace its process logs and whether a
    process trains it now, the others not started; nothing is prepared or trained."""
    ck = tmp_path / "ck/CoNLL-2003_wla_seed1"
    ck.mkdir(parents=True)
    inner = "| INFO | train_inner | epoch 001:    {0} / 439 loss=1.5, num_updates={0}, lr=1e-05\n"
    (ck / "train.log").write_text(  # stopped at update 50, resumed two hours later: only the new process's pace counts
        "2026-12-01 09:00:00 " + inner.format(50) + "2026-12-01 11:00:00 | INFO | fairseq_cli.train | "
        "{'_name': None, 'common': {'_name': None, 'fp16': False}}\n"
        "2026-12-01 11:01:00 " + inner.format(50) + "2026-12-01 11:02:40 " + inner.format(100))
    ck = tmp_path / "ck/CoNLL-2003_sla_seed1"
    ck.mkdir(parents=True)
    (ck / "train.log").write_text("".join(
        f"2026-12-01 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 0.3 | f1 {f1} | num_updates {u}\n"
        for u, f1 in ((220, 74.37), (440, 85.05), (660, 85.05))) + "2026-12-01 | INFO | train_inner | epoch 002:"
        "    50 / 439 loss=0.2, num_updates=700, lr=1e-05\n")
    res = tmp_path / "res"
    res.mkdir()
    (res / "CoNLL-2003_baseline_seed1.eval.json").write_text(json.dumps(
        {"metric": "f1", "f1": 88.123, "split": "test", "best_update": 1980}))
    # a damaged results file is named on its own line; the other runs are still listed
    (res / "CoNLL-2003_sgnet_nomask_seed1.eval.json").write_text('{"metric": "f1", "f1": 8')
    # wla's lock file names a process that is gone (a killed run); sla's folder is held now, by this process
    stale = "pid 999999999, reproduce_sla_table.sh, started 2026-12-01\n"
    (tmp_path / "ck/CoNLL-2003_wla_seed1/.lock").write_text(stale)
    with FileLock(str(ck / ".lock")) as held:
        held.claim("reproduce_sla_table.sh")
        out = run(["bash", str(ROOT / "examples/encoders/reproduce_sla_table.sh"), "--tasks", "CoNLL-2003",
                   "--systems", "baseline wla sla sgnet sgnet_nomask", "--seeds", "1", "--out", str(res),
                   "--checkpoints", str(tmp_path / "ck"), "--status"])
        holder = (ck / ".lock").read_text().strip()
    assert out.stdout.splitlines() == [
        "CoNLL-2003 baseline seed 1: finished: f1 88.12 on test, best at update 1980",
        "CoNLL-2003 wla seed 1: update 100 of 2200; about 70 min left at its pace of the last 50 updates; "
        "not training now: the next call resumes it",
        f"CoNLL-2003 sla seed 1: update 700 of 2200, best dev f1 so far 85.05 at update 660; training now ({holder})",
        "CoNLL-2003 sgnet seed 1: not started",
        "CoNLL-2003 sgnet_nomask seed 1: finished: its results file is damaged: "
        f"{res}/CoNLL-2003_sgnet_nomask_seed1.eval.json: line 1: not valid JSON (Expecting ',' delimiter)",
        "finished 2 of 5; not finished: CoNLL-2003 3"]


def test_runs_go_first_seeds_baselines_then_seeds_tasks_systems(tmp_path):
    """The budget is checked on the first seed's baseline curves, so those train before anything else; then seeds,
    tasks, systems, each run once, the controls on CoNLL-2003 only (--status lists them in training order).
    Relative folders are the caller's, though the script works from the checkout's root."""
    out = run(["bash", str(ROOT / "examples/encoders/reproduce_sla_table.sh"), "--tasks", "CoNLL-2003 CoLA",
               "--systems", "wla  baseline sgnet_nomask", "--seeds", " 2  1 ", "--out", "res",
               "--checkpoints", "ck", "--status"], cwd=tmp_path)
    assert out.stdout.splitlines()[-1] == "finished 0 of 10; not finished: CoNLL-2003 6, CoLA 4"
    assert f"note: {tmp_path / 'res'} does not exist: no run has finished there" in out.stderr
    assert f"note: {tmp_path / 'ck'} does not exist: no run has started there" in out.stderr
    assert [line.split(":")[0] for line in out.stdout.splitlines()[:-1]] == [
        "CoNLL-2003 baseline seed 2", "CoLA baseline seed 2",
        "CoNLL-2003 wla seed 2", "CoNLL-2003 sgnet_nomask seed 2", "CoLA wla seed 2",
        "CoNLL-2003 wla seed 1", "CoNLL-2003 baseline seed 1", "CoNLL-2003 sgnet_nomask seed 1",
        "CoLA wla seed 1", "CoLA baseline seed 1"]
    # a plan with no run in it (a control asked on a GLUE task) says so instead of finishing having done nothing
    empty = run(["bash", str(ROOT / "examples/encoders/reproduce_sla_table.sh"), "--tasks", "CoLA", "--systems",
                 "sgnet_nomask", "--out", str(tmp_path / "res"), "--checkpoints", str(tmp_path / "ck")], check=False)
    assert empty.returncode == 1 and "no run in this plan" in empty.stderr
    assert "the controls run on sgnet_nomask: CoNLL-2003" in empty.stderr
    summary = run(["bash", str(ROOT / "examples/encoders/reproduce_sla_table.sh"), "--summary-only", "--out", "res"],
                  cwd=tmp_path, check=False)
    assert summary.returncode != 0 and f"{tmp_path / 'res'}: no such folder" in summary.stderr
    assert not (tmp_path / "res").exists() and not (tmp_path / "ck").exists()
    # a folder typed inside the checkout is kept relative to its root, as the committed records hold it
    typed = run([sys.executable, "-c", "import sys; from fairseq_syntax.pipeline.logs import from_caller\n"
                 "for p in sys.argv[1:]: print(from_caller(p))",
                 "../work/ck", f"{ROOT}/results", "..", "/elsewhere/ck"],
                cwd=ROOT / "examples")
    assert typed.stdout.splitlines() == ["work/ck", "results", ".", "/elsewhere/ck"]


@pytest.mark.parametrize("edit,says,protocol", [
    (lambda e: e.update(seed=6, max_update=10), "its max_update is 10, the table's 2200", True),
    (lambda e: e.update(system="wla_big"), "system 'wla_big' is not one of the table's", True),
    (lambda e: e.update(system="wla_big"), "system 'wla_big' is not one of the table's", False)])
def test_a_run_not_of_the_tables_protocol_is_refused_by_name_and_the_table_is_unchanged(tmp_path, capsys, edit, says,
                                                                                        protocol):
    """A trial (--seeds 6 --updates-CoNLL-2003 10) into the table's folder moved the README's CoNLL-2003 baseline
    from 86.39 ± 0.15 (5) to 74.18 ± 29.92 (6); a system the table does not list entered Holm's family unseen, and
    its pooled spread, where the folder had lost its protocol.json: the table's systems are its own, not the file's."""
    import shutil

    summarize = study_script("examples/encoders/summarize_sla_table.py").main
    res = tmp_path / "res"
    shutil.copytree(ROOT / "results/encoders_table1", res, ignore=shutil.ignore_patterns(
        "summary.*", "*.png", *([] if protocol else ["protocol.json"])))
    e = json.loads((res / "CoNLL-2003_baseline_seed1.eval.json").read_text())
    edit(e)
    name = f"{e['task']}_{e['system']}_seed{e['seed']}"
    (res / f"{name}.eval.json").write_text(json.dumps(e))
    for kind in ("pred.jsonl.gz", "train.log.gz", "eval.txt"):
        shutil.copy(res / f"CoNLL-2003_baseline_seed1.{kind}", res / f"{name}.{kind}")
    summarize(["--results", str(res), "--bootstrap", "10"])
    err = capsys.readouterr().err
    assert f"refused {name}: " in err and says in err
    got = json.loads((res / "summary.json").read_text())
    assert got["refused"] == {name: got["refused"][name]} and says in got["refused"][name]
    want = json.loads((ROOT / "results/encoders_table1/summary.json").read_text())
    assert got["table"]["CoNLL-2003"]["baseline"]["scores"] == want["table"]["CoNLL-2003"]["baseline"]["scores"]
    assert got["detectable"] == want["detectable"]  # the pooled spreads
    holm_of = {w["holm_of"] for sy in got["table"].values() for row in sy.values() for k, v in row.items()
               if k.startswith("vs_") and (w := v.get("welch")) and "holm_of" in w}
    assert holm_of == {w["holm_of"] for sy in want["table"].values() for row in sy.values() for k, v in row.items()
                       if k.startswith("vs_") and (w := v.get("welch")) and "holm_of" in w}
    assert "**Not in the table** (not of its protocol):" in (res / "summary.md").read_text()


def test_reproduce_refuses_a_trial_into_the_tables_folder(tmp_path):
    script = str(ROOT / "examples/encoders/reproduce_sla_table.sh")
    for args, says in ((["--tasks", "CoNLL-2003", "--systems", "baseline", "--seeds", "6", "--updates-CoNLL-2003",
                         "10"], "--updates-CoNLL-2003 10: the table's runs train 2200 updates"),
                       (["--seeds", "6"], "seed 6 is not one of the table's (1, 2, 3, 4, 5)"),
                       (["--validations", "2"], "--validations 2: the table's runs validate 10 times")):
        proc = run(["bash", script, *args], check=False, cwd=tmp_path)
        assert proc.returncode == 1 and says in proc.stderr, proc.stderr


def test_the_tables_protocol_names_every_reason_a_run_is_not_of_it(tmp_path):
    """Another scored split, and a log that stops short of the budget (a run cut and scored anyway)."""
    mod = study_script("examples/encoders/summarize_sla_table.py")
    e = json.loads((ROOT / "results/encoders_table1/CoNLL-2003_baseline_seed1.eval.json").read_text())
    log = ROOT / "results/encoders_table1/CoNLL-2003_baseline_seed1.train.log.gz"
    prot = mod.read_protocol(ROOT / "results/encoders_table1")
    systems = mod.SYSTEMS
    assert mod.refusal(e, log, prot, systems) is None
    assert mod.refusal(dict(e, split="valid"), log, None, systems) is None
    assert "its split is 'valid', the table's 'test'" in mod.refusal(dict(e, split="valid"), log, prot, systems)
    short = tmp_path / "short.train.log.gz"
    lines = gzip.decompress(log.read_bytes()).decode().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "valid on 'valid' subset" in line and "num_updates 1100" in line)
    short.write_bytes(gzip.compress("".join(lines[:cut + 1]).encode()))
    assert "its log's last validation is at update 1100, not the budget's 2200" in mod.refusal(e, short, prot, systems)
