"""Gated syntax-aware local attention (SLA, docs/methods.md §2), in plain torch.

Local and global attention share one set of Q, K, V projections (so pretrained weights lift
over unchanged); a per-token gate g = σ(W_g h + b_g) mixes the two distributions:
``out = (g·S_loc + (1−g)·S_glb) V``. Only W_g and b_g are new parameters.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class SLAGate(nn.Linear):
    """g_i = σ(W_g h_i + b_g), one scalar per token and layer."""

    def __init__(self, embed_dim: int, bias_init: float = 0.0, init_std: float = 0.02):
        super().__init__(embed_dim, 1)
        nn.init.normal_(self.weight, std=init_std)
        nn.init.constant_(self.bias, bias_init)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(super().forward(h))


def gated_local_global_attention(
    x: torch.Tensor,
    q_proj: nn.Linear,
    k_proj: nn.Linear,
    v_proj: nn.Linear,
    out_proj: nn.Linear,
    num_heads: int,
    local_allowed: torch.Tensor,
    gate: torch.Tensor,
    key_padding_mask: Optional[torch.Tensor] = None,
    dropout_p: float = 0.0,
    training: bool = False,
) -> torch.Tensor:
    """x: [T, B, C] (fairseq layout); local_allowed: [B, T, T] bool (True = inside the local window);
    gate: [T, B, 1] in [0, 1]; key_padding_mask: [B, T] bool (True = padding). Returns [T, B, C].

    Scores are computed once; the local distribution is their softmax with ``−inf`` outside the
    window (masking by addition, never a multiplicative 0), the global one their plain softmax.
    """
    tlen, bsz, dim = x.shape
    head_dim = dim // num_heads

    def heads(t):  # [T, B, C] -> [B, H, T, d]
        return t.view(tlen, bsz, num_heads, head_dim).permute(1, 2, 0, 3)

    q = heads(q_proj(x) * (head_dim ** -0.5))
    k, v = heads(k_proj(x)), heads(v_proj(x))
    scores = (q @ k.transpose(-1, -2)).float()  # [B, H, T, T]
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask.view(bsz, 1, 1, tlen), float("-inf"))
    glb = scores.softmax(-1)
    loc = scores.masked_fill(~local_allowed.unsqueeze(1), float("-inf")).softmax(-1)
    g = gate.permute(1, 0, 2).unsqueeze(1).float()  # [B, 1, T, 1]
    probs = torch.lerp(glb, loc, g).type_as(v)  # (1 − g)·glb + g·loc
    probs = F.dropout(probs, dropout_p, training)
    out = (probs @ v).permute(2, 0, 1, 3).reshape(tlen, bsz, dim)
    return out_proj(out)


def pair_segments(tokens: torch.Tensor, eos: int, pad: Optional[int] = None) -> torch.Tensor:
    """[B, T] sentence index of every token: the number of EOS/SEP tokens strictly before it.

    ``<s> a </s> b </s>`` (BERT's ``[CLS] a [SEP] b [SEP]``) gives 0 0 0 1 1; a separator belongs to
    the sentence it closes. Padding gets its own id so it never joins a sentence.
    """
    is_eos = tokens.eq(eos).long()
    seg = is_eos.cumsum(1) - is_eos
    if pad is not None:
        seg = seg.masked_fill(tokens.eq(pad), -1)
    return seg

