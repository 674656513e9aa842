"""Moses' normalize-punctuation, remove-non-printing-char and tokenizer, in parallel and in order."""
from __future__ import annotations

import multiprocessing as mp
import os
import re
import sys
from typing import Iterable, Iterator

from ..pipeline.atomic import atomic_path

_NON_PRINTING = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def remove_non_printing(line: str) -> str:
    """As Moses' remove-non-printing-char.perl: control and format characters become spaces."""
    return _NON_PRINTING.sub(" ", line)


class MosesPipeline:
    """normalize-punctuation | remove-non-printing-char | tokenizer -a (no XML escaping)."""

    def __init__(self, lang: str, aggressive_dash_splits: bool = True):
        from sacremoses import MosesPunctNormalizer, MosesTokenizer

        self.norm = MosesPunctNormalizer(lang=lang)
        self.tok = MosesTokenizer(lang=lang)
        self.aggressive = aggressive_dash_splits

    def __call__(self, line: str) -> str:
        line = remove_non_printing(self.norm.normalize(line.rstrip("\n")))
        return self.tok.tokenize(line, aggressive_dash_splits=self.aggressive, escape=False, return_str=True).strip()


_PIPE = {}


def _init(lang: str) -> None:
    _PIPE["p"] = MosesPipeline(lang)


def _run(chunk: list[str]) -> list[str]:
    return [_PIPE["p"](line) for line in chunk]


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def tokenize_file(src: str, dst: str, lang: str, workers: int = 1, chunk_size: int = 2000,
                  progress: bool = True) -> int:
    """Tokenize ``src`` into ``dst`` (written through a temporary name); returns the line count."""
    from tqdm import tqdm

    n = 0
    with atomic_path(dst) as tmp:
        with open(src, encoding="utf-8", errors="replace") as fin, open(tmp, "w", encoding="utf-8") as fout, \
                tqdm(unit="line", desc=f"tokenize {os.path.basename(src)}", disable=not progress,
                     file=sys.stderr) as bar:
            if workers <= 1:
                _init(lang)
                results = map(_run, _chunks(fin, chunk_size))
                pool = None
            else:
                pool = mp.get_context("fork").Pool(workers, initializer=_init, initargs=(lang,))
                results = pool.imap(_run, _chunks(fin, chunk_size))
            try:
                for out in results:
                    fout.write("".join(line + "\n" for line in out))
                    n += len(out)
                    bar.update(len(out))
            finally:
                if pool is not None:
                    pool.close()
                    pool.join()
    return n
