"""FAIRSEQ_SYNTAX_QUICK (the README's quick try: 2 updates a training) never reaches a study's table: every
reproduce script refuses to run under it, before anything trains, and a run trained under it is refused by the
summaries, named, wherever it lies."""
import gzip
import json

import pytest

from .conftest import ROOT, run, study_script
from .run_files import config_line, write_converged_run

SCRIPTS = ["examples/lambada/reproduce.sh", "examples/multi30k/reproduce.sh", "examples/race/reproduce.sh",
           "examples/encoders/reproduce_sla_table.sh", "examples/encoders/reproduce_glue.sh"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_reproduce_script_refuses_quick_mode_before_any_work(script, tmp_path):
    out = tmp_path / "out"
    proc = run(["bash", str(ROOT / script), "--out", str(out)], env={"FAIRSEQ_SYNTAX_QUICK": "1"}, check=False,
               cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    assert "FAIRSEQ_SYNTAX_QUICK is set" in proc.stderr and "unset FAIRSEQ_SYNTAX_QUICK" in proc.stderr
    assert not out.exists()


def test_a_run_trained_in_quick_mode_is_refused_by_the_summary_naming_it(tmp_path, capsys):
    """A converged-looking LAMBADA run whose log holds the quick-mode line: the summary names it and leaves it out
    (studies/run_protocol.py; the other studies' summaries: tests/test_run_protocol.py)."""
    summarize = study_script("examples/lambada/summarize.py").main
    for seed in (1, 2):
        write_converged_run(tmp_path, f"converged_sa_early_seed{seed}", 1500, 36.0 + seed)
    log = tmp_path / "converged_sa_early_seed2.train.log.gz"
    text = gzip.decompress(log.read_bytes()).decode()
    banner = ("[fairseq_syntax] FAIRSEQ_SYNTAX_QUICK is set: this training stops after 2 updates of at most 2 "
              "examples, on the CPU\n")
    log.write_bytes(gzip.compress((banner + text).encode()))
    assert summarize(["--results", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert list(summary["runs"]) == ["converged_sa_early_seed1"]
    assert "line 1: trained with FAIRSEQ_SYNTAX_QUICK set" in summary["refused"]["converged_sa_early_seed2"]
    assert "refused converged_sa_early_seed2: its log's line 1" in capsys.readouterr().err
    assert ("**Not in the table** (not of its protocol): converged_sa_early_seed2:"
            in (tmp_path / "summary.md").read_text())


def test_the_training_setup_marks_quick_mode(tmp_path):
    from examples.studies.training_log import one_setup, training_setup

    log = tmp_path / "a.train.log"
    log.write_text("[fairseq_syntax] FAIRSEQ_SYNTAX_QUICK is set: this training stops after 2 updates\n"
                   + config_line())
    plain = tmp_path / "b.train.log"
    plain.write_text(config_line())
    assert training_setup(str(log))["quick"] == 1 and "quick" not in training_setup(str(plain))
    with pytest.raises(ValueError, match=r"run a \(its log's line 1\): trained with FAIRSEQ_SYNTAX_QUICK"):
        one_setup({"run a": training_setup(str(log)), "run b": training_setup(str(plain))}, "results/x")
    assert json.dumps(training_setup(str(plain)))


def test_quick_mode_shortens_training_and_decoding_and_says_so(monkeypatch, capsys):
    import sys

    from fairseq_syntax.quick import QUICK_GENERATE, QUICK_TRAIN, apply_quick_mode

    monkeypatch.setenv("FAIRSEQ_SYNTAX_QUICK", "1")
    for program, added, says in (("/venv/bin/fairseq-train", QUICK_TRAIN, "stops after 2 updates"),
                                 ("/venv/bin/fairseq-generate", QUICK_GENERATE, "stops at 10 tokens")):
        monkeypatch.setattr("sys.argv", [program, "data-bin"])
        apply_quick_mode()
        apply_quick_mode()  # once only
        assert sys.argv == [program, "data-bin", *added] and says in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["/venv/bin/fairseq-interactive", "data-bin"])
    apply_quick_mode()
    assert sys.argv == ["/venv/bin/fairseq-interactive", "data-bin"]
    monkeypatch.setenv("FAIRSEQ_SYNTAX_QUICK", "0")
    monkeypatch.setattr("sys.argv", ["/venv/bin/fairseq-train", "data-bin"])
    apply_quick_mode()
    assert sys.argv == ["/venv/bin/fairseq-train", "data-bin"]
