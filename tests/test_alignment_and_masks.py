"""Subword alignment and batched SDOI masks, against hand-worked expectations."""
import pytest
import torch

from fairseq_syntax.syntax import (
    align_heads_to_subwords,
    ancestors_mask,
    check_subword_heads,
    sdoi_mask,
    shift_codes,
    words_from_subwords,
)
from fairseq_syntax.syntax.masks import syntax_token_mask

from .test_trees import NONPROJ_HEADS, PAPER_HEADS


def word_level_expected(heads, groups):
    """Expand a word mask to subwords by hand: subword i of word a sees subword j of word b iff M[a, b]."""
    m = ancestors_mask(heads)
    owner = [w for w, n in enumerate(groups) for _ in range(n)]
    return torch.tensor([[bool(m[a, b]) for b in owner] for a in owner])


def batch(codes_list, left_pad=True, eos=True):
    """Collate per-sentence codes the way the dataset does (EOS = 0, padding = 0)."""
    seqs = [torch.tensor(c + ([0] if eos else [])) for c in codes_list]
    width = max(len(s) for s in seqs)
    out = torch.zeros(len(seqs), width, dtype=torch.long)
    for r, s in enumerate(seqs):
        off = width - len(s) if left_pad else 0
        out[r, off:off + len(s)] = shift_codes(s, off)
    return out


def test_bpe_alignment_codes():
    # "The increase reflects lower credit losses" with "increase" and "losses" split
    pieces = "The in@@ crea@@ se reflects lower credit los@@ ses".split()
    codes = align_heads_to_subwords(PAPER_HEADS, pieces, "bpe")
    # word starts (1-based): The 1, increase 2, reflects 5, lower 6, credit 7, losses 8
    assert codes == [2, 5, -2, -2, 5, 8, 8, 5, -8]
    check_subword_heads(codes)
    assert words_from_subwords(pieces, "bpe") == "The increase reflects lower credit losses".split()


def test_sentencepiece_alignment_matches_bpe():
    bpe = "The in@@ crea@@ se reflects lower credit los@@ ses".split()
    spm = ["▁The", "▁in", "crea", "se", "▁reflects", "▁lower", "▁credit", "▁los", "ses"]
    assert align_heads_to_subwords(PAPER_HEADS, spm, "sentencepiece") == align_heads_to_subwords(
        PAPER_HEADS, bpe, "bpe")
    assert words_from_subwords(spm, "sentencepiece")[1] == "increase"


def test_alignment_count_mismatch_names_the_line():
    with pytest.raises(ValueError, match=r"train\.bpe\.en:42: the parse has 6 tokens but the subword text has 5"):
        align_heads_to_subwords(PAPER_HEADS, "The increase reflects lower credit@@ losses".split(), "bpe",
                                where="train.bpe.en:42")


@pytest.mark.parametrize("codes, message", [
    ([2, 0], "code 0"),
    ([2, 9], "out of range"),
    ([-1, 1], "continuation of position 1, which does not start its word"),
    ([2, -1], "token 1: head position 2 is not the first subword of a word"),
    ([2, 1, 3], "cycle"),
])
def test_bad_subword_codes(codes, message):
    with pytest.raises(ValueError, match=message):
        check_subword_heads(codes, "x.heads:3")


def test_paper_example_subword_mask_shares_rows_and_columns():
    pieces = "The in@@ crea@@ se reflects lower credit los@@ ses".split()
    codes = align_heads_to_subwords(PAPER_HEADS, pieces, "bpe")
    m = sdoi_mask(batch([codes], eos=False))[0]
    assert torch.equal(m, word_level_expected(PAPER_HEADS, [1, 3, 1, 1, 1, 2]))
    credit = 6
    assert set(torch.nonzero(m[credit]).flatten().tolist()) == {4, 6, 7, 8}  # reflects, credit, los@@ ses


def test_first_head_mode_makes_continuations_children_of_the_first_subword():
    pieces = "The in@@ crea@@ se reflects".split()
    codes = align_heads_to_subwords([2, 3, 0], pieces, "bpe")
    m = sdoi_mask(batch([codes], eos=False), "first_head")[0]
    seen = [set(torch.nonzero(r).flatten().tolist()) for r in m]
    assert seen == [{0, 1, 4}, {1, 4}, {1, 2, 4}, {1, 3, 4}, {4}]


def test_batched_masks_equal_single_sentence_masks_with_padding_and_specials():
    sents = [
        (PAPER_HEADS, "The in@@ crea@@ se reflects lower credit los@@ ses".split(), [1, 3, 1, 1, 1, 2]),
        (NONPROJ_HEADS, "A hear@@ ing is sched@@ u@@ led on the issue today".split(), [1, 2, 1, 3, 1, 1, 1, 1]),
        ([0], ["Hi@@", "!"], [2]),
    ]
    codes = [align_heads_to_subwords(h, p, "bpe") for h, p, _ in sents]
    for left_pad in (True, False):
        b = batch(codes, left_pad=left_pad)
        masks = sdoi_mask(b)
        assert masks.shape == (3, b.size(1), b.size(1))
        for r, (heads, pieces, groups) in enumerate(sents):
            n = len(pieces)
            off = b.size(1) - (n + 1) if left_pad else 0
            expected = word_level_expected(heads, groups)
            assert torch.equal(masks[r, off:off + n, off:off + n], expected)
            # nothing outside the sentence is visible from inside it
            inside = masks[r, off:off + n]
            assert inside.sum() == expected.sum()
            # EOS and padding see only themselves, and nobody sees them
            special = (b[r] == 0).nonzero().flatten()
            for s in special.tolist():
                assert masks[r, s].nonzero().flatten().tolist() == [s]
                assert masks[r, :, s].nonzero().flatten().tolist() == [s]
        assert torch.equal(syntax_token_mask(b), b != 0)


def test_long_chain_needs_every_doubling_step():
    n = 37  # a chain: token i's head is i+1, deepest ancestor path is n-1 long
    heads = list(range(2, n + 1)) + [0]
    m = ancestors_mask(heads)
    assert torch.equal(m, torch.triu(torch.ones(n, n, dtype=torch.bool)))


def test_wordpiece_alignment_matches_bpe():
    bpe = "The in@@ crea@@ se reflects lower credit los@@ ses".split()
    wp = ["The", "in", "##crea", "##se", "reflects", "lower", "credit", "los", "##ses"]
    assert align_heads_to_subwords(PAPER_HEADS, wp, "wordpiece") == align_heads_to_subwords(PAPER_HEADS, bpe, "bpe")
    assert words_from_subwords(wp, "wordpiece") == "The increase reflects lower credit losses".split()
    with pytest.raises(ValueError, match="unknown subword style"):
        align_heads_to_subwords(PAPER_HEADS, wp, "bytes")
