"""The GPU's attention path (modules/attention_kernels.py) computes what the CPU's reference path does.

On a GPU the syntax layers take fused attention calls: SLA as two of them mixed by its gate, SG-Net's extra
layer over every row with the mask in additive form, the reader's unsupervised layers without weights. Here,
on the CPU, each fast path is forced and compared with the reference path: outputs and gradients within float
tolerance, on hand-worked trees and with padding. The GPU benchmark (benchmarks/gpu_matrix.py) checks the same
on the device before it times anything.
"""
import argparse
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import fairseq_syntax
from fairseq_syntax.modules import attention_kernels
from fairseq_syntax.modules.attention_kernels import ALIGN, additive_mask, masked_backends

from .test_half_precision import roberta_batch
from .test_transformer_sgnet import make_args, sample_batch, task  # noqa: F401 (task: the fixture)

fairseq_syntax.register()


@pytest.fixture
def fused(monkeypatch):
    """Every module takes the GPU's path on the CPU; set_fused(False) takes the reference path again."""
    import fairseq_syntax.models.sla_encoder as sla_encoder
    import fairseq_syntax.modules.sdoi_attention as sdoi
    import fairseq_syntax.modules.sla_attention as sla
    import fairseq_syntax.reader.layers as reader_layers

    state = {"on": True}

    def set_fused(on):
        state["on"] = on

    for mod in (sla_encoder, sdoi, sla, reader_layers):
        monkeypatch.setattr(mod, "fused_path", lambda x: state["on"])
    monkeypatch.setattr(sdoi, "read_rows_pays", lambda device: False)
    return set_fused


def grads_of(model_or_params, loss):
    params = [p for p in (model_or_params.parameters() if hasattr(model_or_params, "parameters")
                          else model_or_params) if p.requires_grad]
    return torch.autograd.grad(loss, params, allow_unused=True)


def assert_close_all(a, b, atol):
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert torch.allclose(x, y, atol=atol, rtol=1e-4), (x - y).abs().max()


def test_the_kernel_choice_keeps_cudnn_out_of_masked_calls_on_a_gpu_only():
    from torch.nn.attention import SDPBackend

    assert masked_backends(torch.device("cpu")) is None
    gpu = masked_backends(torch.device("cuda"))
    assert SDPBackend.CUDNN_ATTENTION not in gpu and SDPBackend.EFFICIENT_ATTENTION in gpu
    assert attention_kernels.read_rows_pays(torch.device("cpu"))
    assert not attention_kernels.read_rows_pays(torch.device("cuda"))


@pytest.mark.parametrize("tlen", [5, 16, 37])
def test_an_additive_mask_is_0_and_minus_infinity_in_rows_the_kernel_takes_without_a_copy(tlen):
    allowed = torch.rand(2, 1, tlen, tlen) < 0.5
    m = additive_mask(allowed, torch.float16)
    assert m.dtype == torch.float16 and m.shape == allowed.shape
    assert m.stride(-2) % ALIGN == 0 and m.stride(-1) == 1
    assert torch.equal(m == 0, allowed) and torch.isinf(m[~allowed]).all()


def test_sla_as_two_fused_calls_equals_the_written_out_mix_with_its_gradients():
    """The gate is one scalar per query row: g·(S_loc V) + (1−g)·(S_glb V) = (g·S_loc + (1−g)·S_glb) V, with
    padding and without (float64, no dropout)."""
    from fairseq_syntax.modules.sla_attention import attention_biases, gated_local_global_attention

    torch.manual_seed(0)
    tlen, bsz, dim, nh = 7, 3, 8, 2
    proj = [nn.Linear(dim, dim).double() for _ in range(4)]
    local = torch.rand(bsz, tlen, tlen) < 0.4
    local |= torch.eye(tlen, dtype=torch.bool)
    for pad in (None, torch.tensor([[False] * 7, [False] * 5 + [True] * 2, [False] * 3 + [True] * 4])):
        outs = []
        for fused in (False, True):
            x = torch.randn(tlen, bsz, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
            x.requires_grad_()
            gate = torch.rand(tlen, bsz, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
            gate.requires_grad_()
            biases = attention_biases(local, pad, torch.float64 if fused else None)
            out = gated_local_global_attention(x, *proj, nh, None, gate, biases=biases, fused=fused)
            rows = slice(None) if pad is None else ~pad.T  # a padded query row is nobody's output
            loss = (out[rows] * torch.linspace(-1, 1, dim, dtype=torch.float64)).sum()
            outs.append((out[rows].detach(), grads_of([x, gate, *(p for m in proj for p in m.parameters())], loss)))
        assert torch.allclose(outs[0][0], outs[1][0], atol=1e-10)
        assert_close_all(outs[0][1], outs[1][1], atol=1e-9)


def test_sgnet_every_row_with_an_additive_mask_equals_its_read_rows_path(fused):
    """The GPU computes every row of SG-Net's extra layers and keeps H at the unread ones; the CPU computes only
    the read rows. The same H̄ and the same gradients, two layers deep, with [CLS] pooling."""
    from fairseq_syntax.modules.sdoi_attention import SyntaxGuidedAggregation

    from .test_half_precision import roberta_batch as batch_of

    torch.manual_seed(0)
    agg = SyntaxGuidedAggregation(16, 4, 32, num_layers=2, dropout=0.0).double().eval()
    d = SimpleNamespace(pad=lambda: 1, bos=lambda: 0, eos=lambda: 2, index=lambda p: 4 + len(p))
    _, codes = batch_of(d)
    tlen = codes.shape[1]
    read = codes.gt(0) & (torch.rand(codes.shape) < 0.6)
    read[:, 0] = True
    pool = torch.zeros_like(read)
    pool[:, 0] = True
    results = []
    for on in (False, True):
        fused(on)
        h = torch.randn(tlen, 2, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3)).requires_grad_()
        out, _ = agg(h, codes, pool_rows=pool, read_rows=read, fused=on)
        loss = (out * torch.linspace(-1, 1, 16, dtype=torch.float64)).sum()
        results.append((out.detach(), grads_of([h, *agg.parameters()], loss)))
    assert torch.allclose(results[0][0], results[1][0], atol=1e-10)
    assert_close_all(results[0][1], results[1][1], atol=1e-9)


def test_the_readers_unsupervised_layer_without_weights_equals_it_with_them(fused):
    from fairseq_syntax.reader.layers import SelfAttentionLayer

    torch.manual_seed(0)
    layer = SelfAttentionLayer(16, 4, 32, dropout=0.0).double().eval()
    x = torch.randn(3, 9, 16, dtype=torch.float64)
    pad = torch.zeros(3, 9, dtype=torch.bool)
    pad[1, 6:] = True
    head = torch.rand(3, 4, 9, 9) < 0.5
    head |= torch.eye(9, dtype=torch.bool)
    for allowed in (None, head):
        xs = [x.clone().requires_grad_() for _ in range(2)]
        ref, w = layer(xs[0], pad, allowed, need_weights=True)
        got, none = layer(xs[1], pad, allowed, need_weights=False)
        assert w is not None and none is None
        assert torch.allclose(ref, got, atol=1e-10)
        g_ref, g_got = (torch.autograd.grad(o.sum(), [xi, *layer.parameters()])
                        for o, xi in ((ref, xs[0]), (got, xs[1])))
        assert_close_all(g_ref, g_got, atol=1e-9)


@pytest.mark.parametrize("arch,extra", [("roberta_sgnet_small", {}), ("roberta_sla_small", {"sla_distance": 1}),
                                        ("roberta_sla_small", {"sla_mask": "window", "sla_window": 1})])
def test_bert_style_encoders_compute_the_same_on_the_fused_path(fused, task, arch, extra):
    """A whole encoder, token head and [CLS] head, fused path against reference path: the same outputs and
    gradients in float64 (the GPU's kernels, in fp16, are compared by the benchmark on the device)."""
    d = task.source_dictionary
    args = argparse.Namespace(arch=arch, encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                              encoder_attention_heads=4, max_positions=64)
    vars(args).update(extra)  # narrow local masks, so that the local branch differs from the global one
    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(0)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, SimpleNamespace(source_dictionary=d, max_positions=lambda: 64))
    model.register_classification_head("cls", num_classes=2)
    model.register_token_head("tags", 5)
    model.double().eval()
    toks, codes = roberta_batch(d)
    for head in ("cls", "tags"):
        results = []
        for on in (False, True):
            fused(on)
            out, _ = model(toks, features_only=True, classification_head_name=head, src_heads=codes)
            rows = codes.gt(0) if head == "tags" else slice(None)
            results.append((out[rows].detach(), grads_of(model, out[rows].sum())))
        assert torch.allclose(results[0][0], results[1][0], atol=1e-9)
        assert_close_all(results[0][1], results[1][1], atol=1e-8)


@pytest.mark.parametrize("arch", ["transformer_sgnet_small", "transformer_sla_small"])
def test_translation_models_compute_the_same_on_the_fused_path(fused, task, arch):
    torch.manual_seed(0)
    extra = ["--sla-distance", "1"] if "sla" in arch else []
    model = ARCH_MODEL_REGISTRY[arch].build_model(make_args(arch, *extra), task).double().eval()
    toks, lengths, prev, codes = sample_batch(task.source_dictionary)
    results = []
    for on in (False, True):
        fused(on)
        logits, _ = model(toks, lengths, prev, src_heads=codes)
        results.append((logits.detach(), grads_of(model, logits.logsumexp(-1).sum())))
    assert torch.allclose(results[0][0], results[1][0], atol=1e-9)
    assert_close_all(results[0][1], results[1][1], atol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_the_fused_paths_train_in_half_precision(fused, task, dtype):
    """The half-precision steps of test_half_precision.py, on the fused path: finite losses and gradients."""
    from . import test_half_precision as half

    for arch in ("roberta_sgnet_small", "roberta_sla_small"):
        for head in ("sentence", "token"):
            half.test_bert_style_encoders_train_in_half_precision(task, arch, head, dtype)
    for arch in ("transformer_sgnet_small", "transformer_sla_small"):
        half.test_translation_models_train_in_half_precision(task, arch, [], dtype)
