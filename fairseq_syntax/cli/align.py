"""fairseq-syntax-align: CoNLL-U parses + subword text -> subword head codes, one line per sentence.

The output has one integer per subword (see :mod:`fairseq_syntax.syntax.alignment`);
``fairseq-syntax-binarize-heads`` turns it into a fairseq indexed dataset.
"""
from __future__ import annotations

import argparse
import sys

from ..pipeline.atomic import atomic_path
from ..parsing.backends import first_different_token
from ..parsing.conllu import read_conllu_file
from ..syntax.alignment import align_heads_to_subwords, words_from_subwords
from ..text_io import text_lines
from .guards import check_outputs


def check_same_words(parse_words, pieces, where: str) -> None:
    """subword-nmt's BPE rejoins to exactly the words it was given, so a word that differs from the parse's
    means the two files are not the same sentences (same lengths would otherwise align silently).
    SentencePiece and WordPiece normalize text ([UNK], NFKC, accents), so only their word counts are checked."""
    if " ".join(pieces).replace("@@ ", "") == " ".join(parse_words):
        return
    words = words_from_subwords(pieces, "bpe")
    k = first_different_token(parse_words, words)
    if k is not None:
        raise ValueError(f"{where}: word {k + 1} is {words[k]!r} but the parse has {parse_words[k]!r} there: the "
                         "subword text and the parses are not of the same sentences")


def align_files(conllu: str, subword_text: str, output: str, style: str = "bpe") -> int:
    """Write the aligned codes; raises ``ValueError`` naming file and line on any mismatch."""
    n = 0
    with atomic_path(output) as tmp:
        with open(tmp, "w", encoding="utf-8") as out:
            parses = read_conllu_file(conllu)
            for n, line in enumerate(text_lines(subword_text), 1):
                pieces = line.split()
                if not pieces:
                    raise ValueError(f"{subword_text}:{n}: empty line")
                parsed = next(parses, None)
                if parsed is None:
                    raise ValueError(f"{conllu}: ends after {n - 1} sentences, but {subword_text} has more lines "
                                     f"(line {n} has no parse)")
                where = f"{subword_text}:{n} (parse at {conllu}:{parsed.line})"
                codes = align_heads_to_subwords(parsed.heads, pieces, style, where=where)
                if style == "bpe":
                    check_same_words(parsed.words, pieces, where)
                out.write(" ".join(map(str, codes)) + "\n")
            extra = next(parses, None)
            if extra is not None:
                raise ValueError(f"{conllu}:{extra.line}: more parses than the {n} lines of {subword_text}")
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-align", description=__doc__)
    p.add_argument("--conllu", required=True, help="word-level parses, one sentence per text line")
    p.add_argument("--subwords", required=True, help="the same text after BPE / SentencePiece / WordPiece "
                                                     "(with bpe, every word must be the parse's)")
    p.add_argument("--style", default="bpe", choices=["bpe", "sentencepiece", "wordpiece"])
    p.add_argument("-o", "--output", required=True, help="subword head codes (text)")
    args = p.parse_args(argv)
    try:
        check_outputs([args.output], [args.conllu, args.subwords])
        n = align_files(args.conllu, args.subwords, args.output, args.style)
    except (ValueError, OSError) as e:
        print(f"fairseq-syntax-align: error: {e}", file=sys.stderr)
        return 1
    print(f"aligned {n} sentences -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
