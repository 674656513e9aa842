"""fairseq_syntax: syntax-guided attention (SG-Net) for fairseq.

``fairseq-train --user-dir "$(fairseq-syntax-user-dir)" --task syntax_guided_translation
--arch transformer_sgnet ...``. fairseq imports ``tasks/`` and ``models/`` of the
user dir itself; from Python, call :func:`register` before using fairseq.
The core (``fairseq_syntax.syntax``, ``.parsing``, ``.modules``) never imports fairseq.
"""
import os

__version__ = "0.1.0"

USER_DIR = os.path.dirname(os.path.abspath(__file__))

from .versions import check_torch  # noqa: E402

check_torch()


def register() -> None:
    """Register the task, models and architectures with fairseq (what ``--user-dir`` does)."""
    from . import criterions, models, tasks  # noqa: F401


def print_user_dir() -> None:
    """Console script ``fairseq-syntax-user-dir``: the path to give ``--user-dir`` from anywhere."""
    print(USER_DIR)
