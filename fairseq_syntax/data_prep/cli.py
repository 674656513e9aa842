"""``fairseq-syntax-prep CORPUS [OPTIONS]``: one corpus's preparation (the recipes of ``data-prep/*.sh``)."""
from __future__ import annotations

import importlib
import sys

from . import CORPORA
from ..pipeline.messages import run_main


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in CORPORA:
        print(f"usage: fairseq-syntax-prep {{{','.join(CORPORA)}}} [OPTIONS] (--help after the corpus lists them)",
              file=sys.stderr)
        return 2
    recipe = importlib.import_module(f".{argv[0]}", __package__)
    return run_main(recipe.main, argv[1:])


if __name__ == "__main__":
    sys.exit(main())
