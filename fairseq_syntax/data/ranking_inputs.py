"""One choice of a multiple-choice example, ``<s> context </s> [sep] question option </s>``, with its subword head
codes, built per batch in numpy (one gather from each memory-mapped file, no tensor per example).

Cutting to ``max_positions`` takes the context's tail first, so the question and option stay whole: the
option (question with option) is first cut to ``max_option_length``, then the context to what is left. Each
cut part keeps its closing ``</s>``, and the codes are cut in step: a word whose head was cut off becomes a
root, so every row stays a forest of trees (:func:`~fairseq_syntax.syntax.batch_codes.place_codes`).
"""
from __future__ import annotations

import numpy as np
import torch

from ..syntax.batch_codes import check_code_range, place_codes, ragged_index
from .packed import PackedRows
from .sentence_codes import _IndexItems


def kept_lengths(context_sizes, option_sizes, lead: int, separator: int, max_positions: int | None,
                 max_option_length: int | None):
    """(context, option) lengths kept per row, each counting its ``</s>``."""
    n0, n1 = np.asarray(context_sizes, dtype=np.int64), np.asarray(option_sizes, dtype=np.int64)
    k1 = np.minimum(n1, max_option_length) if max_option_length else n1
    if max_positions:
        room = max_positions - lead - separator - k1
        if len(room) and room.min() < 2:
            bad = int(np.argmin(room))
            raise ValueError(f"example {bad + 1}: its option takes {int(k1[bad])} of {max_positions} positions, "
                             "leaving no room for the context; lower --max-option-length")
        k0 = np.minimum(n0, room)
    else:
        k0 = n0
    return k0, k1


class RankingChoiceDataset(_IndexItems):
    """``net_input{k}`` of ``syntax_sentence_ranking``: src_tokens, src_lengths and src_heads of choice k."""

    def __init__(self, context, context_heads, option, option_heads, pad: int, eos: int,
                 init_token: int | None = None, separator_token: int | None = None,
                 max_positions: int | None = None, max_option_length: int | None = None,
                 names: tuple[str, str] = ("input0", "input1")):
        self.ctx, self.opt = PackedRows(context, names[0]), PackedRows(option, names[1])
        self.ctx_heads = PackedRows(context_heads, names[0] + ".heads")
        self.opt_heads = PackedRows(option_heads, names[1] + ".heads")
        if len(self.ctx) != len(self.opt):
            raise ValueError(f"{names[0]} has {len(self.ctx)} examples, {names[1]} {len(self.opt)}")
        self.pad, self.eos, self.init_token, self.separator_token = pad, eos, init_token, separator_token
        self.lead, self.sep = int(init_token is not None), int(separator_token is not None)
        self.k0, self.k1 = kept_lengths(self.ctx.sizes, self.opt.sizes, self.lead, self.sep, max_positions,
                                        max_option_length)
        self._sizes = self.lead + self.k0 + self.sep + self.k1

    def collater(self, samples):
        ids = np.asarray(samples, dtype=np.int64)
        b = len(ids)
        width = int(self._sizes[ids].max()) if b else 0
        tokens = np.full((b, width), self.pad, dtype=np.int64)
        codes = np.zeros((b, width), dtype=np.int64)
        rows = np.arange(b)
        k0, k1 = self.k0[ids], self.k1[ids]
        if self.lead:
            tokens[:, 0] = self.init_token
        starts = (np.full(b, self.lead, dtype=np.int64), self.lead + k0 + self.sep)
        if self.sep:
            tokens[rows, self.lead + k0] = self.separator_token
        for part, heads, kept, first in ((self.ctx, self.ctx_heads, k0, starts[0]),
                                         (self.opt, self.opt_heads, k1, starts[1])):
            flat, n = part.gather(ids)
            row, pos = ragged_index(n)
            keep = pos < kept[row] - 1  # the body; the part's last kept position is its </s>
            tokens[row[keep], first[row[keep]] + pos[keep]] = flat[keep]
            tokens[rows, first + kept - 1] = self.eos
            hflat, hn = heads.gather(ids)
            check_code_range(hflat, hn, lambda k, h=heads: f"{h.name}: example {int(ids[k]) + 1}")
            place_codes(codes, hflat, hn, np.minimum(hn, kept - 1), first)
        return {"src_tokens": torch.from_numpy(tokens), "src_lengths": torch.from_numpy(self._sizes[ids].copy()),
                "src_heads": torch.from_numpy(codes)}
