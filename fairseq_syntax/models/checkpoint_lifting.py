"""Load a checkpoint that lacks the syntax parameters (a vanilla transformer, RoBERTa or BERT) into a syntax model."""
import logging

logger = logging.getLogger(__name__)


def fill_new_parameters(model, state_dict, name: str, is_new) -> None:
    """Lift a checkpoint without the syntax parameters: copy this model's fresh values for the keys
    (``is_new(key)``) the checkpoint lacks, and say so, so a partial load is never silent."""
    prefix = f"{name}." if name else ""
    if not any(k.startswith(f"{prefix}encoder.") for k in state_dict):
        return
    own = model.state_dict()
    missing = [k for k in own if is_new(k) and prefix + k not in state_dict]
    for k in missing:
        state_dict[prefix + k] = own[k].clone()
    if missing:
        logger.info("checkpoint lacks %d %s tensors (a plain transformer / RoBERTa / BERT checkpoint?): "
                    "freshly initialised", len(missing), type(model).__name__)
