"""Subword head codes for sentence(-pair) classification inputs, assembled like the tokens.

fairseq's ``sentence_prediction`` builds ``<s> input0 </s> [sep] input1 </s>`` from the
binarized inputs; this dataset builds the matching codes (specials get 0), so the masks
in the model line up with ``src_tokens`` column for column. Items are indices: the
collater gathers a batch's codes from the mmap and assembles them in numpy at once.
"""
from __future__ import annotations

import numpy as np
import torch
from fairseq.data import FairseqDataset

from ..syntax.batch_codes import check_code_range, place_codes, ragged_index
from .packed import PackedRows


class _IndexItems(FairseqDataset):
    """Items are their own indices (the collater gathers the batch); sizes come from ``self._sizes``."""

    @property
    def sizes(self):
        return self._sizes

    def __len__(self):
        return len(self._sizes)

    def num_tokens(self, index):
        return int(self._sizes[index])

    def size(self, index):
        return int(self._sizes[index])

    def __getitem__(self, index):
        return index


class AssembledCodesDataset(_IndexItems):
    def __init__(self, heads0, heads1=None, lead: int = 1, separator: int = 0, max_positions: int | None = None,
                 name: str = "heads"):
        if heads1 is not None and len(heads1) != len(heads0):
            raise ValueError(f"{name}: input0 has {len(heads0)} sentences, input1 {len(heads1)}")
        self.heads0 = PackedRows(heads0, name)
        self.heads1 = PackedRows(heads1, name.replace("input0", "input1")) if heads1 is not None else None
        self.lead, self.separator = lead, separator
        self.max_positions = max_positions
        self.name = name
        sizes = self.heads0.sizes + lead + 1
        if heads1 is not None:
            sizes = sizes + self.heads1.sizes + separator + 1
        self._sizes = np.minimum(sizes, max_positions) if max_positions else sizes

    def matrix(self, ids) -> np.ndarray:
        """[B, max size] int64 codes of the rows ``ids``, right-padded with 0 as ``RightPadDataset`` pads tokens."""
        ids = np.asarray(ids, dtype=np.int64)
        width = int(self._sizes[ids].max()) if len(ids) else 0
        out = np.zeros((len(ids), width), dtype=np.int64)
        limit = self.max_positions or np.iinfo(np.int64).max
        first = np.full(len(ids), self.lead, dtype=np.int64)
        for rows in (self.heads0, self.heads1):
            if rows is None:
                break
            flat, n = rows.gather(ids)
            check_code_range(flat, n, lambda k, r=rows: f"{r.name}: sentence {int(ids[k]) + 1}")
            # a cut input (--shorten-method truncate) keeps its first codes; heads past the cut become roots
            body = np.clip(np.minimum(n, limit - first), 0, None)
            place_codes(out, flat, n, body, first)
            first = first + n + 1 + self.separator
        return out

    def collater(self, samples):
        return torch.from_numpy(self.matrix(samples))


class AssembledInputDataset(_IndexItems):
    """``net_input`` of sentence(-pair) classification, built per batch in numpy: ``<s> a </s> [sep] b </s>``
    as fairseq's PrependToken, ConcatSentences, Truncate and RightPad datasets build it (identical batches,
    tested), without a tensor per sentence, and the matching :class:`AssembledCodesDataset` codes."""

    def __init__(self, tokens0, tokens1, codes: AssembledCodesDataset, pad: int, init_token: int | None = None,
                 separator_token: int | None = None, max_positions: int | None = None, name: str = "input0"):
        self.rows = [PackedRows(tokens0, name)]
        self.leads = [init_token]
        sizes = self.rows[0].sizes + (init_token is not None)
        if tokens1 is not None:
            self.rows.append(PackedRows(tokens1, name.replace("input0", "input1")))
            self.leads.append(separator_token)
            sizes = sizes + self.rows[1].sizes + (separator_token is not None)
        self.codes, self.pad, self.max_positions = codes, pad, max_positions
        self._sizes = np.minimum(sizes, max_positions) if max_positions else sizes

    def collater(self, samples):
        ids = np.asarray(samples, dtype=np.int64)
        b = len(ids)
        width = int(self._sizes[ids].max()) if b else 0
        limit = self.max_positions or np.iinfo(np.int64).max
        out = np.full(b * width, self.pad, dtype=np.int64)
        col = np.zeros(b, dtype=np.int64)
        for rows, lead in zip(self.rows, self.leads):
            if lead is not None:  # <s> before input0, the separator before input1
                inside = np.flatnonzero(col < limit)
                out[inside * width + col[inside]] = lead
                col = col + 1
            flat, n = rows.gather(ids)
            row, pos = ragged_index(n)
            c = col[row] + pos
            keep = c < limit  # --shorten-method truncate keeps the first max_positions tokens
            out[row[keep] * width + c[keep]] = flat[keep]
            col = col + n
        return {"src_tokens": torch.from_numpy(out.reshape(b, width)),
                "src_lengths": torch.from_numpy(np.minimum(col, limit)),
                "src_heads": self.codes.collater(samples)}


class SizeSumDataset(FairseqDataset):
    """``ntokens``: the batch's summed sizes, from the sizes array (no tensor per item)."""

    def __init__(self, sizes: np.ndarray):
        self.sizes = np.asarray(sizes)

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, index):
        return index

    def collater(self, samples):
        return int(self.sizes[np.asarray(samples, dtype=np.int64)].sum())


class ClassLabelDataset(FairseqDataset):
    """Targets [B, 1] of single-label classification from a binarized ``label`` split (rows ``label </s>``),
    as fairseq's Offset(Strip(labels)) datasets collate them, gathered per batch."""

    def __init__(self, labels, offset: int, name: str = "label"):
        self.rows = PackedRows(labels, name)
        bad = np.flatnonzero(self.rows.sizes != 2)
        if len(bad):
            i = int(bad[0])
            raise ValueError(f"{name}: sentence {i + 1} has {int(self.rows.sizes[i]) - 1} labels where a sentence "
                             "classification split has one (token-labeled data, like data-prep/conll2003.sh's, is "
                             "trained with --task syntax_token_labeling and scored with fairseq-syntax-ner-eval)")
        self.offset = offset

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return index

    def collater(self, samples):
        flat, _ = self.rows.gather(np.asarray(samples, dtype=np.int64))
        return torch.from_numpy(flat.reshape(-1, 2)[:, :1] + self.offset)
