"""A language-pair dataset whose source side carries subword head codes into every batch."""
from __future__ import annotations

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset

from ..syntax.masks import shift_codes


def fit_codes(codes: torch.Tensor, body: int, index: int, name: str) -> torch.Tensor:
    """Codes for the first ``body`` subwords: equal lengths, or a source cut by ``--truncate-source``.

    After a cut, a word whose head was cut off becomes a root, so the tree stays valid.
    """
    n = codes.numel()
    if body == n:
        return codes
    if body > n:
        raise ValueError(f"{name}: sentence {index + 1} has {n} head codes for {body} source tokens")
    codes = codes[:body].clone()
    pos = torch.arange(1, body + 1)
    codes = torch.where(codes > body, pos, codes)
    return codes


class SyntaxLanguagePairDataset(BaseWrapperDataset):
    """Wraps fairseq's ``LanguagePairDataset``; adds ``net_input['src_heads']`` ([B, T] codes).

    Filtering, ordering and batching are the wrapped dataset's, by index, so the
    heads follow every sample. Codes are shifted to batch columns in the collater
    (BOS, EOS and padding get code 0); masks are built on the model's device.
    """

    def __init__(self, dataset, heads, heads_name: str = "heads"):
        super().__init__(dataset)
        if len(heads) != len(dataset):
            raise ValueError(f"{heads_name}: {len(heads)} sentences, but the source has {len(dataset)}")
        self.heads = heads
        self.heads_name = heads_name

    def __getattr__(self, name):
        # src, tgt, src_dict, left_pad_source, ... of the wrapped LanguagePairDataset
        if name in ("dataset", "heads") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def source_codes(self, index: int, source: torch.Tensor) -> torch.Tensor:
        """Codes aligned with ``source`` as it comes out of the wrapped dataset (BOS/EOS included)."""
        lead = int(source.numel() > 0 and source[0].item() == self.dataset.src_dict.bos())
        trail = int(source.numel() > lead and source[-1].item() == self.dataset.src_dict.eos())
        body = source.numel() - lead - trail
        codes = fit_codes(self.heads[index].long(), body, index, self.heads_name)
        return torch.cat([codes.new_zeros(lead), shift_codes(codes, lead), codes.new_zeros(trail)])

    def __getitem__(self, index):
        item = self.dataset[index]
        item["src_heads"] = self.source_codes(index, item["source"])
        return item

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        batches = self.dataset.batch_by_size(indices, max_tokens=max_tokens, max_sentences=max_sentences,
                                             required_batch_size_multiple=required_batch_size_multiple)
        return keep_last_batch(indices, batches)

    def collater(self, samples, pad_to_length=None):
        batch = self.dataset.collater(samples, pad_to_length=pad_to_length)
        if not batch:
            return batch
        src_tokens = batch["net_input"]["src_tokens"]
        batch["net_input"]["src_heads"] = collate_codes(
            samples, batch["id"], src_tokens.size(1), self.dataset.left_pad_source
        )
        return batch


def collate_codes(samples, order: torch.Tensor, width: int, left_pad: bool) -> torch.Tensor:
    """[B, width] codes in the collated (sorted) order, shifted to batch columns."""
    by_id = {s["id"]: s["src_heads"] for s in samples}
    out = torch.zeros(len(order), width, dtype=torch.long)
    for row, idx in enumerate(order.tolist()):
        codes = by_id[idx]
        n = codes.numel()
        offset = width - n if left_pad else 0
        out[row, offset:offset + n] = shift_codes(codes, offset)
    return out


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
