"""Which attention kernels and mask forms the syntax layers use, chosen per device and precision.

A user who adds ``--fp16`` or ``--bf16`` on a GPU gets the fast path with no flag. What was measured
(benchmarks/README.md, an H200, torch 2.11):

- torch's own choice for a masked ``scaled_dot_product_attention`` in half precision is cuDNN's kernel, which
  builds a graph per new shape: with the batch shapes of fine-tuning it ran SG-Net at 0.20 of the baseline,
  against 0.76 with cuDNN left out. Masked calls on CUDA therefore exclude it; unmasked calls keep torch's choice
  (flash attention);
- computing only the rows a head reads (``read_rows``) pays on the CPU and costs on the GPU (0.76 against 0.88
  for every row): the gathers and the scattered writes launch more small kernels than the saved rows are worth;
- a boolean mask is turned into an additive one in every call; built once per batch in the query's dtype, it is
  handed to the kernel as is (:func:`additive_mask`).
"""
from __future__ import annotations

import contextlib
from typing import Optional

import torch
import torch.nn.functional as F


def masked_backends(device: torch.device) -> Optional[list]:
    """The SDPA backends a masked call may use on ``device``; None: torch's own choice."""
    if device.type != "cuda":
        return None
    from torch.nn.attention import SDPBackend

    return [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def kernels_for(q: torch.Tensor, masked: bool):
    """The context a call runs in: cuDNN kept out of masked calls on a GPU, nothing changed elsewhere."""
    backends = masked_backends(q.device) if masked else None
    if backends is None:
        return contextlib.nullcontext()
    from torch.nn.attention import sdpa_kernel

    return sdpa_kernel(backends)


def attention(q, k, v, mask: Optional[torch.Tensor] = None, dropout_p: float = 0.0) -> torch.Tensor:
    """``scaled_dot_product_attention`` with the project's kernel choice; ``mask`` boolean (True = open) or
    additive (0 / −inf, in q's dtype)."""
    with kernels_for(q, mask is not None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


def read_rows_pays(device: torch.device) -> bool:
    """Whether computing only the read rows of a layer is faster than computing every row there."""
    return device.type == "cpu"


ALIGN = 16  # elements: torch's memory-efficient kernel copies a mask whose rows are not aligned to this


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """0 where ``allowed``, −inf elsewhere, in ``dtype``: the form a fused kernel adds to its scores, made once per
    batch instead of once per layer (and per call, as torch does with a boolean mask). Its rows are views into
    rows padded to ``ALIGN`` elements, so the kernel takes it without a copy. A row with no open key is −inf
    throughout (NaN out of the softmax); the masks of this package keep one open in every row."""
    *lead, tlen = allowed.shape
    out = torch.zeros(*lead, tlen + (-tlen) % ALIGN, dtype=dtype, device=allowed.device)[..., :tlen]
    return out.masked_fill_(~allowed, float("-inf"))


_forced: Optional[bool] = None


def fused_path(x: torch.Tensor) -> bool:
    """Whether the layers take the fused-kernel path: on a GPU. The CPU keeps the paths its ratios were measured
    with (a hand-written softmax pair for SLA, ``read_rows`` for SG-Net)."""
    return x.device.type == "cuda" if _forced is None else _forced


@contextlib.contextmanager
def forced_path(fused: bool):
    """Within the block every layer takes the fused path, or the reference one, whatever the device: the GPU
    benchmark compares the two there before it times anything (benchmarks/gpu_matrix.py)."""
    global _forced
    saved, _forced = _forced, fused
    try:
        yield
    finally:
        _forced = saved
