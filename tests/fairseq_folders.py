"""Model folders as fairseq distributes them, made here without the real weights (none are available offline):

- GPT-2's byte-level BPE trained with ``tokenizers`` on real text and written in GPT-2's own files (``encoder.json``,
  ``vocab.bpe``), read back through fairseq's own encoder;
- a ``dict.txt`` of BPE ids counted as fairseq-preprocess counts them;
- a random RoBERTa of ``roberta.base``'s shape saved as fairseq saved ``roberta.base``: the ``args`` namespace of
  ``--task masked_lm --arch roberta_base`` and the weights under their old names (``decoder.sentence_encoder``,
  ``emb_layer_norm``), which fairseq renames when it loads them;
- sentencepiece trained on real text, as XLM-R's ``sentencepiece.bpe.model`` with its ``dict.txt``.
"""
from __future__ import annotations

import collections
import json
import os

GPT2_VERSION_LINE = "#version: 0.2\n"


def train_gpt2_bpe(texts, out_dir, vocab_size: int) -> None:
    """``encoder.json`` (piece -> id, GPT-2's byte alphabet) and ``vocab.bpe`` (the merges in order)."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=2, show_progress=False,
                            special_tokens=["<|endoftext|>"])
    model = json.loads(tok.to_str())["model"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    with open(os.path.join(out_dir, "encoder.json"), "w", encoding="utf-8") as fh:
        json.dump(model["vocab"], fh, ensure_ascii=False)
    with open(os.path.join(out_dir, "vocab.bpe"), "w", encoding="utf-8") as fh:
        fh.write(GPT2_VERSION_LINE + "".join(m + "\n" for m in merges))


def write_id_dictionary(texts, out_dir) -> None:
    """RoBERTa's ``dict.txt``: the BPE ids of the texts (fairseq's own GPT-2 encoder), most frequent first, and
    every id the encoder has after them, so no piece is unknown."""
    from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

    enc = get_encoder(os.path.join(out_dir, "encoder.json"), os.path.join(out_dir, "vocab.bpe"))
    counts = collections.Counter(i for t in texts for i in enc.encode(t))
    ids = sorted(enc.decoder, key=lambda i: (-counts[i], i))
    with open(os.path.join(out_dir, "dict.txt"), "w", encoding="utf-8") as fh:
        fh.writelines(f"{i} {counts[i]}\n" for i in ids)


def save_random_roberta(out_dir, sizes=(), seed: int = 0) -> dict:
    """``model.pt``: fairseq's RobertaModel with ``roberta_base``'s sizes (or ``sizes``, fairseq's options) over
    ``dict.txt`` (plus ``<mask>``, as masked_lm adds it), random weights, saved in roberta.base's layout. Returns
    the architecture's sizes."""
    import torch
    from fairseq import options, tasks

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(out_dir), "--task", "masked_lm", "--arch", "roberta_base",
                                                "--criterion", "masked_lm", "--tokens-per-sample", "512", "--cpu",
                                                *sizes])
    torch.manual_seed(seed)
    task = tasks.setup_task(args)
    model = task.build_model(args)
    state = {}
    for k, v in model.state_dict().items():  # the names roberta.base's file holds
        k = "decoder." + k[len("encoder."):] if k.startswith("encoder.") else k
        state[k.replace(".layernorm_embedding.", ".emb_layer_norm.")] = v
    torch.save({"args": args, "model": state, "last_optimizer_state": None, "extra_state": {},
                "optimizer_history": [{"criterion_name": "MaskedLmLoss", "optimizer_name": "FairseqAdam",
                                       "lr_scheduler_state": {"best": None}, "num_updates": 500000}]},
               os.path.join(out_dir, "model.pt"))
    return {"layers": args.encoder_layers, "dim": args.encoder_embed_dim, "ffn": args.encoder_ffn_embed_dim,
            "heads": args.encoder_attention_heads, "symbols": len(task.source_dictionary)}


def train_xlmr_sentencepiece(texts, out_dir, vocab_size: int) -> None:
    """``sentencepiece.bpe.model`` and its ``dict.txt`` (the pieces, fairseq's four specials left out)."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(sentence_iterator=iter(list(texts)), model_prefix=os.path.join(out_dir, "spm"),
                                   vocab_size=vocab_size, model_type="bpe", character_coverage=1.0,
                                   minloglevel=2)
    os.replace(os.path.join(out_dir, "spm.model"), os.path.join(out_dir, "sentencepiece.bpe.model"))
    pieces = [line.split("\t")[0] for line in open(os.path.join(out_dir, "spm.vocab"), encoding="utf-8")]
    os.remove(os.path.join(out_dir, "spm.vocab"))
    with open(os.path.join(out_dir, "dict.txt"), "w", encoding="utf-8") as fh:
        fh.writelines(f"{p} 1\n" for p in pieces if p not in ("<unk>", "<s>", "</s>", "<pad>"))
