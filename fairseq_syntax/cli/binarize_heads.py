"""fairseq-syntax-binarize-heads: subword head codes -> fairseq indexed dataset beside the binarized source.

Writes ``{destdir}/{split}.{src}-{tgt}.{src}.heads.{bin,idx}`` and checks every
sentence's length against ``{split}.{src}-{tgt}.{src}.bin`` written by fairseq-preprocess.
"""
from __future__ import annotations

import argparse
import sys

from ..data.heads_io import binarize_heads, heads_prefix, text_prefix


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-binarize-heads", description=__doc__)
    p.add_argument("--heads", required=True, nargs="+", help="codes from fairseq-syntax-align, one file per split")
    p.add_argument("--destdir", required=True, help="the fairseq-preprocess output directory")
    p.add_argument("--split", required=True, nargs="+", help="train, valid, test, ... (as many as --heads)")
    p.add_argument("-s", "--source-lang", required=True)
    p.add_argument("-t", "--target-lang", required=True)
    args = p.parse_args(argv)
    if len(args.heads) != len(args.split):
        p.error(f"{len(args.heads)} --heads files for {len(args.split)} --split names")
    for heads, split in zip(args.heads, args.split):
        src = text_prefix(args.destdir, split, args.source_lang, args.target_lang)
        out = heads_prefix(args.destdir, split, args.source_lang, args.target_lang)
        try:
            n = binarize_heads(heads, src, out)
        except (ValueError, OSError) as e:
            print(f"fairseq-syntax-binarize-heads: error: {e}", file=sys.stderr)
            return 1
        print(f"wrote {n} sentences of heads -> {out}.bin/.idx", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
