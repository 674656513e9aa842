"""The syntax dataset: heads follow samples through ordering, padding, BOS/EOS and truncation."""
import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset

from fairseq_syntax.data.syntax_dataset import SyntaxLanguagePairDataset, fit_codes, keep_last_batch
from fairseq_syntax.syntax import align_heads_to_subwords, sdoi_mask

from .test_trees import NONPROJ_HEADS, PAPER_HEADS

SENTS = [("The in@@ crea@@ se reflects lower credit los@@ ses", PAPER_HEADS),
         ("A hear@@ ing is sched@@ u@@ led on the issue today", NONPROJ_HEADS),
         ("Hi@@ !", [0])]


def build(left_pad=True, append_bos=False):
    d = Dictionary()
    for s, _ in SENTS:
        for w in s.split():
            d.add_symbol(w)
    src = [d.encode_line(s, add_if_not_exist=False) for s, _ in SENTS]
    heads = [torch.tensor(align_heads_to_subwords(h, s.split())) for s, h in SENTS]
    base = LanguagePairDataset(src, [len(x) for x in src], d, tgt=src, tgt_sizes=[len(x) for x in src], tgt_dict=d,
                               left_pad_source=left_pad, append_bos=append_bos, shuffle=False)
    return SyntaxLanguagePairDataset(base, heads), heads, d


@pytest.mark.parametrize("left_pad", [True, False])
@pytest.mark.parametrize("append_bos", [False, True])
def test_collated_heads_line_up_with_source_tokens(left_pad, append_bos):
    ds, heads, d = build(left_pad, append_bos)
    batch = ds.collater([ds[i] for i in range(len(ds))])
    toks, codes = batch["net_input"]["src_tokens"], batch["net_input"]["src_heads"]
    assert codes.shape == toks.shape
    special = toks.eq(d.pad()) | toks.eq(d.eos()) | toks.eq(d.bos())
    assert torch.equal(codes.eq(0), special)
    masks = sdoi_mask(codes)
    for row, idx in enumerate(batch["id"].tolist()):
        cols = (~special[row]).nonzero().flatten()
        start = int(cols[0])
        # the codes of the row are the sentence's codes shifted by its first column
        assert codes[row, cols].tolist() == [c + start * (1 if c > 0 else -1) for c in heads[idx].tolist()]
        alone = sdoi_mask(torch.tensor([[v for v in heads[idx].tolist()]]))[0]
        assert torch.equal(masks[row][cols][:, cols], alone)


def test_mismatched_lengths_are_errors():
    ds, heads, _ = build()
    with pytest.raises(ValueError, match="heads"):
        SyntaxLanguagePairDataset(ds.dataset, heads[:2], "heads")
    with pytest.raises(ValueError, match="sentence 3 has 2 head codes for 5 source tokens"):
        fit_codes(heads[2], 5, 2, "x.heads")


def test_truncated_source_keeps_a_valid_tree():
    codes = torch.tensor(align_heads_to_subwords(PAPER_HEADS, "The increase reflects lower credit losses".split()))
    cut = fit_codes(codes, 4, 0, "x")
    # "lower" (4) had its head "losses" (6) cut off: it becomes a root
    assert cut.tolist() == [2, 3, 3, 4]


def test_last_batch_is_kept():
    indices = np.arange(50)
    batches = [indices[:32], indices[32:48]]  # what fairseq-fixed returns with required_batch_size_multiple=8
    fixed = keep_last_batch(indices, batches)
    assert [len(b) for b in fixed] == [32, 16, 2]
    assert np.array_equal(np.concatenate(fixed), indices)
    ds, _, _ = build()
    got = ds.batch_by_size(np.arange(3), max_sentences=2, required_batch_size_multiple=2)
    assert sorted(np.concatenate(got).tolist()) == [0, 1, 2]
