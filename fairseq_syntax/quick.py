"""``FAIRSEQ_SYNTAX_QUICK=1``: try the README's commands end to end in minutes, exactly as written.

The data-prep recipes then prepare slices (``fairseq_syntax/pipeline/options.py: quick_slice``), and
``fairseq-train`` with the plugin stops after 2 updates of at most 2 examples on the CPU: the plugin is imported
(``--user-dir``) before fairseq parses the command line, so it appends ``--max-update 2 --cpu --batch-size 2``
there, and says so. ``fairseq-generate`` stops each hypothesis at 10 tokens (``--max-len-a 0 --max-len-b 10``): a
model of 2 updates ends no sentence, and would decode fairseq's 200 tokens a sentence at every beam. (RACE's batch
of 16 questions at 384 positions alone takes 11 GB on the CPU; a quick try should fit a laptop.) The stage records
of data-prep hold the slice sizes, so a later run without the variable prepares the full data again rather than
reusing a slice.
"""
from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger(__name__)
QUICK_TRAIN = ["--max-update", "2", "--cpu", "--batch-size", "2"]
QUICK_GENERATE = ["--max-len-a", "0", "--max-len-b", "10"]
# the line a training in quick mode writes before fairseq's config: its log keeps the mark (studies/training_log.py)
BANNER = "[fairseq_syntax] FAIRSEQ_SYNTAX_QUICK is set"


def quick_mode() -> bool:
    return os.environ.get("FAIRSEQ_SYNTAX_QUICK", "") not in ("", "0")


def apply_quick_mode() -> None:
    program = os.path.basename(sys.argv[0]) if quick_mode() else ""
    if program in ("fairseq-train", "train.py") and sys.argv[-len(QUICK_TRAIN):] != QUICK_TRAIN:
        sys.argv.extend(QUICK_TRAIN)
        print(f"{BANNER}: this training stops after 2 updates of at most 2 examples, on the CPU", file=sys.stderr)
    elif program in ("fairseq-generate", "generate.py") and sys.argv[-len(QUICK_GENERATE):] != QUICK_GENERATE:
        sys.argv.extend(QUICK_GENERATE)
        print(f"{BANNER}: each hypothesis stops at 10 tokens", file=sys.stderr)
