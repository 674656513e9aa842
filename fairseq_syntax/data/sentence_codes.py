"""Subword head codes for sentence(-pair) classification inputs, assembled like the tokens.

fairseq's ``sentence_prediction`` builds ``<s> input0 </s> [sep] input1 </s>`` from the
binarized inputs; this dataset builds the matching codes (specials get 0), so the masks
in the model line up with ``src_tokens`` column for column.
"""
from __future__ import annotations

import numpy as np
import torch
from fairseq.data import FairseqDataset

from ..syntax.masks import shift_codes
from .syntax_dataset import fit_codes


class AssembledCodesDataset(FairseqDataset):
    def __init__(self, heads0, heads1=None, lead: int = 1, separator: int = 0, max_positions: int | None = None,
                 name: str = "heads"):
        self.heads0, self.heads1 = heads0, heads1
        self.lead, self.separator = lead, separator
        self.max_positions = max_positions
        self.name = name
        if heads1 is not None and len(heads1) != len(heads0):
            raise ValueError(f"{name}: input0 has {len(heads0)} sentences, input1 {len(heads1)}")
        sizes = np.asarray(heads0.sizes) + lead + 1
        if heads1 is not None:
            sizes = sizes + np.asarray(heads1.sizes) + separator + 1
        self._sizes = np.minimum(sizes, max_positions) if max_positions else sizes

    @property
    def sizes(self):
        return self._sizes

    def __len__(self):
        return len(self.heads0)

    def num_tokens(self, index):
        return int(self._sizes[index])

    def size(self, index):
        return int(self._sizes[index])

    def __getitem__(self, index):
        c0 = self.heads0[index].long()
        parts = [c0.new_zeros(self.lead), shift_codes(c0, self.lead), c0.new_zeros(1)]
        if self.heads1 is not None:
            c1 = self.heads1[index].long()
            offset = self.lead + c0.numel() + 1 + self.separator
            parts += [c1.new_zeros(self.separator), shift_codes(c1, offset), c1.new_zeros(1)]
        codes = torch.cat(parts)
        if self.max_positions and codes.numel() > self.max_positions:
            # as TruncateDataset cuts the tokens; heads past the cut become roots
            codes = fit_codes(codes, self.max_positions, index, self.name)
        return codes

    def collater(self, samples):
        raise NotImplementedError("collated by RightPadDataset")
