"""The scores the evaluation commands report and the summaries recompute, in one place: entity spans from
IOB2/IOB1/IOBES tags with CoNLL span F1 (conlleval's counting), and Matthews correlation (CoLA)."""
from __future__ import annotations

import math
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


def tag_scheme(rows: Iterable[Sequence[str]]) -> str:
    """The scheme gold tags are written in: IOBES if any E-/S-, IOB1 if some entity opens with I- (the original
    CoNLL-2003 release), else IOB2 (every entity opens with B-, as the copy the tests read is)."""
    iob1 = False
    for row in rows:
        prev = "O"
        for tag in row:
            if tag[:2] in ("E-", "S-"):
                return "IOBES"
            if tag.startswith("I-") and (prev == "O" or prev[2:] != tag[2:]):
                iob1 = True
            prev = tag
    return "IOB1" if iob1 else "IOB2"


def prf(tp: int, n_pred: int, n_gold: int) -> dict:
    """Precision, recall and F1 in percent, as conlleval prints them (0 where a count is 0)."""
    return {"precision": 100.0 * tp / n_pred if n_pred else 0.0, "recall": 100.0 * tp / n_gold if n_gold else 0.0,
            "f1": f1(tp, n_pred, n_gold), "correct": tp, "predicted": n_pred, "gold": n_gold}


def entity_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict:
    """conlleval's figures: overall and per entity type, chunks counted as ``spans`` reads them, and token
    accuracy. Sentences must pair up word for word."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences against {len(pred)} predicted")
    by_type: dict = {}  # type: [correct, predicted, gold]
    n_tok = ok_tok = 0
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i + 1}: {len(g)} gold tags against {len(p)} predicted")
        gs, ps = spans(g), spans(p)
        n_tok += len(g)
        ok_tok += sum(a == b for a, b in zip(g, p))
        for k, found in enumerate((gs & ps, ps, gs)):
            for kind, *_ in found:
                by_type.setdefault(kind, [0, 0, 0])[k] += 1
    overall = [sum(v[k] for v in by_type.values()) for k in range(3)]  # every chunk has one type
    return {**prf(*overall), "token_accuracy": 100.0 * ok_tok / n_tok if n_tok else 0.0,
            "types": {k: prf(*v) for k, v in sorted(by_type.items())}}


def matthews(gold, pred) -> float:
    """Matthews correlation in percent (GLUE's CoLA metric), multi-class by Gorodkin's formula; 0 where a
    margin is constant, as scikit-learn returns it."""
    import numpy as np

    gold, pred = np.asarray(gold), np.asarray(pred)
    k = int(max(gold.max(initial=0), pred.max(initial=0))) + 1
    c = np.zeros((k, k), dtype=np.int64)
    np.add.at(c, (gold, pred), 1)
    t, p, n, right = c.sum(1), c.sum(0), c.sum(), np.trace(c)
    den = math.sqrt(float(n * n - (p * p).sum())) * math.sqrt(float(n * n - (t * t).sum()))
    return 0.0 if den == 0 else 100.0 * float(right * n - (t * p).sum()) / den


def positive_f1(gold, pred, positive) -> float:
    """F1 of the positive class in percent (GLUE's MRPC and QQP F1): 0 where it has no true positive."""
    tp = sum(g == positive and q == positive for g, q in zip(gold, pred))
    n_pred = sum(q == positive for q in pred)
    n_gold = sum(g == positive for g in gold)
    return f1(tp, n_pred, n_gold)


def pearson(x, y) -> float:
    """Pearson's r in percent (GLUE's STS-B metric); 0 where either side is constant."""
    import numpy as np

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"Pearson's r needs two equal-length series of 2 or more values, got {len(x)} and {len(y)}")
    dx, dy = x - x.mean(), y - y.mean()
    den = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    return 0.0 if den == 0 else 100.0 * float((dx * dy).sum()) / den


def ranks(x):
    """Ranks from 1, ties given their mean rank (as scipy.stats.rankdata)."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_x)) + 1]
    ends = np.r_[starts[1:], len(x)]
    out = np.empty(len(x), dtype=np.float64)
    for s, e in zip(starts, ends):
        out[order[s:e]] = (s + e + 1) / 2.0
    return out


def spearman(x, y) -> float:
    """Spearman's rho in percent: Pearson's r of the ranks, ties at their mean rank."""
    return pearson(ranks(x), ranks(y))
