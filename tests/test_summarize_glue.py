"""examples/encoders/summarize_glue.py: the table of the GLUE runs' dev scores, and a damaged score file named."""
import json
import sys

from .conftest import ROOT, run
from .run_files import write_run_record


def test_summarize_glue_tabulates_the_scores_and_names_a_bad_one(tmp_path):
    script = str(ROOT / "examples/encoders/summarize_glue.py")
    for seed, mcc in ((1, "20.0"), (2, "30.0")):
        (tmp_path / f"CoLA_roberta_sgnet_small_seed{seed}.score").write_text(
            f"task=CoLA arch=roberta_sgnet_small seed={seed} accuracy=70.0 mcc={mcc}\n")
        write_run_record(tmp_path / f"CoLA_roberta_sgnet_small_seed{seed}.record.json", "glue",
                         f"CoLA_roberta_sgnet_small_seed{seed}", scored=1043, split="valid")
    (tmp_path / "CoLA_roberta_sgnet_small_seed4.score").write_text(  # no record: named, left out
        "task=CoLA arch=roberta_sgnet_small seed=4 accuracy=10.0 mcc=0.0\n")
    out = run([sys.executable, script, "--results", str(tmp_path)])
    assert "| CoLA | roberta_sgnet_small | mcc | 2 | 25.00 | 7.07 | 20.00, 30.00 |" in out.stdout
    assert "refused CoLA_roberta_sgnet_small_seed4: no record" in out.stderr
    table = json.loads((tmp_path / "summary.json").read_text())
    assert table["CoLA/roberta_sgnet_small"]["seeds"] == [1, 2] and list(table["refused"]) == [
        "CoLA_roberta_sgnet_small_seed4"]
    bad = tmp_path / "CoLA_roberta_sgnet_small_seed3.score"
    bad.write_text("task=CoLA arch=roberta_sgnet_small seed=3 accuracy=70.0\n")  # cut short: no mcc
    out = run([sys.executable, script, "--results", str(tmp_path)], check=False)
    assert out.returncode == 1 and f"error: {bad}: line 1: no mcc" in out.stderr
    assert json.loads((tmp_path / "summary.json").read_text()) == table  # the last good summary stays
    out = run([sys.executable, script, "--results", str(tmp_path / "none")], check=False)
    assert out.returncode == 1 and "no *.score in" in out.stderr
