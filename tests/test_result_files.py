"""The files a study keeps in results/, read back by the summaries: a damaged one (a half-copied archive, a
hand-edited JSON, bytes that are not UTF-8) is named with its line, and the summary writes nothing."""
import gzip
import json
import shutil

import pytest

from examples.studies.early_stopping import validations
from examples.studies.result_files import describe, read_json, read_jsonl, read_lines

from .conftest import ROOT, study_script


def test_good_files_read_as_written_gzipped_or_not(tmp_path):
    rows = [{"sentence": 0, "gold": "1"}, {"sentence": 1, "gold": "0"}]
    text = "".join(json.dumps(r) + "\n" for r in rows) + "\n"  # a blank last line is skipped
    (tmp_path / "p.jsonl").write_text(text)
    (tmp_path / "p.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    assert read_jsonl(tmp_path / "p.jsonl") == read_jsonl(tmp_path / "p.jsonl.gz") == rows
    (tmp_path / "h.de.gz").write_bytes(gzip.compress("ein Hund\r\nzwei Katzen\n".encode()))
    assert read_lines(tmp_path / "h.de.gz") == ["ein Hund", "zwei Katzen"]  # as a text-mode file reads them
    (tmp_path / "e.json").write_text('{"f1": 86.35}')
    assert read_json(tmp_path / "e.json") == {"f1": 86.35}


def test_damaged_files_are_named_with_their_line(tmp_path):
    whole = gzip.compress(b"".join(b'{"sentence": %d}\n' % i for i in range(2000)))
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"cut.jsonl.gz: a damaged gzip archive"):
        read_jsonl(tmp_path / "cut.jsonl.gz")
    (tmp_path / "plain.gz").write_bytes(b'{"not": "gzipped"}\n')
    with pytest.raises(ValueError, match=r"plain.gz: a damaged gzip archive"):
        read_jsonl(tmp_path / "plain.gz")
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{"a": 2,\n')
    with pytest.raises(ValueError, match=r"bad.jsonl: line 2: not valid JSON"):
        read_jsonl(tmp_path / "bad.jsonl")
    (tmp_path / "bad.json").write_text('{\n "a": 1,\n}\n')
    with pytest.raises(ValueError, match=r"bad.json: line 3: not valid JSON"):
        read_json(tmp_path / "bad.json")
    (tmp_path / "latin.de").write_bytes("gut\nGrüße\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.de: line 2: not UTF-8"):
        read_lines(tmp_path / "latin.de")


def test_a_results_file_without_what_the_summary_reads_is_named(tmp_path):
    (tmp_path / "e.json").write_text('{"f1": 86.35, "split": "test"}')
    assert read_json(tmp_path / "e.json", ("f1", "split")) == {"f1": 86.35, "split": "test"}
    with pytest.raises(ValueError, match=r"e.json: an incomplete results file: no metric, seed$"):
        read_json(tmp_path / "e.json", ("f1", "metric", "seed"))
    (tmp_path / "l.json").write_text("[86.35]")
    with pytest.raises(ValueError, match=r"l.json: a JSON list, not an object with f1"):
        read_json(tmp_path / "l.json", ("f1",))


@pytest.mark.parametrize("edit, says", [
    (lambda e: e.pop("metric"), "an incomplete results file: no metric"),
    (lambda e: e.update(task="SST-2"), "holds SST-2 sla seed 1 scored by mcc, not the run its name says"),
    (lambda e: e.update(mcc="31.35"), "its mcc is '31.35', not a number"),
    (lambda e: e.update(mcc=float("nan")), "holds NaN, which JSON does not allow (a diverged run?)"),
    (lambda e: e.update(mcc=250.0), "its mcc is 250.0, outside a percentage's range")])
def test_the_table_summary_names_a_results_file_that_is_not_its_run(tmp_path, capsys, edit, says):
    """A hand-edited or misnamed eval.json stops the summary with its name and what is wrong, never a KeyError or a
    run filed under another task's column."""
    res = tmp_path / "res"
    shutil.copytree(ROOT / "results/encoders_table1", res, ignore=shutil.ignore_patterns("summary.*", "*.png"))
    path = res / "CoLA_sla_seed1.eval.json"
    e = json.loads(path.read_text())
    edit(e)
    path.write_text(json.dumps(e))
    with pytest.raises(SystemExit) as stop:
        study_script("examples/encoders/summarize_sla_table.py").main(["--results", str(res), "--bootstrap", "10"])
    assert stop.value.code == 1 and f"{path}: {says}" in capsys.readouterr().err
    assert not list(res.glob("summary.*"))


def test_the_table_summary_names_two_runs_scored_on_different_sentences(tmp_path, capsys):
    """A run's predictions cut short (or from another split) cannot be paired with its baseline's: the summary names
    both runs and where they part, and writes nothing."""
    import gzip

    res = tmp_path / "res"
    shutil.copytree(ROOT / "results/encoders_table1", res, ignore=shutil.ignore_patterns("summary.*", "*.png"))
    pred = res / "CoLA_sla_seed1.pred.jsonl.gz"
    rows = gzip.decompress(pred.read_bytes()).decode().splitlines(keepends=True)
    pred.write_bytes(gzip.compress("".join(rows[:-3]).encode()))
    with pytest.raises(SystemExit) as stop:
        study_script("examples/encoders/summarize_sla_table.py").main(["--results", str(res), "--bootstrap", "10"])
    assert stop.value.code == 1
    assert (f"CoLA: CoLA_sla_seed1 ({len(rows) - 3} sentences) and CoLA_baseline_seed1 ({len(rows)}) were scored "
            f"against different gold labels, from sentence {len(rows) - 3} on") in capsys.readouterr().err
    assert not list(res.glob("summary.*"))


def test_a_status_line_describes_a_damaged_file_instead_of_failing(tmp_path):
    """describe: the reproductions' --status lines; one damaged results file must not hide the other runs."""
    e = tmp_path / "e.json"
    e.write_text('{"metric": "f1", "f1": 86.345, "split": "test", "all": {"accuracy": 31.5}}')
    assert describe(e, "{metric} {f1:.2f} on {split}") == "f1 86.34 on test"  # 86.345 is 86.344999... in binary
    assert describe(e, "{all[accuracy]}") == "31.5"
    assert describe(e, "{mcc:.2f}") == f"its results file is damaged: {e}: no 'mcc'"
    assert describe(e, "{metric:.2f}").startswith(f"its results file is damaged: {e}: Unknown format code 'f'")
    e.write_text('{"f1": 8')
    assert describe(e, "{f1}").startswith(f"its results file is damaged: {e}: line 1: not valid JSON")
    e.write_text("[1, 2]")
    assert describe(e, "{f1}") == f"its results file is damaged: {e}: list indices must be integers or slices, not str"


def test_a_cut_training_log_is_named_by_the_log_readers(tmp_path):
    log = (ROOT / "results/encoders_table1/CoLA_baseline_seed1.train.log.gz").read_bytes()
    assert validations(str(ROOT / "results/encoders_table1/CoLA_baseline_seed1.train.log.gz"), "mcc", by="update")
    (tmp_path / "r.train.log.gz").write_bytes(log[: len(log) - 100])
    with pytest.raises(ValueError, match=r"r.train.log.gz: a damaged gzip archive"):
        validations(str(tmp_path / "r.train.log.gz"), "mcc", by="update")


def test_the_table_summary_stops_at_a_cut_archive_and_writes_nothing(tmp_path, capsys):
    res = tmp_path / "res"
    shutil.copytree(ROOT / "results/encoders_table1", res,
                    ignore=shutil.ignore_patterns("summary.*", "*.png"))
    cut = res / "CoLA_sla_seed1.pred.jsonl.gz"
    cut.write_bytes(cut.read_bytes()[:3000])
    with pytest.raises(SystemExit) as stop:
        study_script("examples/encoders/summarize_sla_table.py").main(["--results", str(res)])
    assert stop.value.code == 1 and f"{cut}: a damaged gzip archive" in capsys.readouterr().err
    assert not list(res.glob("summary.*")) and not list(res.glob("*.png"))


def test_the_table_summary_needs_a_folder_with_finished_runs(tmp_path, capsys):
    main = study_script("examples/encoders/summarize_sla_table.py").main
    for folder, says in ((tmp_path / "none", "no such folder"), (tmp_path, "no finished run (*.eval.json)")):
        with pytest.raises(SystemExit) as stop:
            main(["--results", str(folder)])
        assert stop.value.code == 1 and f"{folder}: {says}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_multi30k_summary_names_a_missing_folder(tmp_path, capsys):
    main = study_script("examples/multi30k/summarize.py").main
    (tmp_path / "data/bin").mkdir(parents=True)
    for args, says in (([tmp_path / "none", tmp_path / "data"], f"{tmp_path / 'none'}: no such folder of results"),
                       ([tmp_path, tmp_path / "nodata"], f"{tmp_path / 'nodata' / 'bin'}: no such folder of prepared")):
        with pytest.raises(SystemExit) as stop:
            main(["--results", str(args[0]), "--data", str(args[1])])
        assert stop.value.code == 1 and says in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_a_number_too_large_for_a_float_is_named_not_read_as_infinity(tmp_path):
    path = tmp_path / "x.eval.json"
    path.write_text('{"f1": 1e999}')
    with pytest.raises(ValueError, match=r"x.eval.json: holds 1e999, which JSON does not allow"):
        read_json(path)
    path.write_text('{"correct": true, "f1": 1e999}\n')
    with pytest.raises(ValueError, match=r"x.eval.json: line 1: holds 1e999"):
        read_jsonl(path)


def test_the_lambada_summary_names_an_accuracy_outside_a_percentage(tmp_path, capsys):
    from .run_files import write_converged_run

    write_converged_run(tmp_path, "converged_sa_early_seed1", 1500, 250.0)
    with pytest.raises(SystemExit) as stop:
        study_script("examples/lambada/summarize.py").main(["--results", str(tmp_path)])
    assert stop.value.code == 1 and "converged_sa_early_seed1.eval.json: its all accuracy is 250.0" in \
        capsys.readouterr().err


@pytest.mark.parametrize("script", ["examples/encoders/summarize_sla_table.py", "examples/multi30k/summarize.py"])
def test_a_bootstrap_of_no_resamples_is_refused_where_it_enters(tmp_path, capsys, script):
    """--bootstrap 0 printed p = 1.000 for every paired test."""
    with pytest.raises(SystemExit) as stop:
        study_script(script).main(["--results", str(tmp_path), "--bootstrap", "0"])
    assert stop.value.code == 2 and "--bootstrap: must be at least 10, got 0" in capsys.readouterr().err
