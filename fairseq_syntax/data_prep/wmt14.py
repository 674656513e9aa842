"""WMT14 EN->DE (the SG-Net paper's setting) from download to syntax-aligned binarized data.

  bash data-prep/wmt14.sh [--mirror DIR] [--out DIR] [--parser stanza|spacy|conllu] [--conllu-dir DIR]
       [--nc v9|v12] [--bpe-merges N] [--workers N] [--shard-size N] [--shard i/N] [--until STAGE]
       [--train-prefixes "P1 P2 ..."] [--dev-prefix P] [--max-lines N] [--wait]

Follows fairseq's examples/translation/prepare-wmt14en2de.sh: Europarl v7 + Common Crawl + News
Commentary (v9 by default, as WMT14; v12 as an option) for training, newstest2013 as the dev set (as the
paper) and newstest2014 (full) as the test set; normalize punctuation, remove non-printing characters,
tokenize (sacremoses, -a), clean (1-250 tokens, length ratio 1.5); parse the English side; learn joint
BPE (40k merges); align heads to subwords; binarize text and heads with a joined dictionary.

--mirror DIR      a local directory holding the upstream .tgz files, or their extracted files (flat or
                  in the archives' layout); anything missing there is downloaded
--parser          stanza (default; GPU where there is one), spacy (offline) or conllu (parses you bring:
                  --conllu-dir with {train,valid,test}.en.conllu, one sentence per cleaned tokenized line)
--shard i/N       parse only shard i of N of every split (a cluster job array) and stop; run
                  `--until clean` once before, and once more without --shard afterwards to merge and finish
--train-prefixes  use these parallel files (PREFIX.en/.de, optionally .gz) instead of the WMT14 corpora
--dev-prefix      use these files instead of newstest2013
--max-lines N     keep the first N lines of each training corpus (for tests)
Every stage writes under temporary names and is skipped when complete, so a stopped run resumes.
"""
from __future__ import annotations

import os
import re
import shutil
import tarfile

from ..pipeline.atomic import atomic_path
from ..pipeline.options import need_choice, need_int, parse, quick_slice
from .tools import Recipe, Stop, copy_text, count_lines, download, log, no_empty, read_lines, same_lines
from .translation import Translation

SRC, TGT = "en", "de"
SPLITS = ["train", "valid", "test"]
NC = {"v9": ("training-parallel-nc-v9.tgz", "http://statmt.org/wmt14/training-parallel-nc-v9.tgz",
             "training/news-commentary-v9.de-en"),
      "v12": ("training-parallel-nc-v12.tgz",
              "http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz",
              "training/news-commentary-v12.de-en")}
UNTIL = ("", "fetch", "tokenize", "clean", "parse", "bpe", "align")


class Finished(Exception):
    """--until: the stages asked for are done."""


def main(argv):
    o = parse(argv, {"--mirror": os.environ.get("WMT14_MIRROR", ""), "--out": "work/wmt14_en_de",
                     "--parser": "stanza", "--conllu-dir": "", "--nc": "v9", "--bpe-merges": "40000",
                     "--workers": str(os.cpu_count() or 1), "--shard-size": "2000", "--shard": "", "--until": "",
                     "--train-prefixes": "", "--dev-prefix": "", "--max-lines": "0"}, ("--wait",), __doc__)
    parser = need_choice("--parser", o["parser"], ("stanza", "spacy", "conllu"),
                         "--parser must be stanza, spacy or conllu")
    if parser == "conllu" and not o["conllu_dir"]:
        raise Stop("--parser conllu needs --conllu-dir")
    need_choice("--nc", o["nc"], tuple(NC), "--nc must be v9 or v12")
    merges = need_int("--bpe-merges", o["bpe_merges"], 1)
    workers = need_int("--workers", o["workers"], 1)
    shard_size = need_int("--shard-size", o["shard_size"], 1)
    max_lines = quick_slice({"max_lines": need_int("--max-lines", o["max_lines"])}, {"max_lines": 300})["max_lines"]
    shard = o["shard"]
    m = re.fullmatch(r"([0-9]+)/([0-9]+)", shard)
    if shard and not (m and int(m.group(1)) < int(m.group(2))):
        raise Stop(f"--shard takes i/N with 0 <= i < N, got '{shard}'")
    until = need_choice("--until", o["until"], UNTIL, "--until must be fetch, tokenize, clean, parse, bpe or align")
    mirror, out = o["mirror"], o["out"]
    if mirror and not os.path.isdir(mirror):
        raise Stop(f"--mirror {mirror}: no such folder")
    # the tasks of a job array (--shard) wait for each other through the stages before parsing, then parse apart
    r = Recipe(out, "wmt14.sh", wait=bool(shard) or o["wait"])
    for d in ("orig", "raw", "tok", "clean", "parse", "bpe"):
        os.makedirs(f"{out}/{d}", exist_ok=True)
    train_prefixes, dev_prefix = o["train_prefixes"].split(), o["dev_prefix"]
    t = Translation(r, "clean", SPLITS, workers, SRC, TGT)

    def locate(rel, archive, url):
        """An upstream file: from the mirror, or from the archive (mirrored or downloaded)."""
        places = [f"{out}/orig/{rel}"] + ([f"{mirror}/{rel}", f"{mirror}/{os.path.basename(rel)}"] if mirror else [])
        for c in places:
            for path in (c, c + ".gz"):
                if os.path.isfile(path):
                    return path
        if not os.path.isfile(f"{out}/orig/{archive}"):
            if mirror and os.path.isfile(f"{mirror}/{archive}"):
                log(f"extract {mirror}/{archive}")
                unpack(f"{mirror}/{archive}")
            else:
                if not download(url, f"{out}/orig/{archive}"):
                    raise Stop(f"download failed: {url} (use --mirror DIR offline)")
                unpack(f"{out}/orig/{archive}")
        if not os.path.isfile(f"{out}/orig/{rel}"):
            raise Stop(f"{rel} not found in {archive}")
        return f"{out}/orig/{rel}"

    def unpack(archive):
        with tarfile.open(archive) as tar:
            tar.extractall(f"{out}/orig", filter="data")

    def text_of(prefix, lang, what):
        f = f"{prefix}.{lang}"
        if not os.path.isfile(f):
            f += ".gz"
        if not os.path.isfile(f):
            raise Stop(f"{what} {prefix}.{lang}(.gz) not found")
        return f

    def fetch():
        prefixes = train_prefixes
        if not prefixes:
            tgz, url, corpus = NC[o["nc"]]
            europarl = locate("training/europarl-v7.de-en.en", "training-parallel-europarl-v7.tgz",
                              "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz")
            commoncrawl = locate("commoncrawl.de-en.en", "training-parallel-commoncrawl.tgz",
                                 "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz")
            prefixes = [os.path.dirname(europarl) + "/europarl-v7.de-en",
                        os.path.dirname(commoncrawl) + "/commoncrawl.de-en",
                        os.path.dirname(locate(f"{corpus}.en", tgz, url)) + "/" + os.path.basename(corpus)]
        for lang in (SRC, TGT):
            with atomic_path(f"{out}/raw/train.{lang}") as tmp, open(tmp, "wb") as fh:
                for p in prefixes:
                    f = text_of(p, lang, "training corpus")
                    for n, line in enumerate(read_lines(f), 1):
                        fh.write(line)
                        if max_lines and n >= max_lines:
                            break
        same_lines(f"{out}/raw/train.{SRC}", f"{out}/raw/train.{TGT}")
        dev = dev_prefix or (os.path.dirname(locate("dev/newstest2013.en", "dev.tgz",
                                                    "http://data.statmt.org/wmt17/translation-task/dev.tgz"))
                             + "/newstest2013")
        for lang in (SRC, TGT):
            copy_text(text_of(dev, lang, "dev set"), f"{out}/raw/valid.{lang}")
        same_lines(f"{out}/raw/valid.{SRC}", f"{out}/raw/valid.{TGT}")
        test = ("test-full.tgz", "http://statmt.org/wmt14/test-full.tgz")
        for lang, side in ((SRC, "src.en"), (TGT, "ref.de")):
            r.tool("fairseq-syntax-text", "sgm", locate(f"test-full/newstest2014-deen-{side}.sgm", *test), "-o",
                   f"{out}/raw/test.{lang}", fail=f"reading newstest2014 ({lang}) failed")
        same_lines(f"{out}/raw/test.{SRC}", f"{out}/raw/test.{TGT}")

    def clean():
        for split in ("train", "valid"):
            r.tool("fairseq-syntax-text", "clean", f"{out}/tok/{split}.{SRC}", f"{out}/tok/{split}.{TGT}",
                   f"{out}/clean/{split}.{SRC}", f"{out}/clean/{split}.{TGT}", "--min", "1", "--max", "250",
                   "--ratio", "1.5", fail=f"cleaning {split} failed")
        for lang in (SRC, TGT):
            shutil.copyfile(f"{out}/tok/test.{lang}", f"{out}/clean/test.{lang}.tmp")
            os.replace(f"{out}/clean/test.{lang}.tmp", f"{out}/clean/test.{lang}")
        no_empty(f"{out}/clean/test.{SRC}")

    def until_here(name):
        if until == name:
            log(f"stopping after {name} (--until)")
            raise Finished

    # the corpora as given: prefix files (plain or .gz), or the mirror folder, or the upstream addresses
    inputs = [f"{p}.{lang}" if os.path.isfile(f"{p}.{lang}") else f"{p}.{lang}.gz"
              for p in train_prefixes + ([dev_prefix] if dev_prefix else []) for lang in (SRC, TGT)]
    inputs += [mirror] if mirror else []
    try:
        r.stage("fetch", fetch, key=f"nc={o['nc']} max_lines={max_lines} train_prefixes={o['train_prefixes']} "
                                    f"dev_prefix={dev_prefix} mirror={mirror}", inputs=inputs)
        until_here("fetch")
        r.stage("tokenize", lambda: t.tokenize(SPLITS))
        until_here("tokenize")
        r.stage("clean", clean, key="min=1 max=250 ratio=1.5")
        until_here("clean")
        if shard:
            if parser == "conllu":
                raise Stop("--shard is for parsing with stanza or spacy")
            r.prep.unlock()
            t.parse(parser, "--shard-size", shard_size, "--shard", shard)
            log(f"shard {shard} parsed; run once more without --shard to merge and finish")
            return
        r.stage("parse", lambda: t.parse(parser, "--shard-size", shard_size, conllu_dir=o["conllu_dir"]),
                key=f"parser={parser} shard_size={shard_size}", inputs=[o["conllu_dir"]], outputs=["parse"])
        until_here("parse")
        r.stage("bpe", lambda: t.bpe(merges), key=f"bpe_merges={merges}")
        until_here("bpe")
        r.stage("align", t.align)
        until_here("align")
        r.stage("binarize", t.binarize)
    except Finished:
        return
    pairs = count_lines(f"{out}/bpe/train.{SRC}")
    log(f"ready: {out}/bin ({pairs} training pairs; heads in *.{SRC}.heads.{{bin,idx}})")
