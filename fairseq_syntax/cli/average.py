"""fairseq-syntax-average: average the weights of fairseq checkpoints, loaded weights-only.

fairseq's ``scripts/average_checkpoints.py`` calls a plain ``torch.load``; torch >= 2.6 loads weights-only
by default and refuses the ``argparse.Namespace`` and omegaconf objects every fairseq checkpoint holds.
This loads them weights-only with the plugin's allow-list (nothing else is unpickled), averages every
floating-point tensor of ``model`` (in float64, stored back in its own dtype), and keeps the rest (config,
integer buffers) from the last input. The output is written through a temporary name.

    fairseq-syntax-average --inputs ck/checkpoint3.pt ck/checkpoint4.pt --output ck/averaged.pt
    fairseq-syntax-average --inputs ck --last 5 --output ck/averaged.pt   # the 5 newest checkpointN.pt
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from .guards import check_outputs, same_file


def find_last(directory: str, n: int) -> list[str]:
    """The ``n`` highest-numbered ``checkpoint{epoch}.pt`` or ``checkpoint_{epoch}_{update}.pt`` in ``directory``."""
    found = []
    for name in os.listdir(directory):
        m = re.fullmatch(r"checkpoint(\d+)\.pt|checkpoint_\d+_(\d+)\.pt", name)
        if m:
            found.append((int(m.group(1) or m.group(2)), os.path.join(directory, name)))
    if len(found) < n:
        raise ValueError(f"{directory}: {len(found)} numbered checkpoints, fewer than --last {n} "
                         "(train without --no-epoch-checkpoints, or with --save-interval-updates)")
    return [p for _, p in sorted(found)[-n:]]


def load(path: str) -> dict:
    import torch

    from .. import checkpoint_safety

    checkpoint_safety.allow_fairseq_checkpoints()
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such checkpoint") from None
    except Exception as e:  # the weights-only unpickler names what it refused
        first = str(e).splitlines()[0]
        raise ValueError(f"{path}: not loadable weights-only as a fairseq checkpoint ({first})") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: not a fairseq checkpoint (a {type(state).__name__}, not a dict)")
    checkpoint_safety.check_config(state, path)  # the average carries this config on: it must be safe to build
    return state


def average(paths: list[str]) -> dict:
    if not paths:
        raise ValueError("no checkpoints to average")
    sums, first = None, None
    for path in paths:
        state = load(path)
        model = state.get("model")
        if not isinstance(model, dict):
            raise ValueError(f"{path}: no 'model' state dict")
        if sums is None:
            first, sums = path, {k: v.double() if v.is_floating_point() else None for k, v in model.items()}
        elif set(model) != set(sums):
            diff = sorted(set(model) ^ set(sums))
            raise ValueError(f"{path}: parameters differ from {first} ({', '.join(diff[:3])}...): not the same model")
        else:
            for k, v in model.items():
                if sums[k] is not None:
                    if v.shape != sums[k].shape:
                        raise ValueError(f"{path}: {k} has shape {tuple(v.shape)}, {first} {tuple(sums[k].shape)}")
                    sums[k] += v.double()
        last = state
    last["model"] = {k: (sums[k] / len(paths)).to(v.dtype) if sums[k] is not None else v
                     for k, v in last["model"].items()}
    return last


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-average", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inputs", nargs="+", required=True, help="checkpoint files, or one directory with --last")
    p.add_argument("--last", type=int, help="average the N newest numbered checkpoints of the --inputs directory")
    p.add_argument("--output", required=True)
    args = p.parse_args(argv)
    import torch

    try:
        if args.last:
            if len(args.inputs) != 1 or not os.path.isdir(args.inputs[0]):
                p.error("--last needs one directory as --inputs")
            paths = find_last(args.inputs[0], args.last)
        else:
            paths = args.inputs
        for k, path in enumerate(paths):
            for other in paths[:k]:
                if os.path.abspath(path) == os.path.abspath(other) or same_file(path, other):
                    raise ValueError(f"{path}: given twice (as {other}); each checkpoint is averaged once")
        check_outputs([args.output], paths, make_dirs=True)
        state = average(paths)
    except ValueError as e:
        print(f"fairseq-syntax-average: error: {e}", file=sys.stderr)
        return 1
    tmp = f"{args.output}.tmp{os.getpid()}"
    try:
        torch.save(state, tmp)
        os.replace(tmp, args.output)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(f"averaged {len(paths)} checkpoints -> {args.output}: {', '.join(os.path.basename(x) for x in paths)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
