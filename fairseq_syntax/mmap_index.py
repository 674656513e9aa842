"""fairseq's ``mmap`` indexed dataset format (``{prefix}.bin`` and ``{prefix}.idx``), written and its sizes read
without importing fairseq: the head codes are binarized in a process that would otherwise spend three seconds
importing fairseq for this alone. The bytes are fairseq 0.12's own (``fairseq/data/indexed_dataset.py``:
``MMapIndexedDataset.Index`` and ``MMapIndexedDatasetBuilder``); ``tests/test_mmap_index.py`` holds the two equal.

``.idx``: the magic ``MMIDIDX\\0\\0``, version 1 (<Q), the item dtype's code (<B), the item count (<Q), every
item's size (int32), every item's byte offset in ``.bin`` (int64). ``.bin``: the items' values, in order.
"""
from __future__ import annotations

import os
import struct

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
HEADER = struct.Struct("<9sQBQ")  # magic, version, dtype code, item count
DTYPE_CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
               np.dtype(np.int64): 5, np.dtype(np.float64): 6, np.dtype(np.uint16): 8, np.dtype(np.uint32): 9,
               np.dtype(np.uint64): 10}


def data_path(prefix: str) -> str:
    return prefix + ".bin"


def index_path(prefix: str) -> str:
    return prefix + ".idx"


def exists(prefix: str) -> bool:
    return os.path.exists(data_path(prefix)) and os.path.exists(index_path(prefix))


def read_sizes(prefix: str) -> np.ndarray:
    """Every item's size, from ``{prefix}.idx``; ValueError naming the file when it is not of this format."""
    path = index_path(prefix)
    with open(path, "rb") as fh:
        head = fh.read(HEADER.size)
        magic, version, _, count = HEADER.unpack(head) if len(head) == HEADER.size else (None, None, None, 0)
        if magic != MAGIC or version != 1:
            raise ValueError(f"{path}: not a fairseq mmap index (version 1)")
        data = fh.read(4 * count)
        sizes = np.frombuffer(data[: len(data) // 4 * 4], dtype=np.int32)
    if len(sizes) != count:
        raise ValueError(f"{path}: cut short ({len(sizes)} of {count} sizes)")
    return sizes


def write_index(path: str, sizes, dtype) -> None:
    """The ``.idx`` of items of ``dtype`` with these sizes, as fairseq's ``Index.writer`` writes it."""
    dtype = np.dtype(dtype)
    sizes = np.asarray(sizes, dtype=np.int64)
    pointers = np.zeros(len(sizes), dtype=np.int64)
    if len(sizes):
        pointers[1:] = np.cumsum(sizes[:-1] * dtype.itemsize)
    with open(path, "wb") as fh:
        fh.write(HEADER.pack(MAGIC, 1, DTYPE_CODES[dtype], len(sizes)))
        fh.write(sizes.astype(np.int32).tobytes(order="C"))
        fh.write(pointers.tobytes(order="C"))
