"""LAMBADA reader instances as fairseq indexed datasets, and the dataset that batches them.

Per split, beside ``dict.txt``:
``{split}.context`` / ``{split}.query`` word ids; ``{split}.ctypes`` the local word-type id of each
context token (equal surface words share one, so pointer-sum never pools two unknown words);
``{split}.answer`` one item, the answer's type id or -1 when it is not in the context;
``{split}.sent`` the sentence number of each context token; ``{split}.sup.{Signal}`` the signal's
(row, column) pairs, flattened; ``{split}.types.jsonl`` the target type (pronoun/noun, entity).
Everything is O(tokens): no n x n matrix is stored.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import torch
from fairseq.data import Dictionary, FairseqDataset, data_utils, indexed_dataset

from ..data.packed import PackedRows, open_indexed
from ..data.syntax_dataset import keep_last_batch
from ..syntax.batch_codes import pad_rows, ragged_index

PARTS = ("context", "query", "ctypes", "answer", "sent")


def prefix(data_dir: str, split: str, part: str) -> str:
    return os.path.join(data_dir, f"{split}.{part}")


def _load(pfx: str):
    if not indexed_dataset.MMapIndexedDataset.exists(pfx):
        raise FileNotFoundError(f"{pfx}.bin/.idx: missing; prepare the data with data-prep/lambada.sh")
    return open_indexed(pfx)


class ReaderDataset(FairseqDataset):
    """Batches of (context, query, answer, supervision); masks are built per batch from index pairs."""

    def __init__(self, data_dir: str, split: str, dictionary: Dictionary, signals: Sequence[str] = (),
                 max_context: int = 400, seed: int = 1, shuffle: bool = True):
        self.parts = {p: _load(prefix(data_dir, split, p)) for p in PARTS}
        self.sup = {s: _load(prefix(data_dir, split, f"sup.{s}")) for s in signals}
        n = len(self.parts["context"])
        for name, ds in list(self.parts.items()) + [(f"sup.{s}", d) for s, d in self.sup.items()]:
            if len(ds) != n:
                raise ValueError(f"{prefix(data_dir, split, name)}: {len(ds)} items, but {split}.context has {n}")
        self.dictionary, self.pad = dictionary, dictionary.pad()
        self.max_context, self.seed, self.shuffle, self.epoch = max_context, seed, shuffle, 1
        self.csizes = np.minimum(np.array(self.parts["context"].sizes), max_context)
        self.qsizes = np.array(self.parts["query"].sizes)
        self.split = split
        self.packed = {name: PackedRows(ds, prefix(data_dir, split, name))
                       for name, ds in list(self.parts.items()) + [(f"sup.{s}", d) for s, d in self.sup.items()]}
        # The signals' pairs, moved once to the kept end of each context (max_context) and filtered, so a batch
        # only gathers them. In memory: a few ints per token, for the training split alone.
        cut = np.maximum(np.asarray(self.packed["context"].sizes) - max_context, 0)
        for s in self.sup:
            flat, m = self.packed[f"sup.{s}"].all_rows()
            pairs = flat.reshape(-1, 2) - np.repeat(cut, m // 2)[:, None]
            inside = (pairs >= 0).all(-1)
            kept = 2 * np.bincount(np.repeat(np.arange(len(m)), m // 2)[inside], minlength=len(m))
            self.packed[f"sup.{s}"] = PackedRows.from_flat(pairs[inside].reshape(-1), kept, f"sup.{s}")
        # context, ctypes and sent are written side by side: one lookup of their rows serves all three
        self._shared_layout = all(self.packed["context"].same_layout(self.packed[p]) for p in ("ctypes", "sent"))

    def __len__(self):
        return len(self.csizes)

    def __getitem__(self, i):
        return i

    def num_tokens(self, i):
        return int(self.csizes[i] + self.qsizes[i])

    def size(self, i):
        return int(self.csizes[i] + self.qsizes[i])

    @property
    def sizes(self):
        return self.csizes + self.qsizes

    def ordered_indices(self):
        if self.shuffle:
            with data_utils.numpy_seed(self.seed, self.epoch):
                order = np.random.permutation(len(self))
        else:
            order = np.arange(len(self))
        return order[np.argsort(self.csizes[order], kind="mergesort")]

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        batches = super().batch_by_size(indices, max_tokens=max_tokens, max_sentences=max_sentences,
                                        required_batch_size_multiple=required_batch_size_multiple)
        return keep_last_batch(indices, batches)

    def set_epoch(self, epoch):
        self.epoch = epoch

    @property
    def supports_prefetch(self):
        return False

    def collater(self, samples):
        """One batch from its instance ids, gathered from the mmaps and padded in numpy at once."""
        if not samples:
            return {}
        ids = np.asarray(samples, dtype=np.int64)
        b = len(ids)
        context = self.packed["context"]
        src, n = context.locate(ids) if self._shared_layout else (None, None)
        # the context keeps its last max_context tokens, nearest the query
        cut = np.maximum((n if n is not None else context.sizes[ids]) - self.max_context, 0)
        clen = context.sizes[ids] - cut
        tc = int(clen.max())
        row, pos = ragged_index(context.sizes[ids])
        keep = pos >= cut[row]
        dst = (row[keep], pos[keep] - cut[row[keep]])  # where each kept context token goes in [B, tc]

        def context_part(name, pad):
            flat = self.packed[name].take(src) if src is not None else self.packed[name].gather(ids)[0]
            out = np.full((b, tc), pad, dtype=np.int64)
            out[dst] = flat[keep]
            return out

        qry_flat, qlen = self.packed["query"].gather(ids)
        ctypes = context_part("ctypes", -1)
        answer = self.packed["answer"].gather(ids)[0]
        answer_mask = (ctypes == answer[:, None]) & (answer >= 0)[:, None]
        batch = {"id": torch.from_numpy(ids), "nsentences": b, "ntokens": int(clen.sum() + qlen.sum()),
                 "net_input": {"context": torch.from_numpy(context_part("context", self.pad)),
                               "query": torch.from_numpy(pad_rows(qry_flat, qlen, int(qlen.max()), self.pad)),
                               "sentence_ids": torch.from_numpy(context_part("sent", -1))},
                 "ctypes": torch.from_numpy(ctypes), "answer": torch.from_numpy(answer),
                 "answer_mask": torch.from_numpy(answer_mask), "supervision": {}}
        for sig in self.sup:  # pairs already moved to the kept context (see __init__)
            flat, m = self.packed[f"sup.{sig}"].gather(ids)
            pairs = torch.from_numpy(flat.reshape(-1, 2))
            batch["supervision"][sig] = (torch.from_numpy(np.repeat(np.arange(b), m // 2)), pairs[:, 0], pairs[:, 1])
        return batch
