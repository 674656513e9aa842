"""LAMBADA as reading comprehension (Chu et al. 2017) with parses, coreference chains and the five
attention-supervision signals (DepParse CorefAll CorefPrev CorefNext Narrative), for --task lambada_reader.

  bash data-prep/lambada.sh [--lambada-dir DIR] [--novels DIR] [--novel-passages N] [--train-sample N]
                            [--coref neuralcoref|stanza|jsonl] [--chains-dir DIR] [--parser auto|stanza|spacy]
                            [--workers N] [--coref-env DIR] [--coref-wheels DIR] [--max-eval N] [--out DIR] [--wait]

Splits: train = the RC-style training passages (--lambada-dir/chu_sample_train.txt, or the full
lambada-train-valid set when downloaded) plus --novel-passages passages cut from raw novels (--novels,
one paragraph per line, .txt/.txt.gz), both filtered as Chu et al. (target in context, no stop-word
target); valid = chu_sample_valid.txt, same filter (checkpoint selection); test = the LAMBADA dev set
(lambada_development_plain_text.txt, all 4,869 passages, unfiltered: the number we report).
Without --lambada-dir the local copies of the corpora are used where there are any (fairseq_syntax/local_data.py:
$FAIRSEQ_SYNTAX_DATA/lambada), else the data are downloaded (LAMBADA from Zenodo, Chu et al.'s RC training set from
TTIC).
--coref: neuralcoref (default; a side environment in --coref-env, installed on first use: it needs Python 3.7
and either a package index or --coref-wheels DIR, filled by `fairseq-syntax-lambada fetch-coref-wheels --out DIR`
where there is an index; once installed it runs offline; the script checks this before any work), stanza
(needs its models, web), or jsonl (your chains: --chains-dir/{train,valid,test}.coref.jsonl, one record per
passage, see fairseq_syntax/reader/chains.py).
--max-eval N keeps the first N instances of valid and test (quick checks; 0: all).
Every stage is cached: parses and chains of a finished split (or finished shard) are never recomputed.
"""
from __future__ import annotations

import glob
import os
import shutil
import tarfile

from ..local_data import local_corpus
from ..pipeline.atomic import atomic_path
from ..pipeline.ownership import mark_owned
from ..pipeline.options import need_choice, need_int, need_parser, parse, quick_slice
from .tools import Recipe, Stop, download, log

FILES = ("chu_sample_train.txt", "chu_sample_valid.txt", "lambada_development_plain_text.txt", "stopwords.txt")


def main(argv):
    o = parse(argv, {"--lambada-dir": local_corpus("lambada"), "--novels": "", "--novel-passages": "0",
                     "--train-sample": "0",
                     "--coref": "neuralcoref", "--chains-dir": "", "--parser": "auto", "--workers": "2",
                     "--coref-env": "work/coref-env",
                     "--coref-wheels": os.environ.get("FAIRSEQ_SYNTAX_COREF_WHEELS", ""), "--max-eval": "0",
                     "--out": "work/lambada"}, ("--wait",), __doc__)
    coref = need_choice("--coref", o["coref"], ("neuralcoref", "stanza", "jsonl"),
                        "--coref must be neuralcoref, stanza or jsonl")
    need_parser(o["parser"])
    novel_passages = need_int("--novel-passages", o["novel_passages"])
    train_sample = need_int("--train-sample", o["train_sample"])
    workers = need_int("--workers", o["workers"], 1)
    sizes = quick_slice({"train_sample": train_sample, "max_eval": need_int("--max-eval", o["max_eval"])},
                        {"train_sample": 60, "max_eval": 20})
    novels, out, env_dir, wheels = o["novels"], o["out"], o["coref_env"], o["coref_wheels"]
    if novels and not os.path.isdir(novels):
        raise Stop(f"--novels {novels}: no such folder")
    r = Recipe(out, "lambada.sh", o["wait"])
    if coref == "jsonl" and not o["chains_dir"]:
        raise Stop("--coref jsonl needs --chains-dir")
    r.env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    wheel_args = ["--wheels", wheels] if wheels else []
    if coref == "neuralcoref":  # Python 3.7 and an index or wheels, said now rather than an hour in
        r.tool("fairseq-syntax-lambada", "check-coref", "--env", env_dir, *wheel_args,
               fail="neuralcoref cannot be installed here (above); --coref jsonl or --coref stanza need no side "
                    "environment")
    raw = f"{out}/raw"
    os.makedirs(raw, exist_ok=True)
    lam = o["lambada_dir"]
    if not lam:
        r.stage("download", lambda: fetch(out), key="")
        lam = f"{out}/download/lambada"
    for f in FILES:
        if not os.path.isfile(f"{lam}/{f}"):
            raise Stop(f"{lam}/{f}: missing")
        if os.path.getsize(f"{lam}/{f}") == 0:
            raise Stop(f"{lam}/{f}: empty")
    stop = f"{lam}/stopwords.txt"
    with_novels = bool(novels) and novel_passages > 0

    def cut_novels():
        r.tool("fairseq-syntax-lambada", "cut-novels", "--novels", novels, "--out", f"{raw}/novels.passages.txt",
               "--stopwords", stop, "--max", novel_passages, fail="cutting the novels failed")

    def instances(split, *args):
        # (re)cut a split's instances: its parses and chains are then stale, which the parser and the coreference
        # step see from their records (the digest of what they were made from), and make them again
        r.tool("fairseq-syntax-lambada", "instances", "--split", split, "--out", raw, *args,
               fail=f"cutting the {split} instances failed")

    def train_instances():
        with atomic_path(f"{raw}/train.passages.txt") as tmp, open(tmp, "wb") as fh:
            with open(f"{lam}/chu_sample_train.txt", "rb") as src:
                for n, line in enumerate(src, 1):
                    if sizes["train_sample"] and n > sizes["train_sample"]:
                        break
                    fh.write(line)
            if with_novels:
                with open(f"{raw}/novels.passages.txt", "rb") as src:
                    shutil.copyfileobj(src, fh)
        instances("train", "--input", f"{raw}/train.passages.txt", "--train-filter", "--stopwords", stop)

    if with_novels:
        r.stage("novels", cut_novels, key=f"novel_passages={novel_passages}", inputs=[novels, stop])
    r.stage("instances-train", train_instances,
            key=f"train_sample={sizes['train_sample']} novels={novel_passages if novels else ''}",
            inputs=[f"{lam}/chu_sample_train.txt", stop])
    r.stage("instances-valid", lambda: instances("valid", "--input", f"{lam}/chu_sample_valid.txt", "--train-filter",
                                                 "--stopwords", stop, "--max", sizes["max_eval"]),
            key=f"max_eval={sizes['max_eval']}", inputs=[f"{lam}/chu_sample_valid.txt", stop])
    r.stage("instances-test", lambda: instances("test", "--input", f"{lam}/lambada_development_plain_text.txt",
                                                "--max", sizes["max_eval"]),
            key=f"max_eval={sizes['max_eval']}", inputs=[f"{lam}/lambada_development_plain_text.txt"])
    for split in ("valid", "test", "train"):
        # parse and coref skip a finished split themselves; their shards make a stopped run resume
        r.tool("fairseq-syntax-parse", f"{raw}/{split}.sents.txt", "-o", f"{raw}/{split}.conllu", "--parser",
               o["parser"], "--workers", workers, fail=f"parsing {split} failed")
        chains = ["--chains", f"{o['chains_dir']}/{split}.coref.jsonl"] if coref == "jsonl" else []
        r.tool("fairseq-syntax-lambada", "coref", "--dir", raw, "--split", split, "--backend", coref, "--env",
               env_dir, "--workers", workers, *wheel_args, *chains, fail=f"coreference for {split} failed")
    mark_owned(f"{out}/bin")  # data-prep's own folder (pipeline/ownership.py)
    r.tool("fairseq-syntax-lambada", "binarize", "--dir", raw, "--out", f"{out}/bin", "--splits", "train valid test",
           fail="binarizing failed")
    log(f"done: {out}/bin (train with --task lambada_reader, see README)")


def fetch(out: str) -> None:
    """LAMBADA (Zenodo record 2630551) and Chu et al.'s RC training set, unpacked where the recipe reads them."""
    d = f"{out}/download"
    os.makedirs(f"{d}/lambada", exist_ok=True)
    log("download LAMBADA (Zenodo record 2630551) and Chu et al.'s RC training set")
    for url, name in (("https://zenodo.org/record/2630551/files/lambada-dataset.tar.gz", "lambada-dataset.tar.gz"),
                      ("http://ttic.uchicago.edu/~kgimpel/data/lambada-train-valid.tar.gz",
                       "lambada-train-valid.tar.gz")):
        if not download(url, f"{d}/{name}"):
            raise Stop(f"download failed: {url} (give --lambada-dir)")
        with tarfile.open(f"{d}/{name}") as tar:
            tar.extractall(f"{d}/lambada", filter="data")
    lam = f"{d}/lambada"

    def first(pattern):
        found = sorted(glob.glob(f"{glob.escape(lam)}/**/{pattern}", recursive=True))
        if not found:
            raise Stop(f"no {pattern} in the downloaded data; pass --lambada-dir")
        return found[0]
    shutil.copyfile(first("lambada_development_plain_text.txt"), f"{lam}/lambada_development_plain_text.txt")
    shutil.copyfile(first("*train*/train.txt"), f"{lam}/chu_sample_train.txt")
    shutil.copyfile(first("*valid*/valid.txt"), f"{lam}/chu_sample_valid.txt")
    if not os.path.isfile(f"{lam}/stopwords.txt"):
        raise Stop("no stopwords.txt in the downloaded data; pass --lambada-dir with one")
