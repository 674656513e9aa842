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
ONE_TARGET_PER_TOKEN = ("DepParse",)  # a token's head; a root, or a head outside the kept context, has none


def prefix(data_dir: str, split: str, part: str) -> str:
    return os.path.join(data_dir, f"{split}.{part}")


def _load(pfx: str):
    if not indexed_dataset.MMapIndexedDataset.exists(pfx):
        raise FileNotFoundError(f"{pfx}.bin/.idx: missing; prepare the data with data-prep/lambada.sh")
    return open_indexed(pfx)


class ReaderDataset(FairseqDataset):
    """Batches of (context, query, answer); the supervision of a batch is gathered on the model's device
    (:meth:`signal_targets`), from index pairs and head columns, and its masks built there."""

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
        self.packed = {name: PackedRows(ds, prefix(data_dir, split, name)) for name, ds in self.parts.items()}
        # The signals, moved once to the kept end of each context (max_context). They never enter a batch: the
        # criterion asks signal_targets() for a batch's ids, which gathers them on the model's device from tables
        # moved there once. DepParse has one target per token (its head): one int per context token, laid out like
        # the context. The others are (row, column) int32 pairs, one array signal after signal.
        context = self.packed["context"]
        sizes = np.asarray(context.sizes, dtype=np.int64)
        cut = np.maximum(sizes - max_context, 0)
        self.tables = {"context_start": np.cumsum(sizes) - sizes, "cut": cut, "kept": sizes - cut}
        self.pair_signals, kept_pairs, counts = [], [], []
        for s in self.sup:
            flat, m = PackedRows(self.sup[s], f"sup.{s}").all_rows()
            owner = np.repeat(np.arange(len(m)), m // 2)
            pairs = flat.reshape(-1, 2) - cut[owner][:, None]
            inside = (pairs >= 0).all(-1)
            pairs, owner = pairs[inside], owner[inside]
            if s in ONE_TARGET_PER_TOKEN:
                at = self.tables["context_start"][owner] + pairs[:, 0] + cut[owner]
                if len(np.unique(at)) != len(at):
                    bad = int(owner[np.flatnonzero(np.diff(np.sort(at)) == 0)[0]]) if len(at) else -1
                    raise ValueError(f"{prefix(data_dir, split, 'sup.' + s)}: item {bad} gives a token two "
                                     f"{s} targets; {s} has one per token")
                column = np.full(int(sizes.sum()), -1, dtype=np.int32)
                column[at] = pairs[:, 1]
                self.tables[s] = column
            else:
                self.pair_signals.append(s)
                kept_pairs.append(pairs.astype(np.int32))
                counts.append(np.bincount(owner, minlength=len(m)))
        self.tables["pairs"] = np.concatenate(kept_pairs) if kept_pairs else np.zeros((0, 2), dtype=np.int32)
        pair_counts = np.array(counts, dtype=np.int64).reshape(len(self.pair_signals), n)  # [signal, item]
        self.tables["pair_counts"] = pair_counts
        self.tables["pair_starts"] = (np.cumsum(pair_counts.ravel()) - pair_counts.ravel()).reshape(pair_counts.shape)
        self._on_device = {}
        # context, ctypes and sent are written side by side: one lookup of their rows serves all three
        self._shared_layout = all(context.same_layout(self.packed[p]) for p in ("ctypes", "sent"))

    def __getstate__(self):  # loader workers never need the device copies
        state = dict(self.__dict__)
        state["_on_device"] = {}
        return state

    def signal_targets(self, ids: torch.Tensor, width: int) -> dict:
        """Each loaded signal of the instances ``ids``, on their device, for :func:`supervision_targets`:
        DepParse as a (B, width) column of heads (-1: none), the others as (pairs per instance, pairs).

        The tables go to that device once; a batch then costs the loader nothing, and the device a gather."""
        dev = ids.device
        key = str(dev)
        if key not in self._on_device:
            self._on_device[key] = {k: torch.from_numpy(np.ascontiguousarray(v)).to(dev)
                                    for k, v in self.tables.items()}
        t = self._on_device[key]
        ids = ids.long()
        out = {}
        for sig in ONE_TARGET_PER_TOKEN:
            if sig in self.sup:
                pos = torch.arange(width, device=dev)
                first = t["context_start"][ids] + t["cut"][ids]
                inside = pos.unsqueeze(0) < t["kept"][ids].unsqueeze(1)
                at = torch.where(inside, first.unsqueeze(1) + pos.unsqueeze(0), torch.zeros_like(first).unsqueeze(1))
                out[sig] = t[sig][at].masked_fill(~inside, -1)
        if self.pair_signals:
            b = len(ids)
            counts = t["pair_counts"][:, ids]
            lens = counts.reshape(-1)
            ends = lens.cumsum(0)
            bounds = [0] + ends[b - 1::b].tolist()  # the one host synchronisation: the sizes of the outputs
            offset = t["pair_starts"][:, ids].reshape(-1) - (ends - lens)
            src = torch.arange(bounds[-1], device=dev) + torch.repeat_interleave(offset, lens, output_size=bounds[-1])
            pairs = t["pairs"][src]
            for k, sig in enumerate(self.pair_signals):
                out[sig] = (counts[k], pairs[bounds[k]:bounds[k + 1]])
        return out

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
    def can_reuse_epoch_itr_across_epochs(self):
        """No: each epoch's batches are made from that epoch's order. fairseq would otherwise keep, in one
        process, the batches of the epoch it started in, while a run resumed mid-epoch makes the resumed
        epoch's batches and skips to its position in them: a resume would repeat some instances of that
        epoch, skip others, and train a different model than the same run uninterrupted."""
        return False

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
        dst = row[keep] * tc + pos[keep] - cut[row[keep]]  # where each kept context token goes in [B, tc], flat

        def context_part(name, pad):
            flat = self.packed[name].take(src) if src is not None else self.packed[name].gather(ids)[0]
            out = np.full(b * tc, pad, dtype=np.int64)
            out[dst] = flat[keep]
            return out.reshape(b, tc)

        qry_flat, qlen = self.packed["query"].gather(ids)
        ctypes = context_part("ctypes", -1)
        answer = self.packed["answer"].gather(ids)[0]
        answer_mask = (ctypes == answer[:, None]) & (answer >= 0)[:, None]
        batch = {"id": torch.from_numpy(ids), "nsentences": b, "ntokens": int(clen.sum() + qlen.sum()),
                 "net_input": {"context": torch.from_numpy(context_part("context", self.pad)),
                               "query": torch.from_numpy(pad_rows(qry_flat, qlen, int(qlen.max()), self.pad)),
                               "sentence_ids": torch.from_numpy(context_part("sent", -1))},
                 "ctypes": torch.from_numpy(ctypes), "answer": torch.from_numpy(answer),
                 "answer_mask": torch.from_numpy(answer_mask)}
        return batch
