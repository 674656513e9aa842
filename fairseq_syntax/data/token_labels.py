"""Word-level labels placed on the first subword of each word, for token labeling."""
from __future__ import annotations

import torch
from fairseq.data import BaseWrapperDataset

IGNORE = -100


class WordStartLabelsDataset(BaseWrapperDataset):
    """Per position: the word's label at its first subword (code > 0), ``IGNORE`` elsewhere (specials,
    continuation subwords). ``codes`` are the assembled codes (``<s> ... </s>``); ``labels`` the word labels
    (fairseq label-dictionary ids with EOS), shifted by ``offset`` to 0-based classes."""

    def __init__(self, codes, labels, eos: int, offset: int, name: str = "labels"):
        super().__init__(codes)
        if len(labels) != len(codes):
            raise ValueError(f"{name}: {len(labels)} sentences of labels for {len(codes)} sentences of text")
        self.labels, self.eos, self.offset, self.name = labels, eos, offset, name

    def __getitem__(self, index):
        codes = self.dataset[index]
        labels = self.labels[index].long()
        if labels.numel() and labels[-1] == self.eos:
            labels = labels[:-1]
        starts = codes.gt(0)
        if int(starts.sum()) != labels.numel():
            raise ValueError(f"{self.name}: sentence {index + 1} has {labels.numel()} labels for "
                             f"{int(starts.sum())} words")
        out = torch.full_like(codes, IGNORE)
        out[starts] = labels - self.offset
        return out

    def collater(self, samples):
        raise NotImplementedError("collated by RightPadDataset")
