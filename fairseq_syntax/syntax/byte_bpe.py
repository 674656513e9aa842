"""Byte-level BPE (GPT-2's, which RoBERTa and BART read) aligned to a parser's words, exactly, for any Unicode text.

GPT-2's pieces spell the raw text's bytes: a piece may start with the space before a word, hold several spaces or a
tab, or end inside a multi-byte character; and the parser's words need not fall on piece boundaries (spaCy splits
"can't" into "ca" and "n't", GPT-2 into "can" and "'t"; spaCy splits "cannot" into "can" and "not", GPT-2 may keep
one piece). So each piece is placed by bytes, not by markers:

* a piece belongs to the word holding its first byte that is not white space (a leading space never decides);
* a piece of white space alone continues the word before it (the first word, before the first word);
* a piece of no bytes (sentencepiece's lone "▁", whose surface is empty) goes with the word after it;
* a word in which no piece starts (the "not" of a one-piece "cannot") joins the word whose piece holds its first
  byte, and the tree is contracted over the joined words: the group hangs where its topmost member hung, and the
  children of every member hang on the group, so the pieces still carry one tree;
* the words must be the text's own, in order, with only white space between them: anything else is an error naming
  the sentence, never a silent shift.

The heads then go on the pieces with the same one-integer encoding as every other subword scheme
(:func:`~fairseq_syntax.syntax.alignment.align_heads_to_word_starts`).
"""
from __future__ import annotations

from typing import Sequence

from .alignment import align_heads_to_word_starts
from .trees import validate_heads


def word_char_spans(text: str, words: Sequence[str], where: str = "sentence") -> list[tuple[int, int]]:
    """The [start, end) character offsets of each word in ``text``; the words are the text's, in order, with only
    white space between and around them."""
    spans, pos = [], 0
    for k, w in enumerate(words):
        if not w:
            raise ValueError(f"{where}: word {k + 1} is empty")
        i = text.find(w, pos)
        if i < 0 or text[pos:i].strip():
            got = text[pos:pos + len(w) + 10]
            raise ValueError(f"{where}: word {k + 1} {w!r} is not the next text (the text goes on {got!r}): "
                             "the parser's words must be the text's own")
        spans.append((i, i + len(w)))
        pos = i + len(w)
    return spans


def word_byte_spans(text: str, words: Sequence[str], where: str = "sentence") -> list[tuple[int, int]]:
    """The [start, end) byte offsets of each word in ``text`` (``word_char_spans``, counted in UTF-8 bytes)."""
    spans = word_char_spans(text, words, where)
    end = spans[-1][1] if spans else 0
    if text[end:].strip():
        raise ValueError(f"{where}: the text goes on after the last word: {text[end:end + 20]!r}")
    if text.isascii():
        return spans
    out, at, done = [], 0, 0  # bytes up to character ``done``, counted once
    for a, b in spans:
        start = at + len(text[done:a].encode("utf-8"))
        at, done = start + len(text[a:b].encode("utf-8")), b
        out.append((start, at))
    return out


def piece_words(text: str, words: Sequence[str], pieces: Sequence[bytes], where: str = "sentence") -> list[int]:
    """The word (0-based) each piece belongs to, by the rules above; non-decreasing."""
    return _owners(text, words, pieces, where)[0]


def _owners(text, words, pieces, where) -> tuple[list[int], list[tuple[int, int]]]:
    """(each piece's word, each word's byte span), the spans found once for both."""
    data = text.encode("utf-8")
    if b"".join(pieces) != data:
        raise ValueError(f"{where}: the pieces spell {b''.join(pieces)[:40]!r}..., not the text {data[:40]!r}...")
    if not words:
        raise ValueError(f"{where}: no words")
    spans = word_byte_spans(text, words, where)
    owner = [-1] * len(data)
    for k, (a, b) in enumerate(spans):
        owner[a:b] = [k] * (b - a)
    out: list[int | None] = []
    at = 0
    for p in pieces:
        out.append(next((owner[j] for j in range(at, at + len(p)) if owner[j] >= 0), None))
        at += len(p)
    first = next((w for w in out if w is not None), None)
    if first is None:
        raise ValueError(f"{where}: no piece holds a word")
    nxt = None
    for i in range(len(out) - 1, -1, -1):  # a piece of no bytes (sentencepiece's lone "▁"): the word after it
        if not pieces[i] and nxt is not None:
            out[i] = nxt
        nxt = out[i] if out[i] is not None else nxt
    prev = first
    for i, w in enumerate(out):  # white space alone: the word before it (before the first word: the first)
        if w is None:
            out[i] = prev
        prev = out[i]
    return out, spans


def contract_heads(heads: Sequence[int], group: Sequence[int]) -> list[int]:
    """CoNLL heads (1-based, 0 = root) over the groups of words (``group[k]``: word k's group, 0-based and in
    order of the groups' first words): each group hangs where its topmost member (the one nearest the root; the
    first of equals) hung, outside the group."""
    validate_heads(list(heads))
    n = len(heads)

    def depth(k):
        d = 0
        while heads[k] != 0:
            k = heads[k] - 1
            d += 1
        return d

    groups = max(group) + 1
    top: dict[int, int] = {}
    for k in range(n):
        g = group[k]
        if g not in top or depth(k) < depth(top[g]):
            top[g] = k
    out = []
    for g in range(groups):
        k = top[g]
        h = heads[k]
        while h != 0 and group[h - 1] == g:  # (the topmost member's head is never its own group's)
            h = heads[h - 1]
        out.append(0 if h == 0 else group[h - 1] + 1)
    return validate_heads(out)


def byte_bpe_head_codes(text: str, words: Sequence[str], heads: Sequence[int], pieces: Sequence[bytes],
                        where: str = "sentence") -> list[int]:
    """One head code per byte-level BPE piece of ``text``, from the parse ``words``/``heads`` of the same text."""
    if len(heads) != len(words):
        raise ValueError(f"{where}: {len(words)} words but {len(heads)} heads")
    owner, spans = _owners(text, words, pieces, where)
    starts = [i for i, w in enumerate(owner) if i == 0 or w != owner[i - 1]]
    present = [owner[i] for i in starts]  # the words a piece starts in, in order
    piece_of_byte = [i for i, p in enumerate(pieces) for _ in p]
    group, g = [], -1
    for k in range(len(words)):  # a word no piece starts in joins the word of the piece holding its first byte
        if g + 1 < len(present) and present[g + 1] == k:
            g += 1
        else:
            g = present.index(owner[piece_of_byte[spans[k][0]]])
        group.append(g)
    word_heads = contract_heads(heads, group) if len(present) < len(words) else list(heads)
    return align_heads_to_word_starts(word_heads, starts, len(pieces), where)


def gpt2_pieces(encoder, text: str, ids: Sequence[int] | None = None) -> list[bytes]:
    """fairseq's own GPT-2 encoder (``fairseq.data.encoders.gpt2_bpe_utils.get_encoder``): the text's pieces (its
    ``ids`` where already encoded) as the bytes they stand for, in order."""
    return [bytes(encoder.byte_decoder[c] for c in encoder.decoder[i])
            for i in (encoder.encode(text) if ids is None else ids)]
