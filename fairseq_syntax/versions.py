"""One clear message when torch or fairseq is older than the plugin needs, instead of a deep AttributeError."""
from __future__ import annotations

import re

TORCH_MIN = (2, 0)  # scaled_dot_product_attention with a boolean mask
FAIRSEQ_MIN = (0, 12, 2)  # the dataclass configs, RoBERTa encoder and translation task the glue subclasses


def _parse(version: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:3])


def require(name: str, found: str, minimum: tuple) -> None:
    if _parse(found) < minimum:
        raise ImportError(f"fairseq_syntax needs {name} >= {'.'.join(map(str, minimum))}, but {name} {found} is "
                          f"installed; upgrade it (pip install '{name}>={'.'.join(map(str, minimum))}')")


def check_torch() -> None:
    import torch

    require("torch", torch.__version__, TORCH_MIN)


def check_fairseq() -> None:
    check_torch()  # fairseq imports torch first: an old torch is named before fairseq trips over it
    import fairseq

    require("fairseq", getattr(fairseq, "__version__", "0"), FAIRSEQ_MIN)
