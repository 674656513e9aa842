"""Pointer-sum answer loss and prediction, and the attention-supervision loss, in plain torch.

Kept apart from the fairseq criterion so they can be checked against hand-computed numbers.
"""
from __future__ import annotations

import torch


def _lowest(t: torch.Tensor) -> float:
    return torch.finfo(t.dtype).min


def pointer_log_probs(logits: torch.Tensor, context_mask: torch.Tensor) -> torch.Tensor:
    """log p over context positions (B, T); padding gets (almost) zero probability."""
    logits = logits.float()  # the pointer's softmax runs in float32, also under --fp16
    return logits.masked_fill(~context_mask, _lowest(logits)).log_softmax(-1)


def pointer_sum_nll(log_probs: torch.Tensor, answer_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``-log sum_{i: c_i = answer} p_i`` per instance (B,), and which instances have the answer in context.

    An instance whose answer is not in the context has no pointer target: its value is 0 and ``has`` False."""
    has = answer_mask.any(-1)
    ll = log_probs.masked_fill(~answer_mask, _lowest(log_probs)).logsumexp(-1)
    return torch.where(has, -ll, torch.zeros_like(ll)), has


def pointer_sum_predict(log_probs: torch.Tensor, context_mask: torch.Tensor, word_types: torch.Tensor) -> torch.Tensor:
    """The context word *type* with the largest summed probability (B,), as an id in ``word_types``.

    ``word_types`` (B, T) numbers the distinct surface words of each context (padding: any value, masked),
    so two different out-of-vocabulary words never pool their probability."""
    p = log_probs.exp() * context_mask
    sums = torch.zeros_like(p).scatter_add_(1, word_types.clamp(min=0), p)
    return sums.argmax(-1)


def supervision_targets(signal, bsz: int, n: int) -> torch.Tensor:
    """A dense (B, n, n) bool target from one signal of a batch, built on the signal's device.

    ``signal`` is either a (B, T) tensor of one target column per row (-1: none; DepParse's heads), or
    ``(counts, pairs)``: the number of (row, column) pairs of each instance (B,) and the pairs (m, 2), in
    instance order."""
    if isinstance(signal, torch.Tensor):
        cols = signal[:, :n].long()
        return (cols.unsqueeze(-1) == torch.arange(n, device=cols.device)) & (cols >= 0).unsqueeze(-1)
    counts, pairs = signal
    pairs = pairs.long()
    batch_idx = torch.repeat_interleave(torch.arange(bsz, device=pairs.device), counts.to(pairs.device),
                                        output_size=pairs.size(0))
    t = torch.zeros(bsz, n, n, dtype=torch.bool, device=pairs.device)
    t[batch_idx, pairs[:, 0], pairs[:, 1]] = True
    return t


def attention_supervision_nll(attn: torch.Tensor, targets: torch.Tensor,
                              eps: float = 1e-9) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum over supervised rows of ``-log sum_{j in targets(i)} a_ij``, and the number of such rows.

    We read the paper's Eq. 2 as the likelihood of the target *set* (as the pointer-sum loss reads the
    answer occurrences): a row with several targets may spread its mass over them in any way."""
    rows = targets.any(-1)
    mass = (attn.float() * targets).sum(-1)
    nll = -(mass.clamp_min(eps).log())
    return nll[rows].sum(), rows.sum()
