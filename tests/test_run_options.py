"""A finished run is never skipped, nor a stopped one resumed, under options it was not trained with: the check of a
fairseq log's configuration (examples/studies/run_options.py), the stopping rule replayed (early_stopping.py
--agrees), and the reproduce scripts refusing before anything trains, on the committed results."""
import gzip
import shutil
import sys

from examples.studies import early_stopping, run_options

from .conftest import ROOT, run

# fairseq 0.12's configuration line, cut down: sections as dicts, the legacy model args as a Namespace
CONFIG = ("2026-11-27 10:00:00 | INFO | fairseq_cli.train | {'_name': None, 'common': {'_name': None, 'seed': %d, "
          "'fp16': False}, 'optimization': {'_name': None, 'max_update': %d, 'lr': [0.001]}, 'dataset': {'_name': "
          "None, 'batch_size': 32, 'max_tokens': None}, 'model': Namespace(_name='bidaf_sa_early', "
          "arch='bidaf_sa_early', signals='CorefAll', sup_lambda=0.3, clip=-1.0, eps=inf), 'optimizer': "
          "{'_name': 'adam', 'lr': [0.001]}}\n")
WANT = ["seed=3", "fp16=False", "lr=1e-3", "batch_size=32", "arch=bidaf_sa_early", "signals=CorefAll",
        "sup_lambda=0.3"]


def log_of(tmp_path, *starts, name="train.log"):
    log = tmp_path / name
    text = "".join(CONFIG % (seed, cap) + "2026-11-27 10:00:01 | INFO | train_inner | epoch 001: 25 / 100\n"
                   for seed, cap in starts)
    if name.endswith(".gz"):
        with gzip.open(log, "wt") as fh:
            fh.write(text)
    else:
        log.write_text(text)
    return str(log)


def test_every_start_holds_the_options_asked_for(tmp_path):
    log = log_of(tmp_path, (3, 500), (3, 2500))
    assert run_options.check(log, dict(w.split("=") for w in WANT)) is None
    assert run_options.check(log, {"clip": "-1", "eps": "inf"}) is None  # a negative number; a name kept as text
    assert run_options.check(str(tmp_path / "absent.log"), {"seed": "3"}) is None  # not started: nothing to hold


def test_a_difference_names_the_log_its_line_and_the_option(tmp_path):
    log = log_of(tmp_path, (3, 500), (4, 2500), name="train.log.gz")  # the second start ran another seed
    assert run_options.check(log, {"seed": "3"}) == f"{log}: line 3: trained with seed=4; this call asks seed=3"
    assert run_options.check(log, {"lr": "1e-4"}) == f"{log}: line 1: trained with lr=0.001; this call asks lr=1e-4"
    assert run_options.check(log, {"fp16": "True"}).endswith("trained with fp16=False; this call asks fp16=True")
    assert run_options.check(log, {"sup_lambda": "0.5"}).endswith("trained with sup_lambda=0.3; this call asks "
                                                                  "sup_lambda=0.5")
    assert run_options.check(log, {"heads_suffix": "x"}) == (f"{log}: line 1: its configuration has no option "
                                                             "heads_suffix")


def test_the_configuration_is_read_as_data_never_run(tmp_path):
    marker = tmp_path / "ran"
    log = tmp_path / "train.log"
    log.write_text("x | INFO | fairseq_cli.train | {'common': {'seed': __import__('os').system('touch %s')}}\n"
                   % marker)
    assert run_options.check(str(log), {"seed": "1"}).endswith("trained with seed=__import__('os').system('touch "
                                                               f"{marker}'); this call asks seed=1")
    assert not marker.exists()
    for bad in ("{'common': {'seed': 1", "{'a': {[1]: 2}}", "{'a': " + "[" * 100000 + "]" * 100000 + "}"):
        log.write_text(f"x | INFO | fairseq_cli.train | {bad}\n")  # cut short; a list as a key; nested too deep
        out = run([sys.executable, "-m", "examples.studies.run_options", str(log), "seed=1"], check=False)
        assert out.returncode == 1 and f"{log}: line 1: a fairseq configuration that does not parse" in out.stderr


def validations_log(tmp_path, accs, interval=500):
    log = tmp_path / "valid.log"
    log.write_text("".join(f"2026 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 3 | accuracy {a} | "
                           f"num_updates {interval * (i + 1)}\n" for i, a in enumerate(accs)))
    return str(log)


def test_the_rule_replayed_says_where_these_options_stop_a_run(tmp_path):
    # best at update 1,000; patience 3 stops at 2,500, patience 5 would stop at 3,500
    log = validations_log(tmp_path, [10, 20, 19, 18, 17, 16, 15])
    rule = dict(metric="accuracy", max_update=30000, maximize=True, by="update")
    assert early_stopping.agrees(log, patience=5, finished=True, **rule) is None
    assert early_stopping.agrees(log, patience=3, **rule) == (
        f"{log}: these options stop it at update 2500 (patience), but it trained on to update 3500: it was trained "
        "under other stopping options")
    assert early_stopping.agrees(log, patience=8, finished=True, **rule) == (
        f"{log}: it finished at update 3500, where these options would train it further")
    assert early_stopping.agrees(log, patience=8, **rule) is None  # still running under these: it resumes
    assert early_stopping.agrees(log, patience=5, finished=True, **{**rule, "max_update": 2000}).startswith(
        f"{log}: these options stop it at update 2000 (max_update)")


def test_reproduce_lambada_refuses_a_finished_run_made_with_other_options(tmp_path):
    out, data, ck = tmp_path / "res", tmp_path / "data", tmp_path / "ck"
    out.mkdir()
    data.mkdir()
    (data / "dict.txt").write_text("a 1\n")
    for f in (ROOT / "results/lambada").glob("converged_sa_early_seed1.*"):
        shutil.copy(f, out)
    cmd = ["bash", str(ROOT / "examples/lambada/reproduce.sh"), "--converge", "--tag", "converged", "--seeds", "1",
           "--runs", "sa_early", "--data", str(data), "--out", str(out), "--checkpoints", str(ck)]
    for extra, says in ((["--batch-size", "64"], "line 2: trained with batch_size=32; this call asks batch_size=64"),
                        (["--patience", "3"], "these options stop it at update 15000 (patience), but it trained on "
                                              "to update 19000"),
                        (["--patience", "8"], "it finished at update 19000, where these options would train it "
                                              "further")):
        proc = run(cmd + extra, check=False)
        assert proc.returncode == 1 and says in proc.stderr, proc.stderr[-2000:]
        assert "Give another --tag" in proc.stderr and not ck.exists()  # refused before anything trained


def test_reproduce_race_and_glue_refuse_a_finished_run_made_with_other_options(tmp_path):
    out, data, pre = tmp_path / "race", tmp_path / "race_bin", tmp_path / "minilm"
    out.mkdir()
    (data / "label").mkdir(parents=True)
    for split in ("train-middle", "valid-middle", "valid-high"):
        (data / "label" / f"{split}.label").write_text("0\n")
    pre.mkdir()
    (pre / "model.pt").write_text("never loaded: nothing trains")
    for f in (ROOT / "results/race").glob("baseline_seed1.*"):
        shutil.copy(f, out)
    cmd = ["bash", str(ROOT / "examples/race/reproduce.sh"), "--systems", "baseline", "--data", str(data),
           "--out", str(out), "--pretrained", str(pre), "--checkpoints", str(tmp_path / "ck")]
    for extra, says in ((["--lr", "1e-5"], "baseline_seed1.train.log.gz: line 2: trained with lr=0.0001; this call "
                                           "asks lr=1e-5"),
                        (["--updates", "800"], "trained with max_update=400; this call asks max_update=800"),
                        (["--eval-split", "valid-high"], "baseline_seed1.eval.json: scored on valid-middle; this "
                                                         "call asks --eval-split valid-high")):
        proc = run(cmd + extra, check=False)
        assert proc.returncode == 1 and says in proc.stderr, proc.stderr[-2000:]
        assert not (tmp_path / "ck").exists()
    (out / "baseline_seed1.eval.json").write_text('{"split": "valid-mid')  # damaged: named, not a traceback
    proc = run(cmd, check=False)
    assert proc.returncode == 1 and "baseline_seed1.eval.json: line 1: not valid JSON" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "ck").exists()

    glue = tmp_path / "glue"
    glue.mkdir()
    for f in (ROOT / "results/encoders").glob("CoLA_roberta_sgnet_small_seed1.*"):
        shutil.copy(f, glue)
    proc = run(["bash", str(ROOT / "examples/encoders/reproduce_glue.sh"), "--tasks", "CoLA",
                "--archs", "roberta_sgnet_small",
                "--seeds", "1", "--updates-CoLA", "1000", "--out", str(glue), "--data-root", str(tmp_path / "gd")],
               check=False)
    assert proc.returncode == 1 and "line 2: trained with max_update=800; this call asks max_update=1000" in \
        proc.stderr and not (tmp_path / "gd").exists(), proc.stderr[-2000:]  # refused before its data prep


def test_a_number_option_is_never_computed_with_before_it_is_checked(tmp_path):
    """bash's arithmetic expansion runs a $(...) inside an array subscript: `$((n / 10))` with n = 'PATH[$(cmd)]'
    runs cmd (a --jobs of examples/lambada/reproduce.sh could). Every number the reproduce scripts and gpu_check
    compute with is checked as a whole number first."""
    mark = tmp_path / "ran"
    evil = f"PATH[$(touch {mark})]"
    calls = [("examples/lambada/reproduce.sh", "--updates"), ("examples/lambada/reproduce.sh", "--jobs"),
             ("examples/lambada/reproduce.sh", "--seeds"), ("examples/encoders/reproduce_glue.sh", "--updates-CoLA"),
             ("examples/encoders/reproduce_glue.sh", "--jobs"), ("examples/multi30k/reproduce.sh", "--jobs"),
             ("examples/race/reproduce.sh", "--jobs"), ("examples/race/reproduce.sh", "--seeds"),
             ("benchmarks/gpu_check.sh", "--speed-updates")]
    for script, option in calls:
        proc = run(["bash", str(ROOT / script), option, evil, "--out", str(tmp_path / "out")], check=False)
        # (a list option names its first word that is not a number)
        assert proc.returncode == 1 and "takes a whole number, got 'PATH[$(touch" in proc.stderr, (script, proc.stderr)
        assert not mark.exists(), (script, option)
    proc = run(["bash", str(ROOT / "examples/multi30k/reproduce.sh"), "--runs", f"sgnet:{evil}"], check=False)
    assert proc.returncode == 1 and "the seed of sgnet:" in proc.stderr and not mark.exists()


def test_a_seed_is_named_one_way_only(tmp_path):
    """--seeds 01 trained seed 1 again as _seed01, after which every summary of the folder failed; a 20-digit seed
    printed a bash error before the refusal; a seed given twice would train into one run twice."""
    for seeds, says in (("01", "got '01' (digits, no leading zero"), ("1 " + "9" * 20, "got '" + "9" * 20 + "'"),
                        ("1 2 1", "--seeds gives 1 twice")):
        proc = run(["bash", str(ROOT / "examples/lambada/reproduce.sh"), "--seeds", seeds, "--out",
                    str(tmp_path / "out")], check=False)
        assert proc.returncode == 1 and says in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and not (tmp_path / "out").exists()
