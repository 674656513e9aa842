"""The SG-Net options and defaults, shared by transformer_sgnet and roberta_sgnet."""
from ..modules.sdoi_attention import SGNET_MASKS
from ..syntax.masks import SUBWORD_MODES
from ..arg_types import non_negative_int, positive_int


def add_sgnet_args(parser) -> None:
    parser.add_argument("--sgnet-alpha", type=float, metavar="A",
                        help="weight of the plain encoder output in H̄ = αH + (1−α)H' (default 0.5)")
    parser.add_argument("--sgnet-learn-alpha", action="store_true", default=None,
                        help="learn α (as sigmoid of a scalar), starting at --sgnet-alpha")
    parser.add_argument("--sgnet-layers", type=non_negative_int, metavar="N",
                        help="number of SDOI layers (default 1; 0: none, H̄ = H)")
    parser.add_argument("--sgnet-attention-heads", type=positive_int, metavar="N",
                        help="SDOI attention heads (default: --encoder-attention-heads)")
    parser.add_argument("--sgnet-ffn-embed-dim", type=positive_int, metavar="N",
                        help="SDOI feed-forward size (default: --encoder-ffn-embed-dim)")
    parser.add_argument("--sgnet-dropout", type=float, metavar="P", help="SDOI dropout (default: --dropout)")
    parser.add_argument("--sgnet-attention-dropout", type=float, metavar="P",
                        help="SDOI attention dropout (default: --attention-dropout)")
    parser.add_argument("--sgnet-activation-dropout", type=float, metavar="P",
                        help="SDOI FFN activation dropout (default: --activation-dropout)")
    parser.add_argument("--sgnet-mask", choices=SGNET_MASKS,
                        help="sdoi: attend within the syntactic dependency of interest (default); none: the "
                             "parameter-matched control, the same layer attending to every parsed token")
    parser.add_argument("--sgnet-subword-mode", choices=SUBWORD_MODES,
                        help="shared: subwords share their word's row and column (default); "
                             "first_head: continuation subwords are children of the first subword")


def sgnet_defaults(args) -> None:
    args.sgnet_alpha = getattr(args, "sgnet_alpha", 0.5)
    if getattr(args, "sgnet_learn_alpha", None) is None:
        args.sgnet_learn_alpha = False
    args.sgnet_layers = getattr(args, "sgnet_layers", 1)
    if args.sgnet_layers is None:
        args.sgnet_layers = 1
    if args.sgnet_layers < 0:  # (set from Python, past argparse)
        raise ValueError(f"--sgnet-layers must be at least 0, got {args.sgnet_layers}")
    args.sgnet_attention_heads = getattr(args, "sgnet_attention_heads", None) or args.encoder_attention_heads
    args.sgnet_ffn_embed_dim = getattr(args, "sgnet_ffn_embed_dim", None) or args.encoder_ffn_embed_dim
    for name, fallback in (("sgnet_dropout", "dropout"), ("sgnet_attention_dropout", "attention_dropout"),
                           ("sgnet_activation_dropout", "activation_dropout")):
        if getattr(args, name, None) is None:
            setattr(args, name, getattr(args, fallback))
    args.sgnet_subword_mode = getattr(args, "sgnet_subword_mode", None) or "shared"
    args.sgnet_mask = getattr(args, "sgnet_mask", None) or "sdoi"
