"""``fairseq-syntax-prep CORPUS [OPTIONS]``: one corpus's preparation (the recipes of ``data-prep/*.sh``)."""
from __future__ import annotations

import argparse
import importlib
import sys

from . import CORPORA
from ..pipeline.messages import run_main


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in CORPORA:  # the corpus first; its own options (and --help) follow it
        p = argparse.ArgumentParser(prog="fairseq-syntax-prep", description=__doc__,
                                    usage=f"%(prog)s [-h] {{{','.join(CORPORA)}}} [OPTIONS]",
                                    epilog="fairseq-syntax-prep CORPUS --help lists the corpus's options")
        p.add_argument("corpus", choices=CORPORA)
        p.parse_args(argv[:1])
    recipe = importlib.import_module(f".{argv[0]}", __package__)
    return run_main(recipe.main, argv[1:])


if __name__ == "__main__":
    sys.exit(main())
