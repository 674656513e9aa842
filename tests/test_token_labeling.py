"""Token labeling (CoNLL-2003 NER): span F1, labels on first subwords, and the real-data path end to end."""
import json
import re

import numpy as np
import pytest
import torch

from fairseq_syntax.data.sentence_codes import AssembledCodesDataset
from fairseq_syntax.data.token_labels import IGNORE, WordStartLabelsDataset
from fairseq_syntax.metrics import f1, span_counts, spans

from .conftest import BIN, ROOT, SHARED_DATA, fairseq_train, in_process, once_per_run, run


def test_spans_follow_conlleval():
    tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG", "I-ORG", "O", "I-MISC"]
    assert spans(tags) == {("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5), ("ORG", 5, 7), ("MISC", 8, 9)}
    assert spans(["S-PER", "B-ORG", "E-ORG", "O"]) == {("PER", 0, 1), ("ORG", 1, 3)}
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    pred = [["B-PER", "O", "O", "B-LOC"]]  # PER cut short: wrong; LOC right
    assert span_counts(gold, pred) == (1, 2, 2)
    assert f1(1, 2, 2) == pytest.approx(50.0)


class _Rows(list):
    @property
    def sizes(self):
        return np.array([len(x) for x in self])


def test_word_labels_sit_on_first_subwords():
    # "Johnson visited Düsseldorf": john ##son | visited | dusseldorf split in 3
    heads = _Rows([torch.tensor([3, -1, 3, 3, -4, -4])])  # words start at pieces 1, 3, 4; "visited" is the root
    codes = AssembledCodesDataset(heads, None, lead=1)
    labels = _Rows([torch.tensor([5, 4, 6, 2])])  # three word tags (dictionary ids) + EOS (2)
    target = WordStartLabelsDataset(codes, labels, eos=2, offset=4).collater([0])[0]
    assert target.tolist() == [IGNORE, 1, IGNORE, 0, 2, IGNORE, IGNORE, IGNORE]
    bad = _Rows([torch.tensor([5, 4, 2])])
    with pytest.raises(ValueError, match="sentence 1 has 2 labels for 3 words"):
        WordStartLabelsDataset(codes, bad, eos=2, offset=4).collater([0])


def test_a_batch_of_labels_is_padded_with_ignore():
    heads = _Rows([torch.tensor([1]), torch.tensor([3, -1, 3, 3, -4, -4])])
    labels = _Rows([torch.tensor([7, 2]), torch.tensor([5, 4, 6, 2])])
    codes = AssembledCodesDataset(heads, None, lead=1)
    batch = WordStartLabelsDataset(codes, labels, eos=2, offset=4).collater([1, 0])
    assert batch.tolist() == [[IGNORE, 1, IGNORE, 0, 2, IGNORE, IGNORE, IGNORE],
                              [IGNORE, 3, IGNORE, IGNORE, IGNORE, IGNORE, IGNORE, IGNORE]]
    assert codes.collater([1, 0]).tolist() == [[0, 4, -2, 4, 4, -5, -5, 0], [0, 2, 0, 0, 0, 0, 0, 0]]


# conlleval's readings, each against seqeval's default (conlleval) mode: (gold, predicted, expected spans of pred)
HAND = [
    # an entity at the sentence end
    (["O", "B-PER", "I-PER"], ["O", "B-PER", "I-PER"], {("PER", 1, 3)}),
    # an I- after O opens an entity (conlleval), in IOB1 gold and in a prediction
    (["I-ORG", "I-ORG", "O", "I-LOC"], ["O", "I-ORG", "O", "I-LOC"], {("ORG", 1, 2), ("LOC", 3, 4)}),
    # two adjacent entities of one type: IOB2 B- B-, and IOB1's I- then B-
    (["B-PER", "B-PER", "O"], ["B-PER", "B-PER", "O"], {("PER", 0, 1), ("PER", 1, 2)}),
    (["I-PER", "B-PER", "O"], ["I-PER", "I-PER", "O"], {("PER", 0, 2)}),
    # an I- of another type ends one entity and opens the next
    (["B-LOC", "I-LOC", "O"], ["B-LOC", "I-ORG", "O"], {("LOC", 0, 1), ("ORG", 1, 2)}),
]


@pytest.mark.parametrize("gold,pred,expected", HAND)
def test_hand_cases_score_as_conlleval_and_seqeval(gold, pred, expected):
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

    from fairseq_syntax.metrics import entity_scores

    assert spans(pred) == expected
    ours = entity_scores([gold], [pred])
    assert ours["precision"] == pytest.approx(100 * precision_score([gold], [pred]))
    assert ours["recall"] == pytest.approx(100 * recall_score([gold], [pred]))
    assert ours["f1"] == pytest.approx(100 * f1_score([gold], [pred]))
    report = classification_report([gold], [pred], output_dict=True, zero_division=0)
    for kind, s in ours["types"].items():
        if s["gold"]:
            assert s["f1"] == pytest.approx(100 * report[kind]["f1-score"]), kind


def test_the_scheme_is_read_off_the_gold_tags():
    from fairseq_syntax.metrics import tag_scheme

    assert tag_scheme([["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "B-ORG"]]) == "IOB2"
    assert tag_scheme([["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]]) == "IOB1"
    assert tag_scheme([["S-PER", "O"]]) == "IOBES"
    assert tag_scheme([(line.split()[-1] if line.strip() else "O") for line in
                       (SHARED_DATA / "conll2003/test.txt").read_text().splitlines()
                       if not line.startswith("-DOCSTART-")]) == "IOB2"  # the local copy is IOB2


@pytest.fixture(scope="module")
def conll(tmp_path_factory, minilm_converted):
    """A slice of CoNLL-2003 prepared, and a roberta_sgnet_small fine-tuned on it for 5 updates."""
    def build(out):
        run(["bash", str(ROOT / "data-prep/conll2003.sh"), "--conll-dir", str(SHARED_DATA / "conll2003"), "--out",
             str(out / "data"), "--pretrained", str(minilm_converted), "--parser", "spacy", "--workers", "1",
             "--max-train", "120", "--max-eval", "40", "--random-trees", "1"])
        user_dir = run(["fairseq-syntax-user-dir"]).stdout.strip()
        fairseq_train([str(out / "data/bin"), "--user-dir", user_dir, "--task", "syntax_token_labeling",
                       "--criterion", "token_labeling", "--arch", "roberta_sgnet_small", "--restore-file",
                       str(minilm_converted / "model.pt"), "--reset-optimizer", "--reset-dataloader", "--reset-meters",
                       "--optimizer", "adam", "--lr", "5e-5", "--batch-size", "16", "--max-update", "5", "--save-dir",
                       str(out / "ck"), "--no-epoch-checkpoints", "--best-checkpoint-metric", "f1",
                       "--maximize-best-checkpoint-metric"], cwd=out)
    return once_per_run(tmp_path_factory, "conll2003-sgnet-5", build)


@pytest.mark.slow
def test_ner_eval_equals_seqeval_on_real_predictions_and_writes_them_per_sentence(conll, tmp_path):
    """fairseq-syntax-ner-eval on the CoNLL-2003 test slice: the figures seqeval computes from the same gold and
    predicted tags, overall and per type; the scheme named; one line per sentence with the corpus words."""
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

    from fairseq_syntax.cli.ner_eval import main as ner_eval

    out = in_process(ner_eval, [conll / "data/bin", "--path", conll / "ck/checkpoint_best.pt", "--split", "test",
                                "--json", tmp_path / "e.json", "--predictions", tmp_path / "p.jsonl", "--cpu"])
    assert "scheme=IOB2 (scored as conlleval)" in out.stdout
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    words = [line.split() for line in (conll / "data/raw/test.words").read_text().splitlines()]
    labels = [line.split() for line in (conll / "data/raw/test.label").read_text().splitlines()]
    assert [r["sentence"] for r in rows] == list(range(40)) and [r["words"] for r in rows] == words
    assert [r["gold"] for r in rows] == labels
    gold, pred = [r["gold"] for r in rows], [r["pred"] for r in rows]
    e = json.loads((tmp_path / "e.json").read_text())
    assert e["scheme"] == "IOB2" and e["sentences"] == 40 and e["gold"] == sum(len(spans(g)) for g in gold)
    assert e["predicted"] > 0  # 5 updates predict entities: the comparison below is not of zeros
    assert e["precision"] == pytest.approx(100 * precision_score(gold, pred))
    assert e["recall"] == pytest.approx(100 * recall_score(gold, pred))
    assert e["f1"] == pytest.approx(100 * f1_score(gold, pred))
    report = classification_report(gold, pred, output_dict=True, zero_division=0)
    for kind, s in e["types"].items():
        if kind in report:
            assert s["precision"] == pytest.approx(100 * report[kind]["precision"])
            assert s["recall"] == pytest.approx(100 * report[kind]["recall"])


def test_ner_eval_names_a_missing_split_and_a_missing_checkpoint(tmp_path):
    (tmp_path / "bin/label").mkdir(parents=True)
    (tmp_path / "bin/label/valid.bin").write_bytes(b"")
    ck = tmp_path / "ck.pt"
    ck.write_bytes(b"x")
    out = run([str(BIN / "fairseq-syntax-ner-eval"), str(tmp_path / "bin"), "--path", str(ck)], check=False)
    assert out.returncode == 1 and "no split 'test' (no label/test.bin); the splits there: valid" in out.stderr
    out = run([str(BIN / "fairseq-syntax-ner-eval"), str(tmp_path / "bin"), "--path", str(tmp_path / "no.pt")],
              check=False)
    assert out.returncode == 1 and "no.pt: no such checkpoint" in out.stderr


@pytest.mark.slow
def test_conll2003_prepare_fine_tune_and_evaluate(conll, tmp_path):
    out = conll / "data"
    tags = (out / "bin/label/dict.txt").read_text().split()[::2]
    assert "O" in tags and set(tags) <= {"O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"}
    first = (out / "raw/train.words").read_text().splitlines()[0].split()
    assert first[:3] == ["EU", "rejects", "German"]  # real corpus tokens, case kept for the parser
    from fairseq.data import indexed_dataset

    for split in ("train", "valid", "test"):  # the random-tree control: the same words, other heads
        real = indexed_dataset.MMapIndexedDataset(str(out / f"bin/input0/{split}.heads"))
        rand = indexed_dataset.MMapIndexedDataset(str(out / f"bin/input0/{split}.randheads"))
        assert len(real) == len(rand) and all(len(real[i]) == len(rand[i]) for i in range(len(real)))
        assert sum(not np.array_equal(real[i], rand[i]) for i in range(len(real))) > len(real) // 3
    user_dir = run(["fairseq-syntax-user-dir"]).stdout.strip()
    common = ["--user-dir", user_dir, "--task", "syntax_token_labeling", "--criterion", "token_labeling"]
    proc = run(["fairseq-validate", str(out / "bin"), *common, "--path", str(conll / "ck/checkpoint_best.pt"),
                "--batch-size", "16", "--valid-subset", "test"], cwd=tmp_path)
    m = re.search(r"valid on 'test' subset .*accuracy ([\d.]+) .*span_gold (\d+) .*f1 ([\d.]+)",
                  proc.stdout + proc.stderr)
    assert m, (proc.stdout + proc.stderr)[-2000:]
    gold = sum(len(spans(line.split())) for line in (out / "raw/test.label").read_text().splitlines())
    assert int(m.group(2)) == gold  # every gold entity of the 40 test sentences was scored
    assert 0 <= float(m.group(3)) <= 100


@pytest.mark.slow
def test_the_tagger_hub_labels_raw_text_as_the_evaluation_labels_the_prepared_sentence(conll, tmp_path):
    """EntityTagger parses words with the parser recorded in the data and labels them as
    fairseq-syntax-ner-eval labelled the same test sentence; raw text is split into BERT's basic words first."""
    from fairseq_syntax.cli.ner_eval import main as ner_eval
    from fairseq_syntax.tagger_hub import EntityTagger

    in_process(ner_eval, [conll / "data/bin", "--path", conll / "ck/checkpoint_best.pt", "--split", "test",
                          "--predictions", tmp_path / "p.jsonl", "--cpu"])
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    record = json.loads((conll / "data/bin/preprocessing.json").read_text())
    assert record["parser"]["backend"] == "spacy" and record["tokenizer"]["name"] == "bert_basic"
    tagger = EntityTagger.from_pretrained(str(conll / "ck"), data_name_or_path=str(conll / "data/bin"))
    for row in rows[:12]:
        out = tagger.tag_words(row["words"])
        assert out["labels"] == row["pred"], row["words"]
        assert {(e["type"], e["start"], e["end"]) for e in out["entities"]} == spans(row["pred"])
    text = "Germany's Helmut Kohl met EU officials in Brussels on Monday."
    out = tagger.tag(text)
    assert out["words"][:4] == ["Germany", "'", "s", "Helmut"] and len(out["labels"]) == len(out["words"])
    assert all(e["text"] == " ".join(out["words"][e["start"]:e["end"]]) for e in out["entities"])
    with pytest.raises(TypeError, match="must be a str"):
        tagger.tag(["not", "a", "string"])
    two = tagger.tag_words(rows[0]["words"] + rows[1]["words"], sentences=[rows[0]["words"], rows[1]["words"]])
    assert two["labels"] == rows[0]["pred"] + rows[1]["pred"]
    with pytest.raises(ValueError, match="consecutive pieces"):
        tagger.tag_words(rows[0]["words"] + rows[1]["words"], sentences=[rows[1]["words"], rows[0]["words"]])
    for word in ("New York", " ", "Kohl\n"):
        with pytest.raises(ValueError, match=r"word 1 \(.*\) holds whitespace: tag_words takes words split already"):
            tagger.tag_words(["In", word, "today"])


@pytest.mark.slow
def test_data_binarized_with_other_dictionaries_or_a_cut_bin_is_refused_not_scored(conll, tmp_path, capsys):
    """A checkpoint carries its dictionaries' digests: data whose label dictionary lists the tags in another order
    (a corpus copy that counts them otherwise) is refused by the evaluation and the tagger hub, nothing written. A
    checkpoint saved before the record is still refused where the label count differs, where fairseq would have
    put a random head in place of the trained one. A label .bin cut short is named instead of an IndexError."""
    import shutil

    from fairseq_syntax.cli import ner_eval
    from fairseq_syntax.tagger_hub import EntityTagger

    ck = conll / "ck/checkpoint_best.pt"

    def score(data, path=ck):
        out = tmp_path / "e.json"
        out.unlink(missing_ok=True)
        rc = ner_eval.main([str(data / "bin"), "--path", str(path), "--cpu", "--json", str(out)])
        assert not out.exists() or rc == 0
        return rc, capsys.readouterr().err

    assert score(conll / "data")[0] == 0
    data = tmp_path / "swapped"
    shutil.copytree(conll / "data", data)
    labels = (data / "bin/label/dict.txt").read_text().splitlines(keepends=True)
    (data / "bin/label/dict.txt").write_text("".join([labels[1], labels[0], *labels[2:]]))
    rc, err = score(data)
    assert rc == 1 and "swapped/bin: its label dictionary is not the one" in err and "checkpoint_best.pt" in err
    with pytest.raises(ValueError, match="its label dictionary is not the one"):
        EntityTagger.from_pretrained(str(conll / "ck"), data_name_or_path=str(data / "bin"))

    state = torch.load(ck, map_location="cpu", weights_only=False)  # the test's own checkpoint, saved as fairseq does
    assert set(state["task_state"]["dictionaries"]) == {"source", "label"}
    del state["task_state"]["dictionaries"]  # as saved before the record
    torch.save(state, tmp_path / "old.pt")
    rc, err = score(conll / "data", tmp_path / "old.pt")
    assert rc == 0, err
    more = tmp_path / "more"
    shutil.copytree(conll / "data", more)
    with open(more / "bin/label/dict.txt", "a") as fh:
        fh.write("B-EVENT 1\n")
    rc, err = score(more, tmp_path / "old.pt")
    assert rc == 1 and "more/bin: its label dictionary is not the one" in err

    cut = tmp_path / "cut"
    shutil.copytree(conll / "data", cut)
    label_bin = cut / "bin/label/test.bin"
    label_bin.write_bytes(label_bin.read_bytes()[:-7])
    rc, err = score(cut)
    assert rc == 1 and "label/test.bin:" in err and "the file is truncated or does not belong to this index" in err


@pytest.mark.slow
def test_the_tagging_benchmark_runs_every_system_on_the_same_batches(conll, minilm_converted, tmp_path):
    """benchmarks/bench_encoders.py --tagging: baseline, SG-Net, SLA, WLA and SG-Net computing every row
    interleaved on real CoNLL-2003 batches, a ratio for each (the figures are a benchmark's, never asserted here)."""
    out = tmp_path / "bench.json"
    run([str(BIN / "python"), str(ROOT / "benchmarks/bench_encoders.py"), "--tagging",
         "--data", str(conll / "data/bin"),
         "--pretrained", str(minilm_converted / "model.pt"), "--rounds", "2", "--steps", "1", "--threads", "1",
         "--batch-size", "4", "--sdpa-backends", "MATH", "--out", str(out)])
    r = json.loads(out.read_text())
    assert (r["device"], r["precision"], r["sdpa_backends"]) == ("cpu", "fp32", "MATH")
    assert r["step"].startswith("fairseq.trainer.Trainer.train_step")
    assert r["task"] == "syntax_token_labeling"
    assert r["systems"]["roberta_wla_small"] == "roberta_sla_small --sla-mask window"
    assert set(r["ratio_to_baseline_paired_median"]) == {"roberta_sgnet_small", "roberta_sla_small",
                                                         "roberta_wla_small",
                                                         "roberta_sgnet_every_row_small"}
    assert r["systems"]["roberta_sgnet_every_row_small"] == "roberta_sgnet_small (every row: no read_rows)"
    assert all(len(v["runs"]) == 2 and min(v["runs"]) > 0 for v in r["train_tok_per_s"].values())
    half = run([str(BIN / "python"), str(ROOT / "benchmarks/bench_encoders.py"), "--tagging", "--fp16"], check=False)
    assert half.returncode == 2 and "give --device cuda as well" in half.stderr
