"""``--bf16`` on a GPU, which fairseq 0.12 cannot do by itself.

fairseq 0.12's option parsing sets ``--tpu`` whenever ``--bf16`` is given, so a GPU run fails in the Trainer with
``get_tpu_device`` (docs/troubleshooting.md). Where torch_xla is not installed there is no TPU to mean: the flag is
taken back before fairseq acts on it, in ``distributed_utils.call_main`` (fairseq-train, one process or several)
and in ``Trainer`` (programs that build one themselves), and the run trains in bf16 on the GPU (or the CPU), as
fairseq's FP16Optimizer already supports. Installed when fairseq imports the plugin (tasks/, models/).
"""
from __future__ import annotations

import functools
import importlib.util
import logging

logger = logging.getLogger(__name__)


def _untpu(cfg) -> None:
    from omegaconf import DictConfig, open_dict

    if not isinstance(cfg, DictConfig):  # (a Trainer given a Namespace converts it itself, through call_main's path)
        return
    common = cfg.common if "common" in cfg else cfg
    if not (common.get("bf16") and common.get("tpu")) or importlib.util.find_spec("torch_xla") is not None:
        return
    with open_dict(cfg):
        common.tpu = False
        if "distributed_training" in cfg and cfg.distributed_training.get("tpu"):
            cfg.distributed_training.tpu = False
    logger.info("--bf16 without torch_xla: training in bf16 on this machine's device, not on a TPU")


def install() -> None:
    from fairseq import trainer
    from fairseq.distributed import utils as distributed_utils

    if getattr(distributed_utils.call_main, "_fairseq_syntax_bf16", False):
        return
    call_main = distributed_utils.call_main

    @functools.wraps(call_main)
    def call_main_bf16(cfg, main, **kwargs):
        _untpu(cfg)
        return call_main(cfg, main, **kwargs)

    init = trainer.Trainer.__init__

    @functools.wraps(init)
    def trainer_init_bf16(self, cfg, *args, **kwargs):
        _untpu(cfg)
        init(self, cfg, *args, **kwargs)

    call_main_bf16._fairseq_syntax_bf16 = True
    distributed_utils.call_main = call_main_bf16
    trainer.Trainer.__init__ = trainer_init_bf16


install()
