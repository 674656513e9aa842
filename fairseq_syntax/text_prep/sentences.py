"""Sentence boundaries in a list of BERT basic words, so that a document is parsed one tree per sentence
and syntax-guided attention never links words of two sentences.

A rule splitter, deliberately simple and deterministic: a sentence ends after ``.``, ``!`` or ``?`` (and any
closing quotes or brackets after it), unless the ``.`` follows a common abbreviation or a single capital
letter (``Mr .``, ``U . S .``: the basic tokenizer splits the full stop off), or the next word starts in lower
case. Parsers split documents better; but the parse step takes one sentence per line from every backend
(spaCy, stanza, your CoNLL-U), and this keeps the boundaries the same whichever parser runs.
"""
from __future__ import annotations

ENDS = {".", "!", "?"}
CLOSERS = {'"', "'", ")", "]", "}", "\u201d", "\u2019", "\u00bb"}
ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "mt", "no", "vs", "co", "inc", "ltd", "jan",
                 "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "fig", "dept",
                 "gov", "gen", "col", "capt", "lt"}


def split_sentences(words: list[str], max_words: int = 0) -> list[list[str]]:
    """The words cut into sentences (every word kept, in order). ``max_words`` > 0 also cuts a run longer
    than that (an article without full stops) into pieces of at most ``max_words``."""
    out, cur = [], []
    n = len(words)
    i = 0
    while i < n:
        w = words[i]
        cur.append(w)
        i += 1
        if w in ENDS:
            prev = cur[-2].lower() if len(cur) >= 2 else ""
            while i < n and words[i] in CLOSERS | ENDS:
                cur.append(words[i])
                i += 1
            nxt = words[i] if i < n else ""
            # "Mr .", "J . K .": an abbreviation or an initial (but "I ." ends a sentence)
            abbreviation = w == "." and (
                prev in ABBREVIATIONS or (len(prev) == 1 and prev.isalpha() and prev != "i"))
            if nxt and (abbreviation or nxt[:1].islower()):
                continue
            out.append(cur)
            cur = []
        elif max_words and len(cur) >= max_words:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out
