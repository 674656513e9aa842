"""Collate subword head codes for a whole batch in a few numpy operations.

The loader hands the collater one flat array of the batch's stored codes (1-based positions within
each sentence, see :mod:`.alignment`) and their lengths. Shifting to batch columns, cutting a
truncated source and padding are done over the whole batch at once: a per-sentence loop of small
tensor operations is what held a GPU back at ~1,300 sentences per batch.
"""
from __future__ import annotations

import numpy as np


def ragged_index(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, position within row) of every element of the rows' concatenation."""
    lengths = np.asarray(lengths, dtype=np.int64)
    row = np.repeat(np.arange(len(lengths)), lengths)
    pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return row, pos


def check_code_range(flat: np.ndarray, lengths: np.ndarray, names) -> None:
    """Raise ``ValueError`` naming the sentence if a code points outside its sentence (a corrupt side file).

    ``names(k)`` describes row ``k`` (the file and the sentence number)."""
    if not flat.size:
        return
    row, _ = ragged_index(lengths)
    bad = np.nonzero((np.abs(flat) > np.asarray(lengths)[row]) | (flat == 0))[0]
    if len(bad):
        k = int(row[bad[0]])
        raise ValueError(f"{names(k)}: head code {int(flat[bad[0]])} outside 1..{int(lengths[k])} (or 0): the side "
                         "file is corrupt or does not belong to this text; write it again with "
                         "fairseq-syntax-binarize-heads")


def place_codes(out: np.ndarray, flat: np.ndarray, lengths: np.ndarray, body: np.ndarray,
                first_col: np.ndarray) -> None:
    """Write each row's codes into ``out`` [B, T] from column ``first_col[k]``, shifted to batch columns.

    Only the first ``body[k]`` codes of row k are kept (a source cut by truncation); a word whose
    head was cut off becomes a root, so every row stays a tree.
    """
    row, pos = ragged_index(lengths)
    body, first_col = np.asarray(body, dtype=np.int64), np.asarray(first_col, dtype=np.int64)
    keep = pos < body[row]
    row, pos, c = row[keep], pos[keep], np.asarray(flat, dtype=np.int64)[keep]
    c = np.where(c > body[row], pos + 1, c)
    col = first_col[row]
    out[row, col + pos] = c + col * np.sign(c)


def collate_codes(flat: np.ndarray, lengths: np.ndarray, body: np.ndarray, first_col: np.ndarray,
                  width: int) -> np.ndarray:
    """[B, width] int64 codes, 0 at BOS, EOS, separators and padding (see :func:`place_codes`)."""
    out = np.zeros((len(lengths), width), dtype=np.int64)
    place_codes(out, flat, lengths, body, first_col)
    return out


def pad_rows(flat: np.ndarray, lengths: np.ndarray, width: int, pad, left_pad: bool = False,
             dtype=np.int64) -> np.ndarray:
    """Ragged rows into a [B, width] matrix filled with ``pad``, in one scatter."""
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.full((len(lengths), width), pad, dtype=dtype)
    row, pos = ragged_index(lengths)
    out[row, pos + (width - lengths[row] if left_pad else 0)] = flat
    return out
