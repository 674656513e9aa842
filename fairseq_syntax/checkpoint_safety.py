"""Load fairseq checkpoints without running anything they hold: what is safe to load, without fairseq.

torch >= 2.6 loads weights-only: fairseq pickles its config (an ``argparse.Namespace`` and omegaconf containers)
into every checkpoint, which the safe unpickler rejects, so rather than turning ``weights_only`` off for every
``torch.load`` in the process we allow-list the few classes fairseq checkpoints hold
(:func:`allow_fairseq_checkpoints`). But the config's strings then reach Python's ``eval`` when fairseq builds
the model (``utils.eval_str_list``, ``eval_str_dict``, ``eval_bool`` and bare ``eval``), so a checkpoint of
plain strings can still run code. :data:`EVAL_FIELDS` lists every configuration field fairseq 0.12 evaluates
(read off its source: models, modules, optimizers, criterions, tasks), and :func:`check_config` refuses a
checkpoint where one of them holds anything but ``None`` or a Python literal. ``checkpoint_compat`` runs it
inside fairseq's loader, through which every loading path goes; ``fairseq-syntax-average`` calls it itself.
"""
from __future__ import annotations

import argparse
import ast
import collections
import typing

import torch

# field -> where fairseq 0.12 evaluates it (fairseq/...)
EVAL_FIELDS = {
    "encoder_xformers_att_config": "modules/multihead_attention.py (utils.eval_str_dict)",
    "decoder_xformers_att_config": "modules/multihead_attention.py (utils.eval_str_dict)",
    "xformers_att_config": "modules/multihead_attention.py (utils.eval_str_dict)",
    "adaptive_softmax_cutoff": "models/transformer/transformer_decoder.py, lstm.py, lightconv.py, fconv*.py "
                               "(utils.eval_str_list)",
    "adaptive_input_cutoff": "models/transformer_lm.py, lightconv_lm.py (utils.eval_str_list)",
    "character_filters": "models/transformer_lm.py, lightconv_lm.py (eval)",
    "encoder_layers": "models/fconv.py, fconv_self_att.py (eval)",
    "decoder_layers": "models/fconv.py, fconv_lm.py, fconv_self_att.py (eval)",
    "encoder_attention": "models/fconv_self_att.py (eval)",
    "decoder_attention": "models/fconv.py, fconv_lm.py, fconv_self_att.py (eval); lstm.py (utils.eval_bool)",
    "self_attention": "models/fconv_self_att.py (eval)",
    "project_input": "models/fconv_self_att.py (eval)",
    "gated_attention": "models/fconv_self_att.py (eval)",
    "downsample": "models/fconv_self_att.py (eval)",
    "pretrained": "models/fconv_self_att.py (eval)",
    "conv_feature_layers": "models/wav2vec/wav2vec.py, wav2vec2.py, speech_to_text/s2t_wav_transformer.py (eval)",
    "conv_aggregator_layers": "models/wav2vec/wav2vec.py (eval)",
    "feature_encoder_spec": "data/audio/raw_audio_dataset.py (eval)",
    "pipeline_balance": "distributed/utils.py, model_parallel/.../pipeline_parallel_transformer (eval_str_list)",
    "pipeline_devices": "distributed/utils.py, model_parallel/.../pipeline_parallel_transformer (eval_str_list)",
    "pipeline_encoder_balance": "model_parallel/.../pipeline_parallel_transformer/model.py (eval_str_list)",
    "pipeline_encoder_devices": "distributed/utils.py, pipeline_parallel_transformer/model.py (eval_str_list)",
    "pipeline_decoder_balance": "model_parallel/.../pipeline_parallel_transformer/model.py (eval_str_list)",
    "pipeline_decoder_devices": "distributed/utils.py, pipeline_parallel_transformer/model.py (eval_str_list)",
    "adam_betas": "optim/adam.py, cpu_adam.py (eval)",
    "adamax_betas": "optim/adamax.py (eval)",
    "adafactor_eps": "optim/adafactor.py (eval)",
    "lamb_betas": "optim/fused_lamb.py (eval)",
    "wer_args": "criterions/ctc.py (eval)",
    "left_pad_source": "tasks/multilingual_translation.py, online_backtranslation.py, "
                       "data/multilingual/multilingual_data_manager.py (utils.eval_bool)",
    "left_pad_target": "tasks/multilingual_translation.py, online_backtranslation.py, "
                       "data/multilingual/multilingual_data_manager.py (utils.eval_bool)",
    "model_overrides": "fairseq_cli/generate.py, interactive.py, validate.py (eval)",
}


class UnsafeCheckpointError(ValueError):
    """A checkpoint's stored configuration holds a string fairseq would pass to ``eval``."""


class UnreadableCheckpointError(ValueError):
    """A checkpoint file that is empty, truncated or not a torch file; the message never repeats torch's advice
    to retry with ``weights_only=False``, which would unpickle whatever the file holds."""


def _unreadable(path: str, err: BaseException) -> UnreadableCheckpointError:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    if "weights_only" in str(err) or "Weights only" in text or len(text) > 160:
        text = ""  # torch's long advice (and its unsafe way out) is not passed on
    reason = f"{type(err).__name__}{': ' + text if text else ''}"
    return UnreadableCheckpointError(
        f"{path}: not a readable checkpoint ({reason}); it is truncated, damaged or not a fairseq checkpoint: "
        "train it again or copy it whole (nothing in it was run)")


def _walk(node, where: str, seen: set):
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, argparse.Namespace):
        node = vars(node)
    else:
        try:
            from omegaconf import DictConfig, ListConfig, OmegaConf

            if isinstance(node, (DictConfig, ListConfig)):
                node = OmegaConf.to_container(node, resolve=False)
        except ImportError:
            pass
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}" if where else str(key)
            if key in EVAL_FIELDS:
                yield here, value
            yield from _walk(value, here, seen)
    elif isinstance(node, (list, tuple)):
        for k, value in enumerate(node):
            yield from _walk(value, f"{where}[{k}]", seen)


def check_config(state: dict, path: str) -> None:
    """Raise :class:`UnsafeCheckpointError` naming ``path`` and the field when a field of
    :data:`EVAL_FIELDS`, anywhere in the stored ``cfg`` or ``args``, is a string that is not a literal."""
    for part in ("cfg", "args"):
        for where, value in _walk(state.get(part), part, set()):
            if value is None or not isinstance(value, str):
                continue  # fairseq evaluates strings only; lists and numbers are used as they are
            try:
                ast.literal_eval(value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                raise UnsafeCheckpointError(
                    f"{path}: refused to load: its stored configuration field {where} = {value[:80]!r} is not a "
                    "Python literal, and fairseq would pass it to eval() when building the model (a crafted or "
                    "damaged checkpoint; nothing from it was run)") from None


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
