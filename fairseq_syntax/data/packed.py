"""fairseq indexed datasets read as flat numpy arrays, so a batch's rows come out in one gather.

``MMapIndexedDataset[i]`` costs a ``torch.from_numpy`` per sentence; for side data that only the
collater needs, :class:`PackedRows` gathers all rows of a batch by fancy indexing into the mmap.
"""
from __future__ import annotations

import itertools
import os

import numpy as np
from fairseq.data import ConcatDataset, indexed_dataset

from ..syntax.batch_codes import ragged_index


def open_indexed(prefix: str):
    """An ``MMapIndexedDataset`` whose ``.bin`` is checked against its ``.idx`` (a truncated or padded
    ``.bin`` would otherwise fail deep in a training step, naming no file)."""
    if not indexed_dataset.MMapIndexedDataset.exists(prefix):
        raise FileNotFoundError(f"{prefix}.bin/.idx: missing")
    try:
        empty = os.path.getsize(indexed_dataset.data_file_path(prefix)) == 0
        ds = (_NoData if empty else indexed_dataset.MMapIndexedDataset)(prefix)
    except Exception as e:  # a corrupt .idx: bad magic, version or a short header
        raise ValueError(f"{prefix}.idx: not a fairseq index ({e})") from None
    return _checked(ds, prefix)


def check_index(prefix: str) -> None:
    """``{prefix}.idx`` reads as a fairseq index (where it exists): a cut or foreign one is named here, before
    fairseq's loader stops on numpy's "buffer is smaller than requested size", naming no file."""
    path = indexed_dataset.index_file_path(prefix)
    if not os.path.exists(path):
        return
    try:
        index = indexed_dataset.MMapIndexedDataset.Index(path)
    except Exception as e:  # bad magic, version, a header or table cut short
        raise ValueError(f"{path}: not a whole fairseq index ({e}); binarize the split again") from None
    del index


def load_text(prefix: str, dictionary, combine: bool = False):
    """fairseq's ``data_utils.load_indexed_dataset`` with every part's ``.idx`` and ``.bin`` checked first (each
    ``train``, ``train1``, ... under ``combine``); None where there is no such split."""
    from fairseq.data import data_utils

    for k in itertools.count():  # the parts fairseq's loader reads: prefix, then prefix1, prefix2, ... under combine
        part = prefix + (str(k) if k else "")
        if k and (not combine or not os.path.exists(indexed_dataset.index_file_path(part))):
            break
        check_index(part)
    return checked_indexed(data_utils.load_indexed_dataset(prefix, dictionary, combine=combine))


def checked_indexed(dataset):
    """``dataset`` as fairseq's ``data_utils.load_indexed_dataset`` returned it (one ``MMapIndexedDataset``, or a
    ``ConcatDataset`` of ``train``, ``train1``, ...), each ``.bin`` checked against its ``.idx`` as
    :func:`open_indexed` does; None stays None (no such split)."""
    for part in (dataset.datasets if isinstance(dataset, ConcatDataset) else [dataset] if dataset is not None else []):
        if isinstance(part, indexed_dataset.MMapIndexedDataset):
            _checked(part, part._path)
    return dataset


def _checked(ds, prefix: str):
    need = 0
    if len(ds):
        last = len(ds) - 1
        need = int(ds._index._pointers[last]) + int(ds._index._sizes[last]) * ds._index.dtype().itemsize
    have = os.path.getsize(indexed_dataset.data_file_path(prefix))
    if have != need:
        raise ValueError(f"{prefix}.bin: {have} bytes, but its .idx describes {need} "
                         f"({len(ds)} items); the file is truncated or does not belong to this index")
    return ds


class _NoData(indexed_dataset.MMapIndexedDataset):
    """A dataset whose items are all empty (a signal with no pairs in a split): numpy cannot map the 0-byte
    ``.bin`` that fairseq writes for it, so only the index is read."""

    def _do_init(self, path):
        self._path = path
        self._index = self.Index(indexed_dataset.index_file_path(path))
        self._bin_buffer = memoryview(b"")

    def __del__(self):
        del self._index


class PackedRows:
    """Rows of one ``MMapIndexedDataset``, or of a ``ConcatDataset`` of them (upsampling included)."""

    def __init__(self, dataset, name: str):
        if isinstance(dataset, ConcatDataset):
            self.parts = list(dataset.datasets)
            self.bounds = np.asarray(dataset.cumulative_sizes, dtype=np.int64)
            self.real = np.asarray(dataset.real_sizes, dtype=np.int64)
        else:
            self.parts = [dataset]
            self.bounds = np.asarray([len(dataset)], dtype=np.int64)
            self.real = self.bounds.copy()
        # anything else (rows built in memory, an older indexed format) is packed into one array here
        self.parts = [p if isinstance(p, (indexed_dataset.MMapIndexedDataset, _InMemory)) else _InMemory(p)
                      for p in self.parts]
        self.name = name
        self.sizes = np.concatenate([np.asarray(p.sizes, dtype=np.int64)[np.arange(n - s) % r]
                                     for p, n, s, r in zip(self.parts, self.bounds, self._starts(), self.real)])
        self._views = None

    def _starts(self):
        return np.concatenate([[0], self.bounds[:-1]])

    def __len__(self):
        return int(self.bounds[-1])

    def __getstate__(self):  # the mmap views are rebuilt in each loader worker, never pickled
        state = dict(self.__dict__)
        state["_views"] = None
        return state

    def _data(self):
        if self._views is None:
            self._views = []
            for p in self.parts:
                if isinstance(p, _InMemory):
                    self._views.append((p.data, p.offsets))
                    continue
                idx = p._index
                item = idx.dtype().itemsize
                data = np.frombuffer(p._bin_buffer, dtype=idx.dtype)
                self._views.append((data, np.asarray(idx._pointers, dtype=np.int64) // item))
        return self._views

    def gather(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """The rows ``ids`` concatenated (int64) and their lengths."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(self.parts) == 1:  # the common case: one file, a handful of numpy calls per batch
            src, lengths = self.locate(ids)
            return self.take(src), lengths
        part = np.searchsorted(self.bounds, ids, side="right")
        local = (ids - self._starts()[part]) % self.real[part]
        lengths = self.sizes[ids]
        flat = np.empty(int(lengths.sum()), dtype=np.int64)
        owner = np.repeat(part, lengths)
        within = ragged_index(lengths)[1]
        for k, (data, offsets) in enumerate(self._data()):
            rows = part == k
            if rows.any():
                sel = owner == k
                flat[sel] = data[np.repeat(offsets[local[rows]], lengths[rows]) + within[sel]]
        return flat, lengths

    @classmethod
    def from_flat(cls, flat: np.ndarray, sizes: np.ndarray, name: str) -> "PackedRows":
        """Rows already concatenated in memory (``sizes`` items each)."""
        return cls(_InMemory(flat=flat, sizes=sizes), name)

    def all_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row, concatenated (int64), and the lengths."""
        return self.gather(np.arange(len(self)))

    def locate(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in the file's data of the rows ``ids``, concatenated; their lengths). One file only."""
        offsets = self._data()[0][1]
        lengths = self.sizes[ids]
        ends = np.cumsum(lengths)
        return np.arange(ends[-1] if len(ends) else 0) + np.repeat(offsets[ids] - (ends - lengths), lengths), lengths

    def take(self, src: np.ndarray) -> np.ndarray:
        return self._data()[0][0][src].astype(np.int64, copy=False)

    def same_layout(self, other: "PackedRows") -> bool:
        """Rows of the same lengths at the same positions: one :meth:`locate` serves both."""
        return (len(self.parts) == len(other.parts) == 1 and np.array_equal(self.sizes, other.sizes)
                and np.array_equal(self._data()[0][1], other._data()[0][1]))


class _InMemory:
    """Rows of any sequence of 1-D tensors or arrays, concatenated once (or given flat with their sizes)."""

    def __init__(self, rows=None, flat=None, sizes=None):
        if rows is not None:
            arrays = [np.asarray(r, dtype=np.int64).reshape(-1) for r in rows]
            sizes = np.array([len(a) for a in arrays], dtype=np.int64)
            flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.data = flat

    def __len__(self):
        return len(self.sizes)
