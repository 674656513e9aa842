"""BERT's own tokenization (basic split, then WordPiece), split in two so a parser sees the words.

BERT first splits text into words (whitespace, every punctuation character, CJK characters),
lower-cases and strips accents, then cuts each word into WordPieces (``##`` continues a word).
We keep the words *cased* for the parser (it parses cased text far better) and normalise
them only for WordPiece; the pieces are then exactly what BERT's tokenizer gives, and every
piece belongs to one parsed word, so heads align without guessing.
"""
from __future__ import annotations

import unicodedata
from typing import Iterable, Sequence

UNK = "[UNK]"
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _dropped(ch: str) -> bool:
    """What BERT's basic split drops: NUL, U+FFFD and control characters but tab and line breaks."""
    return ord(ch) in (0, 0xFFFD) or _is_control(ch)


def clean_text(text: str) -> str:
    """The text without what ``basic_words`` drops, so the parser's words are the text's own."""
    return "".join(ch for ch in text if not _dropped(ch))


def basic_words(text: str) -> list[str]:
    """BERT's basic tokenizer without lower-casing: the words the parser gets."""
    chars = []
    for ch in text:
        if _dropped(ch):
            continue
        if _is_whitespace(ch):
            chars.append(" ")
        elif _is_cjk(ord(ch)):
            chars.extend((" ", ch, " "))
        else:
            chars.append(ch)
    words = []
    for token in "".join(chars).split():
        current = []
        for ch in token:
            if _is_punctuation(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words


def normalize(word: str, lower: bool = True) -> str:
    """Lower-case and strip accents (NFD, drop combining marks), as uncased BERT does."""
    if not lower:
        return word
    word = unicodedata.normalize("NFD", word.lower())
    return "".join(ch for ch in word if unicodedata.category(ch) != "Mn")


def load_vocab(path: str) -> dict[str, int]:
    with open(path, encoding="utf-8") as fh:
        vocab = {}
        for i, line in enumerate(fh):
            token = line.rstrip("\n")
            if token in vocab:
                raise ValueError(f"{path}:{i + 1}: duplicate vocabulary entry {token!r}")
            vocab[token] = i
    for special in (UNK,):
        if special not in vocab:
            raise ValueError(f"{path}: no {special} entry; is this a BERT WordPiece vocab.txt?")
    return vocab


class WordPieceTokenizer:
    """Greedy longest-match-first WordPiece over a BERT ``vocab.txt``."""

    def __init__(self, vocab: dict[str, int] | str, lower: bool = True, max_chars: int = 100):
        self.vocab = load_vocab(vocab) if isinstance(vocab, str) else vocab
        self.lower = lower
        self.max_chars = max_chars

    def word_pieces(self, word: str) -> list[str]:
        """Pieces of one basic word; a normalised word BERT would drop (only accents) becomes [UNK]."""
        out = []
        for token in basic_words(normalize(word, self.lower)) or [UNK]:
            out.extend(self._pieces(token))
        return out

    def _pieces(self, token: str) -> list[str]:
        if token == UNK or len(token) > self.max_chars:
            return [UNK]
        pieces, start = [], 0
        while start < len(token):
            end = len(token)
            while end > start:
                piece = token[start:end] if start == 0 else "##" + token[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            else:
                return [UNK]
            pieces.append(piece)
            start = end
        return pieces

    def split_words(self, words: Sequence[str]) -> list[list[str]]:
        return [self.word_pieces(w) for w in words]

    def tokenize(self, text: str) -> list[str]:
        """The flat piece sequence BERT's tokenizer gives for ``text``."""
        return [p for pieces in self.split_words(basic_words(text)) for p in pieces]


def word_starts(pieces_per_word: Iterable[Sequence[str]]) -> list[int]:
    """0-based index of each word's first piece in the flat piece sequence."""
    starts, n = [], 0
    for pieces in pieces_per_word:
        if not pieces:
            raise ValueError("a word with no pieces")
        starts.append(n)
        n += len(pieces)
    return starts
