"""Syntax-aware local attention inside every layer of a fairseq Transformer encoder.

Shared by ``roberta_sla`` and by ``transformer_sgnet --sla``: the layers are fairseq's
``TransformerEncoderLayerBase`` with its self-attention call replaced by the gated
local/global attention, so every pretrained weight keeps its name and meaning.
"""
from __future__ import annotations

from typing import Optional

import torch
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

from ..modules.attention_kernels import fused_path
from ..modules.sla_attention import SLAGate, attention_biases, gated_local_global_attention
from ..syntax.local import sla_mask, window_mask

from ..arg_types import non_negative_int

SLA_MASKS = ("tree", "window")


def add_sla_args(parser, prefix: str = "sla") -> None:
    parser.add_argument(f"--{prefix}-mask", choices=SLA_MASKS,
                        help="tree: D(i,j) = min over k in {i-1,i,i+1} of dis(v_k, v_j) <= m (SLA, default); "
                             "window: |i-j| <= k (the WLA baseline)")
    parser.add_argument(f"--{prefix}-distance", type=non_negative_int, metavar="M",
                        help="SLA: tree-distance threshold m (default 3)")
    parser.add_argument(f"--{prefix}-window", type=non_negative_int, metavar="K", help="WLA: half window k (default 3)")
    parser.add_argument(f"--{prefix}-gate-bias-init", type=float, metavar="B",
                        help="initial gate bias b_g (default 0: g = 0.5 at the start)")


def sla_defaults(args, prefix: str = "sla") -> None:
    p = prefix.replace("-", "_")
    for name, value in (("mask", "tree"), ("distance", 3), ("window", 3), ("gate_bias_init", 0.0)):
        if getattr(args, f"{p}_{name}", None) is None:
            setattr(args, f"{p}_{name}", value)
    for name in ("distance", "window"):  # (set from Python, past argparse)
        if getattr(args, f"{p}_{name}") < 0:
            raise ValueError(f"--{prefix}-{name} must be at least 0, got {getattr(args, f'{p}_{name}')}")


def local_allowed(codes: torch.Tensor, args, segments: Optional[torch.Tensor] = None, prefix: str = "sla"):
    """The [B, T, T] local mask of a batch, from its subword head codes."""
    p = prefix.replace("-", "_")
    if getattr(args, f"{p}_mask") == "window":
        return window_mask(codes, getattr(args, f"{p}_window"), segments)
    return sla_mask(codes, getattr(args, f"{p}_distance"), segments)


class SLAEncoderLayer(TransformerEncoderLayerBase):
    """A fairseq encoder layer whose self-attention is SLA's gated mix of local and global attention.

    Without ``local_allowed`` it is exactly fairseq's layer (used when no parse is given).
    """

    def __init__(self, cfg, gate_bias_init: float = 0.0, return_fc: bool = False):
        super().__init__(cfg, return_fc=return_fc)
        self.sla_gate = SLAGate(self.embed_dim, bias_init=gate_bias_init)

    # fairseq's forward calls self.self_attn with fixed arguments, so the per-batch local mask and the gate
    # reach the attention only through this copy of it (or through state left on the module between calls).
    def forward(self, x, encoder_padding_mask: Optional[torch.Tensor], attn_mask: Optional[torch.Tensor] = None,
                local_allowed: Optional[torch.Tensor] = None, sla_biases: Optional[tuple] = None):
        if attn_mask is not None:
            raise ValueError("SLA layers take no extra attn_mask")
        if local_allowed is None and sla_biases is None:
            return super().forward(x, encoder_padding_mask)
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        attn = self.self_attn
        x = gated_local_global_attention(
            x, attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj, attn.num_heads, local_allowed,
            gate=self.sla_gate(x), key_padding_mask=encoder_padding_mask,
            dropout_p=attn.dropout_module.p, training=self.training, biases=sla_biases,
        )
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.activation_dropout_module(self.activation_fn(self.fc1(x)))
        x = self.fc2(x)
        fc_result = x
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        if self.return_fc:
            return x, fc_result
        return x


def run_encoder_layers(encoder, src_tokens, local: Optional[torch.Tensor], return_all_hiddens: bool = False,
                       token_embeddings: Optional[torch.Tensor] = None):
    """fairseq's ``TransformerEncoderBase.forward_scriptable``, passing the local mask to every layer (its
    layer calls take no extra arguments, hence the copy)."""
    padding_mask = src_tokens.eq(encoder.padding_idx)
    has_pads = bool(padding_mask.any())
    x, embedding = encoder.forward_embedding(src_tokens, token_embeddings)
    if has_pads:
        x = x * (1 - padding_mask.unsqueeze(-1).type_as(x))
    x = x.transpose(0, 1)
    states = [x] if return_all_hiddens else []
    # built once for every layer, in the dtype and layout the fused kernels take on a GPU (attention_kernels.py)
    biases = None if local is None else attention_biases(local, padding_mask if has_pads else None,
                                                         x.dtype if fused_path(x) else None)
    for layer in encoder.layers:
        out = layer(x, encoder_padding_mask=padding_mask if has_pads else None, local_allowed=local,
                    sla_biases=biases)
        x = out[0] if isinstance(out, tuple) else out
        if return_all_hiddens:
            states.append(x)
    if encoder.layer_norm is not None:
        x = encoder.layer_norm(x)
    return {
        "encoder_out": [x],
        "encoder_padding_mask": [padding_mask],
        "encoder_embedding": [embedding],
        "encoder_states": states,
        "fc_results": [],
        "src_tokens": [],
        "src_lengths": [src_tokens.ne(encoder.padding_idx).sum(dim=1, dtype=torch.int32).reshape(-1, 1)],
    }
