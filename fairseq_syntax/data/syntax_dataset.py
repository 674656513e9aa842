"""A language-pair dataset whose source side carries subword head codes into every batch."""
from __future__ import annotations

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset

from ..syntax.batch_codes import check_code_range, collate_codes
from .packed import PackedRows


class SyntaxLanguagePairDataset(BaseWrapperDataset):
    """Wraps fairseq's ``LanguagePairDataset``; adds ``net_input['src_heads']`` ([B, T] codes).

    Filtering, ordering and batching are the wrapped dataset's, by index, so the heads
    follow every sample. Items are the wrapped dataset's own: the collater gathers the
    batch's codes from the mmap in one indexing and shifts them to batch columns in numpy
    (BOS, EOS and padding get code 0); masks are built on the model's device.
    """

    def __init__(self, dataset, heads, heads_name: str = "heads"):
        super().__init__(dataset)
        if len(heads) != len(dataset):
            raise ValueError(f"{heads_name}: {len(heads)} sentences, but the source has {len(dataset)}")
        self.heads = PackedRows(heads, heads_name)
        self.heads_name = heads_name

    def __getattr__(self, name):
        # src, tgt, src_dict, left_pad_source, ... of the wrapped LanguagePairDataset
        if name in ("dataset", "heads") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        batches = self.dataset.batch_by_size(indices, max_tokens=max_tokens, max_sentences=max_sentences,
                                             required_batch_size_multiple=required_batch_size_multiple)
        return keep_last_batch(indices, batches)

    def collater(self, samples, pad_to_length=None):
        batch = self.dataset.collater(samples, pad_to_length=pad_to_length)
        if not batch:
            return batch
        net_input = batch["net_input"]
        net_input["src_heads"] = torch.from_numpy(
            self.batch_codes(batch["id"].numpy(), net_input["src_tokens"].numpy(), net_input["src_lengths"].numpy()))
        return batch

    def batch_codes(self, ids: np.ndarray, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """[B, T] codes lined up with collated ``tokens``: a BOS before and an EOS after the stored codes
        get 0, and a source cut by ``--truncate-source`` keeps the first codes, as a valid tree."""
        bsz, width = tokens.shape
        rows = np.arange(bsz)
        first = width - lengths if self.dataset.left_pad_source else np.zeros_like(lengths)
        nonempty = lengths > 0
        lead = nonempty & (tokens[rows, np.minimum(first, width - 1)] == self.dataset.src_dict.bos())
        trail = (lengths > lead) & (tokens[rows, np.clip(first + lengths - 1, 0, width - 1)]
                                    == self.dataset.src_dict.eos())
        body = lengths - lead - trail
        flat, n = self.heads.gather(ids)
        names = lambda k: f"{self.heads_name}: sentence {int(ids[k]) + 1}"  # noqa: E731
        over = np.nonzero(body > n)[0]
        if len(over):
            k = int(over[0])
            raise ValueError(f"{names(k)} has {int(n[k])} head codes for {int(body[k])} source tokens")
        check_code_range(flat, n, names)
        return collate_codes(flat, n, body, first + lead, width)


def keep_last_batch(indices, batches):
    """Put back the final batch that fairseq-fixed 0.12.3.1's ``batch_by_size`` drops.

    With ``--required-batch-size-multiple`` > 1 (8 by default) it discards the last
    batch when its size is not a multiple, so fairseq-generate silently skips the
    longest test sentences and training never sees the longest pairs. The batches
    are consecutive slices of ``indices``, so the dropped ones are the tail.
    """
    kept = sum(len(b) for b in batches)
    if kept < len(indices):
        batches = list(batches) + [np.asarray(indices[kept:])]
    return batches
