"""Bad input to the preparation CLIs, on real Multi30k sentences: one clear line naming the file (and the
line), nothing half-written, and a changed input never answered with a stale parse."""
import gzip
import json

import pytest

from .conftest import BIN, run


@pytest.fixture(scope="module")
def tokenized(tmp_path_factory, multi30k_dir):
    """The first 6 English training sentences of Multi30k, Moses-tokenized as data-prep does."""
    d = tmp_path_factory.mktemp("bad")
    with gzip.open(multi30k_dir / "train.en.gz", "rt", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(6)]
    (d / "raw.en").write_text("".join(lines), encoding="utf-8")
    run([BIN / "fairseq-syntax-text", "tokenize", d / "raw.en", "-o", d / "tok.en", "-l", "en", "--quiet"])
    return d


def parse(src, out, *extra, check=True):
    return run([BIN / "fairseq-syntax-parse", src, "-o", out, "--parser", "spacy", "--quiet", *extra], check=check)


def one_line_error(proc, *fragments):
    assert proc.returncode != 0
    err = [x for x in proc.stderr.splitlines() if "error" in x]
    assert len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for f in fragments:
        assert f in err[0], (f, err[0])
    return err[0]


def test_a_changed_input_is_parsed_again_and_recorded(tokenized, tmp_path):
    src, out = tmp_path / "x.en", tmp_path / "x.conllu"
    lines = (tokenized / "tok.en").read_text(encoding="utf-8").splitlines()
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parse(src, out)
    rec = json.loads((tmp_path / "x.conllu.provenance.json").read_text())
    assert rec["lines"] == 6 and rec["parser"]["backend"] == "spacy" and rec["parser"]["model_version"]
    assert "is complete; nothing to do" in parse(src, out).stderr
    # the same token counts, other words: the probe that used to keep the stale parse
    changed = [" ".join(["dog"] * len(x.split())) for x in lines]
    src.write_text("\n".join(changed) + "\n", encoding="utf-8")
    proc = parse(src, out)
    assert "changed since it was parsed; parsing again" in proc.stderr
    forms = [ln.split("\t")[1] for ln in out.read_text().splitlines() if ln and not ln.startswith("#")]
    assert set(forms) == {"dog"}
    assert json.loads((tmp_path / "x.conllu.provenance.json").read_text())["input_sha1"] != rec["input_sha1"]
    # a record of another parser: parsed again too
    rec = json.loads((tmp_path / "x.conllu.provenance.json").read_text())
    rec["parser"]["model"] = "en_core_web_lg"
    (tmp_path / "x.conllu.provenance.json").write_text(json.dumps(rec))
    assert "it was parsed with spacy en_core_web_lg" in parse(src, out).stderr


def test_brought_conllu_is_checked_token_by_token(tokenized, tmp_path):
    parse(tokenized / "tok.en", tmp_path / "mine.conllu")
    text = (tokenized / "tok.en").read_text(encoding="utf-8").splitlines()
    other = tmp_path / "other.en"
    words = text[2].split()
    words[3] = "zebra" if words[3] != "zebra" else "horse"
    other.write_text("\n".join(text[:2] + [" ".join(words)] + text[3:]) + "\n", encoding="utf-8")
    proc = run([BIN / "fairseq-syntax-parse", other, "-o", tmp_path / "out.conllu", "--parser", "conllu",
                "--conllu", tmp_path / "mine.conllu"], check=False)
    line = one_line_error(proc, "mine.conllu:", "token 4 of sentence 3", f"{other}:3 has {words[3]!r}")
    assert not (tmp_path / "out.conllu").exists(), line
    ok = run([BIN / "fairseq-syntax-parse", tokenized / "tok.en", "-o", tmp_path / "out.conllu", "--parser",
              "conllu", "--conllu", tmp_path / "mine.conllu"])
    assert "checked" in ok.stderr
    assert json.loads((tmp_path / "out.conllu.provenance.json").read_text())["parser"]["backend"] == "conllu"


def test_invalid_utf8_and_missing_files_are_one_line(tokenized, tmp_path):
    bad = tmp_path / "bad.en"
    data = (tokenized / "tok.en").read_bytes().split(b"\n")
    data[1] = data[1][:10] + b"\xff" + data[1][10:]
    bad.write_bytes(b"\n".join(data))
    one_line_error(parse(bad, tmp_path / "bad.conllu", check=False),
                   f"{bad}:2: not valid UTF-8 (byte 0xff at column 11)")
    assert not (tmp_path / "bad.conllu").exists()
    one_line_error(parse(tmp_path / "missing.en", tmp_path / "m.conllu", check=False), "missing.en: no such file")
    proc = run([BIN / "fairseq-syntax-align", "--conllu", tmp_path / "none.conllu", "--subwords", bad,
                "-o", tmp_path / "h"], check=False)
    one_line_error(proc, "none.conllu: no such file")


def test_a_dangling_bpe_marker_is_named(tokenized, tmp_path):
    parse(tokenized / "tok.en", tmp_path / "p.conllu")
    lines = (tokenized / "tok.en").read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4] + "@@"  # the last piece continues into nothing
    sub = tmp_path / "sub.en"
    sub.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run([BIN / "fairseq-syntax-align", "--conllu", tmp_path / "p.conllu", "--subwords", sub,
                "-o", tmp_path / "heads"], check=False)
    one_line_error(proc, f"{sub}:5", "ends in '@@'")
    assert not (tmp_path / "heads").exists()


def test_bpe_text_of_other_sentences_is_named_even_at_the_same_lengths(tokenized, tmp_path):
    """Alignment by word counts alone would accept another sentence of the same length; BPE must rejoin to
    the parse's words (Moses escapes such as @-@ included), else the first differing word is named."""
    parse(tokenized / "tok.en", tmp_path / "p.conllu")
    lines = (tokenized / "tok.en").read_text(encoding="utf-8").splitlines()
    split = [" ".join(w[:2] + "@@ " + w[2:] if len(w) > 3 else w for w in line.split()) for line in lines]
    sub = tmp_path / "sub.en"
    sub.write_text("\n".join(split) + "\n", encoding="utf-8")
    ok = run([BIN / "fairseq-syntax-align", "--conllu", tmp_path / "p.conllu", "--subwords", sub,
              "-o", tmp_path / "ok.heads"])
    assert "aligned 6 sentences" in ok.stderr
    words = lines[3].split()
    k = next(i for i, w in enumerate(words) if w.isalpha() and len(w) > 3)
    words[k] = words[k][::-1] + "x"  # same number of words, another word
    split[3] = " ".join(words)
    sub.write_text("\n".join(split) + "\n", encoding="utf-8")
    proc = run([BIN / "fairseq-syntax-align", "--conllu", tmp_path / "p.conllu", "--subwords", sub,
                "-o", tmp_path / "heads"], check=False)
    one_line_error(proc, f"{sub}:4", f"word {k + 1} is {words[k]!r}", "not of the same sentences")
    assert not (tmp_path / "heads").exists()


def test_provenance_needs_one_parser_for_every_split(tokenized, tmp_path):
    a, b = tmp_path / "train.en.conllu", tmp_path / "valid.en.conllu"
    parse(tokenized / "tok.en", a)
    parse(tokenized / "tok.en", b)
    rec = json.loads((tmp_path / "valid.en.conllu.provenance.json").read_text())
    rec["parser"] = {"backend": "stanza", "model": "en", "model_version": None, "library_version": "1.15.0"}
    (tmp_path / "valid.en.conllu.provenance.json").write_text(json.dumps(rec))
    dest = tmp_path / "bin"
    dest.mkdir()
    proc = run([BIN / "fairseq-syntax-provenance", "--destdir", dest, "--parses", a, b, "-s", "en", "-t", "de"],
               check=False)
    one_line_error(proc, "valid.en.conllu was parsed with stanza en", "one parser must make all splits")
    assert not (dest / "preprocessing.json").exists()
    (tmp_path / "valid.en.conllu.provenance.json").unlink()
    one_line_error(run([BIN / "fairseq-syntax-provenance", "--destdir", dest, "--parses", a, b, "-s", "en"],
                       check=False), "valid.en.conllu: no record of its input and parser")


def test_a_missing_side_file_names_the_script_of_its_corpus(tmp_path):
    """The missing-random-trees hint for CoNLL-2003 named multi30k.sh."""
    from fairseq_syntax.data.heads_io import load_heads

    with pytest.raises(FileNotFoundError, match=r"train.randheads.bin/.idx: missing syntax side file; the random-tree "
                                                r"control: prepare it with data-prep/conll2003.sh --random-trees SEED"):
        load_heads(str(tmp_path / "train.randheads"), "data-prep/conll2003.sh")
    with pytest.raises(FileNotFoundError,
                       match=r"write it with data-prep/glue.sh \(or fairseq-syntax-binarize-heads\)"):
        load_heads(str(tmp_path / "train.heads"), "data-prep/glue.sh")


def test_an_output_in_a_folder_that_cannot_be_written_is_found_before_any_work(tmp_path):
    """An unwritable output path was found only after the whole evaluation. /proc/self takes no file, even as root
    (a permission check alone would pass there)."""
    from fairseq_syntax.cli.guards import check_outputs

    with pytest.raises(ValueError, match=r"/proc/self/eval.json: its folder /proc/self cannot be written"):
        check_outputs(["/proc/self/eval.json"], [])
    check_outputs([str(tmp_path / "eval.json")], [])
    assert not list(tmp_path.iterdir())  # the probe leaves nothing behind


def test_several_inputs_take_one_output_each(tmp_path):
    """fairseq-syntax-parse and fairseq-syntax-text tokenize take several files (one parser or tokenizer loaded for
    all, as data-prep calls them); the counts must match, and nothing is written otherwise."""
    for i in (1, 2):
        (tmp_path / f"in{i}.txt").write_text("A man rides a horse .\n")
    for cmd in ([BIN / "fairseq-syntax-parse", tmp_path / "in1.txt", tmp_path / "in2.txt", "-o", tmp_path / "o1"],
                [BIN / "fairseq-syntax-text", "tokenize", tmp_path / "in1.txt", tmp_path / "in2.txt", "-o",
                 tmp_path / "o1", "-l", "en"]):
        proc = run(cmd, check=False)
        assert proc.returncode == 2 and "2 inputs and 1 outputs (-o): give one output per input" in proc.stderr
        assert not (tmp_path / "o1").exists()
    proc = run([BIN / "fairseq-syntax-text", "tokenize", tmp_path / "in1.txt", tmp_path / "in2.txt", "-o",
                tmp_path / "t1", tmp_path / "t2", "-l", "en"])
    assert (tmp_path / "t1").read_text() == (tmp_path / "t2").read_text() == "A man rides a horse .\n"


@pytest.mark.parametrize("out,says", [
    ("work/a,b", "a comma (fairseq-preprocess splits its paths at commas)"),
    ("work/a:b", "a colon (fairseq-train splits its data path at colons)"),
    ("work/-x", "a part starting with '-'"),
])
def test_an_out_fairseqs_tools_cannot_take_is_refused_before_any_work(tmp_path, out, says):
    """A comma in --out ran everything up to binarize, where fairseq-preprocess split the path and the work was
    lost; a colon prepared a folder fairseq-train would split; a leading dash read as an option."""
    from .conftest import ROOT, SHARED_DATA

    proc = run(["bash", str(ROOT / "data-prep/glue.sh"), "--task", "RTE", "--glue-dir", str(SHARED_DATA / "glue"),
                "--out", out, "--max-train", "4", "--max-eval", "4"], cwd=tmp_path, check=False)
    one_line_error(proc, f"--out {out}: holds", says)
    assert not (tmp_path / "work").exists()


def test_an_out_that_is_a_file_and_a_read_only_out_are_one_line_each(tmp_path):
    import os

    from .conftest import ROOT, SHARED_DATA

    (tmp_path / "f").write_text("mine\n")
    cmd = ["bash", str(ROOT / "data-prep/glue.sh"), "--task", "RTE", "--glue-dir", str(SHARED_DATA / "glue"),
           "--max-train", "4", "--max-eval", "4", "--out"]
    one_line_error(run(cmd + ["f"], cwd=tmp_path, check=False), "--out f: is a file, not a folder")
    assert (tmp_path / "f").read_text() == "mine\n"
    (tmp_path / "ro").mkdir()
    os.chmod(tmp_path / "ro", 0o555)
    try:
        if os.access(tmp_path / "ro", os.W_OK):
            pytest.skip("this user writes into read-only folders (root)")
        one_line_error(run(cmd + ["ro/out"], cwd=tmp_path, check=False), "ro/out")
    finally:
        os.chmod(tmp_path / "ro", 0o755)


def test_an_os_error_at_the_pipelines_entry_is_one_line_naming_the_file(capsys):
    """Disk full while a vocabulary was copied, a read-only --out: one line naming the file, no traceback."""
    import errno

    from fairseq_syntax.pipeline.messages import run_main

    def full(argv):
        raise OSError(errno.ENOSPC, "No space left on device", "work/glue/RTE/bin.tmp/input0/dict.txt")

    assert run_main(full, []) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: work/glue/RTE/bin.tmp/input0/dict.txt: No space left on device; nothing was recorded as "
                   "done there, so the same command resumes once that is mended"]
