"""LAMBADA passages as reading-comprehension instances (Chu et al. 2017).

The context is the passage's context sentences; the query is the target sentence without
its last word; the answer is that word. Sentences are split by rule on the tokenized,
lower-cased text (terminal punctuation plus any closing quotes), because LAMBADA gives no
sentence breaks and a parser's own splitter is unreliable on lower-cased text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

TERMINALS = frozenset({".", "!", "?", "...", "*"})
CLOSERS = frozenset({"''", "'", ")", '"'})


def split_sentences(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """[start, end) spans: a sentence ends after a terminal token and the closing quotes after it."""
    spans, start, i, n = [], 0, 0, len(tokens)
    while i < n:
        if tokens[i] in TERMINALS:
            j = i + 1
            while j < n and (tokens[j] in CLOSERS or tokens[i] == tokens[j] == "*"):  # "* * *" is one break
                j += 1
            spans.append((start, j))
            start = i = j
            continue
        i += 1
    if start < n:
        spans.append((start, n))
    return spans


@dataclass
class Instance:
    """One passage cut into context, query and answer; ``sentences`` are spans over ``context``."""
    context: list[str]
    query: list[str]
    answer: str
    sentences: list[tuple[int, int]]

    @property
    def answer_positions(self) -> list[int]:
        return [i for i, w in enumerate(self.context) if w == self.answer]

    @property
    def annotated_tokens(self) -> list[str]:
        """What parses and coreference see: the passage without its answer, so nothing leaks."""
        return self.context + self.query


def make_instance(tokens: Sequence[str], where: str = "<passage>") -> Instance:
    """Cut one passage (the target is its last token); errors name ``where``."""
    if len(tokens) < 3:
        raise ValueError(f"{where}: a passage needs context, query and target word; got {len(tokens)} tokens")
    answer = tokens[-1]
    body = list(tokens[:-1])
    spans = split_sentences(body)
    q0 = spans[-1][0]
    if q0 == 0:
        # one sentence only: the query is its last clause-sized tail, the rest the context
        q0 = max(1, len(body) - 15)
        spans = [(0, q0), (q0, len(body))]
    return Instance(body[:q0], body[q0:], answer, [s for s in spans if s[1] <= q0])


class Rejected(Exception):
    pass


def check_training_instance(inst: Instance, stopwords: frozenset[str]) -> None:
    """Chu et al.'s filter for training data: the answer occurs in the context and is no stop word."""
    if inst.answer in stopwords:
        raise Rejected("stop-word target")
    if inst.answer not in inst.context:
        raise Rejected("target not in context")


def read_stopwords(path: str) -> frozenset[str]:
    with open(path, encoding="utf-8") as fh:
        words = frozenset(w.strip().lower() for w in fh if w.strip())
    if not words:
        raise ValueError(f"{path}: empty stop-word list")
    return words


def read_passages(path: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, tokens) of a LAMBADA-format file; an empty line is an error naming it."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            toks = line.split()
            if not toks:
                raise ValueError(f"{path}:{n}: empty line; each line must hold one passage")
            yield n, toks


def is_word(token: str) -> bool:
    return any(c.isalpha() for c in token) and all(c.isalpha() or c in "'-" for c in token)


def cut_passages(sentences: Iterable[list[str]], stopwords: frozenset[str], min_context: int = 50,
                 max_context: int = 150, min_target: int = 5) -> Iterator[list[str]]:
    """Passages cut from a stream of tokenized sentences of one novel, as Chu et al. cut LAMBADA's training
    novels: context sentences up to at least ``min_context`` tokens, then a target sentence whose last word
    (final punctuation and quotes dropped) is a non-stop word that occurs in the context. Passages do not
    overlap; a rejected target sentence starts the next context."""
    ctx: list[list[str]] = []
    ntok = 0
    for sent in sentences:
        if ntok >= min_context:
            target = list(sent)
            while target and not is_word(target[-1]):
                target.pop()
            ok = (len(target) >= min_target and target[-1] not in stopwords
                  and any(target[-1] in s for s in ctx))
            if ok:
                yield [w for s in ctx for w in s] + target
                ctx, ntok = [], 0
                continue
        ctx.append(list(sent))
        ntok += len(sent)
        while ntok > max_context and len(ctx) > 1:
            ntok -= len(ctx.pop(0))
