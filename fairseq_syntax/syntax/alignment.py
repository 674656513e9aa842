"""Project word-level heads onto subword tokens, one integer per subword.

Subword head encoding (on disk and, shifted to batch columns, in batches):

* ``h > 0``  word-initial subword whose head word starts at 1-based position ``h``;
  a root points at its own position;
* ``h < 0``  continuation subword of the word that starts at position ``-h``;
* ``h == 0`` a token outside the parse (EOS, BOS, PAD): it sees only itself.

One signed integer per token carries both the tree and the word grouping, so
masks for either subword reading (shared rows, or continuations as children of
the first subword) can be built from it, and nothing depends on the dictionary.
"""
from __future__ import annotations

from typing import Sequence

from .trees import validate_heads

BPE_CONTINUATION = "@@"
SPM_WORD_START = "\u2581"
WORDPIECE_CONTINUATION = "##"
SUBWORD_STYLES = ("bpe", "sentencepiece", "wordpiece")


def group_subwords(subwords: Sequence[str], style: str = "bpe") -> list[int]:
    """0-based index of the first subword of each word.

    ``style`` is ``bpe`` (subword-nmt: a piece ending in ``@@`` continues into the
    next), ``sentencepiece`` (a piece starting with ``▁`` begins a word) or ``wordpiece``
    (BERT: a piece starting with ``##`` continues the previous one).
    """
    starts = []
    if style == "bpe":
        continues = False
        for i, piece in enumerate(subwords):
            if not continues:
                starts.append(i)
            continues = piece.endswith(BPE_CONTINUATION)
    elif style == "sentencepiece":
        for i, piece in enumerate(subwords):
            if i == 0 or piece.startswith(SPM_WORD_START):
                starts.append(i)
    elif style == "wordpiece":
        for i, piece in enumerate(subwords):
            if i == 0 or not piece.startswith(WORDPIECE_CONTINUATION):
                starts.append(i)
    else:
        raise ValueError(f"unknown subword style {style!r} (expected one of {SUBWORD_STYLES})")
    return starts


def words_from_subwords(subwords: Sequence[str], style: str = "bpe") -> list[str]:
    """Rejoin subword pieces into the words the parser saw."""
    starts = group_subwords(subwords, style) + [len(subwords)]
    words = []
    for a, b in zip(starts[:-1], starts[1:]):
        pieces = subwords[a:b]
        if style == "bpe":
            word = "".join(p[: -len(BPE_CONTINUATION)] if p.endswith(BPE_CONTINUATION) else p for p in pieces)
        elif style == "wordpiece":
            word = pieces[0] + "".join(p[len(WORDPIECE_CONTINUATION):] for p in pieces[1:])
        else:
            word = "".join(pieces).lstrip(SPM_WORD_START) or SPM_WORD_START
        words.append(word)
    return words


def align_heads_to_subwords(
    word_heads: Sequence[int],
    subwords: Sequence[str],
    style: str = "bpe",
    where: str = "sentence",
) -> list[int]:
    """Subword head codes (see the module docstring) for one sentence.

    ``word_heads`` are CoNLL heads of the words (1-based, 0 = root); ``subwords``
    are the sentence's pieces (``"new@@", "york"`` or ``"▁New", "▁Y", "ork"``).
    A different number of words in the parse and the text raises ``ValueError``
    naming ``where`` (give the file and line number), and so does a BPE line whose last piece ends in ``@@``
    (a word continued into nothing: a cut or hand-edited line).
    """
    if style == "bpe" and subwords and subwords[-1].endswith(BPE_CONTINUATION):
        raise ValueError(f"{where}: the last piece {subwords[-1]!r} ends in {BPE_CONTINUATION!r}, continuing a word "
                         "past the end of the line")
    return align_heads_to_word_starts(word_heads, group_subwords(subwords, style), len(subwords), where)


def align_heads_to_word_starts(word_heads: Sequence[int], starts: Sequence[int], num_subwords: int,
                               where: str = "sentence") -> list[int]:
    """Subword head codes when the grouping is known (``starts``: each word's first subword, 0-based).

    For tokenizers whose pieces do not mark every word boundary themselves (BERT splits a parsed
    word such as "n't" into "n", "'", "t", which all belong to one word).
    """
    heads = validate_heads(word_heads, where)
    starts = list(starts)
    if len(starts) != len(heads):
        raise ValueError(
            f"{where}: the parse has {len(heads)} tokens but the subword text has "
            f"{len(starts)} words ({num_subwords} subwords)"
        )
    if starts and (starts[0] != 0 or any(b <= a for a, b in zip(starts, starts[1:])) or starts[-1] >= num_subwords):
        raise ValueError(f"{where}: word starts {starts} do not split {num_subwords} subwords into words")
    codes = [0] * num_subwords
    bounds = starts + [num_subwords]
    for w, head in enumerate(heads):
        first = starts[w] + 1  # 1-based position of this word's first subword
        codes[starts[w]] = bounds[head - 1] + 1 if head > 0 else first
        for k in range(starts[w] + 1, bounds[w + 1]):
            codes[k] = -first
    return codes


def check_subword_heads(codes: Sequence[int], where: str = "sentence") -> None:
    """Raise ``ValueError`` if stored subword head codes are not a valid encoding.

    Used when reading side files users may have written by hand.
    """
    n = len(codes)
    if n == 0:
        raise ValueError(f"{where}: empty sentence")
    word_initial = [c > 0 for c in codes]
    word_heads = []
    index_of_start = {}
    for i, c in enumerate(codes, 1):
        if c == 0:
            raise ValueError(f"{where}, token {i}: code 0 (special token) inside a sentence")
        if abs(c) > n:
            raise ValueError(f"{where}, token {i}: head position {abs(c)} out of range 1..{n}")
        if c > 0:
            index_of_start[i] = len(index_of_start) + 1
        else:
            if not word_initial[-c - 1] or -c >= i or any(word_initial[-c:i - 1]):
                raise ValueError(
                    f"{where}, token {i}: continuation of position {-c}, which does not start its word"
                )
    for i, c in enumerate(codes, 1):
        if c > 0:
            if not word_initial[c - 1]:
                raise ValueError(f"{where}, token {i}: head position {c} is not the first subword of a word")
            word_heads.append(0 if c == i else index_of_start[c])
    validate_heads(word_heads, where)
