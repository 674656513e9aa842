"""fairseq checkpoints load under torch >= 2.6 (weights_only=True) without switching it off."""
import argparse
import pickle

import numpy as np
import pytest
import torch

import fairseq_syntax.checkpoint_compat  # noqa: F401


def test_fairseq_checkpoint_contents_load_with_weights_only(tmp_path):
    state = {
        "args": argparse.Namespace(arch="transformer_sgnet_small", lr=[5e-4]),
        "cfg": {"model": {"_name": "transformer_sgnet"}},
        "model": {"w": torch.ones(2)},
        # what --best-checkpoint-metric bleu leaves in extra_state
        "extra_state": {"best": np.float64(27.68), "val_loss": np.array([1.5], dtype=np.float32),
                        "n": np.int64(3)},
    }
    path = tmp_path / "checkpoint.pt"
    torch.save(state, path)
    back = torch.load(path)  # torch's default: weights_only=True
    assert back["args"].arch == "transformer_sgnet_small"
    assert float(back["extra_state"]["best"]) == 27.68


def test_arbitrary_code_is_still_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    path = tmp_path / "evil.pt"
    torch.save({"x": Evil()}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)
