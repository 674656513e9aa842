"""Pretrained weights lifted into fairseq's layout (torch and safetensors only; no fairseq imports)."""
from .bert import BertCheckpoint, fairseq_symbols, load_bert, minilm_model_dir, to_fairseq_encoder_state

__all__ = ["BertCheckpoint", "fairseq_symbols", "load_bert", "minilm_model_dir", "to_fairseq_encoder_state"]
