"""Where local copies of the corpora are, in one place: ``$FAIRSEQ_SYNTAX_DATA``, else a folder ``shared/data`` next to
the checkout's own folder, where one exists. Each corpus is a folder there as its upstream ships it
(``glue/RTE/train.tsv``, ``conll2003/train.txt``, ``multi30k/train.en.gz``, ...); without a local copy, data-prep
downloads from upstream."""
from __future__ import annotations

import os

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BESIDE_CHECKOUT = os.path.join(os.path.dirname(CHECKOUT), "shared", "data")
ENV = "FAIRSEQ_SYNTAX_DATA"


def data_root() -> str | None:
    """The folder of local corpus copies, or None (then data-prep downloads)."""
    root = os.environ.get(ENV, "")
    if root:
        if not os.path.isdir(root):
            raise FileNotFoundError(f"${ENV} is {root!r}, which is not a folder")
        return os.path.abspath(root)
    return BESIDE_CHECKOUT if os.path.isdir(BESIDE_CHECKOUT) else None


def local_copy(relative: str) -> str | None:
    """``relative`` (``glue``, ``conll2003``, ``lambada/stopwords.txt``) under the local copies, where it exists."""
    root = data_root()
    if root is None:
        return None
    path = os.path.join(root, relative)
    return path if os.path.exists(path) else None


def local_corpus(relative: str) -> str:
    """An option's default: the local copy of ``relative``, or "" (then the recipe downloads or asks for it)."""
    return local_copy(relative) or ""
