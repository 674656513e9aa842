"""Token labeling (CoNLL-2003 NER): span F1, labels on first subwords, and the real-data path end to end."""
import re

import numpy as np
import pytest
import torch

from fairseq_syntax.data.sentence_codes import AssembledCodesDataset
from fairseq_syntax.data.token_labels import IGNORE, WordStartLabelsDataset
from fairseq_syntax.text_prep.spans import f1, span_counts, spans

from .conftest import ROOT, SHARED_DATA, run


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


@pytest.mark.slow
def test_conll2003_prepare_fine_tune_and_evaluate(tmp_path, minilm_converted):
    out = tmp_path / "conll"
    run(["bash", str(ROOT / "data-prep/conll2003.sh"), "--conll-dir", str(SHARED_DATA / "conll2003"), "--out", str(out),
         "--pretrained", str(minilm_converted), "--parser", "spacy", "--workers", "1", "--max-train", "120",
         "--max-eval", "40"])
    tags = (out / "bin/label/dict.txt").read_text().split()[::2]
    assert "O" in tags and set(tags) <= {"O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"}
    first = (out / "raw/train.words").read_text().splitlines()[0].split()
    assert first[:3] == ["EU", "rejects", "German"]  # real corpus tokens, case kept for the parser
    user_dir = run(["fairseq-syntax-user-dir"]).stdout.strip()
    common = ["--user-dir", user_dir, "--task", "syntax_token_labeling", "--criterion", "token_labeling"]
    run(["fairseq-train", str(out / "bin"), *common, "--arch", "roberta_sgnet_small", "--restore-file",
         str(minilm_converted / "model.pt"), "--reset-optimizer", "--reset-dataloader", "--reset-meters",
         "--optimizer", "adam", "--lr", "5e-5", "--batch-size", "16", "--max-update", "5", "--save-dir",
         str(tmp_path / "ck"), "--no-epoch-checkpoints", "--best-checkpoint-metric", "f1",
         "--maximize-best-checkpoint-metric"], cwd=tmp_path)
    proc = run(["fairseq-validate", str(out / "bin"), *common, "--path", str(tmp_path / "ck/checkpoint_best.pt"),
                "--batch-size", "16", "--valid-subset", "test"], cwd=tmp_path)
    m = re.search(r"valid on 'test' subset .*accuracy ([\d.]+) .*span_gold (\d+) .*f1 ([\d.]+)", proc.stdout + proc.stderr)
    assert m, (proc.stdout + proc.stderr)[-2000:]
    gold = sum(len(spans(line.split())) for line in (out / "raw/test.label").read_text().splitlines())
    assert int(m.group(2)) == gold  # every gold entity of the 40 test sentences was scored
    assert 0 <= float(m.group(3)) <= 100
