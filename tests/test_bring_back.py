"""Runs trained on another machine, merged in (examples/studies/bring_back.py), all or nothing, on real runs of the
committed SLA table: every run is checked before any file is copied, and a run the table has is never changed."""
import io
import json
import shutil
import tarfile

import pytest

from examples.studies.bring_back import main

from .conftest import ROOT

TABLE = ROOT / "results/encoders_table1"
KINDS = ("eval.json", "eval.txt", "pred.jsonl.gz", "train.log.gz")


def archive(path, runs, edit=None):
    """A 'second' call's archive of committed runs (``edit(run, kind, bytes) -> bytes`` changes a file)."""
    with tarfile.open(path, "w:gz") as tar:
        for run in runs:
            for kind in KINDS:
                src = TABLE / f"{run}.{kind}"
                data = src.read_bytes()
                name = run
                if edit:
                    data, name = edit(run, kind, data)
                info = tarfile.TarInfo(f"results/{name}.{kind}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def back(tgz, into, capsys):
    rc = main([str(tgz), "--into", str(into), "--precision", "fp32"])
    return rc, capsys.readouterr().err


@pytest.fixture
def into(tmp_path):
    """A table holding CoLA's baseline seed 1 (as committed)."""
    d = tmp_path / "table"
    d.mkdir()
    for kind in KINDS:
        shutil.copy(TABLE / f"CoLA_baseline_seed1.{kind}", d)
    return d


def test_good_runs_come_in_and_one_bad_run_keeps_them_all_out(tmp_path, into, capsys):
    good = archive(tmp_path / "good.tgz", ["CoLA_sla_seed1", "CoLA_baseline_seed1"])
    rc, err = back(good, into, capsys)
    assert rc == 0 and "4 files new in" in err  # the baseline is there, identical: left as it is
    assert (into / "CoLA_sla_seed1.eval.json").read_bytes() == (TABLE / "CoLA_sla_seed1.eval.json").read_bytes()

    def nan(run, kind, data):
        if run == "CoLA_wla_seed1" and kind == "eval.json":
            e = json.loads(data)
            e["mcc"] = float("nan")
            data = json.dumps(e).encode()
        return data, run
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    rc, err = back(archive(tmp_path / "nan.tgz", ["CoLA_sla_seed2", "CoLA_wla_seed1"], nan), fresh, capsys)
    assert rc == 1 and "CoLA_wla_seed1.eval.json: holds NaN" in err and "nothing copied" in err
    assert not list(fresh.iterdir())


@pytest.mark.parametrize("case,says", [
    ("gates", "CoLA_baseline_seed1 is in"), ("seed01", "CoLA_sla_seed01.eval.json: not a run's file"),
    ("budget", "max_update 10 where the table's CoLA runs have"), ("incomplete", "incomplete, no pred.jsonl.gz")])
def test_each_wrong_run_is_named_and_nothing_is_copied(tmp_path, into, capsys, case, says):
    def edit(run, kind, data):
        if case == "seed01" and run == "CoLA_sla_seed1":
            return data, "CoLA_sla_seed01"
        if case == "budget" and run == "CoLA_sla_seed1" and kind == "eval.json":
            e = json.loads(data)
            e["max_update"] = 10
            return json.dumps(e).encode(), run
        return data, run
    runs = ["CoLA_sla_seed1", "CoLA_baseline_seed1"]
    tgz = archive(tmp_path / "a.tgz", runs, edit)
    if case == "gates":  # an extra file for the run the table has
        with tarfile.open(tgz) as old, \
                tarfile.open(tmp_path / "b.tgz", "w:gz") as new:
            for m in old.getmembers():
                new.addfile(m, old.extractfile(m))
            info = tarfile.TarInfo("results/CoLA_baseline_seed1.gates.json")
            info.size = 2
            new.addfile(info, io.BytesIO(b"{}"))
        tgz = tmp_path / "b.tgz"
    if case == "incomplete":
        with tarfile.open(tgz) as old, tarfile.open(tmp_path / "c.tgz", "w:gz") as new:
            for m in old.getmembers():
                if not m.name.endswith("CoLA_sla_seed1.pred.jsonl.gz"):
                    new.addfile(m, old.extractfile(m))
        tgz = tmp_path / "c.tgz"
    before = sorted(p.name for p in into.iterdir())
    rc, err = back(tgz, into, capsys)
    assert rc == 1 and says in err and "nothing copied" in err, err
    assert sorted(p.name for p in into.iterdir()) == before
