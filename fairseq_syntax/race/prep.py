"""fairseq-syntax-race: the text and binarizing steps of data-prep/race.sh.

    fairseq-syntax-race extract --source RACE.tar.gz --out raw [--levels both] [--max-train N] [--max-eval N]
    fairseq-syntax-parse raw/train.article.txt -o parse/train.article.conllu     # one sentence a line
    fairseq-syntax-parse raw/train.options.txt -o parse/train.options.conllu     # 4 lines a question
    fairseq-syntax-race binarize --raw raw --parse parse --pretrained work/minilm --out bin

``extract`` writes, per split (``train``, ``valid`` = RACE dev, and ``test``/``test1`` = RACE test middle/high where
the archive has them): ``{split}.article.txt`` (each article's sentences, BERT basic words, one a line),
``{split}.article.raw`` (each sentence's own text, from its first word to its last, for byte-level BPE and
sentencepiece), ``{split}.article.nsent`` (sentences per article), ``{split}.options.raw`` (their texts),
``{split}.options.txt`` (question-with-option words, four lines a question), ``{split}.label`` (0–3) and
``{split}.meta.jsonl`` (per question: passage id, level, question number, article index). ``binarize`` encodes with
the pretrained model's own subwords (WordPiece, GPT-2's byte-level BPE or sentencepiece: data/pretrained_pieces.py;
an article's sentences after its first are encoded after a space, as they stand in the article), aligns the heads
(an article's sentence trees side by side, so no head crosses a sentence) and writes fairseq's RACE layout:
``input0/`` (the article, once per question), ``input1``–``input4/`` (the choices), each with
``{split}.heads.bin/.idx`` beside it, ``label/{split}.label``, plus ``valid-middle`` and ``valid-high``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np

from ..pipeline.atomic import atomic_path
from ..parsing.conllu import read_conllu_file
from ..data.pretrained_pieces import SUBWORD_STYLE, PretrainedPieces, one_line, scheme_files, word_runs_text
from ..text_io import text_lines
from ..text_prep.sentences import split_sentences
from ..text_prep.wordpiece import basic_words
from .examples import LEVELS, question_with_option, read_race, sample_order

MAX_SENTENCE_WORDS = 200  # an article without full stops is cut into parseable runs


def _write_lines(path: str, lines) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(lines)


def extract(source: str, out: str, levels=LEVELS, max_train: int = 0, max_eval: int = 0) -> dict:
    """The splits of ``source`` as word files under ``out``; returns {split: (passages, questions)}."""
    by_split: dict[str, list] = {}
    for p in read_race(source, levels=levels):
        by_split.setdefault(p.split, []).append(p)
    if "train" not in by_split or "dev" not in by_split:
        have = ", ".join(sorted(by_split)) or "nothing"
        raise ValueError(f"{source}: no RACE/train and RACE/dev files for levels {'/'.join(levels)} "
                         f"(found: {have})")
    for split in ("train", "dev"):  # every level asked for is there: valid-middle and valid-high are promised
        missing = [lv for lv in levels if not any(p.level == lv for p in by_split[split])]
        if missing:
            raise ValueError(f"{source}: no RACE/{split}/{missing[0]} passages, but --levels asks for "
                             f"{'/'.join(levels)}; give the whole release or --levels "
                             f"{next(lv for lv in levels if lv not in missing)}")
    plan = [("train", by_split["train"], max_train), ("valid", by_split["dev"], max_eval)]
    tests = by_split.get("test", [])
    for name, level in (("test", "middle"), ("test1", "high")):  # fairseq's RACE recipe: test = M, test1 = H
        part = [p for p in tests if p.level == level]
        if part:
            plan.append((name, part, max_eval))
    os.makedirs(out, exist_ok=True)
    counts = {}
    for split, passages, limit in plan:
        empty = [p.source for p in passages if not p.questions]  # the release has two (train/high)
        if empty:
            print(f"[race] {split}: {len(empty)} passages without questions skipped ({', '.join(empty[:3])})",
                  file=sys.stderr)
            passages = [p for p in passages if p.questions]
        if limit:
            passages = sample_order(passages)
        sents, texts, nsent, options, option_texts, labels, meta = [], [], [], [], [], [], []
        for p in passages:
            if limit and len(labels) >= limit:
                break
            words = basic_words(p.article)
            if not words:
                raise ValueError(f"{p.source}: the article has no words")
            s = split_sentences(words, MAX_SENTENCE_WORDS)
            sents.extend(" ".join(x) + "\n" for x in s)
            texts.extend(t + "\n" for t in word_runs_text(one_line(p.article), s, p.source))
            nsent.append(f"{len(s)}\n")
            for k, (q, opts, label) in enumerate(zip(p.questions, p.options, p.answers)):
                if limit and len(labels) >= limit:
                    break
                for j, o in enumerate(opts):
                    qo = question_with_option(q, o)
                    w = basic_words(qo)
                    if not w:
                        raise ValueError(f"{p.source}: question {k + 1} with option {'ABCD'[j]} has no words")
                    options.append(" ".join(w) + "\n")
                    option_texts.append(word_runs_text(one_line(qo), [w], p.source)[0] + "\n")
                labels.append(f"{label}\n")
                meta.append(json.dumps({"id": p.id, "level": p.level, "question": k, "article": len(nsent) - 1,
                                        "question_words": len(basic_words(q))}) + "\n")
        prefix = os.path.join(out, split)
        _write_lines(prefix + ".article.txt", sents)
        _write_lines(prefix + ".article.raw", texts)
        _write_lines(prefix + ".options.raw", option_texts)
        _write_lines(prefix + ".article.nsent", nsent)
        _write_lines(prefix + ".options.txt", options)
        _write_lines(prefix + ".label", labels)
        _write_lines(prefix + ".meta.jsonl", meta)
        counts[split] = (len(nsent), len(labels))
    _write_lines(os.path.join(out, "splits.txt"), [f"{s}\n" for s in counts])
    return counts


def _read_ints(path: str) -> list[int]:
    out = []
    for n, line in enumerate(text_lines(path), 1):
        try:
            out.append(int(line))
        except ValueError:
            raise ValueError(f"{path}:{n}: not an integer") from None
    return out


class _Pieces:
    """Words -> dictionary ids of the model's own subwords and the aligned head codes (with ``random_trees``, a
    seed, the codes of a random tree over the same words instead: SG-Net's random-tree control, sentence by
    sentence, so the control keeps the sentence boundaries)."""

    def __init__(self, pretrained: str, dictionary, random_trees: "int | None" = None):
        self.pieces = PretrainedPieces(pretrained)
        self.ids = dictionary.indices
        self.unk = dictionary.unk()
        self.rng = np.random.default_rng(random_trees) if random_trees is not None else None

    def encode(self, words: list[str], heads: list[int], where: str, text: str) -> tuple[np.ndarray, np.ndarray]:
        symbols, codes = self.pieces.encode(words, heads, where, text)
        if self.rng is not None:
            from ..syntax.random_trees import randomize_subword_heads

            codes = randomize_subword_heads(codes, self.rng, where)
        return np.array([self.ids.get(p, self.unk) for p in symbols], dtype=np.int64), np.array(codes, dtype=np.int64)


def join_sentences(encoded) -> tuple[np.ndarray, np.ndarray]:
    """An article's (ids, codes) from its sentences' own: trees side by side, each code shifted to the
    article's positions, so every sentence keeps its own root and no head crosses a sentence."""
    ids, codes, offset = [], [], 0
    for i, c in encoded:
        ids.append(i)
        codes.append(c + offset * np.sign(c))
        offset += len(i)
    return np.concatenate(ids), np.concatenate(codes)


def _parsed_lines(text: str, conllu: str):
    """(words, heads, where, raw text) of each line of ``text`` (``.txt``, its raw texts beside it as ``.raw``),
    checked against its parse."""
    raw = text[:-len(".txt")] + ".raw"
    if not os.path.exists(raw):
        raise ValueError(f"{raw}: no such file (a folder extracted by an older fairseq-syntax-race: extract again)")
    parses = read_conllu_file(conllu)
    raws = text_lines(raw)
    n = 0
    for n, line in enumerate(text_lines(text), 1):
        sent = next(parses, None)
        if sent is None:
            raise ValueError(f"{conllu}: ends after {n - 1} sentences, but {text} has more lines")
        words = line.split()
        if words != sent.words:
            raise ValueError(f"{conllu}:{sent.line}: sentence {n} has words {sent.words[:6]}..., but {text}:{n} "
                             f"has {words[:6]}...")
        own = next(raws, None)
        if own is None:
            raise ValueError(f"{raw}: ends after {n - 1} lines, but {text} has more")
        yield words, sent.heads, f"{raw}:{n}", own.rstrip("\n")
    extra = next(parses, None)
    if extra is not None:
        raise ValueError(f"{conllu}:{extra.line}: more parses than the {n} lines of {text}")
    if next(raws, None) is not None:
        raise ValueError(f"{raw}: more lines than the {n} of {text}")


def _articles(raw: str, parse: str, split: str, pieces: _Pieces):
    """Each article's ids and codes: its sentences' trees side by side (a root per sentence)."""
    nsent = _read_ints(os.path.join(raw, f"{split}.article.nsent"))
    lines = _parsed_lines(os.path.join(raw, f"{split}.article.txt"), os.path.join(parse, f"{split}.article.conllu"))
    out = []
    for a, k in enumerate(nsent):
        encoded = []
        for i in range(k):
            got = next(lines, None)
            if got is None:
                raise ValueError(f"{raw}/{split}.article.nsent: article {a + 1} needs more sentences than "
                                 f"{split}.article.txt has")
            words, heads, where, text = got
            encoded.append(pieces.encode(words, heads, where, " " + text if i else text))
        out.append(join_sentences(encoded))
    if next(lines, None) is not None:
        raise ValueError(f"{raw}/{split}.article.txt: more sentences than {split}.article.nsent counts")
    return out


def binarize(raw: str, parse: str, pretrained: str, out: str, random_trees: "int | None" = None,
             suffix: str = "heads") -> dict:
    """fairseq's RACE layout under ``out`` (see the module docstring); returns {split: questions}. With
    ``random_trees`` (a seed) only the codes of random trees are written, as ``{split}.{suffix}`` beside
    tokens that must already be there."""
    from fairseq.data import Dictionary, indexed_dataset

    from ..data.heads_io import IndexedWriter
    from ..parsing.provenance import write_preprocessing
    from ..parsing.sharded import read_record

    dictionary = Dictionary.load(os.path.join(pretrained, "dict.txt"))
    pieces = _Pieces(pretrained, dictionary, random_trees)
    tokens_too = random_trees is None
    token_dtype = indexed_dataset.best_fitting_int_dtype(len(dictionary) + 1)
    splits = [s.strip() for s in text_lines(os.path.join(raw, "splits.txt")) if s.strip()]
    for k in range(5):
        os.makedirs(os.path.join(out, f"input{k}"), exist_ok=True)
        if tokens_too:
            shutil.copyfile(os.path.join(pretrained, "dict.txt"), os.path.join(out, f"input{k}", "dict.txt"))
    os.makedirs(os.path.join(out, "label"), exist_ok=True)
    counts, records = {}, []
    eos = np.array([dictionary.eos()], dtype=np.int64)
    for split in splits:
        articles = _articles(raw, parse, split, pieces)
        options_text = os.path.join(raw, f"{split}.options.txt")
        options = [pieces.encode(*x)
                   for x in _parsed_lines(options_text, os.path.join(parse, f"{split}.options.conllu"))]
        meta = [json.loads(x) for x in text_lines(os.path.join(raw, f"{split}.meta.jsonl"))]
        labels = _read_ints(os.path.join(raw, f"{split}.label"))
        if len(options) != 4 * len(meta) or len(labels) != len(meta):
            raise ValueError(f"{raw}: {split} has {len(meta)} questions, {len(options)} option lines (want 4 each) "
                             f"and {len(labels)} labels")
        views = [(split, range(len(meta)))]
        if split in ("train", "valid"):  # RACE-M and RACE-H apart, as splits of their own
            for level in LEVELS:
                rows = [r for r, m in enumerate(meta) if m["level"] == level]
                if rows:
                    views.append((f"{split}-{level}", rows))
        for name, rows in views:
            writers = []
            try:
                for k in range(5):
                    prefix = os.path.join(out, f"input{k}", name)
                    if tokens_too:
                        writers.append(IndexedWriter(prefix, token_dtype))
                    writers.append(IndexedWriter(f"{prefix}.{suffix}", np.int16))
                step = 2 if tokens_too else 1
                for r in rows:
                    for k, (ids, codes) in enumerate([articles[meta[r]["article"]]] + options[4 * r:4 * r + 4]):
                        if tokens_too:
                            writers[step * k].add(np.concatenate([ids, eos]))
                        writers[step * k + step - 1].add(codes)
            except BaseException:
                for w in writers:
                    w.abort()
                raise
            for w in writers:
                w.close()
            if tokens_too:
                _write_lines(os.path.join(out, "label", f"{name}.label"), [f"{labels[r]}\n" for r in rows])
                _write_lines(os.path.join(out, "label", f"{name}.meta.jsonl"),
                             [json.dumps(meta[r]) + "\n" for r in rows])
            counts[name] = len(rows)
        for part in ("article", "options"):
            conllu = os.path.join(parse, f"{split}.{part}.conllu")
            records.append((conllu, read_record(conllu)))
    if tokens_too:
        write_preprocessing(out, records, source_lang="input0", target_lang=None,
                            subword_style=SUBWORD_STYLE[pieces.pieces.scheme],
                            tokenizer={"name": "bert_basic", "cased_for_parser": True})
        for f in scheme_files(pretrained):
            shutil.copyfile(f, os.path.join(out, os.path.basename(f)))
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-race", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract", help="RACE.tar.gz (or RACE/) -> word files per split")
    e.add_argument("--source", required=True, help="RACE.tar.gz, or the extracted RACE/ folder")
    e.add_argument("--out", required=True)
    e.add_argument("--levels", choices=("middle", "high", "both"), default="both")
    e.add_argument("--max-train", type=int, default=0, help="keep N training questions (0: all)")
    e.add_argument("--max-eval", type=int, default=0, help="keep N questions of each dev/test split (0: all)")
    b = sub.add_parser("binarize", help="word files + parses -> fairseq's RACE layout with heads")
    b.add_argument("--raw", required=True)
    b.add_argument("--parse", required=True)
    b.add_argument("--pretrained", required=True, help="the model's folder: dict.txt with vocab.txt (a lifted BERT), "
                   "sentencepiece.bpe.model (XLM-R), or GPT-2's encoder.json and vocab.bpe (RoBERTa, BART; "
                   "downloaded where absent)")
    b.add_argument("--out", required=True)
    b.add_argument("--random-trees", type=int, metavar="SEED",
                   help="write only the codes of random trees over the same words (the control), as "
                        "input*/{split}.randheads beside the binarized tokens already in --out")
    args = p.parse_args(argv)
    try:
        if args.cmd == "extract":
            if args.max_train < 0 or args.max_eval < 0:
                raise ValueError("--max-train and --max-eval take a whole number >= 0")
            levels = LEVELS if args.levels == "both" else (args.levels,)
            counts = extract(args.source, args.out, levels, args.max_train, args.max_eval)
            for split, (n_art, n_q) in counts.items():
                print(f"[race] {split}: {n_q} questions on {n_art} articles", file=sys.stderr)
        else:
            counts = binarize(args.raw, args.parse, args.pretrained, args.out, args.random_trees,
                              "randheads" if args.random_trees is not None else "heads")
            print("[race] binarized " + ", ".join(f"{s} {n}" for s, n in counts.items()) + f" -> {args.out}",
                  file=sys.stderr)
    except (ValueError, OSError) as err:
        print(f"fairseq-syntax-race: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
