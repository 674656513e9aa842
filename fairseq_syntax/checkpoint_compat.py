"""Let torch >= 2.6 load fairseq checkpoints with ``weights_only=True``.

fairseq pickles its config (an ``argparse.Namespace`` and omegaconf containers)
into every checkpoint, which the safe unpickler rejects. Rather than turning
``weights_only`` off for every ``torch.load`` in the process, we allow-list the
few classes fairseq checkpoints hold.
"""
from __future__ import annotations

import argparse
import collections
import typing

import torch


def _safe_globals() -> list:
    # fairseq >= 0.10 stores its config as plain containers plus an argparse.Namespace ("args");
    # checkpoints written before that hold omegaconf objects.
    from omegaconf import DictConfig, ListConfig
    from omegaconf.base import ContainerMetadata, Metadata
    from omegaconf.nodes import AnyNode

    import numpy as np

    # with --best-checkpoint-metric bleu (or any numpy-valued metric) fairseq stores numpy scalars
    core = getattr(np, "_core", None) or np.core  # numpy 2 renamed numpy.core
    numpy_types = [np.ndarray, np.dtype, core.multiarray._reconstruct, core.multiarray.scalar]
    numpy_types += [type(np.dtype(t)) for t in (np.float64, np.float32, np.int64, np.int32, np.bool_)]
    return [argparse.Namespace, DictConfig, ListConfig, ContainerMetadata, Metadata, AnyNode, typing.Any,
            collections.defaultdict, *numpy_types]


def allow_fairseq_checkpoints() -> None:
    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals(_safe_globals())


allow_fairseq_checkpoints()
