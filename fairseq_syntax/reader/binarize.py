"""Binarize LAMBADA reader instances (fairseq indexed datasets, read by :mod:`.dataset`) and their dictionary."""
from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Sequence

import numpy as np
from fairseq.data import Dictionary
from fairseq.data.indexed_dataset import best_fitting_int_dtype

from ..pipeline.atomic import atomic_path
from ..data.heads_io import IndexedWriter
from .annotate import target_type
from .dataset import PARTS, prefix
from .supervision import SIGNALS, build_signals


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
    """Binarize one split from :class:`~fairseq_syntax.reader.annotate.Annotated` items."""
    # word ids as fairseq-preprocess stores them; the rest are positions or counts within one context: int16
    words = best_fitting_int_dtype(len(dictionary))
    dtypes = {p: words if p in ("context", "query") else np.int16 for p in PARTS}
    n = 0
    with ExitStack() as files:
        writers = {p: files.enter_context(IndexedWriter(prefix(data_dir, split, p), dtypes[p])) for p in PARTS}
        sup = {s: files.enter_context(IndexedWriter(prefix(data_dir, split, f"sup.{s}"), np.int16)) for s in signals}
        types_tmp = files.enter_context(atomic_path(prefix(data_dir, split, "types.jsonl")))
        types_fh = files.enter_context(open(types_tmp, "w", encoding="utf-8"))
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
    return n
