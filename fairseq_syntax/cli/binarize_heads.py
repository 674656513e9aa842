"""fairseq-syntax-binarize-heads: subword head codes -> fairseq indexed dataset beside the binarized source.

Writes ``{destdir}/{split}.{src}-{tgt}.{src}.heads.{bin,idx}`` and checks every
sentence's length against ``{split}.{src}-{tgt}.{src}.bin`` written by fairseq-preprocess.
With ``--text-prefixes P...`` (classification layouts such as ``bin/input0/train``) the heads
go to ``P.heads.{bin,idx}`` beside each ``P.bin``. ``--random-trees SEED --suffix randheads`` writes the
random-tree control beside the real heads (train with ``--heads-suffix randheads``).
"""
from __future__ import annotations

import argparse
import sys

from ..arg_types import language_name, split_name, suffix_name
from ..data.heads_io import binarize_heads, heads_prefix, text_prefix
from .guards import check_outputs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-binarize-heads", description=__doc__)
    p.add_argument("--heads", required=True, nargs="+", help="codes from fairseq-syntax-align, one file per split")
    p.add_argument("--destdir", help="the fairseq-preprocess output directory")
    p.add_argument("--split", nargs="+", type=split_name, help="train, valid, test, ... (as many as --heads)")
    p.add_argument("-s", "--source-lang", type=language_name)
    p.add_argument("-t", "--target-lang", type=language_name)
    p.add_argument("--text-prefixes", nargs="+", metavar="P",
                   help="instead of --destdir/--split/-s/-t: the binarized text of each --heads file (P.bin)")
    p.add_argument("--suffix", default="heads", type=suffix_name,
                   help="write {prefix}.<suffix>.bin/.idx (default: heads)")
    p.add_argument("--random-trees", type=int, metavar="SEED",
                   help="control: replace every tree by a random tree over the same words (seeded); "
                        "write it under another --suffix, e.g. randheads")
    args = p.parse_args(argv)
    if args.text_prefixes:
        if len(args.heads) != len(args.text_prefixes):
            p.error(f"{len(args.heads)} --heads files for {len(args.text_prefixes)} --text-prefixes")
        jobs = [(h, t, f"{t}.{args.suffix}") for h, t in zip(args.heads, args.text_prefixes)]
    else:
        if not (args.destdir and args.split and args.source_lang and args.target_lang):
            p.error("give --destdir, --split, -s and -t (or --text-prefixes)")
        if len(args.heads) != len(args.split):
            p.error(f"{len(args.heads)} --heads files for {len(args.split)} --split names")
        jobs = [(h, text_prefix(args.destdir, s, args.source_lang, args.target_lang),
                 heads_prefix(args.destdir, s, args.source_lang, args.target_lang, args.suffix))
                for h, s in zip(args.heads, args.split)]
    try:  # every output checked against every input before the first split is written
        check_outputs([f"{o}.{e}" for _, _, o in jobs for e in ("bin", "idx")],
                      [f for h, t, _ in jobs for f in (h, f"{t}.bin", f"{t}.idx")])
    except ValueError as e:
        print(f"fairseq-syntax-binarize-heads: error: {e}", file=sys.stderr)
        return 1
    for heads, src, out in jobs:
        try:
            n = binarize_heads(heads, src, out, args.random_trees)
        except (ValueError, OSError) as e:
            print(f"fairseq-syntax-binarize-heads: error: {e}", file=sys.stderr)
            return 1
        print(f"wrote {n} sentences of heads -> {out}.bin/.idx", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
