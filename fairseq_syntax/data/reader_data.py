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

import json
import os
from typing import Sequence

import numpy as np
import torch
from fairseq.data import Dictionary, FairseqDataset, data_utils, indexed_dataset

from ..reading.supervision import SIGNALS
from ..syntax.batch_codes import pad_rows, ragged_index
from .heads_io import IndexedWriter
from .packed import PackedRows, open_indexed
from .syntax_dataset import keep_last_batch

PARTS = ("context", "query", "ctypes", "answer", "sent")


def prefix(data_dir: str, split: str, part: str) -> str:
    return os.path.join(data_dir, f"{split}.{part}")


def build_dictionary(train_words, other_words, min_count: int = 1) -> Dictionary:
    """Counts from the training split only; words seen only elsewhere enter with count 0, so the model
    can give them the unknown word's embedding but still spell them for its character CNN."""
    d = Dictionary()
    counts: dict[str, int] = {}
    for w in train_words:
        counts[w] = counts.get(w, 0) + 1
    for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if c >= min_count:
            d.add_symbol(w, c)
    for w in other_words:
        if w not in d.indices:
            d.add_symbol(w, 0)
    return d


def local_types(context: Sequence[str], answer: str) -> tuple[list[int], int]:
    ids: dict[str, int] = {}
    types = [ids.setdefault(w, len(ids)) for w in context]
    return types, ids.get(answer, -1)


def write_split(data_dir: str, split: str, annotated, dictionary: Dictionary, signals=SIGNALS) -> int:
    """Binarize one split from :class:`~fairseq_syntax.reading.annotate.Annotated` items."""
    from ..reading.annotate import target_type
    from ..reading.supervision import build_signals

    writers = {p: IndexedWriter(prefix(data_dir, split, p)) for p in PARTS}
    sup = {s: IndexedWriter(prefix(data_dir, split, f"sup.{s}")) for s in signals}
    n = 0
    with open(prefix(data_dir, split, "types.jsonl"), "w", encoding="utf-8") as types_fh:
        for a in annotated:
            inst = a.instance
            writers["context"].add([dictionary.index(w) for w in inst.context])
            writers["query"].add([dictionary.index(w) for w in inst.query])
            types, ans = local_types(inst.context, inst.answer)
            writers["ctypes"].add(types)
            writers["answer"].add([ans])
            sent = np.zeros(len(inst.context), dtype=np.int64)
            for k, (s, e) in enumerate(inst.sentences):
                sent[s:e] = k
            writers["sent"].add(sent)
            for s, pairs in build_signals(a.ann, signals).items():
                sup[s].add(pairs)
            types_fh.write(json.dumps(target_type(a)) + "\n")
            n += 1
    for w in list(writers.values()) + list(sup.values()):
        w.close()
    return n


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
