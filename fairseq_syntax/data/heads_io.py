"""Subword head codes as fairseq indexed datasets, one small integer per token, beside ``.bin/.idx``."""
from __future__ import annotations

import os
import re
from contextlib import ExitStack

import numpy as np

from .. import mmap_index
from ..pipeline.atomic import atomic_path
from ..syntax.alignment import check_subword_heads
from ..text_io import text_lines

HEADS_SUFFIX = "heads"


def heads_prefix(data_dir: str, split: str, src: str, tgt: str, suffix: str = HEADS_SUFFIX) -> str:
    """``{data}/{split}.{src}-{tgt}.{src}.heads`` (the ``.bin``/``.idx`` pair beside the source text)."""
    return os.path.join(data_dir, f"{split}.{src}-{tgt}.{src}.{suffix}")


def text_prefix(data_dir: str, split: str, src: str, tgt: str) -> str:
    return os.path.join(data_dir, f"{split}.{src}-{tgt}.{src}")


def load_heads(prefix: str, prep: str = "data-prep/multi30k.sh or wmt14.sh"):
    """``prep``: the data-prep script of the task's corpora, which the hint for a missing side file names."""
    from fairseq.data import indexed_dataset

    from .packed import open_indexed

    if not indexed_dataset.MMapIndexedDataset.exists(prefix):
        how = (f"the random-tree control: prepare it with {prep} --random-trees SEED" if re.search(r"rand\w*$", prefix)
               else f"write it with {prep} (or fairseq-syntax-binarize-heads)")
        raise FileNotFoundError(f"{prefix}.bin/.idx: missing syntax side file; {how}")
    return open_indexed(prefix)


def load_tokens_and_heads(prefix: str, dictionary, suffix: str = HEADS_SUFFIX, combine: bool = False,
                          prep: str = "its data-prep script"):
    """The binarized text at ``prefix`` and its heads side file ``prefix.suffix``, checked against each other
    ((None, None) where there is no text: an optional input such as a GLUE task's ``input1``)."""
    from .packed import load_text

    tokens = load_text(prefix, dictionary, combine)
    if tokens is None:
        return None, None
    heads = load_heads(f"{prefix}.{suffix}", prep)
    check_sizes(heads.sizes, tokens.sizes, f"{prefix}.{suffix}.bin", prefix + ".bin")
    return tokens, heads


def check_sizes(heads_sizes, src_sizes, heads_name: str, src_name: str, eos: int = 1) -> None:
    """Each sentence's heads cover its source tokens, except the EOS fairseq-preprocess appends."""
    heads_sizes = np.asarray(heads_sizes)
    src_sizes = np.asarray(src_sizes)
    if len(heads_sizes) != len(src_sizes):
        raise ValueError(f"{heads_name}: {len(heads_sizes)} sentences, but {src_name} has {len(src_sizes)}")
    bad = np.nonzero(heads_sizes + eos != src_sizes)[0]
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"{heads_name}: sentence {i + 1} (line {i + 1}) has {heads_sizes[i]} head codes but {src_name} has "
            f"{src_sizes[i] - eos} tokens (+EOS); {len(bad)} sentences mismatch. Were the heads aligned to the "
            "same BPE text that was binarized?"
        )


class IndexedWriter:
    """Items into ``{prefix}.bin/.idx``, written under temporary names that :meth:`close` renames into place.

    Used as a context manager, a block that fails removes the temporary files instead."""

    def __init__(self, path_prefix: str, dtype=np.int32):
        self.prefix = path_prefix
        self._files = ExitStack()
        self._bin = self._files.enter_context(atomic_path(mmap_index.data_path(path_prefix)))
        self._idx = self._files.enter_context(atomic_path(mmap_index.index_path(path_prefix)))
        self._data = open(self._bin, "wb")
        # unwound first: the index is written (and the .bin closed) before either file is renamed or removed;
        # if writing it fails, the temporary files go too
        self._files.callback(self._finish)
        self.dtype, self.items, self.sizes = np.dtype(dtype), 0, []

    def _finish(self) -> None:
        self._data.close()
        mmap_index.write_index(self._idx, self.sizes, self.dtype)

    def add(self, values) -> None:
        values = np.asarray(values, dtype=np.int64).reshape(-1)
        info = np.iinfo(self.dtype)
        if len(values) and (values.min() < info.min or values.max() > info.max):
            bad = values[(values < info.min) | (values > info.max)][0]
            raise ValueError(f"{self.prefix}.bin: item {self.items} holds {bad}, outside {self.dtype.name} "
                             f"({info.min}..{info.max}); nothing was written")
        self._data.write(values.astype(self.dtype).tobytes(order="C"))
        self.sizes.append(len(values))
        self.items += 1

    def close(self) -> None:
        self._files.close()

    def abort(self) -> None:
        # finished under the temporary names, which are then dropped
        err = RuntimeError(f"{self.prefix}: abandoned")
        self._files.__exit__(RuntimeError, err, None)  # each atomic_path sees a failure and removes its file

    def __enter__(self) -> "IndexedWriter":
        return self

    def __exit__(self, kind, value, tb) -> None:
        self.close() if kind is None else self.abort()


def binarize_heads(heads_text: str, src_prefix: str, out_prefix: str, random_trees: "int | None" = None) -> int:
    """Write ``heads_text`` (codes, one line per sentence) as an indexed dataset, checked against ``src_prefix``.

    ``random_trees`` (a seed) replaces every sentence's tree by a random one over the same words: the
    control run of SG-Net (see :mod:`fairseq_syntax.syntax.random_trees`).
    """
    rng = None
    if random_trees is not None:
        from ..syntax.random_trees import randomize_subword_heads

        rng = np.random.default_rng(random_trees)
    if not mmap_index.exists(src_prefix):
        raise FileNotFoundError(f"{src_prefix}.bin/.idx: binarized source not found (run fairseq-preprocess first)")
    src_sizes = mmap_index.read_sizes(src_prefix)
    rows = []
    for n, line in enumerate(text_lines(heads_text), 1):
        try:
            codes = [int(x) for x in line.split()]
        except ValueError:
            raise ValueError(f"{heads_text}:{n}: not a line of integers") from None
        check_subword_heads(codes, f"{heads_text}:{n}")
        if rng is not None:
            codes = randomize_subword_heads(codes, rng, f"{heads_text}:{n}")
        rows.append(codes)
    check_sizes([len(r) for r in rows], src_sizes, heads_text, src_prefix + ".bin")
    longest = max((len(r) for r in rows), default=0)
    dtype = np.int16 if longest < np.iinfo(np.int16).max else np.int32
    with IndexedWriter(out_prefix, dtype) as writer:
        for r in rows:
            writer.add(r)
    return len(rows)
