"""RACE (multiple-choice reading comprehension) to binarized subwords plus aligned dependency heads, in the
layout of fairseq's RoBERTa RACE recipe (input0/ = the article, input1-4/ = question with option, label/),
for --task syntax_sentence_ranking.

  bash data-prep/race.sh [--race PATH] [--out DIR] [--pretrained DIR] [--levels middle|high|both]
                         [--parser auto|stanza|spacy] [--workers N] [--max-train N] [--max-eval N]
                         [--random-trees SEED] [--wait]

--race (or $RACE_DIR) is RACE.tar.gz or the extracted RACE/ folder; without it the local copies of the corpora are
used where there are any (fairseq_syntax/local_data.py: $FAIRSEQ_SYNTAX_DATA/race/RACE.tar.gz), else the official
archive is downloaded from www.cs.cmu.edu/~glai1/data/race/ (non-commercial research use only; cite Lai et al. 2017).
Splits: train; valid (RACE dev) and valid-middle, valid-high apart; test (RACE-M) and test1 (RACE-H) where
the archive has its test split. One example per question. --max-train N keeps N training questions (whole
articles in a fixed order that mixes both levels), --max-eval N the first N of each dev/test split.
Stages: extract (BERT basic words, cased; articles cut into sentences) -> parse (each sentence its own tree,
so no head crosses a sentence; each question-with-option too) -> binarize (the model's own subwords: WordPiece,
GPT-2's byte-level BPE or sentencepiece; heads aligned, fairseq's indexed datasets). Re-running skips finished stages.
--random-trees SEED also writes SG-Net's random-tree control beside the heads (input*/{split}.randheads: a
random tree over the same words of every sentence; train with --heads-suffix randheads).
"""
from __future__ import annotations

import os

from ..local_data import local_corpus
from ..pipeline.ownership import fresh_dir, install_dir
from ..pipeline.options import need_choice, need_int, need_parser, parse, quick_slice
from .tools import Recipe, Stop, count_lines, download, log
from .encoder_inputs import binarize_inputs, ensure_pretrained

URL = "http://www.cs.cmu.edu/~glai1/data/race/RACE.tar.gz"


def main(argv):
    o = parse(argv, {"--race": os.environ.get("RACE_DIR", "") or local_corpus("race/RACE.tar.gz"),
                     "--out": "work/race", "--pretrained": "work/minilm",
                     "--levels": "both", "--parser": "auto", "--workers": "2", "--max-train": "0", "--max-eval": "0",
                     "--random-trees": ""}, ("--wait",), __doc__)
    levels = need_choice("--levels", o["levels"], ("middle", "high", "both"), "--levels must be middle, high or both")
    need_parser(o["parser"])
    workers = need_int("--workers", o["workers"], 1)
    sizes = quick_slice({"max_train": need_int("--max-train", o["max_train"]),
                         "max_eval": need_int("--max-eval", o["max_eval"])}, {"max_train": 8, "max_eval": 8})
    seed = o["random_trees"] and str(need_int("--random-trees", o["random_trees"]))
    race, out, pretrained = o["race"], o["out"], o["pretrained"]
    if race and not os.path.exists(race):
        raise Stop(f"--race {race}: no such file or folder")
    r = Recipe(out, "race.sh", o["wait"])
    for d in ("raw", "parse"):
        os.makedirs(f"{out}/{d}", exist_ok=True)
    ensure_pretrained(r, pretrained)
    if not race:
        def fetch():
            os.makedirs(f"{out}/download", exist_ok=True)
            if not download(URL, f"{out}/download/RACE.tar.gz"):
                raise Stop(f"download failed: {URL} (give --race FILE)")
        r.stage("download", fetch, key=f"url={URL}")
        race = f"{out}/download/RACE.tar.gz"

    def splits():
        with open(f"{out}/raw/splits.txt", encoding="utf-8") as fh:
            return fh.read().split()

    def extract():
        r.tool("fairseq-syntax-race", "extract", "--source", race, "--out", f"{out}/raw", "--levels", levels,
               "--max-train", sizes["max_train"], "--max-eval", sizes["max_eval"], fail=f"reading {race} failed")

    def parse_all():  # one parser loaded for every split and part
        files = [f"{split}.{part}" for split in splits() for part in ("article", "options")]
        r.tool("fairseq-syntax-parse", *[f"{out}/raw/{f}.txt" for f in files], "-o",
               *[f"{out}/parse/{f}.conllu" for f in files], "--parser", o["parser"], "--workers", workers,
               fail="parsing failed")

    def binarize():
        tmp = fresh_dir(f"{out}/bin.tmp", out)
        r.tool("fairseq-syntax-race", "binarize", "--raw", f"{out}/raw", "--parse", f"{out}/parse", "--pretrained",
               pretrained, "--out", tmp, fail="binarizing failed")
        install_dir(tmp, f"{out}/bin", out)

    def random_trees():
        r.tool("fairseq-syntax-race", "binarize", "--raw", f"{out}/raw", "--parse", f"{out}/parse", "--pretrained",
               pretrained, "--out", f"{out}/bin", "--random-trees", seed, fail="writing the random trees failed")

    # (each sentence's own text is extracted too, for byte-level BPE and sentencepiece: a folder extracted without it
    # is extracted again)
    r.stage("extract", extract, key=f"levels={levels} max_train={sizes['max_train']} max_eval={sizes['max_eval']} "
                                    "texts=raw", inputs=[race])
    r.stage("parse", parse_all, key=f"parser={o['parser']}", outputs=["parse"])
    r.stage("binarize", binarize, inputs=binarize_inputs(pretrained))
    if seed:
        r.stage("random-trees", random_trees, key=f"seed={seed}")
    # ready: every split extract promised (with both levels and whole splits, RACE-M and RACE-H of train and
    # valid apart) is there, with its heads (and its random trees when asked for)
    promised = splits()
    if levels == "both" and sizes["max_train"] == 0:
        promised += ["train-middle", "train-high"]
    if levels == "both" and sizes["max_eval"] == 0:
        promised += ["valid-middle", "valid-high"]
    for split in promised:
        for f in [f"label/{split}.label", f"input0/{split}.bin", f"input0/{split}.heads.bin"] + (
                [f"input0/{split}.randheads.bin"] if seed else []):
            if not os.path.isfile(f"{out}/bin/{f}"):
                raise Stop(f"{out}/bin/{f} is missing: the {split} split was not prepared; delete {out}/.stamps and "
                           f"run again")
    made = sorted(n[:-len(".label")] for n in os.listdir(f"{out}/bin/label") if n.endswith(".label"))
    log(f"ready: {out}/bin ({count_lines(f'{out}/raw/train.label')} training questions; splits: {' '.join(made)} )")
