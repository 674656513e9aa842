"""Parsing real Multi30k text offline, CoNLL-U errors, sharded parsing, and alignment of real parses."""
import gzip
import io
import os

import pytest

from fairseq_syntax.cli.align import align_files
from fairseq_syntax.parsing import ParsedSentence, format_conllu, read_conllu
from fairseq_syntax.parsing.sharded import parse_file, shard_dir
from fairseq_syntax.syntax import align_heads_to_subwords, check_subword_heads, validate_heads

from .conftest import run


def real_sentences(multi30k_dir, n, split="val"):
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer("en")
    with gzip.open(multi30k_dir / f"{split}.en.gz", "rt", encoding="utf-8") as fh:
        return [tok.tokenize(next(fh).strip(), aggressive_dash_splits=True, escape=False) for _ in range(n)]


def test_spacy_parses_real_sentences_keeping_tokens(multi30k_dir, spacy_parser):
    sents = real_sentences(multi30k_dir, 40)
    parsed = spacy_parser.parse(sents)
    assert len(parsed) == 40
    for s, p in zip(sents, parsed):
        assert p.words == s
        validate_heads(p.heads)
        assert p.deprels and len(p.deprels) == len(s)
    # a real parse: "A man in an orange hat starring at something ." -> the root is a verb or noun, with dependents
    assert sum(h == 0 for h in parsed[0].heads) >= 1


def test_conllu_round_trip():
    sent = ParsedSentence(["The", "dog", "runs"], [2, 3, 0], ["det", "nsubj", "root"], ["DET", "NOUN", "VERB"])
    text = format_conllu(sent) * 2
    back = list(read_conllu(io.StringIO(text), "x.conllu"))
    assert [b.words for b in back] == [sent.words] * 2
    assert [b.heads for b in back] == [sent.heads] * 2
    assert back[1].line == 5


@pytest.mark.parametrize("row, message", [
    ("2\tdog\t_\tNOUN\t_\t_\t7\tnsubj\t_\t_", r"x\.conllu: sentence at line 1, token 2: head 7 out of range 0..3"),
    ("2\tdog\t_\tNOUN\t_\t_\tx\tnsubj\t_\t_", r"x\.conllu:2: head 'x' is not an integer"),
    ("3\tdog\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_", r"x\.conllu:2: token ID '3', expected 2"),
    ("2\tdog\t_\tNOUN", r"x\.conllu:2: expected 10 tab-separated"),
    ("2\tdog\t_\tNOUN\t_\t_\t1\tnsubj\t_\t_", r"cycle through tokens 1 -> 2 -> 1"),
])
def test_bad_conllu_names_file_and_line(row, message):
    head = "1\tThe\t_\tDET\t_\t_\t2\tdet\t_\t_\n"
    root = "3\truns\t_\tVERB\t_\t_\t0\troot\t_\t_\n"
    with pytest.raises(ValueError, match=message):
        list(read_conllu(io.StringIO(head + row + "\n" + root + "\n"), "x.conllu"))


@pytest.fixture(scope="module")
def tokenized_file(tmp_path_factory, multi30k_dir):
    path = tmp_path_factory.mktemp("tok") / "val.tok.en"
    path.write_text("".join(" ".join(s) + "\n" for s in real_sentences(multi30k_dir, 300)), encoding="utf-8")
    return path


def test_one_and_two_workers_give_identical_bytes_and_resume(tmp_path, tokenized_file):
    one, two, resumed = tmp_path / "one.conllu", tmp_path / "two.conllu", tmp_path / "resumed.conllu"
    parse_file(str(tokenized_file), str(one), "spacy", workers=1, shard_size=64, progress=False)
    parse_file(str(tokenized_file), str(two), "spacy", workers=2, shard_size=64, progress=False)
    assert one.read_bytes() == two.read_bytes()
    assert not os.path.exists(shard_dir(str(one)))
    # a job-array run of shard 1/2 leaves shards and no output; the final run parses the rest and merges
    stats = parse_file(str(tokenized_file), str(resumed), "spacy", shard=(1, 2), shard_size=64, progress=False)
    assert not resumed.exists() and stats["sentences"] == 64 * 2
    stats = parse_file(str(tokenized_file), str(resumed), "spacy", shard_size=64, progress=False)
    assert stats["sentences"] == 300 - 128
    assert resumed.read_bytes() == one.read_bytes()
    # a complete output is not parsed again
    assert parse_file(str(tokenized_file), str(resumed), "spacy", shard_size=64, progress=False)["skipped"]


def test_an_edited_parse_is_parsed_again_not_believed(tmp_path, tokenized_file, capsys):
    """One head of a finished parse changed by hand (same tokens, still a tree): the parser's record vouches for the
    parse's bytes, so the file is parsed again (the data-prep stage that saw it changed gets a fresh parse, not the
    edited one back) and comes out as it was."""
    out = tmp_path / "p.conllu"
    parse_file(str(tokenized_file), str(out), "spacy", shard_size=100, progress=False)
    original = out.read_bytes()
    lines = original.decode("utf-8").split("\n")
    first = lines[0].split("\t")  # the first token's head: make it the root's child of another word
    n_tokens = next(i for i, line in enumerate(lines) if not line)
    first[6] = "2" if first[6] != "2" else "3"
    lines[0] = "\t".join(first)
    edited = "\n".join(lines)
    out.write_text(edited, encoding="utf-8")
    assert n_tokens >= 3
    stats = parse_file(str(tokenized_file), str(out), "spacy", shard_size=100, progress=False)
    assert not stats.get("skipped") and stats["sentences"] == 300
    assert "not the parse its record vouches for" in capsys.readouterr().err
    assert out.read_bytes() == original


def test_shards_of_another_input_are_discarded_by_a_merging_run_and_refused_by_an_array_task(tmp_path, capsys,
                                                                                             tokenized_file):
    lines = tokenized_file.read_text().splitlines(keepends=True)
    src, out = tmp_path / "in.txt", tmp_path / "out.conllu"
    src.write_text("".join(lines[:40]))
    parse_file(str(src), str(out), "spacy", shard=(0, 2), shard_size=10, progress=False)  # shards 0 and 2
    src.write_text("".join(lines[40:80]))  # the input changes under the shards
    with pytest.raises(RuntimeError, match=r"plan\.json: the shards there were made for another input .*run once "
                                           r"without --shard"):
        parse_file(str(src), str(out), "spacy", shard=(1, 2), shard_size=10, progress=False)
    stats = parse_file(str(src), str(out), "spacy", shard_size=10, progress=False)
    assert "were made for another input; discarding them" in capsys.readouterr().err
    assert stats["sentences"] == 40 and not os.path.exists(shard_dir(str(out)))
    fresh = tmp_path / "fresh.conllu"
    parse_file(str(src), str(fresh), "spacy", progress=False)
    assert out.read_bytes() == fresh.read_bytes()


def test_empty_line_is_an_error_with_its_line(tmp_path):
    src = tmp_path / "bad.en"
    src.write_text("A dog runs .\n\nA cat sleeps .\n")
    with pytest.raises(ValueError, match=r"bad\.en:2: empty line"):
        parse_file(str(src), str(tmp_path / "bad.conllu"), "spacy", progress=False)
    assert not (tmp_path / "bad.conllu").exists()


def test_alignment_of_real_parses_to_real_bpe(tmp_path, tokenized_file):
    conllu = tmp_path / "val.conllu"
    parse_file(str(tokenized_file), str(conllu), "spacy", progress=False)
    codes_path = tmp_path / "codes"
    run(["subword-nmt", "learn-bpe", "-s", "300", "--input", str(tokenized_file), "--output", str(codes_path)])
    bpe = tmp_path / "val.bpe.en"
    run(["subword-nmt", "apply-bpe", "-c", str(codes_path), "--input", str(tokenized_file), "--output", str(bpe)])
    out = tmp_path / "val.heads"
    assert align_files(str(conllu), str(bpe), str(out)) == 300
    parses = list(read_conllu(open(conllu), str(conllu)))
    lines = bpe.read_text().splitlines()
    split_words = 0
    for p, line, codes_line in zip(parses, lines, out.read_text().splitlines()):
        pieces = line.split()
        codes = [int(c) for c in codes_line.split()]
        check_subword_heads(codes)
        assert codes == align_heads_to_subwords(p.heads, pieces)
        split_words += sum(c < 0 for c in codes)
        # every word-initial subword points at the first subword of its word's head
        starts = [i + 1 for i, c in enumerate(codes) if c > 0]
        for w, h in enumerate(p.heads):
            assert codes[starts[w] - 1] == (starts[h - 1] if h else starts[w])
    assert split_words > 100  # 300 merges split many words: the subword path is really exercised


def test_align_rejects_missing_line_and_token_mismatch_without_output(tmp_path, tokenized_file):
    conllu = tmp_path / "val.conllu"
    parse_file(str(tokenized_file), str(conllu), "spacy", progress=False)
    lines = tokenized_file.read_text().splitlines()
    missing = tmp_path / "missing.en"
    missing.write_text("\n".join(lines[:10] + lines[11:]) + "\n")  # line 11 dropped
    out = tmp_path / "out.heads"
    with pytest.raises(ValueError, match=r"missing\.en:11 .*the parse has \d+ tokens but the subword text has"):
        align_files(str(conllu), str(missing), str(out))
    assert not out.exists()
    wrong = tmp_path / "wrong.en"
    changed = lines[:]
    changed[4] = changed[4] + " extra"
    wrong.write_text("\n".join(changed) + "\n")
    with pytest.raises(ValueError, match=r"wrong\.en:5 "):
        align_files(str(conllu), str(wrong), str(out))
    short = tmp_path / "short.en"
    short.write_text("\n".join(lines + lines[:1]) + "\n")
    with pytest.raises(ValueError, match=r"ends after 300 sentences.*line 301 has no parse"):
        align_files(str(conllu), str(short), str(out))
    assert not out.exists() and not list(tmp_path.glob("out.heads.tmp*"))


def test_killed_parse_resumes_to_identical_output(tmp_path, tokenized_file):
    import signal
    import subprocess
    import time

    from .conftest import BIN

    whole = tmp_path / "whole.conllu"
    parse_file(str(tokenized_file), str(whole), "spacy", shard_size=20, progress=False)
    out = tmp_path / "killed.conllu"
    cmd = [str(BIN / "fairseq-syntax-parse"), str(tokenized_file), "-o", str(out), "--parser", "spacy",
           "--shard-size", "20", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    shards = tmp_path / "killed.conllu.shards"
    deadline = time.time() + 120
    while len(list(shards.glob("0*.conllu"))) < 3 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(shards.glob("0*.conllu")))
    assert not out.exists() and 3 <= done_before < 15, done_before
    # a kill mid-write leaves the shard's temporary; planted here so that the case does not hang on timing
    (shards / f"{done_before:06d}.conllu.tmp99999").write_text("1\thalf\n")
    (shards / "notes.txt").write_text("mine\n")
    kept = {p.name: p.stat().st_mtime_ns for p in shards.glob("0*.conllu")}
    res = run(cmd, check=False)
    assert res.returncode != 0 and "notes.txt: not a file this project wrote" in res.stderr, res.stderr
    assert not out.exists() and (shards / "notes.txt").exists() and len(list(shards.glob("0*.conllu"))) == 15
    assert {n: (shards / n).stat().st_mtime_ns for n in kept} == kept  # the shards done before were not redone
    (shards / "notes.txt").unlink()
    res = run(cmd)
    assert "every shard was parsed before; merged them" in res.stderr  # the first rerun parsed the rest
    assert out.read_bytes() == whole.read_bytes() and not shards.exists()
