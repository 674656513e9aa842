"""Pretrained weights lifted into fairseq's layout (torch and safetensors only; no fairseq imports)."""
from .hf_encoders import (EncoderCheckpoint, fairseq_symbols, load_bert, load_hf_encoder, minilm_model_dir,
                          to_fairseq_encoder_state)

__all__ = ["EncoderCheckpoint", "fairseq_symbols", "load_bert", "load_hf_encoder", "minilm_model_dir",
           "to_fairseq_encoder_state"]
