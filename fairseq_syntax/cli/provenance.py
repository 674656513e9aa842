"""fairseq-syntax-provenance: record how a binarized directory was made (preprocessing.json), for inference.

    fairseq-syntax-provenance --destdir bin --parses parse/train.en.conllu parse/valid.en.conllu ... \
        -s en -t de --bpe-codes bpe/codes --bpe-vocab bpe/vocab.en --bpe-vocab-threshold 1

Reads the record fairseq-syntax-parse keeps beside each parse (``.provenance.json``: the input's digest and
the parser with its versions), checks that one parser made every split, and writes ``bin/preprocessing.json``
with the tokenizer and BPE settings; the BPE codes and vocabulary are copied into ``bin/``.
fairseq-interactive and the hub interface then parse raw input with that parser.
"""
from __future__ import annotations

import argparse
import sys

from ..parsing.backends import describe_provenance
from ..parsing.provenance import write_preprocessing
from ..parsing.sharded import read_record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-provenance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--destdir", required=True, help="the binarized directory")
    p.add_argument("--parses", required=True, nargs="+", help="the CoNLL-U files of the splits")
    p.add_argument("-s", "--source-lang", required=True)
    p.add_argument("-t", "--target-lang")
    p.add_argument("--bpe-codes", help="subword-nmt codes the source was segmented with")
    p.add_argument("--bpe-vocab", help="the --vocabulary apply-bpe was given")
    p.add_argument("--bpe-vocab-threshold", type=int)
    p.add_argument("--subword-style", default="bpe", choices=["bpe", "sentencepiece", "wordpiece", "byte_bpe"])
    p.add_argument("--tokenizer", default="moses", choices=["moses", "bert_basic"],
                   help="how raw text becomes the parser's words: Moses (translation) or BERT's basic split, cased "
                        "(the encoders' corpora)")
    args = p.parse_args(argv)
    try:
        tokenizer = {"name": "bert_basic", "cased_for_parser": True} if args.tokenizer == "bert_basic" else None
        rec = write_preprocessing(args.destdir, [(c, read_record(c)) for c in args.parses], args.source_lang,
                                  args.target_lang, args.bpe_codes, args.bpe_vocab, args.bpe_vocab_threshold,
                                  args.subword_style, tokenizer)
    except (ValueError, OSError) as e:
        print(f"fairseq-syntax-provenance: error: {e}", file=sys.stderr)
        return 1
    print(f"recorded {describe_provenance(rec['parser'])} -> {args.destdir}/preprocessing.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
