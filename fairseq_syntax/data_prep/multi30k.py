"""Multi30k (task 1) EN->DE, from the upstream files to binarized text plus source dependency heads.

  bash data-prep/multi30k.sh [--local-dir DIR] [--out DIR] [--parser auto|stanza|spacy]
                             [--bpe-merges N] [--workers N] [--max-train N] [--max-eval N] [--wait]

Without --local-dir (or $MULTI30K_DIR) the local copies of the corpora are used where there are any
(fairseq_syntax/local_data.py: $FAIRSEQ_SYNTAX_DATA/multi30k), else the raw files are downloaded from
github.com/multi30k/dataset.
Every upstream test set that can be had (from --local-dir, else downloaded) becomes a binarized split against
the training BPE and dictionary: test_2016_flickr -> test, then test1, test2, ... in the order of TEST_SETS;
OUT/bin/testsets.tsv names them (split, upstream name, sentences). test_2016_flickr is required.
Stages: raw -> Moses normalize-punctuation, remove-non-printing-char, tokenize -a (sacremoses)
-> parse English (CoNLL-U) -> joint BPE (subword-nmt)
-> align heads to subwords -> fairseq-preprocess (joined dictionary) -> binarize heads.
Running it again skips finished stages (fairseq_syntax/pipeline/stages.py).
"""
from __future__ import annotations

import os
import shutil

from ..local_data import local_corpus
from ..pipeline.atomic import write_text
from ..pipeline.options import need_int, need_parser, parse, quick_slice
from .tools import Recipe, Stop, check_gzip, count_lines, download, head_lines, log, same_lines
from .translation import Translation

URL = "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d/data/task1/raw"
TEST_SETS = ("test_2016_flickr", "test_2017_flickr", "test_2018_flickr", "test_2017_mscoco")
SRC, TGT = "en", "de"


def main(argv):
    o = parse(argv, {"--local-dir": os.environ.get("MULTI30K_DIR", "") or local_corpus("multi30k"),
                     "--out": "work/multi30k",
                     "--parser": "auto", "--bpe-merges": "10000", "--workers": "2", "--max-train": "0",
                     "--max-eval": "0"}, ("--wait",), __doc__)
    need_parser(o["parser"])
    merges = need_int("--bpe-merges", o["bpe_merges"], 1)
    workers = need_int("--workers", o["workers"], 1)
    sizes = quick_slice({"max_train": need_int("--max-train", o["max_train"]),
                         "max_eval": need_int("--max-eval", o["max_eval"])}, {"max_train": 300, "max_eval": 30})
    local = o["local_dir"]
    if local and not os.path.isdir(local):
        raise Stop(f"--local-dir {local}: no such folder")
    out = o["out"]
    r = Recipe(out, "multi30k.sh", o["wait"])
    for d in ("raw", "tok", "parse", "bpe"):
        os.makedirs(f"{out}/{d}", exist_ok=True)
    index = f"{out}/raw/testsets.tsv"
    where = f" in --local-dir {local}" if local else ""

    def get(name, lang):
        """``raw/NAME.LANG.gz.tmp`` from --local-dir or the web; False if it is not there."""
        dest = f"{out}/raw/{name}.{lang}.gz.tmp"
        if local:
            src = f"{local}/{name}.{lang}.gz"
            if not os.path.isfile(src):
                return False
            check_gzip(src)
            shutil.copyfile(src, dest)
            return True
        return download(f"{URL}/{name}.{lang}.gz", dest)

    def unpack(name, split, limit):
        for lang in (SRC, TGT):
            head_lines(f"{out}/raw/{name}.{lang}.gz.tmp", f"{out}/raw/{split}.{lang}", limit, gz=True)
            os.remove(f"{out}/raw/{name}.{lang}.gz.tmp")
        same_lines(f"{out}/raw/{split}.{SRC}", f"{out}/raw/{split}.{TGT}")

    def fetch():
        for name in ("train", "val"):
            if not (get(name, SRC) and get(name, TGT)):
                raise Stop(f"{name}.{{{SRC},{TGT}}}.gz: not found{where}")
        unpack("train", "train", sizes["max_train"])
        unpack("val", "valid", sizes["max_eval"])
        rows = []
        for name in TEST_SETS:
            if get(name, SRC) and get(name, TGT):
                split = f"test{len(rows)}" if rows else "test"
                unpack(name, split, sizes["max_eval"])
                rows.append(f"{split}\t{name}\t{count_lines(f'{out}/raw/{split}.{SRC}')}\n")
            else:
                for lang in (SRC, TGT):
                    if os.path.exists(f"{out}/raw/{name}.{lang}.gz.tmp"):
                        os.remove(f"{out}/raw/{name}.{lang}.gz.tmp")
                if not rows:
                    raise Stop(f"{name}.{{{SRC},{TGT}}}.gz: not found{where} (it is the main test set)")
                log(f"no {name}{where.replace(' in --local-dir', ' in')}: skipped")
        write_text(index, "".join(rows))

    source = f"local{local}" if local else URL
    r.stage("fetch", fetch, key=f"max_train={sizes['max_train']} max_eval={sizes['max_eval']} source={source}",
            inputs=[local])
    with open(index, encoding="utf-8") as fh:
        splits = ["train", "valid"] + [line.split("\t")[0] for line in fh if line.strip()]
    t = Translation(r, "tok", splits, workers, SRC, TGT)

    r.stage("tokenize", lambda: t.tokenize(splits, source_lines=True))
    r.stage("parse", lambda: t.parse(o["parser"]), key=f"parser={o['parser']}", outputs=["parse"])
    r.stage("bpe", lambda: t.bpe(merges), key=f"bpe_merges={merges}")
    r.stage("align", t.align)
    r.stage("binarize", t.binarize)
    shutil.copyfile(index, f"{out}/bin/testsets.tsv.tmp")
    os.replace(f"{out}/bin/testsets.tsv.tmp", f"{out}/bin/testsets.tsv")
    log(f"ready: {out}/bin (train {count_lines(f'{out}/bpe/train.{SRC}')} pairs; heads in *.{SRC}.heads.{{bin,idx}})")
