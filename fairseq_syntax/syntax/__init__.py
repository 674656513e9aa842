"""The fairseq-free syntax core: trees, subword alignment and batched masks.

Nothing here imports fairseq; the fairseq glue imports this, never the reverse.
"""
from .alignment import (
    align_heads_to_subwords,
    align_heads_to_word_starts,
    check_subword_heads,
    group_subwords,
    words_from_subwords,
)
from .local import batch_tree_distance, sla_mask, window_mask
from .masks import SUBWORD_MODES, sdoi_mask, shift_codes, syntax_token_mask
from .trees import ancestor_matrix, ancestors_mask, tree_distance, validate_heads

__all__ = [
    "align_heads_to_subwords",
    "align_heads_to_word_starts",
    "ancestor_matrix",
    "ancestors_mask",
    "batch_tree_distance",
    "check_subword_heads",
    "group_subwords",
    "sdoi_mask",
    "shift_codes",
    "sla_mask",
    "SUBWORD_MODES",
    "syntax_token_mask",
    "tree_distance",
    "validate_heads",
    "window_mask",
    "words_from_subwords",
]
