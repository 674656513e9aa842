"""data-prep/wmt14.sh on a small real slice, offline.

The WMT14 training corpora and newstest2013 are not available offline, so real Multi30k text stands in
for them (--train-prefixes, --dev-prefix); the test set is the real newstest2014 from the local copies of the corpora,
found through --mirror as the upstream sgm files.
"""
import shutil
import subprocess

from types import SimpleNamespace

import pytest

from .conftest import BIN, ROOT, SHARED_DATA, once_per_run, run, run_env

pytestmark = pytest.mark.slow  # end-to-end: real data-prep and training

SCRIPT = str(ROOT / "data-prep/wmt14.sh")


def wmt14_args(multi30k_dir, out, *extra):
    return ["bash", SCRIPT, "--mirror", str(SHARED_DATA / "wmt14"), "--out", str(out),
            "--train-prefixes", str(multi30k_dir / "train"), "--dev-prefix", str(multi30k_dir / "val"),
            "--max-lines", "300", "--parser", "spacy", "--bpe-merges", "1500", "--shard-size", "500", *extra]


@pytest.fixture(scope="module")
def wmt14(tmp_path_factory, multi30k_dir):
    folder = once_per_run(tmp_path_factory, "wmt14", lambda d: (d / "prep.stderr").write_text(
        run(wmt14_args(multi30k_dir, d / "out", "--workers", "2")).stderr))
    return folder / "out", SimpleNamespace(stderr=(folder / "prep.stderr").read_text())


def test_pipeline_builds_a_directory_fairseq_train_accepts(wmt14, tmp_path):
    out, proc = wmt14
    assert "ready:" in proc.stderr
    assert len((out / "raw/test.en").read_text().splitlines()) == 3003  # newstest2014, full
    for split in ("train", "valid", "test"):
        assert (out / "bin" / f"{split}.en-de.en.heads.bin").exists()
    user_dir = run([str(BIN / "fairseq-syntax-user-dir")]).stdout.strip()
    res = run([str(BIN / "fairseq-train"), str(out / "bin"), "--user-dir", user_dir, "--task",
               "syntax_guided_translation", "--arch", "transformer_sgnet_small", "--share-all-embeddings",
               "--optimizer", "adam", "--lr", "1e-4", "--max-tokens", "2000", "--max-update", "1",
               "--save-dir", str(tmp_path / "ck"), "--no-save", "--no-progress-bar"], cwd=str(tmp_path))
    assert "num_updates 1" in res.stderr + res.stdout


def test_one_worker_is_byte_identical_and_rerun_skips(wmt14, multi30k_dir, tmp_path):
    out, _ = wmt14
    one = tmp_path / "one"
    run(wmt14_args(multi30k_dir, one, "--workers", "1", "--until", "parse"))
    for rel in ("tok/train.en", "clean/train.de", "parse/train.en.conllu", "parse/valid.en.conllu",
                "parse/test.en.conllu"):
        assert (one / rel).read_bytes() == (out / rel).read_bytes(), rel
    again = run(wmt14_args(multi30k_dir, out, "--workers", "2"))
    for stage in ("fetch", "tokenize", "clean", "parse", "bpe", "align", "binarize"):
        assert f"skip {stage} (done)" in again.stderr


def test_job_array_shards_then_merge_equal_one_run(wmt14, multi30k_dir, tmp_path):
    out, _ = wmt14
    arr = tmp_path / "array"
    run(wmt14_args(multi30k_dir, arr, "--until", "clean"))
    # the tasks run at once, as a cluster runs them: each waits only for the stage checks of the others
    tasks = [subprocess.Popen(wmt14_args(multi30k_dir, arr, "--shard", f"{i}/3", "--workers", "1"), env=run_env(),
                              stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True) for i in range(3)]
    for i, task in enumerate(tasks):
        err = task.communicate(timeout=900)[1]
        assert task.returncode == 0 and f"shard {i}/3 parsed" in err, err[-3000:]
    assert not (arr / "parse/test.en.conllu").exists()
    run(wmt14_args(multi30k_dir, arr, "--until", "parse"))
    assert (arr / "parse/test.en.conllu").read_bytes() == (out / "parse/test.en.conllu").read_bytes()


@pytest.mark.parametrize("damage, message", [
    ("missing_line", r"valid\.en\.conllu: 1002 sentences, but .*valid\.en has 1003 lines \(line 1003 has no parse\)"),
    ("missing_inner_line", r"valid\.en\.conllu:\d+: sentence 8 has \d+ tokens but .*valid\.en:8 has"),
    ("extra_token", r"valid\.en\.conllu:\d+: sentence 5 has \d+ tokens but .*valid\.en:5 has"),
])
def test_brought_parses_that_do_not_match_fail_clearly(wmt14, multi30k_dir, tmp_path, damage, message):
    out, _ = wmt14
    conllu = tmp_path / "conllu"
    conllu.mkdir()
    for split in ("train", "test"):
        shutil.copy(out / f"parse/{split}.en.conllu", conllu)
    blocks = (out / "parse/valid.en.conllu").read_text().split("\n\n")
    if damage == "missing_line":
        del blocks[-2]  # the last sentence (the file ends with a blank line)
    elif damage == "missing_inner_line":
        del blocks[7]
    else:
        rows = blocks[4].split("\n")
        n = len(rows)
        rows.append(f"{n + 1}\textra\t_\tX\t_\t_\t1\tdep\t_\t_")
        blocks[4] = "\n".join(rows)
    (conllu / "valid.en.conllu").write_text("\n\n".join(blocks))
    target = tmp_path / "brought"
    res = run([a if a != "spacy" else "conllu" for a in wmt14_args(multi30k_dir, target)] +
              ["--conllu-dir", str(conllu)], check=False)
    assert res.returncode != 0
    import re
    assert re.search(message, res.stderr), res.stderr[-2000:]
    assert not (target / "parse/valid.en.conllu").exists()
    assert not (target / "bin").exists()
    assert not list((target / "parse").glob("*.tmp*"))


def test_mirror_of_upstream_archives_is_used_in_place_of_downloads(multi30k_dir, tmp_path):
    """A mirror holding the upstream .tgz files: the script extracts them in their archive layout.

    The training archives and dev.tgz are built here from real Multi30k text standing in for Europarl,
    Common Crawl, News Commentary and newstest2013 (not available offline); test-full.tgz holds the
    real newstest2014 sgm files.
    """
    import gzip
    import tarfile

    mirror = tmp_path / "mirror"
    stage = tmp_path / "stage"
    (stage / "training").mkdir(parents=True)
    (stage / "dev").mkdir()
    (stage / "test-full").mkdir()
    pairs = {lang: gzip.open(multi30k_dir / f"train.{lang}.gz", "rt", encoding="utf-8").read().splitlines()
             for lang in ("en", "de")}
    layout = {"training-parallel-europarl-v7.tgz": ("training/europarl-v7.de-en", 0),
              "training-parallel-commoncrawl.tgz": ("commoncrawl.de-en", 100),
              "training-parallel-nc-v9.tgz": ("training/news-commentary-v9.de-en", 200),
              "dev.tgz": ("dev/newstest2013", 300)}
    for rel, start in layout.values():
        for lang in ("en", "de"):
            (stage / f"{rel}.{lang}").write_text("\n".join(pairs[lang][start:start + 100]) + "\n", encoding="utf-8")
    for name in ("newstest2014-deen-src.en.sgm", "newstest2014-deen-ref.de.sgm"):
        shutil.copy(SHARED_DATA / "wmt14" / name, stage / "test-full" / name)
    mirror.mkdir()
    for archive, (rel, _) in layout.items():
        with tarfile.open(mirror / archive, "w:gz") as tar:
            for lang in ("en", "de"):
                tar.add(stage / f"{rel}.{lang}", arcname=f"{rel}.{lang}")
    with tarfile.open(mirror / "test-full.tgz", "w:gz") as tar:
        tar.add(stage / "test-full", arcname="test-full")
    out = tmp_path / "out"
    res = run(["bash", SCRIPT, "--mirror", str(mirror), "--out", str(out), "--parser", "spacy", "--until", "clean"])
    assert "download" not in res.stderr
    assert len((out / "raw/train.en").read_text().splitlines()) == 300
    assert (out / "raw/train.en").read_text().splitlines()[100] == pairs["en"][100]
    assert (out / "raw/valid.de").read_text().splitlines()[0] == pairs["de"][300]
    assert len((out / "raw/test.en").read_text().splitlines()) == 3003
