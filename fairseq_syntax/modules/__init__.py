"""Torch modules (no fairseq imports)."""
from .sdoi_attention import SDOIAttentionLayer, SyntaxGuidedAggregation

__all__ = ["SDOIAttentionLayer", "SyntaxGuidedAggregation"]
