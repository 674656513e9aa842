"""Batched attention masks from padded subword head codes, built with vectorized torch.

The collater hands the model a [B, T] LongTensor of subword head codes whose
positions are 1-based *batch columns* (see :mod:`.alignment`, and
:func:`shift_codes`). Masks are built per batch on the model's device, so the
data on disk stays O(n) and nothing n x n is stored or copied from the loader.
"""
from __future__ import annotations

import torch

from .trees import ancestor_matrix

SUBWORD_MODES = ("shared", "first_head")


def shift_codes(codes: torch.Tensor, offset: int) -> torch.Tensor:
    """Move subword head codes ``offset`` columns to the right (padding, BOS)."""
    return codes + offset * codes.sign()


def _columns(codes: torch.Tensor):
    pos = torch.arange(codes.size(1), device=codes.device).expand_as(codes)
    word_start = torch.where(codes < 0, -codes - 1, pos)
    parent = torch.where(codes > 0, codes - 1, pos)
    return pos, word_start, parent


def sdoi_mask(codes: torch.Tensor, subword_mode: str = "shared") -> torch.Tensor:
    """SDOI attention mask [B, T, T], True where row i may attend to column j.

    Row i allows i itself and every ancestor of i (SG-Net's syntactic dependency of
    interest). ``subword_mode``:

    * ``shared`` (default): every subword of a word shares the word's row and
      column, so all subwords of w see all subwords of every word in SDOI(w);
    * ``first_head``: the paper's alternative, continuation subwords are children
      of the word's first subword.

    Tokens with code 0 (EOS, BOS, PAD) see only themselves and nobody sees them.
    """
    if codes.dim() != 2:
        raise ValueError(f"codes must be [B, T], got shape {tuple(codes.shape)}")
    bsz, tlen = codes.shape
    pos, word_start, parent = _columns(codes)
    if subword_mode == "first_head":
        return ancestor_matrix(torch.where(codes < 0, word_start, parent))
    if subword_mode != "shared":
        raise ValueError(f"unknown subword_mode {subword_mode!r}; expected one of {SUBWORD_MODES}")
    anc = ancestor_matrix(parent)
    rows = anc.gather(1, word_start.unsqueeze(-1).expand(bsz, tlen, tlen))
    return rows.gather(2, word_start.unsqueeze(1).expand(bsz, tlen, tlen))


def syntax_token_mask(codes: torch.Tensor) -> torch.Tensor:
    """[B, T] bool: True for tokens that belong to a parse (not EOS, BOS or PAD)."""
    return codes.ne(0)
