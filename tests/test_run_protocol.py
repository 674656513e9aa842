"""A table admits only runs of its own protocol (studies/run_protocol.py): the Multi30k, RACE and LAMBADA summaries
regenerate their committed tables unchanged, and each refuses, naming it, a run of another budget, a quick-mode run,
an unknown system and a non-canonical seed; a reproduce call that would not fit the table's folder stops before any
work."""
import gzip
import json
import shutil

import pytest

from examples.studies.run_protocol import NotOfTable, refusal, seed_of, split_run, write_or_check

from .conftest import ROOT, run, study_script

QUICK = "[fairseq_syntax] FAIRSEQ_SYNTAX_QUICK is set: this training stops after 2 updates of at most 2 examples\n"


def test_a_run_is_named_system_seed_n_with_a_seed_written_one_way():
    assert split_run("sgnet_2layers_seed12") == ("sgnet_2layers", 12)
    for bad in ("01", "0", "1a", ""):
        with pytest.raises(NotOfTable, match="not written as a seed is"):
            seed_of(bad)
    with pytest.raises(NotOfTable, match="not named SYSTEM_seedN"):
        split_run("sgnet")


def test_a_call_into_a_table_must_fit_its_protocol(tmp_path):
    write_or_check(tmp_path, ["a"], [1], {"max_update": 400, "lr": 0.0001}, ["a", "b"], [1, 2], split="valid")
    assert json.loads((tmp_path / "protocol.json").read_text())["recipe"] == {"max_update": 400, "lr": 0.0001}
    write_or_check(tmp_path, ["b"], [2], {"max_update": 400, "lr": 1e-4}, ["a", "b"], [1, 2], split="valid")
    with pytest.raises(NotOfTable) as e:
        write_or_check(tmp_path, ["c"], [6], {"max_update": 10, "lr": 0.0001}, ["a", "b", "c"], [1, 2, 6],
                       split="test")
    for says in ("max_update=10: the table's runs have max_update=400", "system c is not one of the table's",
                 "seed 6 is not one of the table's (1, 2)", "scored on test: the table's runs on valid",
                 "a trial goes to its own --out"):
        assert says in str(e.value)
    write_or_check(tmp_path, ["c"], [6], {"max_update": 10}, ["c"], [6], tag="trial")  # a tag's table of its own
    assert json.loads((tmp_path / "trial.protocol.json").read_text())["seeds"] == [6]


def copy_run(res, name, new, edit=None):
    """Another run made from ``name``'s files; ``edit`` rewrites its training log's text."""
    for f in res.glob(f"{name}.*"):
        target = res / f.name.replace(name, new, 1)
        if f.name.endswith(".train.log.gz") and edit:
            target.write_bytes(gzip.compress(edit(gzip.decompress(f.read_bytes()).decode()).encode()))
        else:
            shutil.copyfile(f, target)


def refused_in(summary_json, names):
    refused = json.loads(summary_json.read_text())["refused"]
    assert sorted(refused) == sorted(names), refused
    return refused


def without_refused_line(text):
    """The table as it reads without the line that names the refused runs (and the blank line before it)."""
    lines = text.split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith("**Not in the table**")]
    return "\n".join(line for i, line in enumerate(lines) if not at or i not in (at[0] - 1, at[0]))


def test_race_summary_regenerates_and_refuses_each_run_outside_its_protocol(tmp_path, capsys):
    res = tmp_path / "race"
    shutil.copytree(ROOT / "results/race", res)
    main = study_script("examples/race/summarize.py").main
    assert main(["--results", str(res)]) == 0
    assert (res / "summary.md").read_text() == (ROOT / "results/race/summary.md").read_text()
    copy_run(res, "baseline_seed1", "baseline_seed01")
    copy_run(res, "baseline_seed1", "sgnet_twice_seed1")
    copy_run(res, "sla_seed1", "sla_seed2", lambda t: t.replace("'max_update': 400", "'max_update': 10")
             .replace("'seed': 1", "'seed': 2"))
    copy_run(res, "sgnet_seed1", "sgnet_seed3", lambda t: QUICK + t.replace("'seed': 1", "'seed': 3"))
    copy_run(res, "sgnet_seed1", "sgnet_seed4")  # its log says seed 1: a renamed run
    capsys.readouterr()
    assert main(["--results", str(res)]) == 0
    why = refused_in(res / "summary.json", ["baseline_seed01", "sgnet_twice_seed1", "sla_seed2", "sgnet_seed3",
                                            "sgnet_seed4"])
    assert "seed '01' is not written as a seed is" in why["baseline_seed01"]
    assert "system 'sgnet_twice' is not one of the table's" in why["sgnet_twice_seed1"]
    assert "trained with max_update=10, the table's max_update=400" in why["sla_seed2"]
    assert "trained with FAIRSEQ_SYNTAX_QUICK set" in why["sgnet_seed3"]
    assert "trained with seed=1, the table's seed=4" in why["sgnet_seed4"]
    err = capsys.readouterr().err
    assert all(f"refused {name}:" in err for name in why)
    md = (res / "summary.md").read_text()
    assert "**Not in the table** (not of its protocol): baseline_seed01:" in md
    assert without_refused_line(md) == without_refused_line((ROOT / "results/race/summary.md").read_text())


def test_lambada_summary_regenerates_and_refuses_each_run_outside_its_protocol(tmp_path, capsys):
    res = tmp_path / "lambada"
    shutil.copytree(ROOT / "results/lambada", res)
    main = study_script("examples/lambada/summarize.py").main
    assert main(["--results", str(res)]) == 0
    committed = (ROOT / "results/lambada/summary.md").read_text()
    reference = "\nReference without a model (the context's most frequent non-stop word): 14.73.\n"
    assert (res / "summary.md").read_text() == committed.replace(reference, "")  # (that line needs the data)
    name = "converged_sa_early_seed1"
    copy_run(res, name, "converged_sa_early_seed01")
    copy_run(res, name, "converged_sa_early_mystery_seed1")
    copy_run(res, name, "converged_sa_early_seed5", lambda t: t.replace("'validate_interval_updates': 500",
                                                                        "'validate_interval_updates': 100")
             .replace("'seed': 1", "'seed': 5"))
    copy_run(res, "sa_early_seed1", "sa_early_seed2", lambda t: QUICK + t.replace("'seed': 1", "'seed': 2"))
    copy_run(res, "sa_early_seed1", "sa_early_seed3", lambda t: t.replace("'max_update': 1000", "'max_update': 10")
             .replace("'seed': 1", "'seed': 3"))
    capsys.readouterr()
    assert main(["--results", str(res)]) == 0
    why = refused_in(res / "summary.json", ["converged_sa_early_seed01", "converged_sa_early_mystery_seed1",
                                            "converged_sa_early_seed5", "sa_early_seed2", "sa_early_seed3"])
    assert "seed '01'" in why["converged_sa_early_seed01"]
    assert "system 'converged_sa_early_mystery' is not one of the table's" in why["converged_sa_early_mystery_seed1"]
    assert "validate_interval_updates=100, the table's validate_interval_updates=500" in why["converged_sa_early_seed5"]
    assert "FAIRSEQ_SYNTAX_QUICK" in why["sa_early_seed2"]
    assert "max_update=10, the table's max_update=1000" in why["sa_early_seed3"]
    assert all(f"refused {name}:" in capsys.readouterr().err for name in ["sa_early_seed3"])
    md = (res / "summary.md").read_text()
    assert without_refused_line(md) == without_refused_line(committed.replace(reference, ""))
    assert "**Not in the table** (not of its protocol): converged_sa_early_mystery_seed1:" in md


def test_multi30k_summary_refuses_each_run_outside_its_protocol(tmp_path):
    from .run_files import config_line, multi30k_folders, valid_line, write_run_record

    data, res, refs = multi30k_folders(tmp_path, 20)
    protocol = json.loads((ROOT / "results/multi30k/protocol.json").read_text())
    protocol["recipe"] = {"lr": 0.001, "max_tokens": 4096, "max_update": 12000}  # what config_line() holds
    (res / "protocol.json").write_text(json.dumps(protocol))
    curve = "".join(valid_line(e, 100 * e, loss=v) for e, v in enumerate([5, 4, 3, 3.1, 3.2, 3.3, 3.4, 3.5], 1))
    for name, edit in (("vanilla_seed1", None), ("sgnet_seed1", None), ("sgnet_seed01", None),
                       ("sgnet_wide_seed1", None), ("vanilla_seed6", None),
                       ("vanilla_seed2", lambda t: t.replace("'max_update': 12000", "'max_update': 10")),
                       ("sgnet_seed2", lambda t: QUICK + t)):
        seed = name.rsplit("seed", 1)[1].lstrip("0")
        line = config_line().replace("'seed': 1,", f"'seed': {seed},")
        with gzip.open(res / "logs" / f"{name}.train.log.gz", "wt") as fh:
            fh.write((edit or (lambda t: t))(line) + curve)
        with gzip.open(res / "hyp" / f"{name}.test.de.gz", "wt") as fh:
            fh.write("\n".join(refs) + "\n")
        write_run_record(res / "logs" / f"{name}.record.json", "multi30k", name, scored=20)
    run(["python", str(ROOT / "examples/multi30k/summarize.py"), "--data", str(data), "--results", str(res),
         "--bootstrap", "20"])
    s = json.loads((res / "summary.json").read_text())
    assert sorted(s["runs"]) == ["sgnet", "vanilla"] and list(s["runs"]["vanilla"]) == ["1"]
    why = refused_in(res / "summary.json", ["sgnet_seed01", "sgnet_wide_seed1", "vanilla_seed6", "vanilla_seed2",
                                            "sgnet_seed2"])
    assert "seed 6 is not one of the table's (1, 2, 3, 4, 5)" in why["vanilla_seed6"]
    assert "max_update=10, the table's max_update=12000" in why["vanilla_seed2"]
    assert "FAIRSEQ_SYNTAX_QUICK" in why["sgnet_seed2"] and "sgnet_wide" in why["sgnet_wide_seed1"]
    assert "**Not in the table** (not of its protocol): sgnet_seed01:" in (res / "summary.md").read_text()


@pytest.mark.parametrize("script, args, says", [
    ("examples/multi30k/reproduce.sh", ["--max-update", "10"], "max_update=10: the table's runs have max_update=8000"),
    ("examples/multi30k/reproduce.sh", ["--runs", "sgnet:6"], "seed 6 is not one of the table's (1, 2, 3, 4, 5)"),
    ("examples/lambada/reproduce.sh", ["--updates", "10"], "max_update=10: the table's runs have max_update=1000"),
    ("examples/lambada/reproduce.sh", ["--converge", "--tag", "converged", "--valid-interval", "100"],
     "validate_interval_updates=100: the table's runs have validate_interval_updates=500"),
    ("examples/race/reproduce.sh", ["--updates", "10", "--seeds", "1 7"],
     "max_update=10: the table's runs have max_update=400; seed 7 is not one of the table's"),
])
def test_a_trial_into_a_tables_folder_stops_before_any_work(tmp_path, script, args, says):
    """The committed folders' protocols: a trial with another budget or seed stops, and nothing is written."""
    study = script.split("/")[1]
    out = tmp_path / "out"
    out.mkdir()
    for f in (ROOT / "results" / study).glob("*protocol.json"):
        shutil.copyfile(f, out / f.name)
    data = tmp_path / "data"
    data.mkdir()
    (data / "dict.txt").write_text("a 1\n")  # what the runners look for first: LAMBADA's dictionary, RACE's splits
    (data / "label").mkdir()
    for split in ("train-middle", "valid-middle"):
        (data / "label" / f"{split}.label").write_text("0\n")
    before = sorted(p.name for p in out.iterdir())
    given = [] if study == "multi30k" else ["--data", str(data)]
    proc = run(["bash", str(ROOT / script), "--out", str(out), *given, *args], check=False,
               cwd=tmp_path, env={"MULTI30K_DATA": str(data), "MULTI30K_CHECKPOINTS": str(tmp_path / "ck")},
               timeout=120)
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr
    assert "a trial goes to its own --out" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == before and not (tmp_path / "ck").exists()


def test_a_runs_record_holds_what_shaped_it_and_the_summary_holds_it_to_the_table(tmp_path):
    import re

    from examples.studies.run_record import data_fingerprint, write_record

    data = tmp_path / "bin"
    data.mkdir()
    (data / "dict.txt").write_text("a 1\n")
    (data / "train.idx").write_bytes(b"\x01\x02")
    (data / "train.bin").write_bytes(b"\x00" * 8)
    before = data_fingerprint(data)
    (data / "train.bin").write_bytes(b"\x01" * 8)  # not read: the index fixes the corpus
    assert data_fingerprint(data) == before
    (data / "train.idx").write_bytes(b"\x01\x03")
    assert data_fingerprint(data) != before
    res = tmp_path / "race"
    shutil.copytree(ROOT / "results/race", res)
    log = res / "sla_seed1.train.log.gz"
    record = write_record(res / "sla_seed1.record.json", study="race", system="sla", seed=1,
                          recipe=json.loads((res / "protocol.json").read_text())["recipe"], data=str(data),
                          split="valid-middle", scored=1436, log=str(log))
    assert record["data"] == data_fingerprint(data) and record["precision"] == "fp32" and record["quick"] is False
    assert re.fullmatch(r"[0-9a-f]{40}(\+changes)?|fairseq-syntax .+", record["code"]), record["code"]
    assert json.loads((res / "sla_seed1.record.json").read_text()) == record
    main = study_script("examples/race/summarize.py").main
    assert main(["--results", str(res)]) == 0  # beside 7 runs whose records cannot vouch for their data: named
    why = refused_in(res / "summary.json", ["sla_seed1"])["sla_seed1"]
    assert f"data {record['data'][:12]}, where the table's other 7 runs have data not recorded" in why
    for other in res.glob("*.record.json"):  # every run's record on the same data, from the same code
        rec = json.loads(other.read_text())
        other.write_text(json.dumps({**rec, "data": record["data"], "code": record["code"]}))
    assert main(["--results", str(res)]) == 0 and "refused" not in json.loads((res / "summary.json").read_text())
    assert "**Records:**" not in (res / "summary.md").read_text()
    protocol = json.loads((res / "protocol.json").read_text())
    (res / "protocol.json").write_text(json.dumps({**protocol, "data": "0" * 40}))  # the table's data, named
    for other in res.glob("*.record.json"):
        if other.name != "sla_seed1.record.json":
            other.write_text(json.dumps({**json.loads(other.read_text()), "data": "0" * 40}))
    assert main(["--results", str(res)]) == 0
    why = refused_in(res / "summary.json", ["sla_seed1"])["sla_seed1"]
    assert f"sla_seed1.record.json: trained on other data (fingerprint {record['data'][:12]}" in why
    record["recipe"]["max_update"] = 10
    (res / "sla_seed1.record.json").write_text(json.dumps({**record, "data": "0" * 40}))
    (res / "protocol.json").write_text(json.dumps(protocol))
    assert main(["--results", str(res)]) == 0
    assert "sla_seed1.record.json: max_update=10, the table's max_update=400" in refused_in(
        res / "summary.json", ["sla_seed1"])["sla_seed1"]


def test_a_record_is_required_and_compared_whole_within_a_table(tmp_path, capsys):
    """Runs are compared only where their records agree: a missing or malformed record, another study or system, and,
    beside the table's other runs, other data, another scored split or size, another recipe or precision are named
    and left out; runs from other versions of the code are a note."""
    res = tmp_path / "race"
    shutil.copytree(ROOT / "results/race", res)
    records = sorted(res.glob("*.record.json"))
    for f in records:  # the committed runs, as if recorded when scored: one data fingerprint, one code version
        f.write_text(json.dumps({**json.loads(f.read_text()), "data": "a" * 40, "code": "c" * 40}))
    main = study_script("examples/race/summarize.py").main

    def edit(name, **fields):
        path = res / f"{name}.record.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))

    edit("sgnet_seed1", data="b" * 40, scored=200)  # other data, fewer questions
    edit("sla_seed1", study="lambada")
    edit("sgnet_nomask_seed1", system="sgnet")
    edit("sgnet_alone_seed1", recipe="cpu")  # a recipe that is no object
    edit("sgnet_2layers_seed1", precision="fp16")
    edit("sgnet_random_trees_seed1", code="d" * 40)  # another version of the code: a note, not a refusal
    (res / "sgnet_2layers_nomask_seed1.record.json").unlink()
    capsys.readouterr()
    assert main(["--results", str(res)]) == 0
    why = refused_in(res / "summary.json", ["sgnet_seed1", "sla_seed1", "sgnet_nomask_seed1", "sgnet_alone_seed1",
                                            "sgnet_2layers_seed1", "sgnet_2layers_nomask_seed1"])
    assert why["sgnet_seed1"] == f"data {'b' * 12}, where the table's other 3 runs have data {'a' * 12}"
    assert why["sla_seed1"] == "its record is of the study 'lambada', not 'race'"
    assert why["sgnet_nomask_seed1"] == "its record names the system 'sgnet', not its name's"
    assert why["sgnet_alone_seed1"].startswith('sgnet_alone_seed1.record.json: recipe is "cpu", expected an object')
    assert why["sgnet_2layers_seed1"] == "precision fp16, where the table's other 3 runs have precision fp32"
    assert why["sgnet_2layers_nomask_seed1"].startswith("no record (sgnet_2layers_nomask_seed1.record.json")
    md = (res / "summary.md").read_text()
    assert f"**Records:** the runs come from 2 versions of the code: {'c' * 12} (1), {'d' * 12} (1)." in md
    edit("sgnet_seed1", data="a" * 40)  # the same data, 200 of the 1,436 questions: still not the table's
    assert main(["--results", str(res)]) == 0
    assert "200 scored, where the table's other 3 runs have 1,436 scored" in json.loads(
        (res / "summary.json").read_text())["refused"]["sgnet_seed1"]
