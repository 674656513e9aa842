"""Sharded, resumable, parallel parsing of a tokenized text file into CoNLL-U.

Shards have a fixed number of lines, independent of the number of workers, and
each is parsed in one call with the same batches; so the merged output is
byte-identical whatever the worker or machine count. A finished shard is
renamed into place atomically and never parsed again, so a stopped run resumes.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import re
import sys
import time
from dataclasses import asdict, dataclass

from ..pipeline.atomic import atomic_path, write_text
from ..pipeline.locks import FileLock, Held
from ..pipeline.ownership import check_own_folder, remove_own_folder
from ..pipeline.records import plan_folder, read_own_json, sha1_file
from ..text_io import text_lines
from .backends import describe_provenance, first_different_token, get_parser, parser_provenance
from .conllu import format_conllu, read_conllu_file


@dataclass(frozen=True)
class ShardPlan:
    input: str
    num_lines: int
    shard_size: int
    backend: str
    input_sha1: str
    model: str | None = None  # a shard of one spaCy model must not be merged with another's

    @property
    def num_shards(self) -> int:
        return max(1, -(-self.num_lines // self.shard_size))

    def lines_of(self, k: int) -> range:
        return range(k * self.shard_size, min(self.num_lines, (k + 1) * self.shard_size))


def read_tokenized(path: str) -> list[str]:
    """The lines of a whitespace-tokenized file, kept as strings (a token list per sentence would
    take about ten times the memory on WMT14's 4.5M lines); an empty line is an error naming the line."""
    return read_tokenized_with_digest(path)[0]


def read_tokenized_with_digest(path: str) -> tuple[list[str], str]:
    """The lines (as :func:`read_tokenized`) and the SHA-1 of the bytes read, in one pass: a pipe or FIFO is
    read once, and the digest is of exactly the text that was parsed."""
    h = hashlib.sha1()
    sents = []
    for i, line in enumerate(text_lines(path, digest=h), 1):
        line = line.strip()
        if not line:
            raise ValueError(f"{path}:{i}: empty line; every line must hold one tokenized sentence")
        sents.append(line)
    if not sents:
        raise ValueError(f"{path}: empty; there is nothing to parse")
    return sents, h.hexdigest()


def record_path(output: str) -> str:
    """Beside a finished parse: the digest of its input and the parser that made it."""
    return output + ".provenance.json"


def read_record(output: str) -> "dict | None":
    return read_own_json(record_path(output))


def write_record(output: str, input_path: str, input_sha1: str, lines: int, parser: dict) -> None:
    """The record vouches for the parse's own bytes too (``output_sha1``): an edited head is not believed."""
    write_text(record_path(output), json.dumps({"input": os.path.basename(input_path), "input_sha1": input_sha1,
                                                "lines": lines, "parser": parser, "output_sha1": sha1_file(output)},
                                               indent=1, sort_keys=True) + "\n")


def stale_reason(record: "dict | None", input_path: str, input_sha1: str, parser: dict,
                 output: "str | None" = None) -> "str | None":
    """Why a finished parse cannot stand for this input and parser (None: it can): also a parse whose bytes are not
    the ones its record vouches for (a head edited by hand, a file cut or replaced)."""
    if record is None:
        return "there is no record of the input and parser it was made from"
    if record.get("input_sha1") != input_sha1:
        return f"{input_path} changed since it was parsed"
    if output is not None and record.get("output_sha1") != sha1_file(output):
        return "it is not the parse its record vouches for (edited, cut or replaced since)"
    have = record.get("parser") or {}
    if (have.get("backend"), have.get("model")) != (parser["backend"], parser["model"]):
        return f"it was parsed with {describe_provenance(have)}, not {describe_provenance(parser)}"
    return None


def merges(shard: "tuple[int, int] | None") -> bool:
    """Whether a run merges its shards into the output: one that parses them all (no --shard, or i/1) does; a
    job-array task (--shard i/N, N > 1) only adds shards, beside its siblings."""
    return shard is None or shard[1] == 1


@contextlib.contextmanager
def output_lock(output: str, merging: bool = True):
    """One writer per output: a second run on the same output stops at once, naming the first, instead of
    the two deleting each other's shards. Job-array tasks (``--shard i/N``) only add shards and never merge,
    so they share the lock with each other and exclude only a run that merges."""
    path = output + ".lock"
    try:
        lock = FileLock(path, shared=not merging)
    except Held as held:
        raise RuntimeError(f"{output}: {_lock_holder(path, str(held))} is writing it; wait for it to finish") from None
    with lock:
        if merging:  # array tasks leave the file alone: it names the one exclusive holder
            lock.claim("fairseq-syntax-parse")
        yield


def _lock_holder(path: str, text: str) -> str:
    """Who holds a lock we were refused: a shared lock still to be had means only job-array tasks hold it."""
    try:
        FileLock(path, shared=True).release()
    except Held:
        return f"another run ({text or 'another process'})"
    return "a job-array task (--shard i/N) parsing its shards"


def shard_dir(output: str) -> str:
    return output + ".shards"


def shard_path(output: str, k: int) -> str:
    return os.path.join(shard_dir(output), f"{k:06d}.conllu")


def _prepare(plan: ShardPlan, output: str, merging: bool) -> None:
    """The shard folder for ``plan``; where the input only moved (same digest), its shards still serve."""
    def differs(have: dict) -> "str | None":
        keys = sorted(k for k in set(have) | set(want) if k != "input" and have.get(k) != want.get(k))
        return f"another {_what(keys)}" if keys else None
    want = asdict(plan)
    plan_folder(shard_dir(output), want, _OURS, differs, merging)


def _what(keys: list[str]) -> str:
    names = {"num_lines": "input", "input_sha1": "input", "shard_size": "--shard-size", "backend": "parser",
             "model": "parser"}
    return " and ".join(dict.fromkeys(names.get(k, k) for k in keys))


_WORKER = {}


def _init_worker(backend: str, parser_kwargs: dict, threads: int) -> None:
    # one BLAS/torch thread per worker: N workers on N cores, not N x N threads fighting
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:
        pass
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        pass
    key = (backend, tuple(sorted(parser_kwargs.items())))
    if _WORKER.get("parser_key") != key:  # several files in one process load their parser once
        _WORKER["parser"], _WORKER["parser_key"] = get_parser(backend, **parser_kwargs), key


def _parse_shard(job):
    # the lines reach forked workers through _WORKER["lines"]: only shard ids cross the pipe
    k, lines, output = job
    sents = [_WORKER["lines"][i].split() for i in lines]
    parsed = _WORKER["parser"].parse(sents)
    for i, (src, p) in enumerate(zip(sents, parsed)):
        if len(p.heads) != len(src):
            raise RuntimeError(f"shard {k}, sentence {i}: the parser changed the token count")
    write_text(shard_path(output, k), "".join(format_conllu(p) for p in parsed))
    return k, len(sents), sum(len(s) for s in sents)


def parse_file(input_path: str, output: str, backend: str = "spacy", workers: int = 1,
               shard_size: int = 2000, shard: tuple[int, int] | None = None, parser_kwargs: dict | None = None,
               progress: bool = True, threads_per_worker: int = 1) -> dict:
    """Parse ``input_path`` (one tokenized sentence a line) into CoNLL-U at ``output``.

    ``shard=(i, n)`` parses only shards k with k % n == i (a job-array task) and
    does not merge; a later call without ``shard`` (or with all shards present)
    merges. Returns throughput figures of the shards parsed in this call.
    """
    from tqdm import tqdm

    sents, digest = read_tokenized_with_digest(input_path)
    kwargs = parser_kwargs or {}
    provenance = parser_provenance(backend, **kwargs)
    plan = ShardPlan(os.path.abspath(input_path), len(sents), shard_size, backend, digest, provenance["model"])
    reparse = None
    if os.path.exists(output) and not os.path.exists(shard_dir(output)):
        reparse = stale_reason(read_record(output), input_path, digest, provenance, output)
        if reparse is None:
            check_conllu_matches(output, sents, input_path)
            return {"sentences": 0, "tokens": 0, "seconds": 0.0, "skipped": True}
        print(f"{output}: {reparse}; parsing again", file=sys.stderr)
    _prepare(plan, output, merging=merges(shard))
    todo = [k for k in range(plan.num_shards)
            if (shard is None or k % shard[1] == shard[0]) and not os.path.exists(shard_path(output, k))]
    jobs = [(k, plan.lines_of(k), output) for k in todo]
    total = sum(len(j[1]) for j in jobs)
    _WORKER["lines"] = sents
    ntok = 0
    t0 = time.perf_counter()
    bar = tqdm(total=total, unit="sent", desc=f"parse {os.path.basename(input_path)}", disable=not progress,
               file=sys.stderr, smoothing=0.1)
    workers = max(1, min(workers, len(jobs)))  # no parser processes without a shard to parse
    if jobs:
        if workers <= 1:
            _init_worker(backend, kwargs, threads_per_worker)
            for job in jobs:
                _, n, t = _parse_shard(job)
                ntok += t
                bar.update(n)
        else:
            ctx = mp.get_context("fork")
            with ctx.Pool(workers, initializer=_init_worker, initargs=(backend, kwargs, threads_per_worker)) as pool:
                for _, n, t in pool.imap_unordered(_parse_shard, jobs):
                    ntok += t
                    bar.update(n)
    bar.close()
    seconds = time.perf_counter() - t0
    done = all(os.path.exists(shard_path(output, k)) for k in range(plan.num_shards))
    if done and (shard is None or shard[1] == 1):
        merge_shards(output, plan, sents, input_path)
        write_record(output, input_path, digest, len(sents), provenance)
    return {"sentences": total, "tokens": ntok, "seconds": seconds, "merged": done, "reparsed": reparse}


_OURS = re.compile(r"(\d{6}\.conllu|plan\.json)(\.tmp\d+)?")


def merge_shards(output: str, plan: ShardPlan, sents: list[str], input_path: str) -> None:
    """Concatenate the shards in order, check them against the text, then rename into place."""
    check_own_folder(shard_dir(output), _OURS)  # a user's file there stops the merge before anything is written
    if os.path.exists(record_path(output)):  # the old record goes first: never a new parse under an old record
        os.remove(record_path(output))
    with atomic_path(output) as tmp:
        with open(tmp, "w", encoding="utf-8") as out:
            for k in range(plan.num_shards):
                with open(shard_path(output, k), encoding="utf-8") as fh:
                    out.write(fh.read())
        check_conllu_matches(tmp, sents, input_path)
    remove_own_folder(shard_dir(output), _OURS)


def check_conllu_matches(conllu_path: str, sents: list[str], text_path: str) -> None:
    """Every line of the text has one CoNLL-U sentence with the same tokens, compared token by token
    after the parser-form mapping (``@-@`` and ``-`` are one token)."""
    n = 0
    for n, parsed in enumerate(read_conllu_file(conllu_path), 1):
        if n > len(sents):
            raise ValueError(f"{conllu_path}: more sentences than the {len(sents)} lines of {text_path}")
        want = sents[n - 1].split()
        if len(parsed.words) != len(want):
            raise ValueError(
                f"{conllu_path}:{parsed.line}: sentence {n} has {len(parsed.words)} tokens but "
                f"{text_path}:{n} has {len(want)}"
            )
        k = first_different_token(parsed.words, want)
        if k is not None:
            raise ValueError(f"{conllu_path}:{parsed.line}: token {k + 1} of sentence {n} is {parsed.words[k]!r}, "
                             f"but {text_path}:{n} has {want[k]!r} there")
    if n != len(sents):
        raise ValueError(f"{conllu_path}: {n} sentences, but {text_path} has {len(sents)} lines (line {n + 1} has "
                         "no parse)")
