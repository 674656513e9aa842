"""fairseq glue for data: the heads side files and the syntax-aware dataset.

Names load on first use (PEP 562): ``fairseq-syntax-binarize-heads`` answers ``--help`` without fairseq.
"""
import importlib

_WHERE = {"HEADS_SUFFIX": "heads_io", "binarize_heads": "heads_io", "check_sizes": "heads_io",
          "heads_prefix": "heads_io", "load_heads": "heads_io", "SyntaxLanguagePairDataset": "syntax_dataset"}
__all__ = sorted(_WHERE)


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
