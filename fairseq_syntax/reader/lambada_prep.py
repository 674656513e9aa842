"""fairseq-syntax-lambada: LAMBADA passages -> reading-comprehension instances with supervision side data.

Steps (data-prep/lambada.sh runs them in order; each skips work already done):

  instances   passages file -> {split}.inst.jsonl and {split}.sents.txt (sentences to parse)
  cut-novels  raw novels (one paragraph per line, .txt or .txt.gz) -> passages in LAMBADA's format
  coref       {split}.inst.jsonl -> {split}.coref.jsonl (neuralcoref side environment | stanza | jsonl)
  binarize    instances + {split}.conllu + {split}.coref.jsonl -> dict.txt and indexed datasets
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import sys
import time
from collections import Counter

from ..arg_types import non_negative_int, positive_int, split_name, split_names
from ..pipeline.atomic import atomic_path
from ..pipeline.records import read_own_json
from ..cli.guards import check_outputs
from .instances import (Rejected, check_training_instance, cut_passages, make_instance, read_passages,
                        read_stopwords, split_sentences)
from .supervision import SIGNALS


def cmd_instances(a) -> int:
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        raise ValueError(f"{a.out}: not a folder; --out is the work folder the split's files go into")
    base = os.path.join(a.out, a.split)
    if os.path.isdir(a.out):
        check_outputs([base + ".inst.jsonl", base + ".sents.txt"], [a.input, a.stopwords])
    stop = read_stopwords(a.stopwords) if a.train_filter else frozenset()
    kept, why = [], Counter()
    seen = 0
    for line, toks in read_passages(a.input):
        seen += 1
        inst = make_instance(toks, f"{a.input}:{line}")
        if a.train_filter:
            try:
                check_training_instance(inst, stop)
            except Rejected as r:
                why[str(r)] += 1
                continue
        kept.append((line, inst))
        if a.max and len(kept) >= a.max:
            break
    if not kept:
        what = "no passages" if not seen else f"none of its {seen} passages passed the filter ({dict(why)})"
        raise ValueError(f"{a.input}: {what}; there is nothing to prepare for {a.split}")
    os.makedirs(a.out, exist_ok=True)
    from .annotate import parse_lines, write_instances

    write_instances(base + ".inst.jsonl", kept)
    with atomic_path(base + ".sents.txt") as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for _, inst in kept:
            for sent in parse_lines(inst):
                fh.write(" ".join(sent) + "\n")
    ntok = sum(len(i.annotated_tokens) for _, i in kept)
    rej = ", ".join(f"{v} {k}" for k, v in why.items()) or "none"
    print(f"[lambada] {a.split}: {len(kept)} instances of {seen} passages read ({ntok} tokens); rejected: {rej}",
          file=sys.stderr)
    return 0


def _novel_paragraphs(path: str):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield line


def cmd_cut_novels(a) -> int:
    from .ptb import ptb_tokenize

    stop = read_stopwords(a.stopwords)
    files = sorted(glob.glob(os.path.join(a.novels, "*.txt")) + glob.glob(os.path.join(a.novels, "*.txt.gz")))
    if not files:
        print(f"fairseq-syntax-lambada: error: no .txt or .txt.gz novels in {a.novels}", file=sys.stderr)
        return 1
    check_outputs([a.out], files + [a.stopwords])
    if os.path.samefile(os.path.dirname(os.path.abspath(a.out)), a.novels) and a.out.endswith((".txt", ".txt.gz")):
        raise ValueError(f"{a.out}: in the novels folder {a.novels}, where the next run would read it as a novel; "
                         f"write the passages elsewhere")
    n = 0
    with atomic_path(a.out) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for path in files:
            def sentences():
                for para in _novel_paragraphs(path):
                    toks = ptb_tokenize(para)
                    for s, e in split_sentences(toks):
                        yield toks[s:e]

            for passage in cut_passages(sentences(), stop, a.min_context, a.max_context):
                out.write(" ".join(passage) + "\n")
                n += 1
                if a.max and n >= a.max:
                    break
            if a.max and n >= a.max:
                break
    print(f"[lambada] cut {n} passages from {len(files)} novels into {a.out}", file=sys.stderr)
    return 0


def cmd_check_coref(a) -> int:
    from .coref import check_coref_source

    print(f"[lambada] neuralcoref's side environment: {check_coref_source(a.env, a.wheels)}", file=sys.stderr)
    return 0


def cmd_setup_coref(a) -> int:
    """Install the side environment now rather than on first use (scripts/setup.sh --coref, beside fairseq's build)."""
    from .coref import setup_neuralcoref_env

    print(f"[lambada] neuralcoref's side environment is ready: {setup_neuralcoref_env(a.env, wheels=a.wheels)}",
          file=sys.stderr)
    return 0


def cmd_fetch_coref_wheels(a) -> int:
    from .coref import fetch_coref_wheels

    files = fetch_coref_wheels(a.out)
    print(f"[lambada] {len(files)} files in {a.out}; prepare with --coref-wheels {a.out}", file=sys.stderr)
    return 0


def cmd_coref(a) -> int:
    from ..pipeline.records import sha1_file as sha1_of
    from .annotate import read_instances
    from .chains import check_coref_jsonl
    from .coref import passages_sha1

    base = os.path.join(a.dir, a.split)
    out = base + ".coref.jsonl"
    record = out + ".provenance.json"
    instances = read_instances(base + ".inst.jsonl")
    passages = [inst.annotated_tokens for _, inst in instances]
    if a.backend == "jsonl" and not a.chains:
        print("fairseq-syntax-lambada: error: --coref jsonl needs --chains FILE", file=sys.stderr)
        return 1
    want = {"backend": a.backend, "passages_sha1": passages_sha1(passages)}
    if a.backend == "jsonl":
        want.update(source=os.path.abspath(a.chains), source_sha1=sha1_of(a.chains))
    if os.path.exists(out) and not os.path.exists(out + ".shards"):
        why = _stale_chains(read_own_json(record), want)
        if why is None:
            check_coref_jsonl(out, passages)
            print(f"[lambada] {out} is complete; nothing to do", file=sys.stderr)
            return 0
        print(f"[lambada] {out}: {why}; finding the chains again", file=sys.stderr)
    if os.path.exists(record):  # no record may vouch for a file while it is being replaced
        os.remove(record)
    stats = {"seconds": 0}
    if a.backend == "jsonl":
        check_coref_jsonl(a.chains, passages)
        with atomic_path(out) as tmp, open(a.chains, "rb") as src, open(tmp, "wb") as dst:
            dst.write(src.read())
    elif a.backend == "neuralcoref":
        from .coref import run_neuralcoref

        stats = run_neuralcoref(passages, out, a.env, a.workers, a.shard_size, wheels=a.wheels)
    else:
        from .coref import run_stanza

        stats = run_stanza(passages, [inst.sentences + [(len(inst.context), len(passages[k]))]
                                      for k, (_, inst) in enumerate(instances)], out)
    with atomic_path(record) as tmp, open(tmp, "w") as fh:
        json.dump(want, fh, indent=1, sort_keys=True)
    if stats["seconds"] > 0:
        print(f"[lambada] coref {a.split}: {stats['tokens']} tokens, {stats['seconds']:.0f} s, "
              f"{stats['tokens'] / stats['seconds']:.0f} tokens/s with {a.workers} workers", file=sys.stderr)
        with atomic_path(base + ".coref.speed.json") as tmp, open(tmp, "w") as fh:
            json.dump(dict(stats, workers=a.workers, backend=a.backend), fh)
    return 0


def _stale_chains(have: "dict | None", want: dict) -> "str | None":
    """Why the chains on disk cannot stand for these passages and this backend (None: they can)."""
    if have is None:
        return "there is no record of the passages and backend it was made from"
    if have.get("passages_sha1") != want["passages_sha1"]:
        return "the split's passages changed since"
    if have.get("backend") != want["backend"]:
        return f"it holds {have.get('backend')}'s chains, not {want['backend']}'s"
    if (have.get("source"), have.get("source_sha1")) != (want.get("source"), want.get("source_sha1")):
        return f"it was copied from {have.get('source')} as it was then, not from {want['source']} as it is now"
    return None


def cmd_binarize(a) -> int:
    from fairseq.data import Dictionary

    from .binarize import build_dictionary, write_split
    from .annotate import join, read_instances

    signals = tuple(a.signals.split())
    splits = a.splits.split()
    insts = {s: read_instances(os.path.join(a.dir, f"{s}.inst.jsonl")) for s in splits}
    os.makedirs(a.out, exist_ok=True)
    dict_path = os.path.join(a.out, "dict.txt")
    if a.dict:
        d = Dictionary.load(a.dict)
    else:
        train_words = (w for _, i in insts.get(a.train_split, []) for w in i.context + i.query)
        other = (w for s in splits if s != a.train_split for _, i in insts[s] for w in i.context + i.query)
        d = build_dictionary(train_words, other, a.min_count)
    d.save(dict_path)
    for s in splits:
        t0 = time.perf_counter()
        annotated = join(insts[s], os.path.join(a.dir, f"{s}.conllu"), os.path.join(a.dir, f"{s}.coref.jsonl"),
                         where=f"{s} line ")
        n = write_split(a.out, s, annotated, d, signals)
        print(f"[lambada] binarized {s}: {n} instances ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    print(f"[lambada] dictionary: {len(d)} types -> {dict_path}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fairseq-syntax-lambada", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("instances", help="passages -> instances")
    s.add_argument("--input", required=True, help="one tokenized passage per line, the target word last")
    s.add_argument("--split", required=True, type=split_name)
    s.add_argument("--out", required=True, help="work directory")
    s.add_argument("--train-filter", action="store_true", help="Chu et al.'s filter (training data)")
    s.add_argument("--stopwords", default=None, help="stop-word list for --train-filter")
    s.add_argument("--max", type=non_negative_int, default=0, help="keep at most N instances (0: all)")
    s.set_defaults(func=cmd_instances)
    s = sub.add_parser("cut-novels", help="raw novels -> LAMBADA-style passages")
    s.add_argument("--novels", required=True, help="directory of .txt/.txt.gz novels, one paragraph per line")
    s.add_argument("--out", required=True)
    s.add_argument("--stopwords", required=True)
    s.add_argument("--min-context", type=positive_int, default=50)
    s.add_argument("--max-context", type=positive_int, default=150)
    s.add_argument("--max", type=non_negative_int, default=0, help="at most N passages (0: all)")
    s.set_defaults(func=cmd_cut_novels)
    s = sub.add_parser("coref", help="coreference chains per passage")
    s.add_argument("--dir", required=True)
    s.add_argument("--split", required=True, type=split_name)
    s.add_argument("--backend", choices=("neuralcoref", "stanza", "jsonl"), default="neuralcoref")
    s.add_argument("--chains", default=None, help="with --backend jsonl: your chains, one record per passage")
    s.add_argument("--env", default="work/coref-env", help="neuralcoref's Python 3.7 side environment")
    s.add_argument("--workers", type=positive_int, default=2)
    s.add_argument("--shard-size", type=positive_int, default=250, help="passages per shard (the unit of resumption)")
    s.add_argument("--wheels", default=None, help="install neuralcoref's side environment from this folder "
                                                  "(fetch-coref-wheels), not from the package index")
    s.set_defaults(func=cmd_coref)
    s = sub.add_parser("check-coref", help="say at once whether neuralcoref's side environment can be installed")
    s.add_argument("--env", default="work/coref-env")
    s.add_argument("--wheels", default=None)
    s.set_defaults(func=cmd_check_coref)
    s = sub.add_parser("setup-coref", help="install neuralcoref's side environment now (preparation installs it on "
                                           "first use)")
    s.add_argument("--env", default="work/coref-env")
    s.add_argument("--wheels", default=None, help="from this folder (fetch-coref-wheels), not from the package index")
    s.set_defaults(func=cmd_setup_coref)
    s = sub.add_parser("fetch-coref-wheels", help="download what neuralcoref's side environment installs, for a "
                                                  "machine without a package index (needs Python 3.7 and an index)")
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_fetch_coref_wheels)
    s = sub.add_parser("binarize", help="instances + parses + chains -> indexed datasets")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--splits", default="train valid test", type=split_names)
    s.add_argument("--train-split", default="train", type=split_name, help="the split whose counts make the dictionary")
    s.add_argument("--dict", default=None, help="use this dict.txt instead of building one")
    s.add_argument("--min-count", type=positive_int, default=1)
    s.add_argument("--signals", default=" ".join(SIGNALS))
    s.set_defaults(func=cmd_binarize)
    return p


def main(argv=None) -> int:
    a = build_parser().parse_args(argv)
    if getattr(a, "train_filter", False) and not a.stopwords:
        print("fairseq-syntax-lambada: error: --train-filter needs --stopwords", file=sys.stderr)
        return 1
    try:
        return a.func(a)
    except (ValueError, RuntimeError, OSError) as e:
        print(f"fairseq-syntax-lambada: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
