"""BiDAF with (supervisable) multi-head self-attention for LAMBADA as reading comprehension.

Architectures (*Attending to Entities for Better Text Understanding*, docs/methods.md §3):

* ``bidaf``: embeddings (words + char-CNN, highway) -> contextual BiGRU -> bi-attention -> LayerNorm
  -> 2-layer modeling BiGRU -> LayerNorm -> pointer over context positions;
* ``bidaf_sa_early``: a 4-layer, 4-head self-attention encoder replaces the contextual BiGRU;
* ``bidaf_sa_late``: one self-attention layer after the bi-attention;
* ``bidaf_sa_both``: both.

``--sup-where early|late``, ``--sup-layer`` and ``--sup-head`` choose the head whose weights over the
context the criterion supervises. With DepParse among the signals that head only sees its own sentence.
Weights are averaged exponentially (``--average-decay``) and the averages are used for evaluation.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
from fairseq.models import BaseFairseqModel, register_model, register_model_architecture

from ..arg_types import non_negative_int, positive_int
from .layers import (BiAttention, BiGRU, CharCNN, ExponentialMovingAverage, Highway, SelfAttentionEncoder,
                     spell)

SUP_WHERE = ("early", "late")


def read_glove(path: str, dictionary, dim: int) -> tuple[torch.Tensor, int]:
    """Rows of a GloVe-format text file (word v1 ... vd) for the dictionary's words; returns hits."""
    weights = torch.empty(len(dictionary), dim).normal_(0, dim ** -0.5)
    hits = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            parts = line.rstrip().split(" ")
            if len(parts) != dim + 1:
                if n == 1 and len(parts) == 2:  # word2vec-style header
                    continue
                raise ValueError(f"{path}:{n}: {len(parts) - 1} numbers, but --word-dim is {dim}")
            idx = dictionary.indices.get(parts[0])
            if idx is not None:
                weights[idx] = torch.tensor([float(x) for x in parts[1:]])
                hits += 1
    return weights, hits


@register_model("bidaf_sa")
class BidafSAModel(BaseFairseqModel):
    @staticmethod
    def add_args(parser):
        parser.add_argument("--word-dim", type=positive_int, help="word embedding size (100 as GloVe 100d)")
        parser.add_argument("--glove", type=str, default=None, help="GloVe-format file to initialise word vectors")
        parser.add_argument("--freeze-glove", action="store_true", help="keep GloVe vectors fixed")
        parser.add_argument("--char-dim", type=int, help="character embedding size")
        parser.add_argument("--char-filters", type=int, help="char-CNN filters (100)")
        parser.add_argument("--char-width", type=int, help="char-CNN width (5)")
        parser.add_argument("--hidden", type=positive_int, help="GRU hidden size per direction (100); model dim is 2x")
        parser.add_argument("--sa-early-layers", type=non_negative_int,
                            help="self-attention layers replacing the contextual GRU (0: GRU)")
        parser.add_argument("--sa-late-layers", type=non_negative_int, help="self-attention layers after bi-attention")
        parser.add_argument("--sa-heads", type=positive_int, help="heads per self-attention layer (4)")
        parser.add_argument("--sa-ffn", type=positive_int, help="self-attention feed-forward size")
        parser.add_argument("--sup-where", choices=SUP_WHERE, help="which self-attention stack is supervised")
        parser.add_argument("--sup-layer", type=positive_int, help="supervised layer, 1-based (3 for SA-Early)")
        parser.add_argument("--sup-head", type=non_negative_int, help="supervised head, 0-based")
        parser.add_argument("--dropout", type=float, help="dropout (0.1)")
        parser.add_argument("--average-decay", type=float, help="exponential moving average of the weights (0.9999); "
                            "0 disables it")
        parser.add_argument("--min-word-count", type=int, help="words seen fewer times in training share the "
                                                               "unknown word's vector (their spelling still counts)")

    def __init__(self, args, dictionary):
        super().__init__()
        self.args, self.pad = args, dictionary.pad()
        d = 2 * args.hidden
        self.word = nn.Embedding(len(dictionary), args.word_dim, padding_idx=self.pad)
        counts = np.asarray(dictionary.count)
        rare = (counts < args.min_word_count) & (np.arange(len(dictionary)) >= dictionary.nspecial)
        self.register_buffer("word_map", torch.where(torch.from_numpy(rare), dictionary.unk(),
                                                     torch.arange(len(dictionary))), persistent=False)
        self.register_buffer("spelling", spell(dictionary.symbols), persistent=False)
        self.spelling[: dictionary.nspecial] = 0
        self.spelling[: dictionary.nspecial, 0] = torch.arange(1, dictionary.nspecial + 1)
        if args.glove:
            weights, _ = read_glove(args.glove, dictionary, args.word_dim)
            self.word.weight.data.copy_(weights)
            self.word.weight.requires_grad = not args.freeze_glove
        self.chars = CharCNN(args.char_dim, args.char_filters, args.char_width)
        emb = args.word_dim + args.char_filters
        self.highway = Highway(emb)
        self.drop = nn.Dropout(args.dropout)
        if args.sa_early_layers > 0:
            self.proj = nn.Linear(emb, d)
            self.contextual = SelfAttentionEncoder(d, args.sa_early_layers, args.sa_heads, args.sa_ffn, args.dropout)
        else:
            self.contextual = BiGRU(emb, args.hidden)
        self.biatt = BiAttention(d)
        self.ln_att = nn.LayerNorm(4 * d)
        if args.sa_late_layers > 0:
            self.late_proj = nn.Linear(4 * d, d)
            self.late = SelfAttentionEncoder(d, args.sa_late_layers, args.sa_heads, args.sa_ffn, args.dropout,
                                             positions=False)
            mod_in = d
        else:
            mod_in = 4 * d
        self.modeling = BiGRU(mod_in, args.hidden, layers=2, dropout=args.dropout)
        self.ln_mod = nn.LayerNorm(d)
        self.output = nn.Sequential(nn.Linear(mod_in + d, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 1))
        stack = {"early": args.sa_early_layers, "late": args.sa_late_layers}[args.sup_where]
        self.supervisable = stack > 0
        if self.supervisable and not (1 <= args.sup_layer <= stack and 0 <= args.sup_head < args.sa_heads):
            raise ValueError(f"--sup-layer {args.sup_layer} / --sup-head {args.sup_head} outside the {args.sup_where} "
                             f"stack ({stack} layers, {args.sa_heads} heads)")
        # set by the task when DepParse supervises the head: in training and at test time alike
        self.restrict_to_sentence = False
        self.ema = (ExponentialMovingAverage([p for p in self.parameters() if p.requires_grad], args.average_decay)
                    if args.average_decay > 0 else None)

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        return cls(args, task.dictionary)

    def embed(self, tokens):
        w = self.word(self.word_map[tokens])
        # the char-CNN runs once per distinct word of the batch (a batch repeats most of its words)
        types, where = torch.unique(tokens, return_inverse=True)
        c = self.chars(self.spelling[types])[where]
        return self.highway(self.drop(torch.cat([w, c], -1)))

    def encode(self, tokens, pad, head_allowed=None, need_weights=()):
        x = self.embed(tokens)
        if self.args.sa_early_layers > 0:
            return self.contextual(self.proj(x), pad, head_allowed, need_weights)
        return self.contextual(x, (~pad).sum(-1)), []

    def head_allowed(self, sentence_ids, where: str):
        """Only the supervised head is restricted to its own sentence (DepParse)."""
        if sentence_ids is None or self.args.sup_where != where:
            return None
        b, t = sentence_ids.shape
        same = sentence_ids.unsqueeze(2).eq(sentence_ids.unsqueeze(1))
        allowed = torch.ones(b, self.args.sa_heads, t, t, dtype=torch.bool, device=same.device)
        allowed[:, self.args.sup_head] = same
        return {self.args.sup_layer - 1: allowed}

    def forward(self, context, query, sentence_ids=None, **unused):
        cpad, qpad = context.eq(self.pad), query.eq(self.pad)
        sid = sentence_ids if self.restrict_to_sentence else None
        # the supervised head's weights are read in training with --signals only (the task sets the flag)
        read = self.supervisable and self.training and getattr(self, "attention_supervised", True)
        need = {"early": (), "late": ()}
        if read:
            need[self.args.sup_where] = (self.args.sup_layer - 1,)
        c, c_weights = self.encode(context, cpad, self.head_allowed(sid, "early"), need["early"])
        q, _ = self.encode(query, qpad)
        g = self.ln_att(self.biatt(self.drop(c), self.drop(q), cpad, qpad))
        weights = {"early": c_weights, "late": []}
        if self.args.sa_late_layers > 0:
            g, weights["late"] = self.late(self.late_proj(self.drop(g)), cpad, self.head_allowed(sid, "late"),
                                           need["late"])
        m = self.ln_mod(self.modeling(self.drop(g), (~cpad).sum(-1)))
        logits = self.output(self.drop(torch.cat([g, m], -1))).squeeze(-1)
        sup = None
        if self.supervisable:
            w = weights[self.args.sup_where][self.args.sup_layer - 1]
            sup = None if w is None else w[:, self.args.sup_head]
        return logits, {"context_mask": ~cpad, "sup_attn": sup}

    def update_ema(self):
        if self.ema is not None:
            self.ema.update()

    def averaged_weights(self):
        """Context manager: evaluate with the moving averages (a no-op without them)."""
        from contextlib import nullcontext

        return self.ema.swapped() if self.ema is not None else nullcontext()

    def max_positions(self):
        return None


@register_model_architecture("bidaf_sa", "bidaf")
def base_architecture(args):
    args.word_dim = getattr(args, "word_dim", 100)
    args.glove = getattr(args, "glove", None)
    args.freeze_glove = getattr(args, "freeze_glove", False)
    args.char_dim = getattr(args, "char_dim", 16)
    args.char_filters = getattr(args, "char_filters", 100)
    args.char_width = getattr(args, "char_width", 5)
    args.hidden = getattr(args, "hidden", 100)
    args.sa_early_layers = getattr(args, "sa_early_layers", 0)
    args.sa_late_layers = getattr(args, "sa_late_layers", 0)
    args.sa_heads = getattr(args, "sa_heads", 4)
    args.sa_ffn = getattr(args, "sa_ffn", 4 * 2 * args.hidden)
    args.sup_where = getattr(args, "sup_where", "early" if args.sa_early_layers else "late")
    args.sup_layer = getattr(args, "sup_layer", 3 if args.sup_where == "early" else 1)
    args.sup_head = getattr(args, "sup_head", 0)
    args.dropout = getattr(args, "dropout", 0.1)
    args.average_decay = getattr(args, "average_decay", 0.9999)
    args.min_word_count = getattr(args, "min_word_count", 1)


@register_model_architecture("bidaf_sa", "bidaf_sa_early")
def sa_early(args):
    args.sa_early_layers = getattr(args, "sa_early_layers", 4)
    base_architecture(args)


@register_model_architecture("bidaf_sa", "bidaf_sa_late")
def sa_late(args):
    args.sa_late_layers = getattr(args, "sa_late_layers", 1)
    base_architecture(args)


@register_model_architecture("bidaf_sa", "bidaf_sa_both")
def sa_both(args):
    args.sa_early_layers = getattr(args, "sa_early_layers", 4)
    args.sa_late_layers = getattr(args, "sa_late_layers", 1)
    base_architecture(args)
