"""transformer_sgnet against fairseq's transformer, and the SDOI layer's masking."""
from types import SimpleNamespace

import pytest
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.models.transformer import TransformerModel

import fairseq_syntax
from fairseq_syntax.models.transformer_sgnet import TransformerSGNetModel
from fairseq_syntax.modules import SyntaxGuidedAggregation
from fairseq_syntax.syntax import align_heads_to_subwords, sdoi_mask

from .test_alignment_and_masks import batch
from .test_trees import NONPROJ_HEADS, PAPER_HEADS

fairseq_syntax.register()

SIZES = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32",
         "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
         "--share-all-embeddings", "--dropout", "0.0"]


def make_args(arch, *extra):
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, ["/unused", "--user-dir", fairseq_syntax.USER_DIR, "--task",
                                                "syntax_guided_translation", "--arch", arch, *SIZES, *extra])


@pytest.fixture(scope="module")
def task():
    d = Dictionary()
    pieces = "The in@@ crea@@ se reflects lower credit los@@ ses A hear@@ ing is sched@@ u@@ led on the issue today"
    for w in pieces.split():
        d.add_symbol(w)
    d.pad_to_multiple_(8)
    return SimpleNamespace(source_dictionary=d, target_dictionary=d)


def sample_batch(d):
    sents = ["The in@@ crea@@ se reflects lower credit los@@ ses".split(),
             "A hear@@ ing is sched@@ u@@ led on the issue today".split()]
    heads = [PAPER_HEADS, NONPROJ_HEADS]
    codes = [align_heads_to_subwords(h, s) for h, s in zip(heads, sents)]
    width = max(len(s) for s in sents) + 1
    toks = torch.full((2, width), d.pad())
    for r, s in enumerate(sents):
        ids = [d.index(w) for w in s] + [d.eos()]
        toks[r, width - len(ids):] = torch.tensor(ids)
    lengths = toks.ne(d.pad()).sum(1)
    prev = torch.tensor([[d.eos(), 5, 6, 7], [d.eos(), 8, 9, 10]])
    return toks, lengths, prev, batch(codes)


def test_alpha_one_computes_exactly_the_vanilla_transformer(task):
    torch.manual_seed(0)
    vanilla = TransformerModel.build_model(make_args("transformer_small_vanilla"), task).eval()
    sgnet = TransformerSGNetModel.build_model(make_args("transformer_sgnet_small", "--sgnet-alpha", "1.0"),
                                              task).eval()
    # a vanilla checkpoint's weights load into the SG-Net model (the SDOI layer keeps its fresh init)
    fresh = {k: v.clone() for k, v in sgnet.encoder.syntax_guided.state_dict().items()}
    sgnet.load_state_dict(vanilla.state_dict(), strict=True)
    for k, v in sgnet.encoder.syntax_guided.state_dict().items():
        assert torch.equal(v, fresh[k])
    toks, lengths, prev, codes = sample_batch(task.source_dictionary)
    with torch.no_grad():
        want, _ = vanilla(toks, lengths, prev)
        got, _ = sgnet(toks, lengths, prev, src_heads=codes)
    assert torch.equal(got, want)


def test_alpha_half_changes_the_output_and_needs_heads(task):
    torch.manual_seed(0)
    vanilla = TransformerModel.build_model(make_args("transformer_small_vanilla"), task).eval()
    sgnet = TransformerSGNetModel.build_model(make_args("transformer_sgnet_small"), task).eval()
    assert sgnet.encoder.syntax_guided.alpha().item() == 0.5
    sgnet.load_state_dict(vanilla.state_dict())
    toks, lengths, prev, codes = sample_batch(task.source_dictionary)
    with torch.no_grad():
        want, _ = vanilla(toks, lengths, prev)
        got, _ = sgnet(toks, lengths, prev, src_heads=codes)
    assert not torch.allclose(got, want)
    with pytest.raises(ValueError, match="src_heads"):
        sgnet(toks, lengths, prev)


def test_options_reach_the_layer(task):
    args = make_args("transformer_sgnet_small", "--sgnet-layers", "2", "--sgnet-attention-heads", "2",
                     "--sgnet-learn-alpha", "--sgnet-alpha", "0.3", "--sgnet-dropout", "0.2",
                     "--sgnet-subword-mode", "first_head")
    model = TransformerSGNetModel.build_model(args, task)
    sg = model.encoder.syntax_guided
    assert len(sg.layers) == 2 and sg.layers[0].num_heads == 2 and sg.layers[0].dropout == 0.2
    assert sg.subword_mode == "first_head"
    assert abs(sg.alpha().item() - 0.3) < 1e-6
    toks, lengths, prev, codes = sample_batch(task.source_dictionary)
    out, _ = model(toks, lengths, prev, src_heads=codes)
    out.sum().backward()
    assert sg.alpha_logit.grad is not None and sg.alpha_logit.grad != 0


def test_sdoi_output_depends_only_on_the_sdoi():
    """Perturbing a token outside SDOI(i) leaves H'_i unchanged: the mask is additive −inf, not a product."""
    torch.manual_seed(0)
    layer = SyntaxGuidedAggregation(16, 4, 32, alpha=0.0, dropout=0.0).eval()
    codes = batch([align_heads_to_subwords(NONPROJ_HEADS, "A hearing is scheduled on the issue today".split())])
    h = torch.randn(codes.size(1), 1, 16)
    allowed = sdoi_mask(codes)[0]
    base, extras = layer(h, codes, need_weights=True)
    fast, _ = layer(h, codes)
    assert torch.allclose(base, fast, atol=1e-6)
    weights = extras["sdoi_attn"][0][0]  # [heads, T, T]
    assert torch.all(weights[:, ~allowed] == 0)
    for j in range(codes.size(1)):
        h2 = h.clone()
        h2[j] += 5.0
        out, _ = layer(h2, codes)
        for i in range(codes.size(1)):
            changed = not torch.allclose(out[i], base[i], atol=1e-6)
            assert changed == bool(allowed[i, j]), (i, j)


@pytest.mark.parametrize("layers", [1, 2])
def test_reading_some_rows_gives_them_the_full_layers_output_and_gradient(layers):
    """read_rows (token labeling reads first subwords): H̄ and its gradient at those rows are the full
    computation's, the other positions are H; special tokens among them keep H; a row read by nobody is H."""
    torch.manual_seed(0)
    layer = SyntaxGuidedAggregation(16, 4, 32, num_layers=layers, alpha=0.3, learn_alpha=True, dropout=0.0).eval()
    codes = batch([align_heads_to_subwords(NONPROJ_HEADS, "A hearing is scheduled on the issue today".split()),
                   align_heads_to_subwords(PAPER_HEADS, "The increase reflects lower credit losses".split())],
                  left_pad=False)
    read = torch.rand(codes.shape) < 0.5
    read[0, -1] = True  # EOS (code 0): keeps H
    read[1] = False  # a sentence with nothing read
    read[1, 2] = True
    h = torch.randn(codes.size(1), 2, 16, requires_grad=True)
    pool = torch.zeros(codes.shape, dtype=torch.bool)
    pool[:, 0] = True
    full, _ = layer(h, codes, pool_rows=pool)
    part, _ = layer(h, codes, pool_rows=pool, read_rows=read)
    rows = read.T.unsqueeze(-1)  # [T, B, 1]
    assert torch.allclose(part[read.T], full[read.T], atol=1e-6)
    assert torch.equal(part[~read.T], h[~read.T])
    assert torch.allclose(part[-1, 0], h[-1, 0], atol=1e-6)  # the EOS, read: H (as αH + (1 − α)H)
    weight = torch.randn_like(full)
    g_full = torch.autograd.grad((full * weight * rows).sum(), [h, layer.alpha_logit, *layer.parameters()],
                                 allow_unused=True)
    g_part = torch.autograd.grad((part * weight * rows).sum(), [h, layer.alpha_logit, *layer.parameters()],
                                 allow_unused=True)
    for a, b in zip(g_full, g_part):
        assert (a is None and b is None) or torch.allclose(a, b, atol=1e-5)
    nothing, _ = layer(h, codes, read_rows=torch.zeros(codes.shape, dtype=torch.bool))
    assert torch.equal(nothing, h)
    with pytest.raises(ValueError, match="read_rows has shape"):
        layer(h, codes, read_rows=read[:, :3])


def test_sla_nmt_encoder_with_closed_gates_is_the_vanilla_transformer(task):
    """transformer_sla_small: SLA in every encoder layer; g = 0 gives fairseq's transformer, g = 1 does not."""
    torch.manual_seed(0)
    vanilla = TransformerModel.build_model(make_args("transformer_small_vanilla"), task).eval()
    sla = TransformerSGNetModel.build_model(make_args("transformer_sla_small", "--sla-distance", "1"), task).eval()
    assert not any("syntax_guided" in k for k in sla.state_dict())  # no SDOI layer in this sibling
    state = vanilla.state_dict()
    sla.upgrade_state_dict_named(state, "")  # fills the gates, as loading a vanilla checkpoint does
    sla.load_state_dict(state, strict=True)
    toks, lengths, prev, codes = sample_batch(task.source_dictionary)
    with torch.no_grad():
        want, _ = vanilla(toks, lengths, prev)
        for layer in sla.encoder.layers:
            layer.sla_gate.weight.zero_()
            layer.sla_gate.bias.fill_(-float("inf"))
        got, _ = sla(toks, lengths, prev, src_heads=codes)
        assert torch.allclose(got, want, atol=1e-5)
        for layer in sla.encoder.layers:
            layer.sla_gate.bias.fill_(float("inf"))
        local, _ = sla(toks, lengths, prev, src_heads=codes)
        assert not torch.allclose(local, want, atol=1e-3)
