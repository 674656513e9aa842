"""Corpus text preparation (fairseq-free): Moses-style normalisation and tokenisation, cleaning, SGML."""
from .moses import MosesPipeline, remove_non_printing
from .clean import clean_parallel
from .sgm import read_sgm_segments
from .wordpiece import WordPieceTokenizer, basic_words

__all__ = ["MosesPipeline", "clean_parallel", "read_sgm_segments", "remove_non_printing", "WordPieceTokenizer",
           "basic_words"]
