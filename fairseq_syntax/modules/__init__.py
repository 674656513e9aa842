"""Torch modules (no fairseq imports)."""
from .sdoi_attention import SDOIAttentionLayer, SyntaxGuidedAggregation
from .sla_attention import SLAGate, gated_local_global_attention, pair_segments

__all__ = ["SDOIAttentionLayer", "SyntaxGuidedAggregation", "SLAGate", "gated_local_global_attention",
           "pair_segments"]
