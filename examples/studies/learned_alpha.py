"""The α a learned-α SG-Net settled on, read from a checkpoint, as JSON.

SG-Net's dual aggregation mixes the SDOI layer's output with the vanilla encoder's, α·SDOI + (1 − α)·vanilla;
with --sgnet-learn-alpha α is trained (as sigmoid of a logit), and where it ends says how much the converged model
leans on the syntax-guided branch. Checkpoints are not committed, so examples/multi30k/reproduce.sh records it here
for the checkpoint it scores, and examples/multi30k/summarize.py reports it.

    python -m examples.studies.learned_alpha work/checkpoints/multi30k_sgnet_learn_alpha_seed1/checkpoint_best.pt
"""
from __future__ import annotations

import argparse
import json
import math
import sys


def learned_alpha(path: str) -> dict:
    """``{"alpha": {module: α}, "initial": α₀, "num_updates": N}`` of a checkpoint; ValueError if it learns no α.

    α₀ is the run's --sgnet-alpha, where training started α, read from the checkpoint's config (None if absent).
    """
    from fairseq_syntax.cli.average import load  # weights-only, with the plugin's allow-list

    state = load(path)
    model = state.get("model")
    if not isinstance(model, dict):
        raise ValueError(f"{path}: no 'model' state dict")
    alpha = {k[: -len(".alpha_logit")]: round(1 / (1 + math.exp(-float(v))), 4)
             for k, v in model.items() if k.endswith(".alpha_logit")}
    if not alpha:
        raise ValueError(f"{path}: no learned α (alpha_logit) in the model: not trained with --sgnet-learn-alpha")
    history = state.get("optimizer_history") or [{}]
    return {"alpha": alpha, "initial": _model_option(state, "sgnet_alpha"),
            "num_updates": history[-1].get("num_updates")}


def _model_option(state: dict, name: str):
    """A model option from the checkpoint's config: an argparse Namespace (legacy archs) or a dict-like config."""
    model_cfg = (state.get("cfg") or {}).get("model")
    if model_cfg is None and state.get("args") is not None:  # checkpoints from before fairseq's dataclass configs
        model_cfg = state["args"]
    if model_cfg is None:
        return None
    value = model_cfg.get(name) if hasattr(model_cfg, "get") else getattr(model_cfg, name, None)
    return None if value is None else float(value)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    args = p.parse_args(argv)
    try:
        out = learned_alpha(args.checkpoint)
    except ValueError as e:
        p.exit(1, f"learned_alpha.py: error: {e}\n")
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
