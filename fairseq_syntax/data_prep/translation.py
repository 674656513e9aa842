"""The stages the translation corpora share (Multi30k, WMT14): parse the source side, joint BPE, heads aligned
to the subwords, then fairseq-preprocess with a joined dictionary and the heads beside it, into ``bin/`` at once.
They read the tokenized (and cleaned) text ``OUT/TEXT_DIR/{split}.{lang}``."""
from __future__ import annotations

import os

from ..pipeline.ownership import fresh_dir, install_dir
from .tools import Recipe, no_empty, same_lines


class Translation:
    def __init__(self, recipe: Recipe, text_dir: str, splits: list[str], workers: int, src="en", tgt="de"):
        self.r, self.out, self.text, self.splits, self.workers = recipe, recipe.out, text_dir, splits, workers
        self.src, self.tgt = src, tgt

    def tokenize(self, splits, source_lines: bool = False) -> None:
        """Moses tokenization of both sides, ``raw/`` into ``tok/``; ``source_lines``: no empty source line (the
        parser needs one sentence a line; WMT14 checks after cleaning)."""
        out, src, tgt = self.out, self.src, self.tgt
        for lang in (src, tgt):  # one process a language
            self.r.tool("fairseq-syntax-text", "tokenize", *[f"{out}/raw/{split}.{lang}" for split in splits], "-o",
                        *[f"{out}/tok/{split}.{lang}" for split in splits], "-l", lang, "--workers", self.workers,
                        fail=f"tokenizing the {lang} side failed")
        for split in splits:
            same_lines(f"{out}/tok/{split}.{src}", f"{out}/tok/{split}.{tgt}")
            if source_lines:
                no_empty(f"{out}/tok/{split}.{src}")

    def parse(self, parser: str, *extra, conllu_dir: str = "") -> None:
        """English CoNLL-U for every split, one parser loaded for all (``--parser conllu``: the user's parses,
        each checked against its text)."""
        texts = [f"{self.out}/{self.text}/{split}.{self.src}" for split in self.splits]
        parses = [f"{self.out}/parse/{split}.{self.src}.conllu" for split in self.splits]
        if parser != "conllu":
            self.r.tool("fairseq-syntax-parse", *texts, "-o", *parses, "--parser", parser, "--workers", self.workers,
                        *extra, fail="parsing failed")
            return
        for split, text, parsed in zip(self.splits, texts, parses):
            self.r.tool("fairseq-syntax-parse", text, "-o", parsed, "--parser", parser, "--workers", self.workers,
                        "--conllu", f"{conllu_dir}/{split}.{self.src}.conllu", *extra, fail=f"parsing {split} failed")

    def bpe(self, merges: int) -> None:
        """Joint BPE learnt on the training text and applied to every split."""
        out, src, tgt = self.out, self.src, self.tgt
        os.makedirs(f"{out}/bpe", exist_ok=True)
        self.r.tool("subword-nmt", "learn-joint-bpe-and-vocab", "--input", f"{out}/{self.text}/train.{src}",
                    f"{out}/{self.text}/train.{tgt}", "-s", merges, "-o", f"{out}/bpe/codes.tmp",
                    "--write-vocabulary", f"{out}/bpe/vocab.{src}", f"{out}/bpe/vocab.{tgt}",
                    "--num-workers", self.workers, fail="learning BPE failed")
        os.replace(f"{out}/bpe/codes.tmp", f"{out}/bpe/codes")
        for split in self.splits:
            for lang in (src, tgt):
                self.r.tool_output(f"{out}/bpe/{split}.{lang}", "subword-nmt", "apply-bpe", "-c", f"{out}/bpe/codes",
                                   "--vocabulary", f"{out}/bpe/vocab.{lang}", "--vocabulary-threshold", "1",
                                   "--num-workers", self.workers, "--input", f"{out}/{self.text}/{split}.{lang}")
            same_lines(f"{out}/bpe/{split}.{src}", f"{out}/{self.text}/{split}.{src}")

    def align(self) -> None:
        """Subword head codes for every split (a line or token mismatch names both files)."""
        for split in self.splits:
            self.r.tool("fairseq-syntax-align", "--conllu", f"{self.out}/parse/{split}.{self.src}.conllu",
                        "--subwords", f"{self.out}/bpe/{split}.{self.src}", "--style", "bpe", "-o",
                        f"{self.out}/bpe/{split}.{self.src}.heads", fail=f"aligning {split} failed")

    def binarize(self) -> None:
        out, src, tgt = self.out, self.src, self.tgt
        prefs, tests = [], []
        for split in self.splits:
            if split.startswith("test"):  # test, test1, test2 ...: fairseq-preprocess numbers them in order
                tests.append(f"{out}/bpe/{split}")
            else:
                prefs += [f"--{split}pref", f"{out}/bpe/{split}"]
        if tests:
            prefs += ["--testpref", ",".join(tests)]
        tmp = fresh_dir(f"{out}/bin.tmp", out)
        self.r.tool("fairseq-preprocess", "--source-lang", src, "--target-lang", tgt, *prefs, "--destdir", tmp,
                    "--joined-dictionary", "--workers", self.workers, quiet_tensorboard=True,
                    fail="fairseq-preprocess failed")
        self.r.tool("fairseq-syntax-binarize-heads", "--heads",
                    *[f"{out}/bpe/{s}.{src}.heads" for s in self.splits], "--split", *self.splits, "--destdir", tmp,
                    "-s", src, "-t", tgt, fail="binarizing the heads failed")
        self.r.tool("fairseq-syntax-provenance", "--destdir", tmp, "--parses",
                    *[f"{out}/parse/{s}.{src}.conllu" for s in self.splits], "-s", src, "-t", tgt,
                    "--bpe-codes", f"{out}/bpe/codes", "--bpe-vocab", f"{out}/bpe/vocab.{src}",
                    "--bpe-vocab-threshold", "1", fail="recording the preprocessing failed")
        install_dir(tmp, f"{out}/bin", out)
