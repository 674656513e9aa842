"""Load fairseq checkpoints without running anything they hold.

Two layers. torch >= 2.6 loads weights-only: fairseq pickles its config (an ``argparse.Namespace`` and
omegaconf containers) into every checkpoint, which the safe unpickler rejects, so rather than turning
``weights_only`` off for every ``torch.load`` in the process we allow-list the few classes fairseq
checkpoints hold. But the config's strings then reach Python's ``eval`` when fairseq builds the model
(``utils.eval_str_list``, ``eval_str_dict``, ``eval_bool`` and bare ``eval``), so a checkpoint of plain
strings can still run code. :data:`EVAL_FIELDS` lists every configuration field fairseq 0.12 evaluates
(read off its source: models, modules, optimizers, criterions, tasks), and :func:`check_config` refuses a
checkpoint where one of them holds anything but ``None`` or a Python literal. It runs inside
``checkpoint_utils.load_checkpoint_to_cpu``, through which every loading path goes (fairseq-generate,
-interactive, -validate, ``from_pretrained``, the LAMBADA evaluation, ``--restore-file`` and
``--finetune-from-model``), before any model is built; ``fairseq-syntax-average`` calls it itself.
"""
from __future__ import annotations

import argparse
import ast
import collections
import os
import pickle
import sys
import typing
import zipfile

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


class OtherDictionariesError(ValueError):
    """The data given with a checkpoint was binarized with other dictionaries than the ones it was trained with."""


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


def task_of(state: dict) -> tuple[str | None, dict]:
    """(task name, task options) of a loaded checkpoint state: its ``cfg.task``, or the ``args`` of an older one."""
    cfg = state.get("cfg")
    task = cfg.get("task") if cfg is not None and hasattr(cfg, "get") else None
    if task is None and state.get("args") is not None:
        args = vars(state["args"])
        return args.get("task"), args
    if task is None:
        return None, {}
    if isinstance(task, argparse.Namespace):
        task = vars(task)
    items = dict(task.items()) if hasattr(task, "items") else {}
    return items.get("_name") or items.get("task"), items


def expect_task(state: dict, path: str, tasks: tuple, tool: str) -> dict:
    """The task options of ``state``, or a ValueError naming the checkpoint's task, before any data is opened."""
    name, options = task_of(state)
    if name not in tasks:
        raise ValueError(f"{path}: a checkpoint of --task {name or 'unknown'}; {tool} takes one trained with "
                         f"--task {' or '.join(tasks)}")
    return options


def refuse_other_trees(options, path: str, tool: str) -> None:
    """A hub parses raw text with the data's parser; a model trained on other trees (``--heads-suffix
    randheads``: the random-tree control) would be served trees it never saw, so it is refused."""
    suffix = (options.get("heads_suffix") if hasattr(options, "get") else getattr(options, "heads_suffix", None))
    if suffix not in (None, "heads"):
        raise ValueError(f"{path}: trained with --heads-suffix {suffix} (random trees or another tree source), "
                         f"but {tool} parses raw text with the data's parser, so the model would get other trees "
                         f"than it was trained on; score it on its prepared data instead (the evaluation CLIs "
                         f"read the {suffix} files)")


def load_model_for(path: str, data: str, tasks: tuple, tool: str, raw_text: bool = False):
    """``load_model_ensemble_and_task`` for one checkpoint, after its task is checked (a checkpoint of another
    task is named as such before any data file is opened) and, for a hub that parses raw text, its trees."""
    from fairseq import checkpoint_utils

    state = checkpoint_utils.load_checkpoint_to_cpu(path, {"data": data})
    options = expect_task(state, path, tasks, tool)
    if raw_text:
        refuse_other_trees(options, path, tool)
    return checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides={"data": data}, state=state)


def _trained_with(state: dict) -> tuple:
    """What a loaded checkpoint says of the dictionaries it was trained with: its task's record, and its
    classification heads' shapes (read before fairseq loads the weights, which deletes heads of another size)."""
    heads = {k: tuple(v.shape) for k, v in (state.get("model") or {}).items() if "classification_heads." in k}
    return (state.get("task_state") or {}).get("dictionaries"), heads


def _data_of(task, arg_overrides) -> str:
    """The data folder the task reads (fairseq-generate's own task; the checkpoint's cfg names the training data)."""
    for holder in (getattr(task, "cfg", None), getattr(task, "args", None)):
        data = getattr(holder, "data", None)
        if isinstance(data, str):
            return data
    return (arg_overrides or {}).get("data") or "the data"


_LOADED: dict = {}  # checkpoint path -> _trained_with(state), from load_checkpoint_to_cpu to the model's load


def check_trained_dictionaries(recorded: "dict | None", heads: dict, model, task, path: str, data: str) -> None:
    """Refuse data binarized with other dictionaries than the checkpoint's (dictionary_record.py): by the digests
    its task recorded, or, for a checkpoint saved before they were, by its classification heads' shapes (which
    fairseq would have replaced with random ones, warning only)."""
    from .dictionary_record import dictionary_digests

    if recorded:
        have = dictionary_digests(task)
        differ = [name for name in recorded if name in have and have[name] != recorded[name]]
    else:
        now = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        differ = ["label"] if any(now.get(k) != shape for k, shape in heads.items()) else []
    if differ:
        which = f"{' and '.join(differ)} dictionar{'y' if len(differ) == 1 else 'ies'}"
        raise OtherDictionariesError(
            f"{data}: its {which} {'is' if len(differ) == 1 else 'are'} not the one{'s' * (len(differ) > 1)} {path} "
            f"was trained with (an index there means another {'label' if differ == ['label'] else 'token'}); use it "
            f"with the data it was trained on, or with data binarized with that data's dict.txt files")


def cli_errors_without_traceback() -> None:
    """When a fairseq command line (fairseq-generate, -interactive, -validate, -train) meets a checkpoint this
    package refuses, print the refusal as one line and exit 1, instead of a traceback whose last line is it.
    Only uncaught exceptions reach ``sys.excepthook``: Python callers still get the exception."""
    previous = sys.excepthook
    if getattr(previous, "_fairseq_syntax", False):
        return

    def hook(kind, value, tb):
        if issubclass(kind, (UnsafeCheckpointError, UnreadableCheckpointError, OtherDictionariesError)):
            print(f"{os.path.basename(sys.argv[0]) or 'python'}: error: {value}", file=sys.stderr)
            sys.exit(1)
        previous(kind, value, tb)

    hook._fairseq_syntax = True
    sys.excepthook = hook


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


def install_load_check() -> None:
    """Wrap ``fairseq.checkpoint_utils.load_checkpoint_to_cpu`` (once) so that every checkpoint it returns
    has passed :func:`check_config`, and ``load_model_ensemble_and_task`` (fairseq-generate, -validate,
    -interactive, the hubs, the evaluation commands) so that every model it builds is checked against the data's
    dictionaries (:func:`check_trained_dictionaries`); fairseq's callers look both up on the module at call time.
    Training (``--restore-file``, ``--finetune-from-model``) loads through the first only: fine-tuning onto
    another label set stays possible."""
    from fairseq import checkpoint_utils

    original = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(original, "_fairseq_syntax_checked", False):
        return

    def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False):
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            raise UnreadableCheckpointError(f"{path}: an empty file, not a checkpoint (a training stopped while "
                                            "writing it?); train it again or copy it whole")
        try:
            state = original(path, arg_overrides, load_on_all_ranks)
        except (pickle.UnpicklingError, EOFError, RuntimeError, zipfile.BadZipFile, UnicodeDecodeError,
                ValueError, KeyError, AttributeError) as err:
            if isinstance(err, UnsafeCheckpointError):
                raise
            raise _unreadable(path, err) from None
        check_config(state, path)
        _LOADED[os.path.abspath(path)] = _trained_with(state)
        return state

    def load_model_ensemble_and_task(filenames, arg_overrides=None, task=None, strict=True, suffix="",
                                     num_shards=1, state=None):
        given = _trained_with(state) if state is not None else None
        ensemble, cfg, task = load_ensemble(filenames, arg_overrides, task, strict, suffix, num_shards, state)
        data = _data_of(task, arg_overrides)
        for filename, model in zip(filenames, ensemble):
            stashed = _LOADED.pop(os.path.abspath(filename), None)
            record = given or stashed
            if record is not None:
                check_trained_dictionaries(*record, model, task, filename, data)
        return ensemble, cfg, task

    load_ensemble = checkpoint_utils.load_model_ensemble_and_task
    for wrapper, wrapped in ((load_checkpoint_to_cpu, original), (load_model_ensemble_and_task, load_ensemble)):
        wrapper._fairseq_syntax_checked = True
        wrapper.__wrapped__ = wrapped
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu
    checkpoint_utils.load_model_ensemble_and_task = load_model_ensemble_and_task


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
install_load_check()
cli_errors_without_traceback()
