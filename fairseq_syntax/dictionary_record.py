"""The dictionaries a model was trained with, kept in its checkpoints (fairseq's ``task_state``).

An index means a token or a label only under the dictionary it was binarized with. Scored through another data
folder's dictionaries, a model reads other tokens and predicts other labels; and where the label count differs,
fairseq replaces the trained classification head with a fresh random one, with a warning only. Every model
load compares this record with the data it is given (checkpoint_compat.install_load_check).
"""
from __future__ import annotations

import hashlib


def dictionary_digests(task) -> dict:
    """sha1 of each of the task's dictionaries, its symbols in order: {"source": .., "target": .., "label": ..}
    (one entry for a dictionary that serves twice)."""
    out, seen = {}, set()
    for name in ("source", "target", "label"):
        try:
            d = getattr(task, f"{name}_dictionary", None)
        except NotImplementedError:
            d = None
        if d is None or not hasattr(d, "symbols") or id(d) in seen:
            continue
        seen.add(id(d))
        out[name] = hashlib.sha1("\n".join(d.symbols).encode("utf-8")).hexdigest()
    return out


class RecordsDictionaries:
    """Mixed into a task before its fairseq base: every checkpoint saved carries the digests, computed from the
    dictionaries the task trains with at that moment (not from a restored checkpoint's record)."""

    def state_dict(self):
        return {**super().state_dict(), "dictionaries": dictionary_digests(self)}
