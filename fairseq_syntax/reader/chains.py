"""Coreference chains as JSONL, one record per passage, checked against the passage's tokens.

A record is ``{"tokens": [...], "clusters": [[[start, end], ...], ...], "entities": [[start, end, label], ...]}``
with token offsets over the annotated tokens (context + query), ``end`` exclusive; ``entities`` is
optional. Every backend (neuralcoref in its side environment, stanza, chains a user brings) writes
this format, so the rest of the pipeline does not care where chains came from.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterator, Sequence


@dataclass
class CorefRecord:
    tokens: list[str]
    clusters: list[list[tuple[int, int]]]
    entities: list[tuple[int, int, str]] = field(default_factory=list)


def parse_record(obj, want: Sequence[str] | None, where: str) -> CorefRecord:
    """Validate one decoded record; ``want`` are the tokens the passage must have."""
    if not isinstance(obj, dict) or "clusters" not in obj or "tokens" not in obj:
        raise ValueError(f"{where}: a coreference record needs 'tokens' and 'clusters'")
    toks = obj["tokens"]
    if want is not None and list(toks) != list(want):
        first = next((i for i, (a, b) in enumerate(zip(toks, want)) if a != b), min(len(toks), len(want)))
        got = toks[first] if first < len(toks) else "<end>"
        exp = want[first] if first < len(want) else "<end>"
        raise ValueError(
            f"{where}: the coreference output does not match the passage's tokens: {len(toks)} tokens for "
            f"{len(want)}, first difference at token {first} ({got!r} vs {exp!r})")
    n = len(toks)
    clusters = []
    for c, cluster in enumerate(obj["clusters"]):
        spans = []
        for m in cluster:
            if len(m) < 2 or not (0 <= m[0] < m[1] <= n):
                raise ValueError(f"{where}: cluster {c} has mention {m!r} outside the passage's {n} tokens")
            spans.append((int(m[0]), int(m[1])))
        clusters.append(spans)
    ents = []
    for e in obj.get("entities", []):
        if len(e) != 3 or not (0 <= e[0] < e[1] <= n):
            raise ValueError(f"{where}: entity {e!r} outside the passage's {n} tokens")
        ents.append((int(e[0]), int(e[1]), str(e[2])))
    return CorefRecord(list(toks), clusters, ents)


def read_coref_jsonl(path: str, passages: Sequence[Sequence[str]] | None = None) -> Iterator[CorefRecord]:
    """Records of ``path`` in order; with ``passages`` the count and every token list must match."""
    n = 0
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            where = f"{path}:{n}"
            if passages is not None and n > len(passages):
                raise ValueError(f"{where}: more records than the {len(passages)} passages")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not a JSON record ({e})") from None
            yield parse_record(obj, passages[n - 1] if passages is not None else None, where)
    if passages is not None and n != len(passages):
        raise ValueError(f"{path}: {n} records, but there are {len(passages)} passages (record {n + 1} missing)")


def check_coref_jsonl(path: str, passages: Sequence[Sequence[str]]) -> None:
    """Read the whole file against ``passages``; raises on the first mismatch."""
    for _ in read_coref_jsonl(path, passages):
        pass


def mention_head(start: int, end: int, heads: Sequence[int]) -> int:
    """The token of ``[start, end)`` whose syntactic head lies outside it (the leftmost if several)."""
    for i in range(start, end):
        h = heads[i]
        if h < start or h >= end:
            return i
    return start


def chain_heads(record: CorefRecord, heads: Sequence[int]) -> list[list[int]]:
    """Mention heads per chain, by the passage's own parse (so every backend's chains get the same heads)."""
    out = []
    for cluster in record.clusters:
        hs = sorted({mention_head(s, e, heads) for s, e in cluster})
        if len(hs) > 1:
            out.append(hs)
    return out
