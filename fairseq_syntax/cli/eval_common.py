"""What the evaluation commands (fairseq-syntax-race-eval, -ner-eval, -sentence-eval) share: their options, the
checks made before a checkpoint is loaded, and the two files they write."""
from __future__ import annotations

import argparse
import json
import os

from ..pipeline.atomic import atomic_path
from ..arg_types import positive_int, split_name
from .guards import check_outputs, files_under


def eval_arguments(prog: str, doc: str, data_help: str, split: str, split_help: str,
                   batch_size: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help=data_help)
    p.add_argument("--path", required=True, help="checkpoint")
    p.add_argument("--split", default=split, type=split_name, help=split_help)
    p.add_argument("--batch-size", type=positive_int, default=batch_size)
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--json", default=None, help="write the scores here")
    p.add_argument("--predictions", default=None, help="write one JSON line per item here")
    return p


def check_eval_inputs(a, prep: str, split_file: str) -> None:
    """The checkpoint and the split exist, and no output would overwrite an input; ``split_file`` is where a split
    shows, e.g. ``label/{}.bin``. Raises FileNotFoundError or ValueError naming what is wrong."""
    if not os.path.isfile(a.path):
        raise FileNotFoundError(f"{a.path}: no such checkpoint")
    check_outputs([a.json, a.predictions], [a.path, *files_under(a.data)])
    if not os.path.isdir(a.data):
        raise FileNotFoundError(f"{a.data}: no such data folder (the bin/ of {prep})")
    folder, pattern = os.path.split(split_file)
    suffix = pattern.replace("{}", "")
    where = os.path.join(a.data, folder)
    have = sorted(f[:-len(suffix)] for f in os.listdir(where) if f.endswith(suffix)) if os.path.isdir(where) else []
    if a.split not in have:
        raise FileNotFoundError(f"{a.data}: no split {a.split!r} (no {split_file.format(a.split)}); the splits there: "
                                f"{', '.join(have) or f'none (is it the bin/ of {prep}?)'}")


def write_eval_outputs(a, result: dict, rows) -> None:
    if a.json:
        with atomic_path(a.json) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    if a.predictions:
        with atomic_path(a.predictions) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)


def load_for_eval(checkpoint: str, data: str, task_name: str, tool: str, cpu: bool, fp16: bool):
    """(model in eval mode on its device, cfg, task) for one checkpoint of ``task_name``, checked before any data
    file is opened (checkpoint_compat.load_model_for)."""
    import torch

    import fairseq_syntax

    from ..checkpoint_compat import load_model_for

    fairseq_syntax.register()
    models, cfg, task = load_model_for(checkpoint, data, (task_name,), tool)
    model = models[0].eval()
    if fp16:
        model = model.half()
    if torch.cuda.is_available() and not cpu:
        model = model.cuda()
    return model, cfg, task


def eval_batches(model, task, dataset, batch_size: int):
    """The split's batches in order, on the model's device, without shuffling."""
    import warnings

    from fairseq import utils

    # fairseq's iterator always asks for pinned memory, which torch warns is pointless without a GPU
    warnings.filterwarnings("ignore", message=".*pin_memory.*", category=UserWarning)
    itr = task.get_batch_iterator(dataset, max_sentences=batch_size, max_positions=task.max_positions(),
                                  ignore_invalid_inputs=False).next_epoch_itr(shuffle=False)
    on_gpu = next(model.parameters()).is_cuda
    for sample in itr:
        yield utils.move_to_cuda(sample) if on_gpu else sample
