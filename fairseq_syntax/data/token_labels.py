"""Word-level labels placed on the first subword of each word, for token labeling."""
from __future__ import annotations

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset

from .packed import PackedRows

IGNORE = -100


class WordStartLabelsDataset(BaseWrapperDataset):
    """Per position: the word's label at its first subword (code > 0), ``IGNORE`` elsewhere (specials,
    continuation subwords). ``codes`` is the :class:`AssembledCodesDataset` of the tokens (``<s> ... </s>``);
    ``labels`` the word labels (fairseq label-dictionary ids with EOS), shifted by ``offset`` to 0-based
    classes. Items are indices; a batch is built in numpy at once."""

    def __init__(self, codes, labels, eos: int, offset: int, name: str = "labels"):
        super().__init__(codes)
        if len(labels) != len(codes):
            raise ValueError(f"{name}: {len(labels)} sentences of labels for {len(codes)} sentences of text")
        self.labels, self.eos, self.offset, self.name = PackedRows(labels, name), eos, offset, name

    def __getitem__(self, index):
        return index

    def collater(self, samples):
        ids = np.asarray(samples, dtype=np.int64)
        codes = self.dataset.matrix(ids)
        flat, n = self.labels.gather(ids)
        ends = np.cumsum(n) - 1
        has_eos = (n > 0) & (flat[np.maximum(ends, 0)] == self.eos) if len(flat) else np.zeros(len(n), bool)
        keep = np.ones(len(flat), dtype=bool)
        keep[ends[has_eos]] = False
        words = n - has_eos
        starts = codes > 0
        bad = np.nonzero(starts.sum(1) != words)[0]
        if len(bad):
            k = int(bad[0])
            raise ValueError(f"{self.name}: sentence {int(ids[k]) + 1} has {int(words[k])} labels for "
                             f"{int(starts[k].sum())} words")
        out = np.full(codes.shape, IGNORE, dtype=np.int64)
        out[starts] = flat[keep] - self.offset  # row-major order is the words' order
        return torch.from_numpy(out)
