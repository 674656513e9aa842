"""fairseq_syntax: syntax and coreference in Transformer attention, as a fairseq plugin.

Two studies: SG-Net and syntax-aware local attention for translation and BERT-style encoders
(``tasks/``, ``models/``, ``modules/``), and the LAMBADA reader with supervised attention (``reader/``).
``fairseq-train --user-dir "$(fairseq-syntax-user-dir)" --task syntax_guided_translation ...``: fairseq
imports ``tasks/`` and ``models/`` of the user dir itself; from Python, call :func:`register` first.
The core (``syntax``, ``parsing``, ``modules``, ``text_prep``, ``pretrained`` and the reader's text and
layer modules) never imports fairseq.

Importing this package imports neither torch nor fairseq, so that console scripts print a path, their help or
an argument error at once; the torch version is checked where torch is first needed (``versions``).
"""
import os

__version__ = "0.1.0"

USER_DIR = os.path.dirname(os.path.abspath(__file__))


def register() -> None:
    """Register the task, models and architectures with fairseq (what ``--user-dir`` does)."""
    from . import criterions, models, tasks  # noqa: F401


def print_user_dir() -> None:
    """Console script ``fairseq-syntax-user-dir``: the path to give ``--user-dir`` from anywhere."""
    print(USER_DIR)
