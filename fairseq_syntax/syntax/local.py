"""Masks for syntax-aware local attention (SLA, docs/methods.md §2) and its window baseline (WLA), batched.

Built from the same subword head codes as the SDOI masks, on the model's device.
"""
from __future__ import annotations

import torch

from .masks import _columns
from .trees import ancestor_matrix, distances_from_ancestors


def batch_tree_distance(codes: torch.Tensor) -> torch.Tensor:
    """[B, T, T] word-level tree distances, shared by every subword of a word.

    Pairs in different trees, and pairs with a special token (code 0), get distance T
    (more than any real one).
    """
    bsz, tlen = codes.shape
    pos, word_start, parent = _columns(codes)
    dist, connected = distances_from_ancestors(ancestor_matrix(parent))
    special = codes.eq(0)
    dist = torch.where(connected & ~special.unsqueeze(1) & ~special.unsqueeze(2), dist, torch.full_like(dist, tlen))
    rows = dist.gather(1, word_start.unsqueeze(-1).expand(bsz, tlen, tlen))
    return rows.gather(2, word_start.unsqueeze(1).expand(bsz, tlen, tlen))


def _neighbour_words(codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Word start of the previous and of the next word of every token; its own word start where
    there is none (sentence edge, or a special token in between)."""
    bsz, tlen = codes.shape
    pos, word_start, _ = _columns(codes)
    is_start = codes.gt(0)
    # last word start at or before each column (-1 if none), first at or after (T if none)
    last = torch.cummax(torch.where(is_start, pos, torch.full_like(pos, -1)), dim=1).values
    first = torch.cummin(torch.where(is_start, pos, torch.full_like(pos, tlen)).flip(1), dim=1).values.flip(1)
    last = torch.cat([last.new_full((bsz, 1), -1), last], 1)  # shifted: last[:, c + 1] is "at or before c"
    first = torch.cat([first, first.new_full((bsz, 1), tlen)], 1)
    prev_ws = last.gather(1, word_start)  # at or before word_start - 1
    next_ws = first.gather(1, word_start + 1)  # at or after word_start + 1
    # a special token between two words separates them (CLS/SEP/EOS between the sentences of a pair)
    block = codes.eq(0).long().cumsum(1)

    def keep(n):
        ok = (n >= 0) & (n < tlen)
        n = n.clamp(0, tlen - 1)
        ok &= block.gather(1, n).eq(block) & codes.ne(0)
        return torch.where(ok, n, word_start)

    return keep(prev_ws), keep(next_ws)


def sla_mask(codes: torch.Tensor, m: int = 3, segments: torch.Tensor | None = None) -> torch.Tensor:
    """[B, T, T] bool, True where token i may attend to token j in SLA's local attention.

    D(i, j) = min over k ∈ {i−1, i, i+1} (neighbouring words) of dis(v_k, v_j), allowed when
    D ≤ m. Special tokens (code 0: CLS, SEP, PAD, EOS) are never masked, as rows or columns.
    ``segments`` [B, T] (sentence ids in a pair, each sentence parsed on its own): the local scope stays
    inside a token's own sentence (the SLA paper's pairs); the global attention sees both sentences.
    """
    bsz, tlen = codes.shape
    dist = batch_tree_distance(codes)
    prev_ws, next_ws = _neighbour_words(codes)
    d = dist
    for nb in (prev_ws, next_ws):
        d = torch.minimum(d, dist.gather(1, nb.unsqueeze(-1).expand(bsz, tlen, tlen)))
    allowed = d.le(m)
    return _within_sentences(allowed, codes, segments)


def _within_sentences(allowed: torch.Tensor, codes: torch.Tensor, segments: torch.Tensor | None) -> torch.Tensor:
    """Closes what crosses from one sentence of a pair to the other, then opens the special tokens (code 0) as
    rows and columns."""
    if segments is not None:
        allowed &= segments.unsqueeze(2).eq(segments.unsqueeze(1))
    special = codes.eq(0)
    return allowed | special.unsqueeze(1) | special.unsqueeze(2)


def window_mask(codes: torch.Tensor, k: int = 3, segments: torch.Tensor | None = None) -> torch.Tensor:
    """WLA baseline: a window of 2k+1 tokens, with the same special-token and pair rules as SLA (in a pair the
    window stays inside a token's own sentence)."""
    bsz, tlen = codes.shape
    pos = torch.arange(tlen, device=codes.device)
    allowed = (pos.view(1, -1, 1) - pos.view(1, 1, -1)).abs().le(k).expand(bsz, tlen, tlen).clone()
    return _within_sentences(allowed, codes, segments)
