"""Stage records through data-prep/race.sh and the RACE reader: a stage is done only while its outputs are there
unchanged; what is read is fingerprinted the way it is read (symlinks followed, hidden files included, FIFOs
refused); nothing the project did not write is deleted or overwritten; a truncated archive or a repeated passage id
is an error naming the file."""
import json
import os
import shutil
import tarfile

import pytest

from fairseq_syntax.race.examples import read_race

from .conftest import BIN, ROOT, SHARED_DATA, run

RACE = SHARED_DATA / "race" / "RACE.tar.gz"
# two real passages of each split and level a preparation needs (train, dev; middle, high)
MEMBERS = ["RACE/train/middle/10.txt", "RACE/train/middle/100.txt", "RACE/train/high/10.txt", "RACE/train/high/100.txt",
           "RACE/dev/middle/1011.txt", "RACE/dev/middle/1030.txt", "RACE/dev/high/10024.txt", "RACE/dev/high/10042.txt"]


@pytest.fixture(scope="module")
def passages():
    out = {}
    with tarfile.open(RACE) as tar:
        for m in tar:
            if m.name in MEMBERS:
                out[m.name] = tar.extractfile(m).read()
                if len(out) == len(MEMBERS):
                    break
    assert set(out) == set(MEMBERS)
    return out


def release(folder, passages):
    """The real passages as an extracted release under ``folder``/RACE."""
    for name, body in passages.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return folder / "RACE"


def race_sh(race, out, pretrained, *extra, check=True):
    parser = [] if "--parser" in extra else ["--parser", "spacy"]  # (an option given twice is refused)
    return run(["bash", ROOT / "data-prep/race.sh", "--race", race, "--out", out, "--pretrained", pretrained,
                *parser, "--workers", "1", *extra], check=check, timeout=600)


def one_line_error(proc, *needles):
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert all(n in proc.stderr for n in needles), (needles, proc.stderr[-3000:])


@pytest.mark.slow
def test_records_hold_their_outputs_and_inputs_are_read_through_symlinks(tmp_path, passages, minilm_converted):
    real = release(tmp_path / "real", passages)
    link = tmp_path / "race-link"
    link.symlink_to(real, target_is_directory=True)  # --race given as a symlink to the folder
    out = tmp_path / "out"
    first = race_sh(link, out, minilm_converted, "--random-trees", "1")
    ready = first.stderr.splitlines()[-1]
    assert "ready: " in ready and set(ready.split("splits: ")[1].rstrip(" )").split()) == {
        "train", "train-high", "train-middle", "valid", "valid-high", "valid-middle"}, first.stderr[-2000:]
    labels = (out / "raw/valid.label").read_text()

    # the answers change inside the linked folder: extract is redone, and the new labels are kept
    dev = real / "dev/middle/1011.txt"
    obj = json.loads(dev.read_text())
    obj["answers"] = ["A" if a != "A" else "B" for a in obj["answers"]]
    dev.write_text(json.dumps(obj))
    again = race_sh(link, out, minilm_converted, "--random-trees", "1")
    assert "redo extract: its inputs changed" in again.stderr
    assert (out / "raw/valid.label").read_text() != labels

    # bin/ deleted: binarize and the random trees are redone, not believed
    shutil.rmtree(out / "bin")
    again = race_sh(link, out, minilm_converted, "--random-trees", "1")
    assert "skip extract (done)" in again.stderr and "skip parse (done)" in again.stderr
    assert f"redo binarize: {out}/bin/" in again.stderr and "is missing" in again.stderr
    assert (out / "bin/input0/train.randheads.bin").exists() and (out / "bin/label/valid-middle.label").exists()

    # another --max-train without the control, then the first options again: the random trees are back
    race_sh(link, out, minilm_converted, "--max-train", "3")
    assert not (out / "bin/input0/train.randheads.bin").exists()
    back = race_sh(link, out, minilm_converted, "--random-trees", "1")
    assert "redo random-trees" in back.stderr and (out / "bin/input4/valid.randheads.bin").exists()

    # a record without outputs (an older version's) is redone; the parser finds its work done and writes
    # nothing, yet its folder is the stage's, so the record is whole again and nothing after it is redone
    record = out / ".stamps/parse"
    record.write_text("".join(x for x in record.read_text().splitlines(True) if not x.startswith("output: ")))
    older = race_sh(link, out, minilm_converted, "--random-trees", "1")
    assert "redo parse: its record lists no outputs (written by an older version)" in older.stderr
    assert "output: " in record.read_text() and "skip binarize (done)" in older.stderr

    # an output changed in place is seen too (the last stage's, so that only it is redone)
    codes = out / "bin/input0/train.randheads.bin"
    codes.write_bytes(bytes(len(codes.read_bytes())))
    changed = race_sh(link, out, minilm_converted, "--random-trees", "1")
    assert f"redo random-trees: {codes} changed since it was written" in changed.stderr
    assert "skip binarize (done)" in changed.stderr and any(codes.read_bytes())


@pytest.mark.slow
def test_a_symlinked_level_a_symlinked_file_and_a_hidden_file_are_read_and_fingerprinted(tmp_path, passages,
                                                                                         minilm_converted):
    real = release(tmp_path / "real", passages)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(real / "dev/middle", elsewhere)
    (real / "dev/middle").symlink_to(elsewhere, target_is_directory=True)  # RACE/dev/middle as a symlink
    kept = tmp_path / "kept.txt"
    shutil.move(real / "train/high/100.txt", kept)
    (real / "train/high/100.txt").symlink_to(kept)  # a symlinked passage file
    hidden = real / "train/middle/.77.txt"  # the reader reads it, so the fingerprint covers it
    hidden.write_bytes(passages["RACE/train/middle/10.txt"].replace(b'"id": "middle10.txt"', b'"id": "middle77.txt"'))
    out = tmp_path / "out"
    first = race_sh(real, out, minilm_converted)
    assert "valid-middle" in first.stderr and (out / "bin/label/valid-middle.label").exists()
    assert len({json.loads(x)["id"] for x in (out / "raw/train.meta.jsonl").read_text().splitlines()}) == 5
    for target in (elsewhere / "1011.txt", kept, hidden):
        obj = json.loads(target.read_text())
        obj["answers"][0] = "D" if obj["answers"][0] != "D" else "C"
        target.write_text(json.dumps(obj))
        proc = race_sh(real, out, minilm_converted)
        assert "redo extract: its inputs changed" in proc.stderr, (target, proc.stderr[-2000:])


def test_a_fifo_and_a_repeated_id_are_named_before_any_work(tmp_path, passages, minilm_converted):
    real = release(tmp_path / "real", passages)
    fifo = real / "train/middle/5.txt"
    os.mkfifo(fifo)
    proc = race_sh(real, tmp_path / "out", minilm_converted, check=False)
    one_line_error(proc, f"{fifo}: not a regular file")
    assert not (tmp_path / "out/raw/train.label").exists()
    fifo.unlink()
    twin = real / "dev/high/99999.txt"
    twin.write_bytes(passages["RACE/train/middle/10.txt"])  # the same "id" as train/middle/10.txt
    proc = run([BIN / "fairseq-syntax-race", "extract", "--source", real, "--out", tmp_path / "raw"], check=False)
    one_line_error(proc, "passage id 'middle10.txt' is also the id of", str(twin), f"{real}/train/middle/10.txt")
    assert not (tmp_path / "raw/train.label").exists()


def test_a_truncated_archive_is_an_error_naming_it(tmp_path, passages):
    plain = tmp_path / "RACE.tar"
    with tarfile.open(plain, "w") as tar:
        for name in MEMBERS:
            info = tarfile.TarInfo(name)
            info.size = len(passages[name])
            tar.addfile(info, __import__("io").BytesIO(passages[name]))
    assert len(list(read_race(str(plain)))) == len(MEMBERS)
    data = plain.read_bytes()
    with tarfile.open(plain) as tar:
        members = tar.getmembers()
    last = members[-2]  # cut at the boundary after the second-last member: a smaller archive that looks whole
    boundary = last.offset_data + (last.size + 511) // 512 * 512
    cases = {"boundary.tar": data[:boundary], "inside.tar": data[:members[-1].offset_data + 100]}
    gz = tmp_path / "whole.tar.gz"
    with tarfile.open(gz, "w:gz") as tar:
        tar.add(plain, arcname="x")  # any content: only the stream's end matters
    cases["cut.tar.gz"] = gz.read_bytes()[: gz.stat().st_size // 2]
    for name, body in cases.items():
        path = tmp_path / name
        path.write_bytes(body)
        proc = run([BIN / "fairseq-syntax-race", "extract", "--source", path, "--out", tmp_path / "raw"], check=False)
        one_line_error(proc, f"{path}: the archive is truncated")
        assert not (tmp_path / "raw/train.label").exists()


def test_the_project_deletes_and_overwrites_only_what_it_wrote(tmp_path, passages, minilm_converted):
    real = release(tmp_path / "real", passages)
    out = tmp_path / "home"
    (out / "bin").mkdir(parents=True)
    (out / "bin/thesis.tex").write_text("years of work\n")  # --out ~ with a bin/ of the user's
    proc = race_sh(real, out, minilm_converted, check=False)
    one_line_error(proc, f"{out}/bin exists and was not written by data-prep")
    assert (out / "bin/thesis.tex").read_text() == "years of work\n"

    # --pretrained at the user's own Hugging Face BERT folder: read-only, refused with what to do
    from fairseq_syntax.pretrained.hf_encoders import minilm_model_dir

    hf = tmp_path / "my-bert"
    shutil.copytree(minilm_model_dir(), hf)
    before = {p.name: p.read_bytes() for p in hf.iterdir() if p.is_file()}
    proc = race_sh(real, tmp_path / "o2", hf, check=False)
    one_line_error(proc, f"--pretrained {hf} is not a model folder", "fairseq-syntax-convert-hf --model-dir")
    assert {p.name: p.read_bytes() for p in hf.iterdir() if p.is_file()} == before

    # a conversion cut short (its model.pt and a temporary, no dict.txt) is the project's own: converted again
    cut = tmp_path / "minilm-cut"
    cut.mkdir()
    shutil.copy(minilm_converted / "model.pt", cut / "model.pt")
    (cut / "dict.txt.tmp4242").write_text("[PAD] 1\n")
    proc = race_sh(real, tmp_path / "o3", cut)
    assert "a conversion cut short in" in proc.stderr and "ready:" in proc.stderr
    assert (cut / "dict.txt").read_bytes() == (minilm_converted / "dict.txt").read_bytes()


def test_a_parser_that_does_not_exist_is_refused_before_any_stage(tmp_path, passages, minilm_converted):
    proc = race_sh(release(tmp_path / "real", passages), tmp_path / "out", minilm_converted, "--parser", "junk",
                   check=False)
    one_line_error(proc, "--parser must be auto, stanza or spacy, got 'junk'")
    assert not (tmp_path / "out/raw").exists() or not any((tmp_path / "out/raw").iterdir())
