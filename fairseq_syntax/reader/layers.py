"""BiDAF layers and a multi-head self-attention encoder whose per-head weights can be supervised.

fairseq-free; the registered model (model.py) wires them together.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..modules.attention_kernels import attention, fused_path


def mask_scores(scores: torch.Tensor, disallowed: torch.Tensor) -> torch.Tensor:
    """Scores with ``disallowed`` entries at the dtype's lowest value: a softmax gives them 0 in fp16 too
    (a fixed -1e9 overflows half precision), and a row with nothing allowed stays finite (uniform)."""
    return scores.masked_fill(disallowed, torch.finfo(scores.dtype).min)


class CharCNN(nn.Module):
    """Characters (UTF-8 bytes) -> conv of width ``width`` -> max over time (Kim 2014, as in BiDAF)."""

    def __init__(self, char_dim: int = 16, filters: int = 100, width: int = 5):
        super().__init__()
        self.emb = nn.Embedding(257, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, filters, width, padding=width // 2)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:  # (N, L) -> (N, filters)
        x = self.emb(chars).transpose(1, 2)
        h = F.relu(self.conv(x)).masked_fill(chars.eq(0).unsqueeze(1), 0.0)
        return h.max(-1).values


def spell(words: list[str], max_len: int = 16) -> torch.Tensor:
    """(V, max_len) byte ids + 1 (0 pads), one row per vocabulary word."""
    out = torch.zeros(len(words), max_len, dtype=torch.long)
    for i, w in enumerate(words):
        b = list(w.encode("utf-8"))[:max_len]
        if b:
            out[i, :len(b)] = torch.tensor(b) + 1
    return out


class Highway(nn.Module):
    def __init__(self, dim: int, layers: int = 2):
        super().__init__()
        self.lin = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(layers))

    def forward(self, x):
        for lin in self.lin:
            h, g = lin(x).chunk(2, -1)
            g = torch.sigmoid(g)
            x = g * F.relu(h) + (1 - g) * x
        return x


class BiGRU(nn.Module):
    """A bidirectional GRU over right-padded sequences; padding never leaks into the states of real tokens.

    Instead of packing, each direction runs over the padded batch: the forward one is causal, so the padding
    after a sequence cannot reach it, and the backward one runs forward over each sequence reversed within its
    own length, so its padding comes last too. Same parameters and outputs as ``nn.GRU`` over a packed batch
    (zeros at padded positions), but on the CPU its forward and backward take half the time: a packed GRU's
    backward adds every step's gradient into a buffer the size of the whole batch, quadratic in the length."""

    def __init__(self, inp: int, hidden: int, layers: int = 1, dropout: float = 0.0):
        super().__init__()
        self.rnn = nn.GRU(inp, hidden, layers, batch_first=True, bidirectional=True,
                          dropout=dropout if layers > 1 else 0.0)

    def _direction(self, x, layer: int, suffix: str):
        names = [f"{w}_l{layer}{suffix}" for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        h0 = x.new_zeros(1, x.size(0), self.rnn.hidden_size)
        # torch._VF.gru is what nn.GRU itself calls; torch has no public functional GRU
        out, _ = torch._VF.gru(x, h0, [getattr(self.rnn, n) for n in names], True, 1, 0.0, self.training,
                               False, True)
        return out

    def forward(self, x, lengths):
        t = x.size(1)
        lengths = lengths.to(x.device).clamp(1, t)
        steps = torch.arange(t, device=x.device).unsqueeze(0)
        valid = steps < lengths.unsqueeze(1)  # (B, T)
        # position t of a sequence of length n reversed within its length is n - 1 - t; padding stays put
        rev = torch.where(valid, lengths.unsqueeze(1) - 1 - steps, steps).unsqueeze(-1)
        for layer in range(self.rnn.num_layers):
            if layer > 0:
                x = F.dropout(x, self.rnn.dropout, self.training)
            fwd = self._direction(x, layer, "")
            bwd = self._direction(x.gather(1, rev.expand(-1, -1, x.size(2))), layer, "_reverse")
            x = torch.cat([fwd, bwd.gather(1, rev.expand(-1, -1, bwd.size(2)))], -1)
        return x.masked_fill(~valid.unsqueeze(-1), 0.0)


def sinusoidal(n: int, dim: int, device=None) -> torch.Tensor:
    pos = torch.arange(n, device=device, dtype=torch.float).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float) * (-math.log(10000.0) / dim))
    pe = torch.zeros(n, dim, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: dim // 2])
    return pe


class SelfAttentionLayer(nn.Module):
    """Pre-norm Transformer layer that returns its per-head attention weights (B, H, T, T)."""

    def __init__(self, dim: int, heads: int, ffn: int, dropout: float):
        super().__init__()
        if dim % heads:
            raise ValueError(f"self-attention dim {dim} is not divisible by {heads} heads")
        self.h, self.dk = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ffn, dim))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, pad: torch.Tensor, head_allowed: torch.Tensor | None = None, need_weights: bool = True):
        """Without ``need_weights``, on a GPU, one fused attention call and no weights (None): the weights of a
        layer nobody supervises are never built. On the CPU the weights are always built, as they were."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        disallowed = pad[:, None, None, :]
        if head_allowed is not None:
            disallowed = disallowed | ~head_allowed
        if not need_weights and fused_path(x):
            # as the scores below: an empty row is uniform
            bias = mask_scores(q.new_zeros(disallowed.shape), disallowed)
            ctx = attention(q, k, v, bias, self.drop.p if self.training else 0.0).transpose(1, 2).reshape(b, t, d)
            x = x + self.drop(self.out(ctx))
            return x + self.drop(self.ffn(self.ln2(x))), None
        scores = mask_scores(q @ k.transpose(-1, -2) / math.sqrt(self.dk), disallowed)
        probs = scores.softmax(-1)
        ctx = (self.drop(probs) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.drop(self.out(ctx))
        x = x + self.drop(self.ffn(self.ln2(x)))
        return x, probs


class SelfAttentionEncoder(nn.Module):
    def __init__(self, dim: int, layers: int, heads: int, ffn: int, dropout: float, positions: bool = True):
        super().__init__()
        self.layers = nn.ModuleList(SelfAttentionLayer(dim, heads, ffn, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.positions = positions
        self.dim = dim

    def forward(self, x, pad, head_allowed: dict[int, torch.Tensor] | None = None, need_weights=None):
        """``head_allowed[l]`` restricts layer ``l``'s heads (B, H, T, T); returns output and all weights.
        ``need_weights``: the layers whose weights are read (None: all); the others may return None."""
        if self.positions:
            x = x + sinusoidal(x.size(1), self.dim, x.device).to(x.dtype)
        weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, pad, (head_allowed or {}).get(i), need_weights is None or i in need_weights)
            weights.append(w)
        return self.ln(x), weights


class BiAttention(nn.Module):
    """BiDAF's context-to-query and query-to-context attention -> [c; c2q; c*c2q; c*q2c]."""

    def __init__(self, dim: int):
        super().__init__()
        self.wc, self.wq = nn.Linear(dim, 1), nn.Linear(dim, 1, bias=False)
        self.wcq = nn.Parameter(torch.empty(dim).uniform_(-1 / math.sqrt(dim), 1 / math.sqrt(dim)))

    def forward(self, c, q, cpad, qpad):
        s = self.wc(c) + self.wq(q).transpose(1, 2) + (c * self.wcq) @ q.transpose(1, 2)  # (B, Tc, Tq)
        s = mask_scores(s, qpad[:, None, :])
        c2q = s.softmax(-1) @ q
        b = mask_scores(s.max(-1).values, cpad).softmax(-1)  # (B, Tc)
        q2c = (b.unsqueeze(1) @ c).expand_as(c)
        return torch.cat([c, c2q, c * c2q, c * q2c], -1)


class ExponentialMovingAverage(nn.Module):
    """Shadow weights kept as buffers (so checkpoints carry them); swapped in for evaluation.

    The decay is ``min(decay, (1 + n) / (10 + n))`` after n updates (as TensorFlow's and AllenNLP's
    moving averages), so short runs are not dominated by the random initialisation."""

    def __init__(self, params: list[nn.Parameter], decay: float):
        super().__init__()
        self.decay = decay
        self._params = params  # a plain list: not registered twice
        for i, p in enumerate(params):
            self.register_buffer(f"shadow_{i}", p.detach().clone())
        self.register_buffer("num_updates", torch.zeros((), dtype=torch.long))

    def _apply(self, fn, *args, **kwargs):
        # model.half() (--fp16) must not reach the shadows: in half precision s * 0.9999 rounds back to s,
        # and the average would never move. They follow the model's device, in float32.
        super()._apply(fn, *args, **kwargs)
        for name, buf in self._buffers.items():
            if name.startswith("shadow_") and buf is not None and buf.dtype != torch.float32:
                self._buffers[name] = buf.float()
        return self

    def shadows(self):
        return [getattr(self, f"shadow_{i}") for i in range(len(self._params))]

    @torch.no_grad()
    def update(self) -> None:
        n = int(self.num_updates)
        d = min(self.decay, (1 + n) / (10 + n))
        for s, p in zip(self.shadows(), self._params):
            s.mul_(d).add_(p.detach().to(s.dtype), alpha=1 - d)
        self.num_updates += 1

    @contextmanager
    @torch.no_grad()
    def swapped(self):
        """Within the block the model's parameters hold the averages."""
        saved = [p.detach().clone() for p in self._params]
        for s, p in zip(self.shadows(), self._params):
            p.copy_(s)
        try:
            yield
        finally:
            for v, p in zip(saved, self._params):
                p.copy_(v)
