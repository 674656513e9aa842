"""fairseq's checkpoint loading, hooked: every load passes the safety check (``checkpoint_safety``) and every
model built for evaluation is checked against the data's dictionaries; a refusal on a fairseq command line is one
line, not a traceback. Also the evaluation commands' loading of a model for a task.

``install_load_check`` wraps ``checkpoint_utils.load_checkpoint_to_cpu``, through which every loading path goes
(fairseq-generate, -interactive, -validate, ``from_pretrained``, the LAMBADA evaluation, ``--restore-file`` and
``--finetune-from-model``), before any model is built.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import zipfile

from .checkpoint_safety import UnreadableCheckpointError, UnsafeCheckpointError, _unreadable, check_config


class OtherDictionariesError(ValueError):
    """The data given with a checkpoint was binarized with other dictionaries than the ones it was trained with."""


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


install_load_check()
cli_errors_without_traceback()
