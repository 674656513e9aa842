"""Masks and distances on hand-worked trees."""
import pytest
import torch

from fairseq_syntax.syntax import ancestors_mask, tree_distance, validate_heads

# SG-Net Figure 3: "The increase reflects lower credit losses" (CoNLL heads, 1-based, 0 = root)
PAPER_WORDS = "The increase reflects lower credit losses".split()
PAPER_HEADS = [2, 3, 0, 6, 6, 3]

# Non-projective: "A hearing is scheduled on the issue today" ("on the issue" attaches to "hearing",
# its arc crosses the root "scheduled").
NONPROJ_HEADS = [2, 4, 4, 0, 2, 7, 5, 4]


def rows(mask):
    return [set(torch.nonzero(r).flatten().tolist()) for r in mask]


def test_paper_figure3_credit_sees_reflects_losses_and_itself():
    m = ancestors_mask(PAPER_HEADS)
    assert m.dtype == torch.bool and m.shape == (6, 6)
    credit = PAPER_WORDS.index("credit")
    assert rows(m)[credit] == {2, 4, 5}  # reflects, credit, losses (0-based as in the paper)
    assert rows(m) == [{0, 1, 2}, {1, 2}, {2}, {2, 3, 5}, {2, 4, 5}, {2, 5}]


def test_non_projective_tree_follows_head_chains():
    m = ancestors_mask(NONPROJ_HEADS)
    issue = 6  # 0-based "issue": issue -> on -> hearing -> scheduled
    assert rows(m)[issue] == {6, 4, 1, 3}
    # a span-based (projective) reading would let "issue" see "is" (between hearing and on); it must not
    assert not m[issue, 2]
    assert rows(m)[2] == {2, 3}


def test_tree_distance_hand_worked():
    d = tree_distance(NONPROJ_HEADS)
    assert d.dtype == torch.long
    assert torch.equal(d, d.T) and torch.all(d.diag() == 0)
    assert d[6, 7] == 4  # issue - on - hearing - scheduled - today
    assert d[0, 5] == 4  # A - hearing - on - issue - the
    assert d[2, 3] == 1
    paper = tree_distance(PAPER_HEADS)
    assert paper[4].tolist() == [4, 3, 2, 2, 0, 1]  # credit-losses-reflects-increase-The


def test_several_sentences_on_one_line_stay_apart():
    heads = [2, 0, 4, 0]  # two two-word sentences
    m = ancestors_mask(heads)
    assert rows(m) == [{0, 1}, {1}, {2, 3}, {3}]
    d = tree_distance(heads)
    assert d[0, 2] == 4 and d[0, 2] > d.masked_fill(d == 4, 0).max()


@pytest.mark.parametrize("heads, message", [
    ([2, 0, 9], "token 3: head 9 out of range 0..3"),
    ([2, 0, -1], "token 3: head -1 out of range"),
    ([0, 2, 2], "token 2: token is its own head"),
    ([2, 3, 1], "no root"),
    ([2, 3, 2, 0], "cycle through tokens 2 -> 3 -> 2"),
    ([], "empty sentence"),
    ([0, "x"], "token 2: head 'x' is not an integer"),
])
def test_bad_heads_name_sentence_and_token(heads, message):
    with pytest.raises(ValueError) as e:
        validate_heads(heads, "train.conllu:17")
    assert "train.conllu:17" in str(e.value)
    assert message in str(e.value)
