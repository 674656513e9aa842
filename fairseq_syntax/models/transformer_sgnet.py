"""transformer_sgnet: fairseq's Transformer with SG-Net's syntax-guided layer on the encoder output."""
from __future__ import annotations

from typing import Optional

import torch
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerEncoderBase,
    TransformerModel,
    base_architecture,
    transformer_wmt_en_de,
)

from ..modules.sdoi_attention import SyntaxGuidedAggregation
from .checkpoint_lifting import fill_new_parameters
from .sgnet_options import add_sgnet_args, sgnet_defaults
from .sla_encoder import SLAEncoderLayer, add_sla_args, local_allowed, run_encoder_layers, sla_defaults

SYNTAX_PREFIX = "syntax_guided."


class TransformerSGNetEncoder(TransformerEncoderBase):
    """The Transformer encoder, then SDOI attention and the dual aggregation; the decoder reads H̄.

    With ``--encoder-sla`` every encoder layer is a syntax-aware local attention layer (docs/methods.md §2).
    """

    def __init__(self, cfg, dictionary, embed_tokens, args):
        # read by build_encoder_layer, which the base constructor calls
        object.__setattr__(self, "sla_args", args if args.encoder_sla else None)
        super().__init__(cfg, dictionary, embed_tokens)
        self.syntax_guided = SyntaxGuidedAggregation(
            embed_dim=cfg.encoder.embed_dim,
            num_heads=args.sgnet_attention_heads,
            ffn_dim=args.sgnet_ffn_embed_dim,
            num_layers=args.sgnet_layers,
            alpha=args.sgnet_alpha,
            learn_alpha=args.sgnet_learn_alpha,
            dropout=args.sgnet_dropout,
            attention_dropout=args.sgnet_attention_dropout,
            activation_dropout=args.sgnet_activation_dropout,
            subword_mode=args.sgnet_subword_mode,
            mask=getattr(args, "sgnet_mask", "sdoi"),
        )

    def build_encoder_layer(self, cfg):
        if self.sla_args is None:
            return super().build_encoder_layer(cfg)
        return SLAEncoderLayer(cfg, gate_bias_init=self.sla_args.sla_gate_bias_init, return_fc=self.return_fc)

    def forward(self, src_tokens, src_lengths: Optional[torch.Tensor] = None, return_all_hiddens: bool = False,
                token_embeddings: Optional[torch.Tensor] = None, src_heads: Optional[torch.Tensor] = None,
                need_syntax_weights: bool = False):
        if src_heads is None:
            raise ValueError(
                "transformer_sgnet needs the source heads (net_input['src_heads']); "
                "use --task syntax_guided_translation with data that has .heads side files"
            )
        if self.sla_args is not None:
            out = run_encoder_layers(self, src_tokens, local_allowed(src_heads, self.sla_args), return_all_hiddens,
                                     token_embeddings)
        else:
            out = self.forward_scriptable(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        h_bar, extras = self.syntax_guided(out["encoder_out"][0], src_heads, need_weights=need_syntax_weights)
        out["encoder_out"] = [h_bar]
        if need_syntax_weights:
            out["sdoi_mask"] = [extras["sdoi_mask"]]
            out["sdoi_attn"] = extras["sdoi_attn"]
        return out


@register_model("transformer_sgnet")
class TransformerSGNetModel(TransformerModel):
    """SG-Net for NMT (Zhang et al.): syntax-guided self-attention fused with the Transformer encoder.

    A vanilla ``transformer`` checkpoint loads into it for fine-tuning: the SDOI
    parameters it lacks keep their fresh initialisation (see ``upgrade_state_dict_named``).
    """

    @classmethod
    def hub_models(cls):
        return {}  # no published SG-Net checkpoints; never fairseq's plain-transformer URLs

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="checkpoint_best.pt", data_name_or_path=".",
                        parser="auto", **kwargs):
        """Load a trained checkpoint (any of the plugin's translation models) with its data directory, for
        ``translate("A man rides a horse.")`` on raw English: see :mod:`fairseq_syntax.hub_interface`."""
        from ..hub_interface import from_pretrained

        return from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path, parser=parser,
                               archive_map=cls.hub_models(), **kwargs)

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        add_sgnet_args(parser)
        parser.add_argument("--encoder-sla", action="store_true", default=None,
                            help="syntax-aware local attention (gated, tree-distance masked) in every encoder layer")
        add_sla_args(parser)

    @classmethod
    def build_model(cls, args, task):
        sgnet_base_architecture(args)
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return TransformerSGNetEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens, args)

    def forward(self, src_tokens, src_lengths, prev_output_tokens, src_heads: Optional[torch.Tensor] = None,
                return_all_hiddens: bool = True, features_only: bool = False,
                alignment_layer: Optional[int] = None, alignment_heads: Optional[int] = None):
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                   src_heads=src_heads)
        return self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                            alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                            src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)

    def upgrade_state_dict_named(self, state_dict, name):
        """Let a vanilla transformer checkpoint in: fill the SDOI (and SLA gate) parameters it lacks."""
        super().upgrade_state_dict_named(state_dict, name)
        fill_new_parameters(self, state_dict, name,
                            lambda k: k.startswith(f"encoder.{SYNTAX_PREFIX}") or ".sla_gate." in k)


def _sgnet_defaults(args):
    sgnet_defaults(args)
    if getattr(args, "encoder_sla", None) is None:
        args.encoder_sla = False
    sla_defaults(args)


@register_model_architecture("transformer_sgnet", "transformer_sgnet")
def sgnet_base_architecture(args):
    """Transformer-base sizes (6+6 layers, d=512, FFN 2048, 8 heads) plus one SDOI layer."""
    base_architecture(args)
    _sgnet_defaults(args)


@register_model_architecture("transformer_sgnet", "transformer_sgnet_wmt_en_de")
def sgnet_wmt_en_de(args):
    """The paper's WMT14 EN-DE setting: fairseq's transformer_wmt_en_de plus SG-Net."""
    transformer_wmt_en_de(args)
    _sgnet_defaults(args)


def small_sizes(args):
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 256)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 1024)
    args.encoder_layers = getattr(args, "encoder_layers", 3)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 4)
    args.decoder_layers = getattr(args, "decoder_layers", 3)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", 4)
    args.dropout = getattr(args, "dropout", 0.3)
    base_architecture(args)


@register_model_architecture("transformer_sgnet", "transformer_sgnet_small")
def sgnet_small(args):
    """For small corpora such as Multi30k: 3+3 layers, d=256, FFN 1024, 4 heads, dropout 0.3."""
    small_sizes(args)
    _sgnet_defaults(args)


@register_model_architecture("transformer_sgnet", "transformer_sla_small")
def sla_small(args):
    """SLA in every encoder layer and no SDOI layer, at transformer_sgnet_small's sizes."""
    args.encoder_sla = True
    args.sgnet_layers = getattr(args, "sgnet_layers", 0)
    sgnet_small(args)


@register_model_architecture("transformer_sgnet", "transformer_sla")
def sla_base(args):
    """SLA in every encoder layer of Transformer-base, no SDOI layer."""
    args.encoder_sla = True
    args.sgnet_layers = getattr(args, "sgnet_layers", 0)
    sgnet_base_architecture(args)


@register_model_architecture("transformer", "transformer_small_vanilla")
def transformer_small_vanilla(args):
    """The vanilla baseline with exactly transformer_sgnet_small's sizes."""
    small_sizes(args)
