"""The Multi30k and LAMBADA summaries on hand-written runs, the README block they write, and how the reproduce
scripts keep fp16 runs apart from fp32 ones; the front page's figures against the studies' READMEs."""
import gzip
import json
import re
import subprocess
import sys

import pytest
import torch

from examples.studies.readme_block import check_block, replace_block
from examples.studies.seed_statistics import format_p

from .conftest import ROOT, run, study_script
from .run_files import GPU_LINES, config_line, multi30k_folders, valid_line, write_converged_run, write_run_record


def test_multi30k_summary_from_runs(tmp_path):
    """Two systems, two seeds: mean ± std per test set, a paired bootstrap p per seed, only finished runs."""
    data, res, refs = multi30k_folders(tmp_path, 40)
    for system, seed, drop in (("vanilla", 1, 4), ("vanilla", 2, 5), ("sgnet", 1, 1), ("sgnet", 2, 2), ("sgnet", 3, 0),
                               ("sgnet_random_trees", 1, 3), ("sgnet_random_trees", 2, 3), ("sgnet_learn_alpha", 1, 2)):
        with gzip.open(res / "logs" / f"{system}_seed{seed}.train.log.gz", "wt") as fh:
            losses = [5, 4, 3, 3.1, 3.2, 3.3, 3.4, 3.5] if seed < 3 else [5, 4]  # seed 3 still running
            fh.write(config_line())
            fh.writelines(valid_line(e, 100 * e, loss=v) for e, v in enumerate(losses, 1))
        hyp = [r.replace("Hut", "Mütze") if i % 10 < drop else r for i, r in enumerate(refs)]
        with gzip.open(res / "hyp" / f"{system}_seed{seed}.test.de.gz", "wt") as fh:
            fh.write("\n".join(hyp) + "\n")
        write_run_record(res / "logs" / f"{system}_seed{seed}.record.json", "multi30k", f"{system}_seed{seed}",
                         scored=40)
    (res / "learned_alpha").mkdir()
    (res / "learned_alpha/sgnet_learn_alpha_seed1.json").write_text(
        json.dumps({"alpha": {"encoder.syntax_guided": 0.6125}, "initial": 0.5, "num_updates": 800}))
    (res / "learned_alpha/sgnet_seed3.json").write_text("{}")  # a run still training: not read
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- begin multi30k-summary (written by examples/multi30k/summarize.py) -->\nstale\n"
                      "<!-- end multi30k-summary -->\nrest\n")
    subprocess.run([sys.executable, str(ROOT / "examples/multi30k/summarize.py"), "--data", str(data), "--results",
                    str(res), "--bootstrap", "200", "--min-delta", "0.05", "--readme", str(readme),
                    "--planned", "vanilla:1 sgnet:1 vanilla:2 sgnet:2 sgnet:3 vanilla_plus1:1"],
                   check=True, capture_output=True)
    s = json.loads((res / "summary.json").read_text())
    assert s["table"]["sgnet"]["test_2016_flickr"]["BLEU"]["n"] == 2  # seed 3 has not stopped
    assert s["table"]["vanilla"]["test_2016_flickr"]["BLEU"]["std"] is not None
    flickr = {system: s["table"][system]["test_2016_flickr"]["BLEU"]["mean"] for system in ("sgnet", "vanilla")}
    assert flickr["sgnet"] > flickr["vanilla"]
    assert "paired_bs_p_vs_vanilla" in s["runs"]["sgnet"]["1"]["scores"]["test"]
    assert s["runs"]["sgnet"]["1"]["convergence"]["stopped"] == "patience"
    assert s["runs"]["sgnet"]["3"]["convergence"]["stopped"] is None
    assert s["signatures"]["BLEU"].startswith("nrefs:1|")
    assert s["early_stopping"] == {"patience_epochs": 5, "min_delta": 0.05, "max_update": 8000}
    assert "SG-Net (+1 SDOI layer) | 2 |" in (res / "summary.md").read_text()
    text = readme.read_text()
    assert text.startswith("intro\n<!-- begin") and text.endswith("<!-- end multi30k-summary -->\nrest\n")
    assert "stale" not in text and "cap 8,000 updates" in text and "more than 0.05" in text
    ps = [s["runs"]["sgnet"][k]["scores"]["test"]["paired_bs_p_vs_vanilla"]["BLEU"] for k in ("1", "2")]
    sg = s["table"]["sgnet"]["test_2016_flickr"]["BLEU"]
    assert f"| SG-Net (+1 SDOI layer) | 2 | {sg['mean']:.2f} ± {sg['std']:.2f} ({ps[0]:.3f}, {ps[1]:.3f}) |" in text
    va = s["table"]["vanilla"]["test_2016_flickr"]["BLEU"]
    welch = sg["vs_vanilla"]
    assert welch["n"] == [2, 2] and welch["diff"] == pytest.approx(sg["mean"] - va["mean"], abs=0.011)
    assert f"| {welch['diff']:+.2f} (p = {welch['welch_p']:.3f}) |" in text and "Welch" in text
    assert "vs_vanilla" not in va and "Welch's t-test over seeds" in (res / "summary.md").read_text()
    # a control is compared with vanilla and with SG-Net, per seed and over seeds; SG-Net only with vanilla
    rt, rt_runs = s["table"]["sgnet_random_trees"]["test_2016_flickr"]["BLEU"], s["runs"]["sgnet_random_trees"]
    assert rt["vs_sgnet"]["diff"] == pytest.approx(rt["mean"] - sg["mean"], abs=0.011) and rt["vs_sgnet"]["n"] == [2, 2]
    assert rt["vs_vanilla"]["diff"] == pytest.approx(rt["mean"] - va["mean"], abs=0.011) and "vs_sgnet" not in sg
    assert {"paired_bs_p_vs_vanilla", "paired_bs_p_vs_sgnet"} <= set(rt_runs["1"]["scores"]["test"])
    assert "paired_bs_p_vs_sgnet" not in s["runs"]["sgnet"]["1"]["scores"]["test"]
    p_sg = rt_runs["2"]["scores"]["test"]["paired_bs_p_vs_sgnet"]["BLEU"]
    assert f"vs sgnet p = {p_sg:.3f})" in (res / "summary.md").read_text()
    assert (f"| {rt['vs_vanilla']['diff']:+.2f} (p = {rt['vs_vanilla']['welch_p']:.3f}) | "
            f"{rt['vs_sgnet']['diff']:+.2f}") in text
    assert "4 of the 6 planned runs. Still to come: sgnet seed 3, vanilla_plus1 seed 1." in text
    assert s["planned_runs"][-1] == "vanilla_plus1:1"
    assert s["trained"] == "fp32 on CPU" and s["runs"]["sgnet"]["1"]["training"]["precision"] == "fp32"
    assert "(200 resamples). Δ: " in text and "summary.md. Trained in fp32 on CPU." in text
    assert s["runs"]["sgnet_learn_alpha"]["1"]["learned_alpha"]["alpha"] == {"encoder.syntax_guided": 0.6125}
    assert "learned_alpha" not in s["runs"]["sgnet"]["3"]
    for out in (text, (res / "summary.md").read_text()):
        assert "at the scored checkpoint: SG-Net, learned α seed 1: 0.613 from 0.5 (update 800)." in out
    # a finished run trained in fp16 on a GPU does not join the fp32 table, and nothing is rewritten
    with gzip.open(res / "logs/sgnet_seed2.train.log.gz", "wt") as fh:
        fh.write(config_line(fp16=True) + GPU_LINES)
        fh.writelines(valid_line(e, 100 * e, loss=v) for e, v in enumerate([5, 4, 3, 3.1, 3.2, 3.3, 3.4, 3.5], 1))
    before = (res / "summary.json").read_text()
    out = subprocess.run([sys.executable, str(ROOT / "examples/multi30k/summarize.py"), "--data", str(data),
                          "--results", str(res), "--bootstrap", "200"], capture_output=True, text=True)
    assert out.returncode != 0 and (res / "summary.json").read_text() == before
    assert ("runs in different precisions (fp16: sgnet seed 2; fp32: sgnet seed 1, sgnet_learn_alpha seed 1, "
            "sgnet_random_trees seed 1, sgnet_random_trees seed 2, vanilla seed 1, vanilla seed 2)") in out.stderr


def test_readme_block_needs_both_markers_once(tmp_path):
    f = tmp_path / "README.md"
    f.write_text("a\n<!-- begin t (generated) -->\nx\n<!-- end t -->\nb\n")
    replace_block(f, "t", "| new |\n")
    assert f.read_text() == "a\n<!-- begin t (generated) -->\n| new |\n<!-- end t -->\nb\n"
    replace_block(f, "t", "| new |")  # unchanged: the file is left as it was
    assert f.read_text().count("| new |") == 1
    f.write_text("a\n<!-- end t -->\n<!-- begin t -->\n")
    with pytest.raises(ValueError, match=r"README.md: needs one '<!-- begin t .*line 3\).*line 2\)"):
        replace_block(f, "t", "x")
    f.write_text("no markers\n")
    with pytest.raises(ValueError, match="found at line none"):
        replace_block(f, "t", "x")
    assert f.read_text() == "no markers\n" and not list(tmp_path.glob(".*tmp"))
    with pytest.raises(ValueError, match="found at line none"):
        check_block(f, "t")
    with pytest.raises(ValueError, match=r"missing.md: cannot be read .*\(FileNotFoundError\)"):
        check_block(tmp_path / "missing.md", "t")


@pytest.mark.parametrize("script, block", [("examples/encoders/summarize_sla_table.py", "sla-table-summary"),
                                           ("examples/lambada/summarize.py", "lambada-summary"),
                                           ("examples/multi30k/summarize.py", "multi30k-summary"),
                                           ("examples/race/summarize.py", "race-summary")])
def test_summarizers_refuse_a_readme_without_their_block_before_reading_results(script, block, tmp_path, capsys):
    """The results folder does not exist: had the summarizer read it first, its error would be another."""
    readme = tmp_path / "README.md"
    readme.write_text("# no block\n")
    with pytest.raises(SystemExit) as e:
        study_script(script).main(["--results", str(tmp_path / "none"), "--readme", str(readme)])
    err = capsys.readouterr().err
    assert e.value.code == 1 and f"error: {readme}: needs one '<!-- begin {block} ... -->' line" in err, err
    assert readme.read_text() == "# no block\n"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: --fp16 would train")
def test_fp16_runs_have_their_own_checkpoints_and_refuse_a_machine_without_a_gpu(tmp_path):
    ck = tmp_path / "ck"
    (ck / "multi30k_vanilla_seed1").mkdir(parents=True)
    (ck / "multi30k_vanilla_seed1/train.log").write_text(valid_line(1, 128, loss=5.0))  # an fp32 run under way
    env = {"MULTI30K_CHECKPOINTS": str(ck), "MULTI30K_DATA": str(tmp_path / "data")}
    cmd = ["bash", str(ROOT / "examples/multi30k/reproduce.sh"), "--runs", "vanilla:1", "--out", str(tmp_path / "res")]
    assert run(cmd + ["--status"], env=env).stdout.startswith("vanilla seed 1: epoch 1 (128 updates)")
    assert run(cmd + ["--status", "--fp16"], env=env).stdout == "vanilla seed 1: not started\n"
    out = run(cmd + ["--fp16"], env=env, check=False)
    assert out.returncode == 1 and "--fp16 trains on a GPU, and torch sees none here" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"] and [p.name for p in ck.iterdir()] == [
        "multi30k_vanilla_seed1"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: --fp16 would train")
def test_lambada_fp16_refuses_a_machine_without_a_gpu_and_writes_nothing(tmp_path):
    out = run(["bash", str(ROOT / "examples/lambada/reproduce.sh"), "--fp16", "--data", str(tmp_path / "bin"),
               "--checkpoints", str(tmp_path / "ck")], check=False)
    assert out.returncode == 1 and "[lambada] --fp16 trains on a GPU, and torch sees none here" in out.stderr
    assert list(tmp_path.iterdir()) == [] and not (ROOT / "results/lambada_fp16").exists()


def test_lambada_status_says_where_each_run_stands_and_trains_nothing(tmp_path):
    """examples/lambada/reproduce.sh --status: a finished run by its dev accuracy, a running one by the stopping rule
    read from its log (validations every --valid-interval updates), one without a log as not started."""
    ck, res = tmp_path / "ck", tmp_path / "res"
    ck.mkdir()
    res.mkdir()
    (ck / "converged_sa_early_seed1.train.log").write_text(
        "".join(valid_line(1, u, loss=3.0, accuracy=a) for u, a in ((500, 13.53), (1000, 17.25), (1500, 16.69))))
    (res / "converged_sa_early_corefall_seed1.eval.json").write_text(json.dumps({"all": {"n": 9, "accuracy": 31.5}}))
    (res / "converged_sa_early_corefall_seed1.pred.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    (res / "converged_sa_early_corefall_seed2.eval.json").write_text('{"all": {"n": 9, ')  # damaged: named
    (res / "converged_sa_early_corefall_seed2.pred.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    cmd = ["bash", str(ROOT / "examples/lambada/reproduce.sh"), "--status", "--converge", "--tag", "converged",
           "--seeds", "1 2", "--patience", "3", "--checkpoints", str(ck), "--out", str(res),
           "--data", str(tmp_path / "no-data")]
    assert run(cmd).stdout.splitlines() == [
        "converged_sa_early seed 1: update 1500 (1500 updates): best valid accuracy 17.25 at update 1000; 1 of 3 "
        "validations without improvement so far; not training now: the next call resumes it",
        f"converged_sa_early_corefall seed 1: finished; LAMBADA dev accuracy 31.5 "
        f"({res}/converged_sa_early_corefall_seed1.eval.json)",
        "converged_sa_early seed 2: not started",
        f"converged_sa_early_corefall seed 2: finished; its results file is damaged: "
        f"{res}/converged_sa_early_corefall_seed2.eval.json: line 1: not valid JSON (Expecting property name enclosed "
        f"in double quotes) ({res}/converged_sa_early_corefall_seed2.eval.json)"]
    fixed = run(cmd[:3] + cmd[4:] + ["--updates", "3000"]).stdout.splitlines()[0]  # a fixed budget, not the rule
    assert fixed == ("converged_sa_early seed 1: update 1500 (1500 updates): best valid accuracy 17.25 at update "
                     "1000; 3000 updates planned; not training now: the next call resumes it")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "res"] and len(list(res.iterdir())) == 4


def test_lambada_summary_calls_converged_only_what_the_rule_stopped(tmp_path):
    """A fixed budget validated every 100 updates, with its best early, has 5 validations without improvement at
    the end, but not the rule's (every 500): it is a fixed budget; a run validated every 500 that the rule stopped
    is converged, and a run still under the rule is not."""
    summarize_py = study_script("examples/lambada/summarize.py")
    ROWS, summarize = summarize_py.ROWS, summarize_py.main

    def write(name, curve, acc):
        text = config_line() + "".join(valid_line(1, u, loss=3.0, accuracy=a) for u, a in curve)
        (tmp_path / f"{name}.train.log.gz").write_bytes(gzip.compress(text.encode()))
        (tmp_path / f"{name}.eval.json").write_text(json.dumps({k: {"n": 9, "accuracy": acc} for k in ROWS}))
        write_run_record(tmp_path / f"{name}.record.json", "lambada", name)

    early = [(u, a) for u, a in zip(range(100, 1100, 100), (5, 9, 12, 14, 13, 13, 12, 13, 11, 12))]
    write("sa_early_seed1", early, 20.0)
    write("converged_sa_early_seed1", [(u, 20 + (u <= 1500) * u / 100) for u in range(500, 4500, 500)], 30.0)
    write("converged_sa_early_seed2", [(u, u / 100) for u in range(500, 3000, 500)], 25.0)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    runs = {s: r["runs"] for s, r in json.loads((tmp_path / "summary.json").read_text())["systems"].items()}
    assert runs["sa_early"]["1"]["trained"]["stopped"] is None
    assert runs["sa_early"]["1"]["trained"]["best_update"] == 400
    assert runs["converged_sa_early"]["1"]["trained"]["stopped"] == "patience"
    assert runs["converged_sa_early"]["1"]["trained"]["best_update"] == 1500
    assert runs["converged_sa_early"]["2"]["trained"]["stopped"] is None
    table = (tmp_path / "summary.md").read_text()
    assert "| sa_early | 1 | 20.00 | – | – | 400 | – | fixed budget, not converged (last update 1,000) |" in table
    assert "| converged_sa_early | 2 | 27.50 ± 3.54 | – | – | 1,500, 2,500 | – | fixed budget" in table
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "100"])  # the rule's spacing
    table = (tmp_path / "summary.md").read_text()
    assert "| sa_early | 1 | 20.00 | – | – | 400 | – | converged: 5 validations" in table


def test_lambada_summary_tests_over_seeds_whether_the_supervised_reader_converges_sooner(tmp_path):
    """Best validations at updates 1,000 and 1,500 (+ CorefAll) against 2,500 and 3,500: Δ = −1,750 updates.
    By hand: the variances are 125,000 and 500,000, so Welch's t = −1750 / sqrt(62,500 + 250,000) = −3.130, with
    Welch–Satterthwaite df = 312,500² / (62,500² + 250,000²) = 1.471."""
    from scipy.stats import t as student_t

    summarize = study_script("examples/lambada/summarize.py").main

    for seed, (sup, base) in enumerate(((1000, 2500), (1500, 3500)), 1):
        write_converged_run(tmp_path, f"converged_sa_early_corefall_seed{seed}", sup, 40.0 + seed)
        write_converged_run(tmp_path, f"converged_sa_early_seed{seed}", base, 36.0 + seed)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    row = json.loads((tmp_path / "summary.json").read_text())["systems"]["converged_sa_early_corefall"]
    t = -1750 / (62_500 + 250_000) ** 0.5
    df = 312_500 ** 2 / (62_500 ** 2 + 250_000 ** 2)
    p = 2 * student_t.cdf(t, df)
    assert row["best_update_vs_twin"]["diff"] == -1750
    assert abs(row["best_update_vs_twin"]["welch_p"] - p) < 1e-3 * p + 1e-6
    assert "| 1,000, 1,500 | -1,750 (p = " in (tmp_path / "summary.md").read_text()


def test_lambada_summary_reads_the_table_in_words_with_its_numbers(tmp_path):
    """Two converged seeds a side, accuracies 41, 42 (+ CorefAll) against 37, 38, on 9 instances. By hand:
    McNemar 5 against 0 discordant is 2/32 = 0.0625 (seed 1), 0 against 0 is 1 (seed 2); Welch's t over seeds is
    4 / sqrt(0.25 + 0.25) = 5.657 with df = 0.5² / (2 · 0.25²) = 2; the best updates 1,000, 1,500 against 2,500,
    3,500 as in the test above."""
    from scipy.stats import t as student_t

    summarize = study_script("examples/lambada/summarize.py").main

    write_converged_run(tmp_path, "converged_sa_early_corefall_seed1", 1000, 41.0, [True] * 7 + [False] * 2)
    write_converged_run(tmp_path, "converged_sa_early_seed1", 2500, 37.0, [True] * 2 + [False] * 7)
    write_converged_run(tmp_path, "converged_sa_early_corefall_seed2", 1500, 42.0, [True] * 4 + [False] * 5)
    write_converged_run(tmp_path, "converged_sa_early_seed2", 3500, 38.0, [True] * 4 + [False] * 5)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    welch = format_p(2 * student_t.sf(4 / 0.5 ** 0.5, 2), 3)
    best_t = -1750 / (62_500 + 250_000) ** 0.5
    best = format_p(2 * student_t.cdf(best_t, 312_500 ** 2 / (62_500 ** 2 + 250_000 ** 2)), 3)
    assert welch == "0.030" and best not in ("0.000", welch)
    md = (tmp_path / "summary.md").read_text()
    assert "**Reading** (told apart: p < 0.05):" in md
    assert ("- converged_sa_early_corefall against converged_sa_early (2 seeds a side, all converged): higher on "
            "2 of 2 (+4.00, +4.00 points; McNemar p = 0.0625, 1.0000, 0 of 2 told apart). converged_sa_early's own "
            f"seeds span 1.00 points (37.00 to 38.00). Over seeds: +4.00 (Welch p = {welch}), told apart. Best "
            f"validation at update 1,250 on average against 3,000: -1,750 (Welch p = {best}), not told apart.\n") in md


def test_lambada_summary_says_so_when_the_two_readers_have_different_seed_counts(tmp_path):
    """While seeds are still training, + CorefAll has seeds 1, 2 and SA-Early 1, 2, 3: the per-seed tests pair
    seeds 1 and 2, Welch compares all five. By hand: means 41.5 and 38, variances 0.5 and 1, so
    t = 3.5 / sqrt(0.5/2 + 1/3) = 4.583 with df = 0.5833² / (0.25² / 1 + 0.3333² / 2) = 2.882."""
    from scipy.stats import t as student_t

    summarize = study_script("examples/lambada/summarize.py").main

    for seed in (1, 2):
        write_converged_run(tmp_path, f"converged_sa_early_corefall_seed{seed}", 1000, 40.0 + seed)
    for seed in (1, 2, 3):
        write_converged_run(tmp_path, f"converged_sa_early_seed{seed}", 2500, 36.0 + seed)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    se2 = 0.5 / 2 + 1 / 3
    welch = 2 * student_t.sf(3.5 / se2 ** 0.5, se2 ** 2 / ((0.5 / 2) ** 2 + (1 / 3) ** 2 / 2))
    row = json.loads((tmp_path / "summary.json").read_text())["systems"]["converged_sa_early_corefall"]
    assert row["vs_twin"]["diff"] == 3.5 and abs(row["vs_twin"]["welch_p"] - welch) < 5e-3 * welch  # 3 digits
    md = (tmp_path / "summary.md").read_text()
    assert ("- converged_sa_early_corefall against converged_sa_early (2 against 3 seeds, 2 paired, all converged): "
            "higher on 2 of 2 (+4.00, +4.00 points;") in md
    assert "| converged_sa_early | 3 | 38.00 ± 1.00 |" in md


def test_the_front_page_quotes_its_studies():
    """The front page's results are written by hand: each figure there is one its study's README prints, with its sign
    where it has one, and Table 2's count of runs is the number its summary reads."""
    rows = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith("| [")]
    assert len(rows) >= 6
    for row in rows:
        link, result = re.match(r"\| \[[^]]+\]\(([^)#]+)[^)]*\) \| ([^|]+)\|", row).groups()
        study = (ROOT / link).read_text(encoding="utf-8")
        figures = re.findall(r"[+-]?\d+\.\d+(?:e-\d+)?", result.replace("−", "-"))  # the READMEs print a minus as -
        assert figures, row
        missing = [figure for figure in figures if figure not in study]
        assert not missing, f"{link} does not print {missing}"
    table2 = next(row for row in rows if "#table-2" in row)
    landed = int(re.search(r"(\d+) of 70 runs", table2).group(1)) if " of 70 runs" in table2 else 70
    summary = json.loads((ROOT / "results" / "encoders_table2" / "summary.json").read_text(encoding="utf-8"))
    assert landed == sum(len(runs) for runs in summary["trained"]["devices"].values())
