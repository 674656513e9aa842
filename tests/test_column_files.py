"""Column files read as what they are (trust round 5): CoNLL-2003 and GLUE files through
``fairseq-syntax-classification`` (its main, in-process), each hostile case named in one line or read right."""
import pytest

from fairseq_syntax.cli.glue_conll_prep import main

CONLL = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\n"
         "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n")


def conll(tmp_path, text, *extra, raw=None):
    src = tmp_path / "train.txt"
    src.write_bytes(raw if raw is not None else text.encode("utf-8"))
    rc = main(["conll", str(src), "--out-prefix", str(tmp_path / "out"), *extra])
    return rc, src


def outputs(tmp_path):
    return ((tmp_path / "out.words").read_text().splitlines(), (tmp_path / "out.label").read_text().splitlines())


def test_lf_crlf_and_cr_only_line_ends_read_the_same_sentences(tmp_path):
    want = (["EU rejects German", "Peter Blackburn"], ["B-ORG O B-MISC", "B-PER I-PER"])
    for ending in ("\n", "\r\n", "\r"):
        rc, _ = conll(tmp_path, CONLL.replace("\n", ending))
        assert rc == 0 and outputs(tmp_path) == want, ending


def test_a_byte_order_mark_is_not_a_docstart_sentence(tmp_path):
    rc, _ = conll(tmp_path, "\ufeff" + CONLL)
    assert rc == 0 and outputs(tmp_path)[0] == ["EU rejects German", "Peter Blackburn"]


@pytest.mark.parametrize("token,why", [("New\u00a0York", "U+00A0"), ("New York", "U+00A0")])
def test_a_token_holding_a_space_is_named_not_cut(tmp_path, capsys, token, why):
    text = CONLL.replace("EU NNP B-NP B-ORG", f"{token}\tNNP\tB-NP\tB-LOC")
    rc, src = conll(tmp_path, text)
    err = capsys.readouterr().err
    assert rc == 1 and f"{src}:3: 5 columns, expected 4 (token POS chunk NER)" in err and why in err
    assert not (tmp_path / "out.words").exists()


def test_a_file_cut_after_its_chunk_column_is_named_not_tagged_i_np(tmp_path, capsys):
    rc, src = conll(tmp_path, CONLL.rstrip("\n").rsplit(" ", 1)[0])  # "Blackburn NNP I-NP", no newline
    err = capsys.readouterr().err
    assert rc == 1 and f"{src}:8: 3 columns, expected 4" in err and "cut short" in err


def test_a_chunking_file_is_not_ner_data(tmp_path, capsys):
    chunking = "\n".join(" ".join(line.split()[:3]) for line in CONLL.splitlines()) + "\n"
    rc, src = conll(tmp_path, chunking)
    assert rc == 1 and f"{src}:1: 3 columns, expected 4 (token POS chunk NER)" in capsys.readouterr().err
    assert not (tmp_path / "out.label").exists()


def test_an_sst2_file_without_its_header_is_named_not_missing_an_example(tmp_path, capsys):
    src = tmp_path / "train.tsv"
    src.write_text("a charming journey .\t1\nunflinchingly bleak\t0\n", encoding="utf-8")
    assert main(["extract", str(src), "--task", "SST-2", "--out-prefix", str(tmp_path / "out")]) == 1
    assert f"{src}:1: this task's files start with a header line" in capsys.readouterr().err
    src.write_text("\ufeffsentence\tlabel\r\na charming journey .\t1\r\nunflinchingly bleak\t0\r\n", encoding="utf-8")
    assert main(["extract", str(src), "--task", "SST-2", "--out-prefix", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out.input0").read_text().splitlines() == ["a charming journey .", "unflinchingly bleak"]
    assert (tmp_path / "out.label").read_text().splitlines() == ["1", "0"]


def test_a_glue_line_with_a_tab_in_its_text_is_named(tmp_path, capsys):
    src = tmp_path / "train.tsv"
    src.write_text("sentence\tlabel\na charming\tjourney .\t1\n", encoding="utf-8")
    assert main(["extract", str(src), "--task", "SST-2", "--out-prefix", str(tmp_path / "out")]) == 1
    assert f"{src}:2: 3 tab-separated columns, expected the first line's 2, line 1 (a tab inside the text?)" in \
        capsys.readouterr().err
