"""CoNLL-2003 English NER to the pretrained model's binarized subwords, aligned dependency heads and word-level tags,
for --task syntax_token_labeling (one tag per word, predicted at the word's first piece).

  bash data-prep/conll2003.sh [--conll-dir DIR] [--out DIR] [--pretrained DIR] [--parser auto|stanza|spacy]
                              [--workers N] [--max-train N] [--max-eval N] [--random-trees SEED] [--wait]

--conll-dir (or $CONLL2003_DIR; else the local copies of the corpora, fairseq_syntax/local_data.py:
$FAIRSEQ_SYNTAX_DATA/conll2003) holds train.txt, valid.txt and test.txt (the shared task's distribution, which needs
the Reuters agreement: there is no public download). The parser parses the corpus tokens as
they are; each token's pieces (the model's own split of it: WordPiece, or the byte-level BPE or sentencepiece of a
fairseq RoBERTa, BART or XLM-R folder as --pretrained, docs/fairseq-encoders.md) form one word of the tree.
--random-trees SEED also writes SG-Net's and SLA's random-tree control beside the heads
(input0/{split}.randheads: a random tree over the same words of every sentence; train with --heads-suffix randheads).
Re-running skips finished stages (fairseq_syntax/pipeline/stages.py).
"""
from __future__ import annotations

import os

from ..local_data import local_corpus
from ..pipeline.ownership import fresh_dir, install_dir
from ..pipeline.options import need_int, need_parser, parse, quick_slice
from .tools import Recipe, Stop, count_lines, head_lines, log
from ..data.pretrained_pieces import scheme_files
from .encoder_inputs import binarize_inputs, binarize_labels, binarize_pieces, ensure_pretrained, record_for_raw_text

SPLITS = ("train", "valid", "test")


def main(argv):
    o = parse(argv, {"--conll-dir": os.environ.get("CONLL2003_DIR", "") or local_corpus("conll2003"),
                     "--out": "work/conll2003", "--pretrained": "work/minilm", "--parser": "auto", "--workers": "2",
                     "--max-train": "0",
                     "--max-eval": "0", "--random-trees": ""}, ("--wait",), __doc__)
    src = o["conll_dir"]
    if not src:
        raise Stop("give --conll-dir (or CONLL2003_DIR) with train.txt, valid.txt, test.txt")
    need_parser(o["parser"])
    workers = need_int("--workers", o["workers"], 1)
    max_train = need_int("--max-train", o["max_train"])
    max_eval = need_int("--max-eval", o["max_eval"])
    seed = o["random_trees"] and str(need_int("--random-trees", o["random_trees"]))
    sizes = quick_slice({"max_train": max_train, "max_eval": max_eval}, {"max_train": 160, "max_eval": 40})
    out, pretrained = o["out"], o["pretrained"]
    r = Recipe(out, "conll2003.sh", o["wait"])
    for d in ("raw", "parse", "wp"):
        os.makedirs(f"{out}/{d}", exist_ok=True)
    ensure_pretrained(r, pretrained)

    def extract():
        for split in SPLITS:
            if not os.path.isfile(f"{src}/{split}.txt"):
                raise Stop(f"{src}/{split}.txt: not found")
            r.tool("fairseq-syntax-classification", "conll", f"{src}/{split}.txt", "--out-prefix",
                   f"{out}/raw/{split}", fail=f"reading {split}")
            limit = sizes["max_train"] if split == "train" else sizes["max_eval"]
            if limit > 0:
                for f in (f"{out}/raw/{split}.words", f"{out}/raw/{split}.label"):
                    head_lines(f, f + ".cut", limit)
                    os.replace(f + ".cut", f)

    def parse_all():  # one parser loaded for every split
        r.tool("fairseq-syntax-parse", *[f"{out}/raw/{s}.words" for s in SPLITS], "-o",
               *[f"{out}/parse/{s}.conllu" for s in SPLITS], "--parser", o["parser"], "--workers", workers,
               fail="parsing failed")

    def subwords():  # the model's own, of the words joined by spaces (CoNLL-2003's text is its tokens)
        for split in SPLITS:
            r.tool("fairseq-syntax-classification", "pieces", "--pretrained", pretrained, "--words",
                   f"{out}/raw/{split}.words", "--conllu", f"{out}/parse/{split}.conllu", "-o",
                   f"{out}/wp/{split}.input0", fail=f"subwords of {split} failed")

    def binarize():
        tmp = fresh_dir(f"{out}/bin.tmp", out)
        binarize_pieces(r, "input0", SPLITS, pretrained, workers)
        binarize_labels(r, SPLITS, workers)
        record_for_raw_text(r, tmp, [f"{out}/parse/{s}.conllu" for s in SPLITS], pretrained)  # (tagger_hub.py)
        install_dir(tmp, f"{out}/bin", out)

    def random_trees():
        r.tool("fairseq-syntax-binarize-heads", "--heads", *[f"{out}/wp/{s}.input0.heads" for s in SPLITS],
               "--text-prefixes", *[f"{out}/bin/input0/{s}" for s in SPLITS], "--suffix", "randheads",
               "--random-trees", seed, fail="writing the random trees failed")

    r.stage("extract", extract, key=f"max_train={sizes['max_train']} max_eval={sizes['max_eval']}",
            inputs=[f"{src}/{s}.txt" for s in SPLITS])
    r.stage("parse", parse_all, key=f"parser={o['parser']}", outputs=["parse"])
    r.stage("subwords", subwords, inputs=scheme_files(pretrained))
    r.stage("binarize", binarize, inputs=binarize_inputs(pretrained))
    if seed:
        r.stage("random-trees", random_trees, key=f"seed={seed}")
    with open(f"{out}/bin/label/dict.txt", encoding="utf-8") as fh:
        tags = " ".join(line.split(" ")[0] for line in fh.read().splitlines())
    log(f"ready: {out}/bin ({count_lines(f'{out}/raw/train.words')} train sentences; tags: {tags} )")
