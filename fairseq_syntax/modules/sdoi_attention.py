"""SG-Net's syntax-guided layer (docs/methods.md §1), in plain torch.

H' = SDOI-masked multi-head self-attention over the encoder output H, then a GELU
feed-forward block, each with residual and LayerNorm; H̄ = αH + (1−α)H'.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..syntax.masks import sdoi_mask
from .attention_kernels import additive_mask, attention, fused_path, read_rows_pays


class SDOIAttentionLayer(nn.Module):
    """One masked self-attention + FFN block (post-norm, as Transformer-base).

    The mask is boolean (True = may attend) and goes to ``scaled_dot_product_attention``,
    which adds −inf where it is False; never a multiplicative 0 on the scores.
    """

    def __init__(self, embed_dim: int, num_heads: int, ffn_dim: int, dropout: float = 0.1,
                 attention_dropout: float = 0.0, activation_dropout: float = 0.0):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"SDOI: embed_dim {embed_dim} is not divisible by {num_heads} heads")
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_layer_norm = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.final_layer_norm = nn.LayerNorm(embed_dim)
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation_dropout = activation_dropout
        self.reset_parameters()

    def reset_parameters(self):
        # as fairseq's MultiheadAttention and TransformerEncoderLayer
        nn.init.xavier_uniform_(self.qkv_proj.weight, gain=1 / math.sqrt(2))
        nn.init.zeros_(self.qkv_proj.bias)
        for lin in (self.out_proj, self.fc1, self.fc2):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, need_weights: bool = False,
                read: torch.Tensor | None = None):
        """x: [B, T, C]; allowed: [B, T, T] bool, or additive [B, 1, T, T] (attention_kernels.additive_mask; not
        with ``need_weights`` or ``read``). Returns (x', weights [B, heads, T, T] or None).

        ``read`` [B, T] bool: compute x' only at those rows, returned packed as ``x[read]`` is, [N, C]. Keys and
        values come only from the positions those rows may attend to, and the projections and feed-forward
        run on packed rows, so padding costs nothing: a last layer whose other rows nobody reads is cheap.
        """
        if read is not None:
            return self.read_rows(x, allowed, read), None
        bsz, tlen, dim = x.shape
        q, k, v = self.qkv_proj(x).view(bsz, tlen, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        mask = allowed.unsqueeze(1) if allowed.dtype == torch.bool else allowed
        weights = None
        if need_weights:
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
            weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
            attn = F.dropout(weights, self.attention_dropout, self.training) @ v
        else:
            attn = attention(q, k, v, mask, self.attention_dropout if self.training else 0.0)
        return self.feed_forward(x, self.out_proj(attn.transpose(1, 2).reshape(bsz, tlen, dim))), weights

    def feed_forward(self, x, attn):
        x = self.attn_layer_norm(x + F.dropout(attn, self.dropout, self.training))
        y = F.dropout(F.gelu(self.fc1(x)), self.activation_dropout, self.training)
        return self.final_layer_norm(x + F.dropout(self.fc2(y), self.dropout, self.training))

    def read_rows(self, x, allowed, read):
        bsz, tlen, dim = x.shape
        w, b = self.qkv_proj.weight, self.qkv_proj.bias
        rows = read.nonzero(as_tuple=True)  # (sentence, position) of each read row, in x[read]'s order
        keys = (allowed & read.unsqueeze(2)).any(1)  # [B, T]: the columns some read row may attend to
        kv = x.new_zeros(bsz, tlen, 2 * dim)
        kv[keys] = F.linear(x[keys], w[dim:], b[dim:])
        k, v = kv.view(bsz, tlen, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        # the read rows of each sentence side by side in [B, Q] for the attention, Q = the most rows a sentence has
        slot = (read.cumsum(1) - 1)[rows]
        width = int(slot.max()) + 1
        xr = x[rows]
        q = x.new_zeros(bsz, width, dim)
        q[rows[0], slot] = F.linear(xr, w[:dim], b[:dim])
        mask = torch.zeros(bsz, width, tlen, dtype=torch.bool, device=x.device)
        mask[:, :, 0] = True  # an empty slot attends somewhere (no NaN); nothing reads it
        mask[rows[0], slot] = allowed[rows]
        attn = attention(q.view(bsz, width, self.num_heads, self.head_dim).transpose(1, 2), k, v, mask.unsqueeze(1),
                         self.attention_dropout if self.training else 0.0)
        attn = attn.transpose(1, 2).reshape(bsz, width, dim)[rows[0], slot]
        return self.feed_forward(xr, self.out_proj(attn))


SGNET_MASKS = ("sdoi", "none")


class SyntaxGuidedAggregation(nn.Module):
    """SDOI layers over H and the dual context aggregation H̄ = αH + (1−α)H'.

    ``learn_alpha`` learns α as sigmoid(a), a two-way softmax, initialised at the
    given α (the authors' MRC code learns a softmax over two weights; we drop its
    extra scale, which LayerNorm in the decoder makes redundant). At special
    tokens (code 0) H' is replaced by H: the paper masks their syntax-guided output.
    """

    def __init__(self, embed_dim: int, num_heads: int, ffn_dim: int, num_layers: int = 1, alpha: float = 0.5,
                 learn_alpha: bool = False, dropout: float = 0.1, attention_dropout: float = 0.0,
                 activation_dropout: float = 0.0, subword_mode: str = "shared", mask: str = "sdoi"):
        super().__init__()
        if mask not in SGNET_MASKS:
            raise ValueError(f"unknown SG-Net mask {mask!r}; expected one of {SGNET_MASKS}")
        self.mask = mask
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"SG-Net alpha must be in [0, 1], got {alpha}")
        if learn_alpha and not 0.0 < alpha < 1.0:
            raise ValueError(f"a learned alpha starts inside (0, 1), got {alpha}")
        self.layers = nn.ModuleList(
            SDOIAttentionLayer(embed_dim, num_heads, ffn_dim, dropout, attention_dropout, activation_dropout)
            for _ in range(num_layers)
        )
        self.learn_alpha = learn_alpha
        self.subword_mode = subword_mode
        if learn_alpha:
            self.alpha_logit = nn.Parameter(torch.tensor(math.log(alpha / (1 - alpha))))
        else:
            self.register_buffer("alpha_value", torch.tensor(float(alpha)), persistent=False)

    def alpha(self) -> torch.Tensor:
        return torch.sigmoid(self.alpha_logit) if self.learn_alpha else self.alpha_value

    def forward(self, h: torch.Tensor, codes: torch.Tensor, need_weights: bool = False,
                pool_rows: torch.Tensor | None = None, read_rows: torch.Tensor | None = None,
                fused: bool | None = None):
        """h: [T, B, C] (fairseq layout); codes: [B, T]. Returns (H̄ [T, B, C], extras).

        ``pool_rows`` [B, T] bool marks special tokens (BERT's [CLS]) that attend to every parsed
        token instead of only themselves, and keep their H': a classifier reading them then sees
        the syntax-guided output.

        ``read_rows`` [B, T] bool: the positions the caller reads (token labeling scores each word's first
        subword). H̄ there is what it would be without it; the last SDOI layer computes only those rows, and
        the other positions get H. Ignored with ``need_weights``.
        """
        if codes.shape != h.shape[1::-1]:
            raise ValueError(f"src_heads has shape {tuple(codes.shape)}, encoder output is "
                             f"{tuple(h.shape[1::-1])} (B, T)")
        if not self.layers:  # --sgnet-layers 0: no syntax-guided layer (SLA-only models)
            return h, {}
        if self.mask == "none":  # the control: the same layer, every parsed token attending to every other
            parsed = codes.ne(0)
            eye = torch.eye(codes.shape[1], dtype=torch.bool, device=codes.device).unsqueeze(0)
            allowed = (parsed.unsqueeze(2) & parsed.unsqueeze(1)) | eye
        else:
            allowed = sdoi_mask(codes, self.subword_mode)
        keep_h = codes.eq(0)
        if pool_rows is not None:
            allowed = allowed | (pool_rows.unsqueeze(2) & codes.ne(0).unsqueeze(1))
            keep_h = keep_h & ~pool_rows
        x = h.transpose(0, 1)
        alpha = self.alpha().to(h.dtype)
        fused = fused_path(h) if fused is None else fused
        if read_rows is not None and not need_weights and read_rows.shape != keep_h.shape:
            raise ValueError(f"read_rows has shape {tuple(read_rows.shape)}, the input {tuple(keep_h.shape)}")
        if read_rows is not None and not need_weights and (not fused or read_rows_pays(h.device)):
            return self.read_rows_only(x, allowed, keep_h, read_rows, alpha).transpose(0, 1), {"sdoi_mask": allowed}
        mask = additive_mask(allowed.unsqueeze(1), h.dtype) if fused and not need_weights else allowed
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, need_weights)
            weights.append(w)
        x = x.transpose(0, 1)
        x = torch.where(keep_h.T.unsqueeze(-1), h, x)
        if read_rows is not None and not need_weights:  # the unread rows keep H, as read_rows_only leaves them
            x = torch.where(read_rows.T.unsqueeze(-1), x, h)
        return alpha * h + (1 - alpha) * x, {"sdoi_mask": allowed, "sdoi_attn": weights}

    def read_rows_only(self, h, allowed, keep_h, read_rows, alpha):
        """H̄ [B, T, C] exact at ``read_rows`` and H elsewhere; the last layer runs on those rows only."""
        if not read_rows.any():
            return h
        x = h
        for layer in self.layers[:-1]:
            x, _ = layer(x, allowed)
        x, _ = self.layers[-1](x, allowed, read=read_rows)
        hr = h[read_rows]
        x = torch.where(keep_h[read_rows].unsqueeze(-1), hr, x)
        return h.index_put(read_rows.nonzero(as_tuple=True), alpha * hr + (1 - alpha) * x)
