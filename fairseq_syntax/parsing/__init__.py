"""Dependency parsing behind one interface, and CoNLL-U input/output (fairseq-free)."""
from .backends import (BACKENDS, Parser, SpacyParser, StanzaParser, describe_provenance, get_parser,
                       parser_provenance, stanza_models_present)
from .conllu import ParsedSentence, format_conllu, read_conllu, read_conllu_file

__all__ = ["BACKENDS", "Parser", "ParsedSentence", "SpacyParser", "StanzaParser", "format_conllu",
           "describe_provenance", "get_parser", "parser_provenance", "read_conllu", "read_conllu_file",
           "stanza_models_present"]
