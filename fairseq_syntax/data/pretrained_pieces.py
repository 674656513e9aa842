"""A pretrained encoder's own subwords, chosen by what its folder holds, with the parse's heads on them.

- ``vocab.txt``: BERT's WordPiece (a model lifted by ``fairseq-syntax-convert-hf``);
- ``sentencepiece.bpe.model``: sentencepiece, as fairseq distributes XLM-R (and as a lifted XLM-R holds it);
- ``vocab.json`` and ``merges.txt``: GPT-2's byte-level BPE of a lifted Hugging Face RoBERTa, whose ``dict.txt``
  holds the pieces themselves;
- otherwise GPT-2's byte-level BPE, as fairseq distributes RoBERTa and BART: ``encoder.json`` and ``vocab.bpe`` from
  the folder where it has them, else downloaded from fairseq's own addresses (and cached) by fairseq's own GPT-2
  encoder. The pieces are written as fairseq's ``multiprocessing_bpe_encoder.py`` writes them: the BPE ids.

Every scheme gives the symbols of the model's ``dict.txt`` and one head code per symbol. Byte-level BPE and
sentencepiece read the text itself where it is given (the raw line the parser's words came from), so the pieces are
those the model was pretrained on; each piece is placed on its word by bytes (``syntax/byte_bpe.py``), and a word
that is not the text's own is named with its sentence.
"""
from __future__ import annotations

import os
from typing import Sequence

from ..syntax.alignment import align_heads_to_word_starts
from ..syntax.byte_bpe import byte_bpe_head_codes, gpt2_pieces, word_char_spans
from ..text_prep.wordpiece import WordPieceTokenizer, clean_text, word_starts

SENTENCEPIECE_MODEL = "sentencepiece.bpe.model"
GPT2_FILES = ("encoder.json", "vocab.bpe")
HF_BPE_FILES = ("vocab.json", "merges.txt")  # the same two files under Hugging Face's names
SUBWORD_STYLE = {"wordpiece": "wordpiece", "sentencepiece": "sentencepiece", "gpt2": "byte_bpe",
                 "hf_bpe": "byte_bpe"}  # as a corpus's preprocessing record names it


def scheme_of(folder: str) -> str:
    """``wordpiece``, ``sentencepiece``, ``hf_bpe`` or ``gpt2``: what a pretrained folder's files say it reads."""
    if os.path.isfile(os.path.join(folder, "vocab.txt")):
        return "wordpiece"
    if os.path.isfile(os.path.join(folder, SENTENCEPIECE_MODEL)):
        return "sentencepiece"
    if all(os.path.isfile(os.path.join(folder, f)) for f in HF_BPE_FILES):
        return "hf_bpe"
    return "gpt2"


def scheme_files(folder: str) -> list[str]:
    """The files the folder's subwords are read from (a stage's inputs): a change in any redoes the pieces."""
    scheme = scheme_of(folder)
    if scheme == "wordpiece":
        return [os.path.join(folder, "vocab.txt")]
    if scheme == "sentencepiece":
        return [os.path.join(folder, SENTENCEPIECE_MODEL)]
    if scheme == "hf_bpe":
        return [os.path.join(folder, f) for f in HF_BPE_FILES]
    return [os.path.join(folder, f) for f in GPT2_FILES if os.path.isfile(os.path.join(folder, f))]


def one_line(text: str) -> str:
    """The text with its line breaks as spaces (a text file holds it on one line; no word changes)."""
    return text.replace("\r", " ").replace("\n", " ")


def word_runs_text(text: str, runs: Sequence[Sequence[str]], where: str) -> list[str]:
    """Each run of words' own text in ``text`` (cleaned as ``clean_text``), from its first word's first character to
    its last word's last: the words are the text's, in order, with only white space between them."""
    text = clean_text(text)
    spans = iter(word_char_spans(text, [w for run in runs for w in run], where))
    out = []
    for run in runs:
        own = [next(spans) for _ in run]
        out.append(text[own[0][0]:own[-1][1]] if own else "")
    return out


class PretrainedPieces:
    """``encode(words, heads, where, text)``: (the dictionary's symbols, one head code each)."""

    def __init__(self, folder: str, lower: bool = True):
        self.folder, self.scheme = folder, scheme_of(folder)
        if self.scheme == "wordpiece":
            self.wordpiece = WordPieceTokenizer(os.path.join(folder, "vocab.txt"), lower=lower)
        elif self.scheme == "sentencepiece":
            import sentencepiece

            self.spm = sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, SENTENCEPIECE_MODEL))
        elif self.scheme == "hf_bpe":
            from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

            self.gpt2 = get_encoder(*(os.path.join(folder, f) for f in HF_BPE_FILES))
        else:
            self.gpt2 = _gpt2_encoder(folder)

    def encode(self, words: Sequence[str], heads: Sequence[int], where: str,
               text: str | None = None) -> tuple[list[str], list[int]]:
        if self.scheme == "wordpiece":
            per_word = self.wordpiece.split_words(list(words))
            flat = [p for ps in per_word for p in ps]
            return flat, align_heads_to_word_starts(list(heads), word_starts(per_word), len(flat), where)
        text = " ".join(words) if text is None else clean_text(text)
        if self.scheme == "sentencepiece":
            symbols, pieces = self.sentencepiece_pieces(text, where)
        else:
            ids = self.gpt2.encode(text)
            pieces = gpt2_pieces(self.gpt2, text, ids)
            # fairseq's dict.txt holds the ids; a lifted Hugging Face model's, the pieces
            symbols = [self.gpt2.decoder[i] for i in ids] if self.scheme == "hf_bpe" else [str(i) for i in ids]
        return symbols, byte_bpe_head_codes(text, words, heads, pieces, where)

    def sentencepiece_pieces(self, text: str, where: str) -> tuple[list[str], list[bytes]]:
        """The pieces and the bytes of the text each stands for. sentencepiece's offsets are the raw text's bytes;
        what its normalization drops lies between surfaces, so each piece takes the gap before it and the last the
        rest: the pieces tile the text. A "▁" marks a word's start, so a piece whose bytes are white space alone (a
        lone "▁", or the "▁f" of a normalized "ﬁ") passes them on and goes with the word after it."""
        data = text.encode("utf-8")
        try:
            proto = self.spm.encode(text, return_type="proto")
        except TypeError:  # sentencepiece before 0.2
            proto = self.spm.encode(text, out_type="immutable_proto")
        symbols = [p.piece for p in proto.pieces]
        if not symbols:
            raise ValueError(f"{where}: sentencepiece gives no piece for the text {text[:40]!r}")
        ends, at = [], 0
        for p in proto.pieces:
            at = max(at, min(p.end, len(data)))
            ends.append(at)
        ends[-1] = len(data)
        starts = [0] + ends[:-1]
        for i in range(len(symbols) - 1):  # white space alone: on to the next piece
            if not data[starts[i]:ends[i]].strip():
                starts[i + 1], ends[i] = starts[i], starts[i]
        return symbols, [data[a:b] for a, b in zip(starts, ends)]


def _gpt2_encoder(folder: str):
    """fairseq's own GPT-2 encoder over the folder's encoder.json and vocab.bpe, else fairseq's downloads."""
    from fairseq.data.encoders.gpt2_bpe import DEFAULT_ENCODER_JSON, DEFAULT_VOCAB_BPE, GPT2BPE, GPT2BPEConfig

    given = {f: os.path.join(folder, f) for f in GPT2_FILES if os.path.isfile(os.path.join(folder, f))}
    if len(given) == 1:
        raise ValueError(f"{folder} has {next(iter(given))} but not {(set(GPT2_FILES) - set(given)).pop()}: GPT-2's "
                         "BPE needs both (or neither, to download fairseq's)")
    cfg = GPT2BPEConfig(gpt2_encoder_json=given.get("encoder.json", DEFAULT_ENCODER_JSON),
                        gpt2_vocab_bpe=given.get("vocab.bpe", DEFAULT_VOCAB_BPE))
    try:
        return GPT2BPE(cfg).bpe
    except Exception as e:  # (fairseq's download raises whatever requests or urllib raise)
        raise ValueError(f"{folder} has no encoder.json and vocab.bpe, and fairseq's download of GPT-2's failed "
                         f"({type(e).__name__}: {str(e)[:120]}): put the two files into {folder}") from None
