"""fairseq-syntax-text: Moses-style tokenisation, corpus cleaning and SGML extraction for data-prep."""
from __future__ import annotations

import argparse
import sys

from ..pipeline.atomic import atomic_path

from ..text_prep.clean import clean_parallel
from ..text_prep.moses import tokenize_file
from ..text_prep.sgm import read_sgm_segments
from ..arg_types import positive_int
from .guards import check_outputs, one_output_each


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-text", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenize", help="normalize-punctuation | remove-non-printing-char | tokenizer -a")
    t.add_argument("input", nargs="+", help="text files of one language (several: one process for all)")
    t.add_argument("-o", "--output", nargs="+", required=True, help="one per input")
    t.add_argument("-l", "--lang", required=True)
    t.add_argument("--workers", type=positive_int, default=1)
    t.add_argument("--quiet", action="store_true")
    c = sub.add_parser("clean", help="keep pairs with min <= length <= max and length ratio <= r (clean-corpus-n)")
    c.add_argument("src_in")
    c.add_argument("tgt_in")
    c.add_argument("src_out")
    c.add_argument("tgt_out")
    c.add_argument("--min", type=int, default=1)
    c.add_argument("--max", type=int, default=250)
    c.add_argument("--ratio", type=float, default=1.5)
    s = sub.add_parser("sgm", help="extract the <seg> texts of a WMT .sgm file")
    s.add_argument("input")
    s.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    if args.cmd == "tokenize":
        one_output_each(p, args.input, args.output)
    try:
        if args.cmd == "clean":
            check_outputs([args.src_out, args.tgt_out], [args.src_in, args.tgt_in])
        elif args.cmd == "tokenize":
            check_outputs(args.output, args.input)
        else:
            check_outputs([args.output], [args.input])
        if args.cmd == "tokenize":
            for one_input, output in zip(args.input, args.output):
                n = tokenize_file(one_input, output, args.lang, args.workers, progress=not args.quiet)
                print(f"tokenized {n} lines -> {output}", file=sys.stderr)
        elif args.cmd == "clean":
            kept, total = clean_parallel(args.src_in, args.tgt_in, args.src_out, args.tgt_out, args.min, args.max,
                                         args.ratio)
            print(f"kept {kept} of {total} pairs -> {args.src_out}, {args.tgt_out}", file=sys.stderr)
        else:
            segs = read_sgm_segments(args.input)
            if not segs:
                raise ValueError(f"{args.input}: no <seg> elements")
            with atomic_path(args.output) as tmp, open(tmp, "w", encoding="utf-8") as fh:
                fh.write("".join(s + "\n" for s in segs))
            print(f"extracted {len(segs)} segments -> {args.output}", file=sys.stderr)
    except (ValueError, OSError) as e:
        print(f"fairseq-syntax-text: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
