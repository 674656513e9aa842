"""Gated syntax-aware local attention (SLA, docs/methods.md §2), in plain torch.

Local and global attention share one set of Q, K, V projections (so pretrained weights lift
over unchanged); a per-token gate g = σ(W_g h + b_g) mixes the two distributions:
``out = (g·S_loc + (1−g)·S_glb) V``. Only W_g and b_g are new parameters.

The gate is one scalar per query row, so ``out = g·(S_loc V) + (1−g)·(S_glb V)``: on a GPU two fused attention
calls (attention_kernels.py), the global one unmasked (flash) without padding; on the CPU the two softmaxes
written out with their backward (GatedAttentionWeights), a few samples at a time, as its ratios were measured.
With dropout the two differ in where it falls (on each branch's weights, or on their mix), not in expectation.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention_kernels import additive_mask, attention, fused_path


class SLAGate(nn.Linear):
    """g_i = σ(W_g h_i + b_g), one scalar per token and layer."""

    def __init__(self, embed_dim: int, bias_init: float = 0.0, init_std: float = 0.02):
        super().__init__(embed_dim, 1)
        nn.init.normal_(self.weight, std=init_std)
        nn.init.constant_(self.bias, bias_init)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(super().forward(h))


def attention_biases(local_allowed: torch.Tensor, key_padding_mask: Optional[torch.Tensor] = None,
                     dtype: Optional[torch.dtype] = None):
    """The additive score biases of a batch (0 or −inf), built once and shared by every layer:
    ``local`` [B, 1, T, T] closes what is outside the window or padding, ``glb`` [B, 1, 1, T] (None
    without padding) closes padding. Adding them costs one pass over the scores where a
    ``masked_fill`` copies and fills (two), in every layer. ``dtype``: the fused path's, in the layout its
    kernel takes (attention_kernels.additive_mask); float32 otherwise."""
    bsz, tlen, _ = local_allowed.shape
    closed = ~local_allowed
    glb = None
    if key_padding_mask is not None:
        closed = closed | key_padding_mask.view(bsz, 1, tlen)
    if dtype is not None:
        if key_padding_mask is not None:
            glb = additive_mask(~key_padding_mask.view(bsz, 1, 1, tlen), dtype)
        return additive_mask(~closed.unsqueeze(1), dtype), glb
    if key_padding_mask is not None:
        glb = torch.zeros(bsz, 1, 1, tlen, device=local_allowed.device)
        glb.masked_fill_(key_padding_mask.view(bsz, 1, 1, tlen), float("-inf"))
    local = torch.zeros(bsz, 1, tlen, tlen, device=local_allowed.device)
    local.masked_fill_(closed.unsqueeze(1), float("-inf"))
    return local, glb


# The CPU computes the weights a few samples at a time, so that each chunk's scores and its two softmaxes stay in
# cache between the passes over them: only the saved distributions and the result go to memory. Measured on
# RTE's batches (32 x 12 heads x 190 positions, 2 threads): the forward and backward take 0.70 of the time they
# take over the whole batch at once, with identical results. A GPU takes the whole batch as one chunk.
CHUNK_BYTES = 2 << 20


def _batch_rows(t: Optional[torch.Tensor], b0: int, b1: int) -> Optional[torch.Tensor]:
    return t if t is None or t.size(0) == 1 else t[b0:b1]


class GatedAttentionWeights(torch.autograd.Function):
    """P = (1 − g)·softmax(s + global_bias) + g·softmax(s + local_bias) with s = q kᵀ, its gradient written out.

    Autograd would take the two softmax backwards, the lerp's three products and the sum of the two score
    gradients, each a pass over [B, H, T, T]; written out, with Σ_j G·P computed once per distribution,
    the backward is five passes and the gate's gradient comes from the two row sums:
    ∂s = g·P_l⊙(G − Σ G⊙P_l) + (1 − g)·P_g⊙(G − Σ G⊙P_g),  ∂g = Σ_h (Σ_j G⊙P_l − Σ_j G⊙P_g).
    On the CPU both directions run in chunks of the batch (``CHUNK_BYTES``), the scores and the score gradient
    living only in a chunk's buffer. Returns the weights in float32 at least (fp16 scores are upcast), so the
    softmaxes never run in half precision.
    """

    @staticmethod
    def forward(ctx, q, k, local_bias, global_bias, g):
        bsz, nh, tlen, _ = q.shape
        ftype = torch.promote_types(q.dtype, torch.float32)
        rows = bsz if q.device.type != "cpu" else max(1, CHUNK_BYTES // (nh * tlen * tlen * ftype.itemsize))
        glb = q.new_empty(bsz, nh, tlen, tlen, dtype=ftype)
        loc, out = torch.empty_like(glb), torch.empty_like(glb)
        work = q.new_empty(min(rows, bsz), nh, tlen, tlen, dtype=ftype)
        kt = k.transpose(-1, -2)
        for b0 in range(0, bsz, rows):
            b1 = min(bsz, b0 + rows)
            w = work[:b1 - b0]
            if q.dtype == ftype:
                torch.matmul(q[b0:b1], kt[b0:b1], out=w)
            else:
                w.copy_(q[b0:b1] @ kt[b0:b1])
            if global_bias is not None:
                w.add_(_batch_rows(global_bias, b0, b1))
            torch.softmax(w, -1, out=glb[b0:b1])
            w.add_(_batch_rows(local_bias, b0, b1))  # (the local bias closes padding too)
            torch.softmax(w, -1, out=loc[b0:b1])
            torch.lerp(glb[b0:b1], loc[b0:b1], g[b0:b1], out=out[b0:b1])
        ctx.rows = rows
        ctx.save_for_backward(q, k, glb, loc, g)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, glb, loc, g = ctx.saved_tensors
        rows, bsz = ctx.rows, q.size(0)
        want_q, want_k, want_g = ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[4]
        d_q = torch.empty_like(q) if want_q else None
        d_k = torch.empty_like(k) if want_k else None
        d_g = torch.empty_like(g) if want_g else None
        d_loc = torch.empty_like(glb[:rows])
        d_glb = torch.empty_like(d_loc)
        for b0 in range(0, bsz, rows):
            b1 = min(bsz, b0 + rows)
            up, pl, pg = grad[b0:b1], loc[b0:b1], glb[b0:b1]
            dl, dg = d_loc[:b1 - b0], d_glb[:b1 - b0]
            torch.mul(up, pl, out=dl)
            row_loc = dl.sum(-1, keepdim=True)
            torch.mul(up, pg, out=dg)
            row_glb = dg.sum(-1, keepdim=True)
            dl.addcmul_(pl, row_loc, value=-1)
            dg.addcmul_(pg, row_glb, value=-1)
            d_scores = dg.lerp_(dl, g[b0:b1]).to(q.dtype)
            if want_q:
                torch.matmul(d_scores, k[b0:b1], out=d_q[b0:b1])
            if want_k:
                torch.matmul(d_scores.transpose(-1, -2), q[b0:b1], out=d_k[b0:b1])
            if want_g:
                torch.sum(row_loc - row_glb, 1, keepdim=True, out=d_g[b0:b1])
        return d_q, d_k, None, None, d_g


def gated_local_global_attention(
    x: torch.Tensor,
    q_proj: nn.Linear,
    k_proj: nn.Linear,
    v_proj: nn.Linear,
    out_proj: nn.Linear,
    num_heads: int,
    local_allowed: Optional[torch.Tensor],
    gate: torch.Tensor,
    key_padding_mask: Optional[torch.Tensor] = None,
    dropout_p: float = 0.0,
    training: bool = False,
    biases: Optional[tuple] = None,
    fused: Optional[bool] = None,
) -> torch.Tensor:
    """x: [T, B, C] (fairseq layout); local_allowed: [B, T, T] bool (True = inside the local window);
    gate: [T, B, 1] in [0, 1]; key_padding_mask: [B, T] bool (True = padding); ``biases``: the
    batch's :func:`attention_biases`, given instead of the two masks by callers with several layers
    (in x's dtype for the fused path). ``fused``: two fused attention calls (default: on a GPU).
    Returns [T, B, C].

    Scores are computed once; the local distribution is their softmax with ``−inf`` outside the
    window (masking by addition, never a multiplicative 0), the global one their plain softmax.
    """
    tlen, bsz, dim = x.shape
    head_dim = dim // num_heads
    fused = fused_path(x) if fused is None else fused
    local_bias, global_bias = biases if biases is not None else attention_biases(
        local_allowed, key_padding_mask, x.dtype if fused else None)

    def heads(t):  # [T, B, C] -> [B, H, T, d]
        return t.view(tlen, bsz, num_heads, head_dim).permute(1, 2, 0, 3)

    if fused:
        q, k, v = heads(q_proj(x)), heads(k_proj(x)), heads(v_proj(x))
        p = dropout_p if training else 0.0
        glb = attention(q, k, v, None if global_bias is None else global_bias.to(q.dtype), p)
        loc = attention(q, k, v, local_bias.to(q.dtype), p)
        g = gate.permute(1, 0, 2).unsqueeze(1).to(q.dtype)  # [B, 1, T, 1]
        out = torch.lerp(glb, loc, g).permute(2, 0, 1, 3).reshape(tlen, bsz, dim)
        return out_proj(out)
    q = heads(q_proj(x) * (head_dim ** -0.5))
    k, v = heads(k_proj(x)), heads(v_proj(x))
    g = gate.permute(1, 0, 2).unsqueeze(1)  # [B, 1, T, 1], at least float32 as the weights
    g = g.to(torch.promote_types(g.dtype, torch.float32))
    probs = GatedAttentionWeights.apply(q, k, local_bias, global_bias, g).type_as(v)
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
