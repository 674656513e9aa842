"""Dependency parsing behind one interface, and CoNLL-U input/output (fairseq-free)."""
from .backends import BACKENDS, Parser, SpacyParser, StanzaParser, get_parser, stanza_models_present
from .conllu import ParsedSentence, format_conllu, read_conllu, read_conllu_file

__all__ = ["BACKENDS", "Parser", "ParsedSentence", "SpacyParser", "StanzaParser", "format_conllu",
           "get_parser", "read_conllu", "read_conllu_file", "stanza_models_present"]
