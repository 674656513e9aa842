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
        # the context keeps its last max_context tokens, nearest the query
        ctx_flat, n = self.packed["context"].gather(ids)
        cut = np.maximum(n - self.max_context, 0)
        row, pos = ragged_index(n)
        keep = pos >= cut[row]
        clen = n - cut
        tc = int(clen.max())

        def context_part(name, pad):
            flat = ctx_flat if name == "context" else self.packed[name].gather(ids)[0]
            return torch.from_numpy(pad_rows(flat[keep], clen, tc, pad))

        qry_flat, qlen = self.packed["query"].gather(ids)
        ctypes = context_part("ctypes", -1)
        answer = torch.from_numpy(self.packed["answer"].gather(ids)[0])
        batch = {"id": torch.from_numpy(ids), "nsentences": b, "ntokens": int(clen.sum() + qlen.sum()),
                 "net_input": {"context": context_part("context", self.pad),
                               "query": torch.from_numpy(pad_rows(qry_flat, qlen, int(qlen.max()), self.pad)),
                               "sentence_ids": context_part("sent", -1)},
                 "ctypes": ctypes, "answer": answer,
                 "answer_mask": ctypes.eq(answer.unsqueeze(1)) & answer.ge(0).unsqueeze(1),
                 "supervision": {}}
        for sig in self.sup:
            flat, m = self.packed[f"sup.{sig}"].gather(ids)
            pairs = flat.reshape(-1, 2) - np.repeat(cut, m // 2)[:, None]
            owner = np.repeat(np.arange(b), m // 2)
            inside = (pairs >= 0).all(-1)
            pairs, owner = torch.from_numpy(pairs[inside]), torch.from_numpy(owner[inside])
            batch["supervision"][sig] = (owner, pairs[:, 0], pairs[:, 1])
        return batch
