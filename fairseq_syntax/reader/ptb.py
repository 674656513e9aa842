"""Penn-Treebank-style tokenization, lower-cased, so that raw novels look like LAMBADA's text.

LAMBADA's passages were tokenized this way (``did n't``, ``'s``, ``` `` ``` and ``''`` for
double quotes). sacremoses' ``penn_tokenize`` is broken in the version pinned here, so the
rules of NLTK's Treebank tokenizer that matter for narrative text are kept in one place.
"""
from __future__ import annotations

import re

_RULES = [
    (re.compile(r"[\u201c\u201d\u00ab\u00bb]"), '"'),          # curly double quotes, guillemets
    (re.compile(r"[\u2018\u2019\u02bc]"), "'"),                 # curly single quotes
    (re.compile(r"[\u2014\u2013]"), " -- "),                    # em/en dash
    (re.compile(r"\u2026"), " ... "),
    (re.compile(r'^"'), " `` "),                                 # opening double quote
    (re.compile(r'(``)'), r" \1 "),
    (re.compile(r'([ (\[{<])"'), r"\1 `` "),
    (re.compile(r"\.\.\.+"), " ... "),
    (re.compile(r"[;@#$%&:,]"), r" \g<0> "),
    (re.compile(r"([^.])(\.)([\]\)}>\"']*)\s*$"), r"\1 \2\3 "),  # sentence-final period
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"[\]\[\(\)\{\}<>]"), r" \g<0> "),
    (re.compile(r"--+"), " -- "),
    (re.compile(r'"'), " '' "),                                  # closing double quote
    (re.compile(r"([^\s'])('')"), r"\1 \2 "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
    (re.compile(r"\b(can)(not)\b", re.I), r" \1 \2 "),
]
_SENT_PERIOD = re.compile(r"(\w)\.(\s+)")  # a period inside a line: "end. next" -> "end . next"
_ABBREV = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "rev", "capt", "col", "gen", "lt", "sgt", "no",
           "vs", "etc", "esq", "messrs", "mme", "mlle", "hon"}


def ptb_tokenize(text: str) -> list[str]:
    """Lower-cased PTB tokens of one paragraph (sentence-internal periods are split too)."""
    text = " " + text.strip() + " "

    def period(m):
        word_start = text.rfind(" ", 0, m.start(1) + 1) + 1
        word = text[word_start:m.start(1) + 1].lower().strip("\"'`(")
        return m.group(0) if word in _ABBREV or len(word) == 1 else f"{m.group(1)} .{m.group(2)}"

    text = _SENT_PERIOD.sub(period, text)
    for pat, rep in _RULES:
        text = pat.sub(rep, text)
    return text.lower().split()
