"""Entity spans from IOB2/IOB1/IOBES tag sequences, and CoNLL-style span F1 (conlleval's counting)."""
from __future__ import annotations

from typing import Iterable, Sequence


def spans(tags: Sequence[str]) -> set[tuple[str, int, int]]:
    """(type, start, end) of every chunk; an I- that does not continue a chunk of its type starts one
    (conlleval's reading, so IOB1 and ill-formed predictions are counted as conlleval counts them)."""
    out, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, t = tag.partition("-") if tag != "O" else ("O", "", "")
        begins = prefix in ("B", "S") or (prefix in ("I", "E") and (kind != t or start is None))
        if start is not None and (prefix == "O" or begins):
            out.add((kind, start, i))
            start, kind = None, None
        if begins:
            start, kind = i, t
        if prefix in ("E", "S") and start is not None:
            out.add((kind, start, i + 1))
            start, kind = None, None
    return out


def span_counts(gold: Iterable[Sequence[str]], pred: Iterable[Sequence[str]]) -> tuple[int, int, int]:
    """(correct, predicted, gold) chunk counts over sentences."""
    tp = n_pred = n_gold = 0
    for g, p in zip(gold, pred):
        gs, ps = spans(g), spans(p)
        tp += len(gs & ps)
        n_pred += len(ps)
        n_gold += len(gs)
    return tp, n_pred, n_gold


def f1(tp: float, n_pred: float, n_gold: float) -> float:
    return 0.0 if tp == 0 else 200.0 * tp / (n_pred + n_gold)
