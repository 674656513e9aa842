"""SG-Net and syntax-aware local attention on fairseq's RoBERTa (BERT-style) encoder.

Three registered models share one encoder, so a comparison changes only the syntax part:

* ``roberta_baseline``: fairseq's RoBERTa encoder as it is, plus ``--layernorm-eps`` so that
  lifted BERT weights (eps 1e-12) reproduce the original model;
* ``roberta_sgnet``: the SDOI layer and dual aggregation on top (docs/methods.md §1);
* ``roberta_sla``: gated syntax-aware local attention in every layer (docs/methods.md §2).

A fairseq RoBERTa checkpoint, or a converted BERT (``fairseq-syntax-convert-bert``), loads into
each: the new parameters keep their fresh initialisation and everything else must match.
"""
from __future__ import annotations

import logging
from typing import Optional

import torch
import torch.nn as nn
from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta.model import RobertaClassificationHead, RobertaEncoder, RobertaModel
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.models.transformer import TransformerConfig, TransformerEncoder
from fairseq.modules import Fp32LayerNorm
from fairseq.utils import safe_hasattr

from ..modules.sdoi_attention import SyntaxGuidedAggregation
from ..modules.sla_attention import pair_segments
from .checkpoint_lifting import fill_new_parameters
from .sgnet_options import add_sgnet_args, sgnet_defaults
from .sla_encoder import SLAEncoderLayer, add_sla_args, local_allowed, run_encoder_layers, sla_defaults

logger = logging.getLogger(__name__)

CLS_SCOPES = ("sentence", "self")


# 1/sqrt(eps) must stay below fp16's largest value (65504), or an all-zero row (padding) overflows the backward
HALF_SAFE_EPS = 1.0 / 65504.0 ** 2


def set_layernorm_eps(module: nn.Module, eps: float) -> None:
    """BERT's eps (1e-12) is below what half precision can hold: those LayerNorms then compute in float32
    (fairseq's ``Fp32LayerNorm``, same parameters and state dict), so ``--fp16`` stays finite."""
    for m in module.modules():
        if isinstance(m, nn.LayerNorm):
            m.eps = eps
            if eps < HALF_SAFE_EPS:
                m.__class__ = Fp32LayerNorm


class SyntaxRobertaEncoder(RobertaEncoder):
    """RoBERTa's encoder; ``src_heads`` (subword head codes, [B, T]) reach ``extract_features``.

    ``segment_offset`` is BERT's token-type-1 embedding minus its type-0 one (type 0 is folded into the
    positions, pretrained/hf_encoders.py): it is added to every token after the first ``</s>`` ([SEP]), so a pair's
    second text is encoded as BERT encodes it. RoBERTa has no token types: from its checkpoints it stays zero.
    """

    def __init__(self, args, dictionary):
        super().__init__(args, dictionary)
        self.segment_offset = nn.Parameter(torch.zeros(args.encoder_embed_dim))
        set_layernorm_eps(self, args.layernorm_eps)

    def segments(self, src_tokens):
        """[B, T] sentence index of every token (padding -1): sla_attention.pair_segments."""
        return pair_segments(src_tokens, self.dictionary.eos(), self.dictionary.pad())

    def segment_embeddings(self, src_tokens, token_embeddings=None, segments=None):
        """The token embeddings with the second segment's offset added, or ``token_embeddings`` as given when no
        row of the batch has a second segment (single sentences: fairseq's own path, unchanged)."""
        second = (self.segments(src_tokens) if segments is None else segments).gt(0)
        if not bool(second.any()):
            return token_embeddings
        encoder = self.sentence_encoder
        if token_embeddings is None:
            token_embeddings = encoder.embed_tokens(src_tokens)
        # fairseq multiplies token embeddings by embed_scale (1.0 for RoBERTa); the offset is added unscaled
        offset = self.segment_offset.to(token_embeddings.dtype) / encoder.embed_scale
        return token_embeddings + second.unsqueeze(-1).to(token_embeddings.dtype) * offset

    def forward(self, src_tokens, features_only=False, return_all_hiddens=False, masked_tokens=None,
                src_heads: Optional[torch.Tensor] = None, **unused):
        x, extra = self.extract_features(src_tokens, return_all_hiddens=return_all_hiddens, src_heads=src_heads,
                                         **unused)
        if not features_only:
            x = self.output_layer(x, masked_tokens=masked_tokens)
        return x, extra

    def extract_features(self, src_tokens, return_all_hiddens=False, src_heads=None, **kwargs):
        kwargs["token_embeddings"] = self.segment_embeddings(src_tokens, kwargs.get("token_embeddings"))
        return super().extract_features(src_tokens, return_all_hiddens=return_all_hiddens, **kwargs)

    def check_heads(self, src_tokens, src_heads, model: str):
        if src_heads is None:
            raise ValueError(f"{model} needs subword head codes (net_input['src_heads']); use "
                             "--task syntax_sentence_prediction with data that has .heads side files")
        if src_heads.shape != src_tokens.shape:
            raise ValueError(f"src_heads has shape {tuple(src_heads.shape)}, src_tokens {tuple(src_tokens.shape)}")


class SGNetRobertaEncoder(SyntaxRobertaEncoder):
    """H from the RoBERTa encoder, then H̄ = αH + (1−α)H' from the SDOI layer(s).

    ``--sgnet-cls-scope sentence`` (default) lets the first token (<s>, BERT's [CLS]) attend to every
    token of the input in the SDOI layer and keeps its H'. With the paper's ``self`` the SDOI of
    [CLS] is itself and its H' is masked in the aggregation, so a classifier that reads [CLS] never
    sees the syntax-guided output: sentence classification would then be the baseline plus nothing.
    """

    def __init__(self, args, dictionary):
        super().__init__(args, dictionary)
        self.syntax_guided = SyntaxGuidedAggregation(
            embed_dim=args.encoder_embed_dim, num_heads=args.sgnet_attention_heads,
            ffn_dim=args.sgnet_ffn_embed_dim, num_layers=args.sgnet_layers, alpha=args.sgnet_alpha,
            learn_alpha=args.sgnet_learn_alpha, dropout=args.sgnet_dropout,
            attention_dropout=args.sgnet_attention_dropout, activation_dropout=args.sgnet_activation_dropout,
            subword_mode=args.sgnet_subword_mode,
            mask=getattr(args, "sgnet_mask", "sdoi"),
        )
        set_layernorm_eps(self.syntax_guided, args.layernorm_eps)
        self.cls_scope = args.sgnet_cls_scope

    def extract_features(self, src_tokens, return_all_hiddens=False, src_heads=None, need_syntax_weights=False,
                         read_rows=None, **kwargs):
        self.check_heads(src_tokens, src_heads, "roberta_sgnet")
        embeddings = self.segment_embeddings(src_tokens, kwargs.get("token_embeddings"))
        out = self.sentence_encoder(src_tokens, return_all_hiddens=return_all_hiddens, token_embeddings=embeddings)
        pool_rows = None
        if self.cls_scope == "sentence":
            pool_rows = torch.zeros_like(src_heads, dtype=torch.bool)
            pool_rows[:, 0] = src_tokens[:, 0].eq(self.dictionary.bos())
        h_bar, extras = self.syntax_guided(out["encoder_out"][0], src_heads, need_weights=need_syntax_weights,
                                           pool_rows=pool_rows, read_rows=read_rows)
        inner = out["encoder_states"] if return_all_hiddens else None
        extra = {"inner_states": inner}
        if need_syntax_weights:
            extra.update(extras)
        return h_bar.transpose(0, 1), extra


class SLATransformerEncoder(TransformerEncoder):
    """fairseq's TransformerEncoder built from SLA layers."""

    def build_encoder_layer(self, args):
        cfg = TransformerConfig.from_namespace(args)
        return SLAEncoderLayer(cfg, gate_bias_init=args.sla_gate_bias_init, return_fc=self.return_fc)


class SLARobertaEncoder(SyntaxRobertaEncoder):
    """Every layer mixes global attention with attention inside the syntactic neighbourhood."""

    def build_encoder(self, args, dictionary, embed_tokens):
        from fairseq.modules.transformer_sentence_encoder import init_bert_params

        encoder = SLATransformerEncoder(args, dictionary, embed_tokens)
        encoder.apply(init_bert_params)
        return encoder

    def reset_gate_bias(self, value: float) -> None:
        """init_bert_params zeroes every Linear bias (RobertaModel applies it again): restore b_g."""
        for layer in self.sentence_encoder.layers:
            nn.init.constant_(layer.sla_gate.bias, value)

    def extract_features(self, src_tokens, return_all_hiddens=False, src_heads=None, **kwargs):
        self.check_heads(src_tokens, src_heads, "roberta_sla")
        segments = self.segments(src_tokens)  # one per batch: the local masks' and the segment offset's
        local = local_allowed(src_heads, self.args, segments)
        out = run_encoder_layers(self.sentence_encoder, src_tokens, local, return_all_hiddens,
                                 self.segment_embeddings(src_tokens, kwargs.get("token_embeddings"), segments))
        inner = out["encoder_states"] if return_all_hiddens else None
        return out["encoder_out"][0].transpose(0, 1), {"inner_states": inner}


class SyntaxRobertaModel(RobertaModel):
    """Shared by the three models: building with our encoder, and lifting checkpoints without the new parameters."""

    encoder_class = SyntaxRobertaEncoder
    # name fragments of parameters a RoBERTa/BERT checkpoint lacks (RoBERTa has no segment offset: zero keeps it)
    new_parameters: tuple[str, ...] = ("encoder.segment_offset",)

    @staticmethod
    def add_args(parser):
        RobertaModel.add_args(parser)
        parser.add_argument("--layernorm-eps", type=float, metavar="EPS",
                            help="LayerNorm epsilon (1e-5 for fairseq RoBERTa, 1e-12 for BERT/MiniLM weights)")

    @classmethod
    def build_model(cls, args, task):
        from omegaconf import OmegaConf

        if OmegaConf.is_config(args):
            OmegaConf.set_struct(args, False)
        cls.fill_defaults(args)
        if not safe_hasattr(args, "max_positions"):
            if not safe_hasattr(args, "tokens_per_sample"):
                args.tokens_per_sample = task.max_positions()
            args.max_positions = args.tokens_per_sample
        encoder = cls.encoder_class(args, task.source_dictionary)
        if OmegaConf.is_config(args):
            OmegaConf.set_struct(args, True)
        return cls(args, encoder)

    @classmethod
    def fill_defaults(cls, args):
        roberta_base_architecture(args)
        if getattr(args, "layernorm_eps", None) is None:
            args.layernorm_eps = 1e-5

    def register_token_head(self, name, num_classes, inner_dim=None):
        """A head that labels every token (``--task syntax_token_labeling``)."""
        from .token_head import TokenLabelingHead

        self.classification_heads[name] = TokenLabelingHead(
            self.args.encoder_embed_dim, inner_dim or self.args.encoder_embed_dim, num_classes,
            self.args.pooler_activation_fn, self.args.pooler_dropout,
        )

    def upgrade_state_dict_named(self, state_dict, name):
        super().upgrade_state_dict_named(state_dict, name)
        fill_new_parameters(self, state_dict, name, lambda k: any(f in k for f in self.new_parameters))


@register_model("roberta_baseline")
class RobertaBaselineModel(SyntaxRobertaModel):
    """fairseq's RoBERTa encoder unchanged (the baseline); it ignores ``src_heads``."""


@register_model("roberta_sgnet")
class RobertaSGNetModel(SyntaxRobertaModel):
    """SG-Net on a BERT-style encoder: SDOI attention over the last layer and H̄ = αH + (1−α)H'."""

    encoder_class = SGNetRobertaEncoder
    new_parameters = SyntaxRobertaModel.new_parameters + ("encoder.syntax_guided.",)

    @staticmethod
    def add_args(parser):
        SyntaxRobertaModel.add_args(parser)
        add_sgnet_args(parser)
        parser.add_argument("--sgnet-cls-scope", choices=CLS_SCOPES,
                            help="sentence: <s>/[CLS] attends to the whole input in the SDOI layer and keeps H' "
                                 "(default); self: the paper's SDOI of itself only, H' masked")

    @classmethod
    def fill_defaults(cls, args):
        super().fill_defaults(args)
        sgnet_defaults(args)
        if getattr(args, "sgnet_cls_scope", None) is None:
            args.sgnet_cls_scope = "sentence"

    def forward(self, src_tokens, features_only=False, return_all_hiddens=False, classification_head_name=None,
                **kwargs):
        # fairseq's classification head reads only <s> (position 0): then the SDOI layer computes only that row
        # (read_rows; its output there is the full layer's), as token labeling passes the rows it scores
        if (classification_head_name is not None and kwargs.get("read_rows") is None
                and type(self.classification_heads[classification_head_name]) is RobertaClassificationHead):
            first = torch.zeros_like(src_tokens, dtype=torch.bool)
            first[:, 0] = True
            kwargs["read_rows"] = first
        return super().forward(src_tokens, features_only, return_all_hiddens, classification_head_name, **kwargs)

    def register_classification_head(self, name, num_classes=None, inner_dim=None, **kwargs):
        # a head reading <s>/[CLS] (sentence prediction, ranking) gets, from one SDOI layer, an H̄ that no parse
        # changes: [CLS]'s row attends to every parsed token (or, with --sgnet-cls-scope self, keeps H), over
        # keys and values from H (tests/test_bert_encoders.py); say so, once per head
        if self.args.sgnet_layers == 1:
            logger.warning(
                "roberta_sgnet with one SDOI layer: the classification head %r reads <s>, whose H̄ does not depend "
                "on the parse (the model is the baseline plus one attention layer at <s>); --sgnet-layers 2 lets "
                "it see the parse. See docs/bert-encoders.md", name)
        super().register_classification_head(name, num_classes, inner_dim, **kwargs)


@register_model("roberta_sla")
class RobertaSLAModel(SyntaxRobertaModel):
    """Syntax-aware local attention (Li et al.) in every layer of a BERT-style encoder."""

    encoder_class = SLARobertaEncoder
    new_parameters = SyntaxRobertaModel.new_parameters + (".sla_gate.",)

    @staticmethod
    def add_args(parser):
        SyntaxRobertaModel.add_args(parser)
        add_sla_args(parser)

    def __init__(self, args, encoder):
        super().__init__(args, encoder)
        encoder.reset_gate_bias(args.sla_gate_bias_init)

    @classmethod
    def fill_defaults(cls, args):
        super().fill_defaults(args)
        sla_defaults(args)


def small_sizes(args):
    """MiniLM-L6-H384 (all-MiniLM-L6-v2): 6 layers, d=384, 12 heads, FFN 1536, BERT's LayerNorm eps."""
    args.encoder_layers = getattr(args, "encoder_layers", 6)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 384)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 1536)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 12)
    if getattr(args, "layernorm_eps", None) is None:
        args.layernorm_eps = 1e-12


def large_sizes(args):
    args.encoder_layers = getattr(args, "encoder_layers", 24)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 1024)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 4096)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 16)


# One architecture per model and size, written out so that grep finds each name.

@register_model_architecture("roberta_baseline", "roberta_baseline")
def roberta_baseline(args):
    RobertaBaselineModel.fill_defaults(args)


@register_model_architecture("roberta_baseline", "roberta_baseline_base")
def roberta_baseline_base(args):
    RobertaBaselineModel.fill_defaults(args)


@register_model_architecture("roberta_baseline", "roberta_baseline_small")
def roberta_baseline_small(args):
    small_sizes(args)
    RobertaBaselineModel.fill_defaults(args)


@register_model_architecture("roberta_baseline", "roberta_baseline_large")
def roberta_baseline_large(args):
    large_sizes(args)
    RobertaBaselineModel.fill_defaults(args)


@register_model_architecture("roberta_sgnet", "roberta_sgnet")
def roberta_sgnet(args):
    RobertaSGNetModel.fill_defaults(args)


@register_model_architecture("roberta_sgnet", "roberta_sgnet_base")
def roberta_sgnet_base(args):
    RobertaSGNetModel.fill_defaults(args)


@register_model_architecture("roberta_sgnet", "roberta_sgnet_small")
def roberta_sgnet_small(args):
    small_sizes(args)
    RobertaSGNetModel.fill_defaults(args)


@register_model_architecture("roberta_sgnet", "roberta_sgnet_large")
def roberta_sgnet_large(args):
    large_sizes(args)
    RobertaSGNetModel.fill_defaults(args)


@register_model_architecture("roberta_sla", "roberta_sla")
def roberta_sla(args):
    RobertaSLAModel.fill_defaults(args)


@register_model_architecture("roberta_sla", "roberta_sla_base")
def roberta_sla_base(args):
    RobertaSLAModel.fill_defaults(args)


@register_model_architecture("roberta_sla", "roberta_sla_small")
def roberta_sla_small(args):
    small_sizes(args)
    RobertaSLAModel.fill_defaults(args)


@register_model_architecture("roberta_sla", "roberta_sla_large")
def roberta_sla_large(args):
    large_sizes(args)
    RobertaSLAModel.fill_defaults(args)
