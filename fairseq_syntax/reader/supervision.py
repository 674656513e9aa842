"""The five attention-supervision signals of Wang et al. (2020), as (row, column) index pairs.

Every signal is a sparse 0/1 matrix over the context tokens; only its non-zero cells are kept
(``int32`` array of shape ``(m, 2)``, rows sorted), so storage is O(tokens), not O(n^2). Mentions
and arguments outside the context (in the query) are dropped: supervision is on the context.

Choices the paper leaves open, fixed here:
- DepParse: a root token has no target (its row is not supervised).
- CorefAll: pairs of *distinct* mention heads of one chain; a chain with one head in the context gives none.
- Narrative: rows are event arguments (core dependents of a verb that are mention heads); targets are
  the predicates of every argument in the same chain, the argument's own predicate included.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

SIGNALS = ("DepParse", "CorefAll", "CorefPrev", "CorefNext", "Narrative")
# core arguments in UD (stanza) and in spaCy's ClearNLP labels
ARGUMENT_DEPRELS = frozenset({"nsubj", "nsubj:pass", "nsubjpass", "obj", "dobj", "iobj", "dative", "csubj"})
PREDICATE_UPOS = frozenset({"VERB"})


@dataclass
class PassageAnnotation:
    """Parses and chains over one passage's annotated tokens (context + query).

    ``heads`` are passage-global 0-based head indices (-1 for a root); ``chains`` hold mention head
    indices in text order."""
    n_context: int
    heads: Sequence[int]
    deprels: Sequence[str]
    upos: Sequence[str]
    chains: Sequence[Sequence[int]]


def _pairs(rows) -> np.ndarray:
    if not rows:
        return np.zeros((0, 2), dtype=np.int32)
    return np.unique(np.asarray(rows, dtype=np.int32).reshape(-1, 2), axis=0)


def context_chains(ann: PassageAnnotation) -> list[list[int]]:
    out = []
    for chain in ann.chains:
        heads = sorted({h for h in chain if h < ann.n_context})
        if heads:
            out.append(heads)
    return out


def dep_parse(ann: PassageAnnotation) -> np.ndarray:
    n = ann.n_context
    return _pairs([(i, h) for i, h in enumerate(ann.heads[:n]) if 0 <= h < n])


def coref_all(ann: PassageAnnotation) -> np.ndarray:
    return _pairs([(a, b) for ch in context_chains(ann) for a in ch for b in ch if a != b])


def coref_prev(ann: PassageAnnotation) -> np.ndarray:
    return _pairs([(ch[k], ch[k - 1]) for ch in context_chains(ann) for k in range(1, len(ch))])


def coref_next(ann: PassageAnnotation) -> np.ndarray:
    return _pairs([(ch[k], ch[k + 1]) for ch in context_chains(ann) for k in range(len(ch) - 1)])


def predicate_of(ann: PassageAnnotation, i: int) -> int:
    """The verb that ``i`` is a core argument of, or -1."""
    h = ann.heads[i]
    if h < 0 or ann.deprels[i].lower() not in ARGUMENT_DEPRELS or ann.upos[h] not in PREDICATE_UPOS:
        return -1
    return h


def narrative(ann: PassageAnnotation) -> np.ndarray:
    n = ann.n_context
    rows = []
    for chain in ann.chains:
        # predicates anywhere in the passage cannot be targets outside the context
        preds = {p for m in chain if (p := predicate_of(ann, m)) >= 0 and p < n}
        for a in chain:
            if a < n and predicate_of(ann, a) >= 0:
                rows.extend((a, p) for p in preds)
    return _pairs(rows)


BUILDERS = {"DepParse": dep_parse, "CorefAll": coref_all, "CorefPrev": coref_prev, "CorefNext": coref_next,
            "Narrative": narrative}


def build_signals(ann: PassageAnnotation, signals: Sequence[str] = SIGNALS) -> dict[str, np.ndarray]:
    unknown = set(signals) - set(BUILDERS)
    if unknown:
        raise ValueError(f"unknown supervision signal(s) {sorted(unknown)}; expected some of {SIGNALS}")
    return {s: BUILDERS[s](ann) for s in signals}


def dense(pairs: np.ndarray, n: int) -> np.ndarray:
    """The 0/1 matrix (for tests and plots; training builds it per batch in torch)."""
    m = np.zeros((n, n), dtype=np.int8)
    if len(pairs):
        m[pairs[:, 0], pairs[:, 1]] = 1
    return m
