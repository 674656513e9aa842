"""fairseq-syntax-classification: text steps of data-prep/glue.sh (GLUE TSV -> words -> the model's subwords + heads).

    fairseq-syntax-classification extract TSV --task CoLA --out-prefix raw/train   # raw/train.input0, .label
    fairseq-syntax-classification words raw/train.input0 -o words/train.input0     # BERT basic words, cased
    fairseq-syntax-parse words/train.input0 -o parse/train.input0.conllu            # (the shared parse step)
    fairseq-syntax-classification pieces --pretrained work/minilm --words words/train.input0 \\
        --conllu parse/train.input0.conllu --text raw/train.input0 -o wp/train.input0   # wp/train.input0{,.heads}

The parser sees BERT's own word split (with case). With BERT's WordPiece every piece belongs to exactly one parsed
word and the pieces are exactly what BERT's tokenizer gives; GPT-2's byte-level BPE (RoBERTa, BART) and
sentencepiece (XLM-R) encode the raw line, each piece placed on its word by bytes (data/pretrained_pieces.py).
"""
from __future__ import annotations

import argparse
import sys

from ..pipeline.atomic import atomic_path
from ..column_files import column_rows
from ..parsing.conllu import read_conllu_file
from ..text_io import text_lines
from ..text_prep.wordpiece import basic_words
from .guards import check_outputs

# GLUE tasks as fairseq's examples/roberta/preprocess_GLUE_tasks.sh reads them:
# (has a header line, input columns, label column (train/dev), regression)
GLUE_TASKS = {
    "CoLA": (False, (3,), 1, False),
    "SST-2": (True, (0,), 1, False),
    "MRPC": (True, (3, 4), 0, False),
    "QQP": (True, (3, 4), 5, False),
    "STS-B": (True, (7, 8), 9, True),
    "MNLI": (True, (8, 9), -1, False),
    "QNLI": (True, (1, 2), 3, False),
    "RTE": (True, (1, 2), 3, False),
    "WNLI": (True, (1, 2), 3, False),
}

# each task's classes (GLUE's own label strings); the label dictionary holds all of them, whatever a slice holds
GLUE_CLASSES = {
    "CoLA": ("0", "1"), "SST-2": ("0", "1"), "MRPC": ("0", "1"), "QQP": ("0", "1"), "WNLI": ("0", "1"),
    "QNLI": ("entailment", "not_entailment"), "RTE": ("entailment", "not_entailment"),
    "MNLI": ("contradiction", "entailment", "neutral"),
}
# column counts of the files without a header (with one, every line must have the header's count)
GLUE_COLUMNS = {"CoLA": 4}


def extract(tsv: str, out_prefix: str, header: bool, inputs: tuple[int, ...], label: int | None,
            classes: tuple[str, ...] | None = None, columns_expected: int | None = None,
            regression: bool = False) -> int:
    """Write ``{out_prefix}.input0`` (``.input1``) and ``.label`` from a GLUE-style TSV, read by
    column_files.column_rows: one column count per file (the header's, or ``columns_expected``), the header
    checked, not assumed (a headerless SST-2 file lost its first example), a label outside ``classes`` named."""
    columns: list[list[str]] = [[] for _ in inputs]
    labels: list[str] = []
    need = max(list(inputs) + ([label] if label is not None and label >= 0 else []))
    for row in column_rows(tsv, "\t", columns_expected, "the task's GLUE columns"):
        cells, n = row.cells, row.line
        if not cells:
            raise ValueError(f"{tsv}:{n}: an empty line (a GLUE TSV has one example a line)")
        if header and n == 1:
            check_header(tsv, cells, label, classes, regression)
            continue
        if len(cells) <= need:
            raise ValueError(f"{tsv}:{n}: {len(cells)} tab-separated columns, need at least {need + 1}")
        for k, col in enumerate(inputs):
            text = cells[col].strip()
            if not text:
                raise ValueError(f"{tsv}:{n}: empty text in column {col + 1}")
            columns[k].append(text)
        if label is not None:
            value = cells[label].strip()
            if not value:
                raise ValueError(f"{tsv}:{n}: empty label in column {label + 1 if label >= 0 else len(cells)}")
            if classes is not None and value not in classes:
                raise ValueError(f"{tsv}:{n}: label {value!r} is not one of the task's classes ({', '.join(classes)})")
            labels.append(value)
    if not columns[0]:
        raise ValueError(f"{tsv}: no examples")
    outputs = [(f"{out_prefix}.input{k}", col) for k, col in enumerate(columns)]
    if label is not None:
        outputs.append((f"{out_prefix}.label", labels))
    for path, lines in outputs:
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(x + "\n" for x in lines)
    return len(columns[0])


def check_header(tsv: str, cells: list[str], label: int | None, classes, regression: bool) -> None:
    """Line 1 of a file that has a header must not read as an example: a label cell holding one of the task's
    classes (or, for regression, a number) is an example whose header is missing."""
    if label is None or not cells:
        value = cells[0].strip() if cells else ""
        looks = value.isdigit()  # GLUE's test files start "index\t...", their examples with a number
    else:
        value = cells[label].strip() if -len(cells) <= label < len(cells) else ""
        looks = value in classes if classes else False
        if regression:
            try:
                float(value)
                looks = True
            except ValueError:
                looks = False
    if looks:
        raise ValueError(f"{tsv}:1: this task's files start with a header line, but line 1 reads as an example "
                         f"({value!r} where the header names its column); add the header (GLUE's own files have it)")


def label_dict(label_files: list[str], output: str, classes: tuple[str, ...] | None = None) -> int:
    """A fairseq dictionary of the labels of every split (or of ``classes``, counted over every split), so
    that a label seen only in dev, or a class a training slice lacks, still has an index."""
    counts: dict[str, int] = {c: 0 for c in classes or ()}
    for path in label_files:
        for n, line in enumerate(text_lines(path), 1):
            for value in line.split():
                if classes is not None and value not in counts:
                    raise ValueError(f"{path}:{n}: label {value!r} is not one of the task's classes "
                                     f"({', '.join(classes)})")
                counts[value] = counts.get(value, 0) + 1
    if not counts:
        raise ValueError(f"{', '.join(label_files)}: no labels")
    order = sorted(counts, key=lambda c: (-counts[c], c))
    with atomic_path(output) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(f"{c} {counts[c]}\n" for c in order)
    return len(order)


CONLL_COLUMNS = "token POS chunk NER"


def extract_conll(path: str, out_prefix: str, tag_column: int = -1, columns: int | None = 4) -> int:
    """CoNLL-2003 (token POS chunk NER, blank line between sentences, -DOCSTART- documents) ->
    ``{out_prefix}.words`` (the corpus tokens, which the parser keeps) and ``.label`` (one tag per token).
    Read by column_files.column_rows with ``columns`` per line (None: the first line's count), so a chunking
    file's 3 columns, or a line cut after its chunk tag, are named rather than read as tags like ``I-NP``."""
    words_out, tags_out = [], []
    words, tags = [], []

    def flush():
        if words:
            words_out.append(" ".join(words) + "\n")
            tags_out.append(" ".join(tags) + "\n")
            words.clear()
            tags.clear()

    hint = CONLL_COLUMNS if columns == 4 else ""
    for row in column_rows(path, None, columns, hint):
        cells, n = row.cells, row.line
        if not cells or cells[0] == "-DOCSTART-":
            flush()
            continue
        if len(cells) < 2:
            raise ValueError(f"{path}:{n}: expected a token and its tags, got {' '.join(cells)!r}")
        tag = cells[tag_column]
        if tag != "O" and (len(tag) < 3 or tag[1] != "-" or tag[0] not in "BIES"):
            raise ValueError(f"{path}:{n}: {tag!r} is not an NER tag (O, or B-, I-, E-, S- and a type)")
        words.append(cells[0])
        tags.append(tag)
    flush()
    if not words_out:
        raise ValueError(f"{path}: no sentences")
    for suffix, lines in (("words", words_out), ("label", tags_out)):
        with atomic_path(f"{out_prefix}.{suffix}") as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(lines)
    return len(words_out)


def words_file(src: str, dst: str) -> int:
    out = []
    for n, line in enumerate(text_lines(src), 1):
        words = basic_words(line)
        if not words:
            raise ValueError(f"{src}:{n}: no words (empty line?)")
        out.append(" ".join(words) + "\n")
    with atomic_path(dst) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(out)
    return len(out)


def pieces_file(pretrained: str, words_path: str, conllu: str, out: str, text_path: str | None = None) -> int:
    """``out`` (the model's own subword symbols, one sentence a line) and ``out.heads`` (one code per symbol): the
    scheme is the pretrained folder's (data/pretrained_pieces.py); ``text_path`` holds the raw lines the words came
    from, which byte-level BPE and sentencepiece encode."""
    from ..data.pretrained_pieces import PretrainedPieces

    pieces = PretrainedPieces(pretrained)
    lines = [x.rstrip("\r\n") for x in text_lines(words_path)]
    texts = [x.rstrip("\r\n") for x in text_lines(text_path)] if text_path else None
    if texts is not None and len(texts) != len(lines):
        raise ValueError(f"{text_path} has {len(texts)} lines but {words_path} has {len(lines)}")
    symbols_out, heads_out = [], []
    n = 0
    for n, sent in enumerate(read_conllu_file(conllu), 1):
        if n > len(lines):
            raise ValueError(f"{conllu}: sentence {n} (line {sent.line}) has no line in {words_path} "
                             f"({len(lines)} lines)")
        if lines[n - 1].split() != sent.words:
            raise ValueError(f"{conllu}: sentence {n} (line {sent.line}) has words {sent.words[:8]}..., but "
                             f"{words_path}:{n} has {lines[n - 1].split()[:8]}...")
        where = f"{text_path or words_path}:{n}"
        symbols, codes = pieces.encode(sent.words, sent.heads, where, texts[n - 1] if texts else None)
        symbols_out.append(" ".join(symbols) + "\n")
        heads_out.append(" ".join(map(str, codes)) + "\n")
    if n != len(lines):
        raise ValueError(f"{conllu} has {n} sentences but {words_path} has {len(lines)} lines")
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(symbols_out)
    with atomic_path(out + ".heads") as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(heads_out)
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-classification", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract", help="GLUE-style TSV -> PREFIX.input0 [PREFIX.input1] PREFIX.label")
    e.add_argument("tsv")
    e.add_argument("--out-prefix", required=True)
    e.add_argument("--task", choices=sorted(GLUE_TASKS), help="column layout of a GLUE task")
    e.add_argument("--header", action="store_true", help="(without --task) skip the first line")
    e.add_argument("--input-columns", help="(without --task) 0-based text columns, e.g. 1,2")
    e.add_argument("--label-column", type=int, help="(without --task) 0-based label column; -1 = last")
    e.add_argument("--no-label", action="store_true", help="unlabelled test data")
    c = sub.add_parser("conll", help="CoNLL-2003 file -> PREFIX.words and PREFIX.label (tags per word)")
    c.add_argument("input")
    c.add_argument("--out-prefix", required=True)
    c.add_argument("--tag-column", type=int, default=-1, help="0-based column of the tag (default: last)")
    c.add_argument("--columns", type=int, default=4, help="columns a line has (default 4: token POS chunk NER); "
                   "0: as many as the file's first line")
    w = sub.add_parser("words", help="BERT's basic word split (cased), one sentence a line")
    w.add_argument("input")
    w.add_argument("-o", "--output", required=True)
    ld = sub.add_parser("label-dict", help="labels of every split -> the label dict.txt (fairseq's format)")
    ld.add_argument("labels", nargs="+", help="PREFIX.label of every split")
    ld.add_argument("--task", choices=sorted(GLUE_CLASSES), help="check against and include this task's classes")
    ld.add_argument("-o", "--output", required=True)
    pc = sub.add_parser("pieces", help="parsed words -> the pretrained model's own subwords (WordPiece, GPT-2's "
                        "byte-level BPE, sentencepiece) and aligned head codes")
    pc.add_argument("--pretrained", required=True, help="the model's folder (vocab.txt; sentencepiece.bpe.model; "
                    "or encoder.json and vocab.bpe, downloaded where absent)")
    pc.add_argument("--words", required=True, help="the words file that was parsed")
    pc.add_argument("--conllu", required=True)
    pc.add_argument("--text", help="the raw lines the words came from (encoded by byte-level BPE and sentencepiece)")
    pc.add_argument("-o", "--output", required=True, help="symbols file; codes go to OUTPUT.heads")
    args = p.parse_args(argv)
    try:
        if args.cmd == "extract":
            check_outputs([f"{args.out_prefix}.label"], [args.tsv])
            classes, expected, regression = None, None, False
            if args.task:
                header, inputs, label, regression = GLUE_TASKS[args.task]
                classes, expected = GLUE_CLASSES.get(args.task), GLUE_COLUMNS.get(args.task)
            else:
                if not args.input_columns:
                    p.error("give --task or --input-columns")
                header, label = args.header, args.label_column
                inputs = tuple(int(x) for x in args.input_columns.split(","))
            n = extract(args.tsv, args.out_prefix, header, inputs, None if args.no_label else label, classes,
                        expected, regression)
            print(f"extracted {n} examples -> {args.out_prefix}.*", file=sys.stderr)
        elif args.cmd == "label-dict":
            check_outputs([args.output], args.labels)
            n = label_dict(args.labels, args.output, GLUE_CLASSES.get(args.task) if args.task else None)
            print(f"{n} labels -> {args.output}", file=sys.stderr)
        elif args.cmd == "conll":
            check_outputs([f"{args.out_prefix}.words", f"{args.out_prefix}.label"], [args.input])
            if args.columns < 0:
                p.error(f"--columns must be 0 or more, got {args.columns}")
            n = extract_conll(args.input, args.out_prefix, args.tag_column, args.columns or None)
            print(f"extracted {n} sentences -> {args.out_prefix}.words/.label", file=sys.stderr)
        elif args.cmd == "words":
            check_outputs([args.output], [args.input])
            n = words_file(args.input, args.output)
            print(f"split {n} lines into words -> {args.output}", file=sys.stderr)
        else:
            check_outputs([args.output, args.output + ".heads"], [args.words, args.conllu, args.text or args.words])
            n = pieces_file(args.pretrained, args.words, args.conllu, args.output, args.text)
            print(f"{n} sentences -> {args.output} and {args.output}.heads", file=sys.stderr)
    except (ValueError, OSError) as err:
        print(f"fairseq-syntax-classification: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
