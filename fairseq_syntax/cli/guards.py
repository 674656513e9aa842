"""Checks every CLI makes before any work, so that a mistyped command fails at once and loses nothing:
an output that is one of the inputs (the same file under any name, ``os.path.samefile``) is refused, an
output that names a folder or sits in a missing folder is named. (Whole-number options take
``fairseq_syntax.arg_types.positive_int``.)"""
from __future__ import annotations

import os
import tempfile


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): they cannot be the same file
        return False


def one_output_each(parser, inputs, outputs) -> None:
    """Commands that take several inputs, each written to its ``-o``: the two counts must match (argparse's error)."""
    if len(inputs) != len(outputs):
        parser.error(f"{len(inputs)} inputs and {len(outputs)} outputs (-o): give one output per input")


def files_under(folder: str) -> list:
    """Every file in ``folder`` and its subfolders: the inputs of a command that reads a data folder."""
    return [os.path.join(d, f) for d, _, names in os.walk(folder) for f in names]


def check_outputs(outputs, inputs, make_dirs: bool = False) -> None:
    """Raise ``ValueError`` naming the output when one of ``outputs`` is an input, a folder, or in a missing
    folder (created instead with ``make_dirs``). Empty or ``None`` entries are skipped."""
    inputs = [i for i in inputs if i]
    outputs = [o for o in outputs if o]
    for k, out in enumerate(outputs):
        for inp in inputs:
            if same_file(out, inp):
                what = "the input" if os.path.abspath(out) == os.path.abspath(inp) else f"the input {inp}"
                raise ValueError(f"{out}: is {what}; writing there would overwrite it (choose another output; "
                                 "nothing was written)")
        for other in outputs[k + 1:]:
            if os.path.abspath(other) == os.path.abspath(out) or same_file(out, other):
                raise ValueError(f"{out}: given twice as an output")
        if os.path.isdir(out):
            raise ValueError(f"{out}: is a directory; give a file path to write")
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent):
            if make_dirs:
                os.makedirs(parent, exist_ok=True)
            else:
                raise ValueError(f"{out}: its folder {os.path.dirname(out) or '.'} does not exist")
        # found now, not after the whole evaluation: a folder this user cannot write into, or a file they cannot
        # replace (outputs are written beside themselves and renamed over, so the folder is what must be writable)
        try:  # a probe, as the write will be: permissions, a read-only file system, a full quota
            fd, probe = tempfile.mkstemp(dir=parent, prefix=".write-probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            raise ValueError(f"{out}: its folder {os.path.dirname(out) or '.'} cannot be written ({e.strerror}; "
                             "nothing was computed)") from None
