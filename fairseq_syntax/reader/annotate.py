"""Join a split's instances, parses and coreference records into per-instance annotations.

The parse file has, per instance, one CoNLL-U block per context sentence and one for the target
sentence (query + answer). Heads become passage-global; mention heads come from that parse.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator

from ..parsing.conllu import read_conllu_file
from .chains import CorefRecord, chain_heads, read_coref_jsonl
from .instances import Instance
from .supervision import PassageAnnotation

PERSONAL = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})


def write_instances(path: str, instances) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for line, inst in instances:
            fh.write(json.dumps({"line": line, "context": inst.context, "query": inst.query, "answer": inst.answer,
                                 "sentences": inst.sentences}) + "\n")


def read_instances(path: str) -> list[tuple[int, Instance]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            d = json.loads(line)
            out.append((d["line"], Instance(d["context"], d["query"], d["answer"], [tuple(s) for s in d["sentences"]])))
    return out


def parse_lines(inst: Instance) -> list[list[str]]:
    """The sentences to parse: each context sentence, then the whole target sentence."""
    return [inst.context[s:e] for s, e in inst.sentences] + [inst.query + [inst.answer]]


@dataclass
class Annotated:
    instance: Instance
    ann: PassageAnnotation
    answer_upos: str
    answer_entity: str  # the entity label of the answer's context occurrences ("" when none)


POS_CLASSES = {"PRON": "pronoun", "PROPN": "proper_noun", "NOUN": "common_noun"}


def target_type(a: Annotated) -> dict:
    return {"pos": POS_CLASSES.get(a.answer_upos, "other"), "entity": a.answer_entity or "none"}


def join(instances: list[tuple[int, Instance]], conllu: str, coref: str, where: str = "") -> Iterator[Annotated]:
    """Annotations in instance order; any count or token mismatch names the file and the passage."""
    parses = read_conllu_file(conllu)
    records = read_coref_jsonl(coref, [inst.annotated_tokens for _, inst in instances])
    for (line, inst), rec in zip(instances, records):
        heads, deprels, upos = [], [], []
        for k, sent in enumerate(parse_lines(inst)):
            p = next(parses, None)
            if p is None:
                raise ValueError(f"{conllu}: ends before passage {where}{line} (sentence {k + 1})")
            if len(p.words) != len(sent):
                raise ValueError(f"{conllu}:{p.line}: passage {where}{line} sentence {k + 1} has {len(sent)} tokens, "
                                 f"the parse {len(p.words)}")
            off = len(heads)
            heads.extend(off + h - 1 if h > 0 else -1 for h in p.heads)
            deprels.extend(p.deprels)
            upos.extend(p.upos)
        n_ann = len(inst.annotated_tokens)
        answer_upos = upos[n_ann]
        heads, deprels, upos = heads[:n_ann], deprels[:n_ann], upos[:n_ann]
        heads = [h if h < n_ann else -1 for h in heads]  # a query word headed by the answer becomes a root
        yield Annotated(inst, PassageAnnotation(len(inst.context), heads, deprels, upos, chain_heads(rec, heads)),
                        answer_upos, _answer_entity(inst, rec))
    if next(parses, None) is not None:
        raise ValueError(f"{conllu}: more parsed sentences than the {len(instances)} passages need")


def _answer_entity(inst: Instance, rec: CorefRecord) -> str:
    """The NER label of the answer's context occurrences; else PERSON when one of them is a mention in a
    chain with a personal pronoun (he, she, ...): NER finds few names in LAMBADA's lower-cased text."""
    pos = set(inst.answer_positions)
    for s, e, label in rec.entities:
        if pos.intersection(range(s, e)):
            return label
    toks = rec.tokens
    for cluster in rec.clusters:
        if any(pos.intersection(range(s, e)) for s, e in cluster) and \
                any(e - s == 1 and toks[s] in PERSONAL for s, e in cluster):
            return "PERSON"
    return ""
