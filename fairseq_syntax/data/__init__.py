"""fairseq glue for data: the heads side files and the syntax-aware dataset."""
from .heads_io import HEADS_SUFFIX, binarize_heads, check_sizes, heads_prefix, load_heads
from .syntax_dataset import SyntaxLanguagePairDataset

__all__ = ["HEADS_SUFFIX", "SyntaxLanguagePairDataset", "binarize_heads", "check_sizes", "heads_prefix",
           "load_heads"]
