"""The fairseq-free syntax core: trees, subword alignment and batched masks.

Nothing here imports fairseq; the fairseq glue imports this, never the reverse. Names load on first use
(PEP 562), so that data-prep CLIs, which need only the alignment and tree checks, start without torch.
"""
import importlib

_WHERE = {
    "align_heads_to_subwords": "alignment",
    "align_heads_to_word_starts": "alignment",
    "check_subword_heads": "alignment",
    "group_subwords": "alignment",
    "words_from_subwords": "alignment",
    "batch_tree_distance": "local",
    "sla_mask": "local",
    "window_mask": "local",
    "SUBWORD_MODES": "masks",
    "sdoi_mask": "masks",
    "shift_codes": "masks",
    "syntax_token_mask": "masks",
    "ancestor_matrix": "trees",
    "ancestors_mask": "trees",
    "tree_distance": "trees",
    "validate_heads": "trees",
}
__all__ = sorted(_WHERE)


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _WHERE[name] in ("local", "masks"):
        from ..versions import check_torch

        check_torch()
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)


def __dir__():
    return __all__
