"""Every registered model family trains in half precision: forward and backward in fp16 and bf16 on the CPU.

``--fp16`` runs the model in half precision; a finite "minus infinity" such as -1e9 overflows there
(``masked_fill`` raises), and a masked row that is all -inf turns the loss into NaN. Each test runs one
training step of a tiny model with ``model.half()`` on a batch of the hand-worked sentences that the
other tests use, and asks for a finite loss and finite gradients.
"""
import argparse
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import fairseq_syntax
from fairseq_syntax.reader.binarize import build_dictionary, write_split
from fairseq_syntax.reader.dataset import ReaderDataset
from fairseq_syntax.reader.model import BidafSAModel
from fairseq_syntax.reader.annotate import Annotated
from fairseq_syntax.reader.instances import make_instance
from fairseq_syntax.reader.losses import (attention_supervision_nll, pointer_log_probs, pointer_sum_nll,
                                          supervision_targets)
from fairseq_syntax.syntax import align_heads_to_subwords, shift_codes

from .test_lambada_supervision import PASSAGE, annotation
from .test_transformer_sgnet import make_args, sample_batch, task  # noqa: F401 (task: the fixture)
from .test_trees import NONPROJ_HEADS, PAPER_HEADS

fairseq_syntax.register()


HALF = pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])


def finite_step(model, loss_fn, dtype=torch.half):
    """One half-precision forward and backward (--fp16 or --bf16); the loss and every gradient must be finite."""
    model.to(dtype).train()
    loss = loss_fn(model)
    assert torch.isfinite(loss).item(), loss
    loss.backward()
    grads = [(n, p.grad) for n, p in model.named_parameters() if p.grad is not None]
    assert grads
    bad = [n for n, g in grads if not torch.isfinite(g).all()]
    assert not bad, bad
    assert all(g.dtype == dtype for _, g in grads)


def test_weight_average_stays_float32_under_half():
    """--fp16 halves the model; the moving average must not be halved with it, or it never moves."""
    from fairseq_syntax.reader.layers import ExponentialMovingAverage

    lin = torch.nn.Linear(2, 2)
    ema = ExponentialMovingAverage(list(lin.parameters()), decay=0.9999)
    holder = torch.nn.ModuleDict({"lin": lin, "ema": ema}).half()
    assert lin.weight.dtype == torch.half and ema.shadow_0.dtype == torch.float32
    ema.num_updates.fill_(10 ** 6)  # decay 0.9999 from here on
    before = ema.shadow_0.clone()
    with torch.no_grad():
        lin.weight.add_(1.0)
    ema.update()
    assert torch.allclose(ema.shadow_0 - before, torch.full_like(before, 1e-4), atol=2e-6)
    with ema.swapped():
        assert lin.weight.dtype == torch.half
    assert holder is not None


@pytest.mark.parametrize("arch,extra", [
    ("transformer_sgnet_small", []),
    ("transformer_sgnet_small", ["--sgnet-learn-alpha", "--sgnet-subword-mode", "first_head"]),
    ("transformer_sla_small", []),
    ("transformer_small_vanilla", []),
])
@HALF
def test_translation_models_train_in_half_precision(task, arch, extra, dtype):
    torch.manual_seed(0)
    model = ARCH_MODEL_REGISTRY[arch].build_model(make_args(arch, *extra), task)
    toks, lengths, prev, codes = sample_batch(task.source_dictionary)
    target = torch.roll(prev, -1, dims=1)

    def loss(m):
        kwargs = {} if arch == "transformer_small_vanilla" else {"src_heads": codes}
        logits, _ = m(toks, lengths, prev, **kwargs)
        assert logits.dtype == dtype
        return F.cross_entropy(logits.float().flatten(0, 1), target.flatten())

    finite_step(model, loss, dtype)


def roberta_batch(d):
    """<s> pieces </s> of the two hand-parsed sentences, right-padded, with their codes."""
    sents = [("The in@@ crea@@ se reflects lower credit los@@ ses".split(), PAPER_HEADS),
             ("A hear@@ ing is sched@@ u@@ led on the issue today".split(), NONPROJ_HEADS)]
    width = max(len(s) for s, _ in sents) + 2
    toks = torch.full((2, width), d.pad())
    codes = torch.zeros(2, width, dtype=torch.long)
    for r, (pieces, heads) in enumerate(sents):
        toks[r, :len(pieces) + 2] = torch.tensor([d.bos()] + [d.index(p) for p in pieces] + [d.eos()])
        codes[r, 1:len(pieces) + 1] = shift_codes(torch.tensor(align_heads_to_subwords(heads, pieces)), 1)
    return toks, codes


@pytest.mark.parametrize("arch", ["roberta_baseline_small", "roberta_sgnet_small", "roberta_sla_small"])
@pytest.mark.parametrize("head", ["sentence", "token"])
@HALF
def test_bert_style_encoders_train_in_half_precision(task, arch, head, dtype):
    d = task.source_dictionary
    args = argparse.Namespace(arch=arch, encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                              encoder_attention_heads=4, max_positions=64)
    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(0)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, SimpleNamespace(source_dictionary=d, max_positions=lambda: 64))
    toks, codes = roberta_batch(d)
    if head == "sentence":
        model.register_classification_head("cls", num_classes=2)
        target = torch.tensor([0, 1])
    else:
        model.register_token_head("tags", 5)
        target = torch.randint(0, 5, toks.shape).masked_fill(codes.le(0), -100)

    def loss(m):
        out, _ = m(toks, features_only=True, classification_head_name="cls" if head == "sentence" else "tags",
                   src_heads=codes)
        assert out.dtype == dtype
        return F.cross_entropy(out.float().flatten(0, -2), target.flatten(), ignore_index=-100)

    finite_step(model, loss, dtype)


@pytest.fixture(scope="module")
def reader_batch(tmp_path_factory):
    """Two copies of the hand-worked passage, binarized and collated by the reader's own dataset, and their
    signals as the criterion gathers them (batches do not carry them)."""
    out = tmp_path_factory.mktemp("reader")
    inst = make_instance(PASSAGE[:-1] + ["mary"])  # an answer in the context, so the pointer has a target
    d = build_dictionary(inst.context + inst.query, [])
    items = [Annotated(inst, annotation(), "PRON", "")] * 2
    write_split(str(out), "train", items, d)
    ds = ReaderDataset(str(out), "train", d, ("DepParse", "CorefAll"), max_context=8)
    batch = ds.collater([ds[i] for i in range(len(ds))])
    signals = ds.signal_targets(batch["id"], batch["net_input"]["context"].size(1))
    return d, batch, signals


@pytest.mark.parametrize("arch", ["bidaf", "bidaf_sa_early", "bidaf_sa_late", "bidaf_sa_both"])
@HALF
def test_lambada_reader_trains_in_half_precision(reader_batch, arch, dtype):
    d, batch, signals = reader_batch
    args = argparse.Namespace(hidden=8, word_dim=6, char_filters=4, sa_heads=2, sa_ffn=16)
    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(0)
    model = BidafSAModel(args, d)
    model.restrict_to_sentence = model.supervisable  # the DepParse window, as the task sets it

    def loss(m):
        logits, extra = m(**batch["net_input"])
        assert logits.dtype == dtype
        nll, has = pointer_sum_nll(pointer_log_probs(logits, extra["context_mask"]), batch["answer_mask"])
        assert has.all()
        total = nll.sum()
        if m.supervisable:
            n = logits.size(1)
            for sig, signal in signals.items():
                s, count = attention_supervision_nll(extra["sup_attn"], supervision_targets(signal, 2, n))
                assert count > 0, sig
                total = total + 0.3 * s / count
        return total

    finite_step(model, loss, dtype)


def test_reader_batch_keeps_the_end_of_a_long_context(reader_batch):
    """max_context=8 keeps the last 8 of the 10 context tokens; signal pairs move with them, or go."""
    d, batch, signals = reader_batch
    ctx = batch["net_input"]["context"]
    assert [d[i] for i in ctx[0].tolist()] == "mary . he gave her a book .".split()
    assert batch["net_input"]["sentence_ids"][0].tolist() == [0, 0, 1, 1, 1, 1, 1, 1]
    counts, pairs = signals["CorefAll"]
    # (0, 4) and (4, 0) lose "john" (0); (2, 6) and (6, 2) become (0, 4) and (4, 0)
    assert counts.tolist() == [2, 2] and pairs.tolist() == [[0, 4], [4, 0], [0, 4], [4, 0]]
    t = supervision_targets((counts, pairs), 2, 8)
    assert sorted(map(tuple, t.nonzero().tolist())) == [(0, 0, 4), (0, 4, 0), (1, 0, 4), (1, 4, 0)]
    # DepParse, one head per token: john (0) and saw (1) are cut, so mary, "." and the root gave have none
    heads = signals["DepParse"]
    assert heads.tolist() == [[-1, -1, 3, -1, 3, 6, 3, 3]] * 2
    t = supervision_targets(heads, 2, 8)
    assert sorted(map(tuple, t[0].nonzero().tolist())) == [(2, 3), (4, 3), (5, 6), (6, 3), (7, 3)]
    assert batch["answer"].tolist() == [2, 2]  # "mary", the third word type of the context
    assert batch["ntokens"] == 2 * (8 + 3) and np.array_equal(batch["id"].numpy(), [0, 1])


def test_half_precision_masking_does_not_overflow():
    """The reproduction from the issue: -1e9 cannot be written into a half tensor."""
    from fairseq_syntax.reader.layers import mask_scores

    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(3, dtype=torch.half).masked_fill(torch.tensor([True, False, True]), -1e9)
    x = mask_scores(torch.zeros(2, 3, dtype=torch.half), torch.tensor([[True, False, True], [True, True, True]]))
    p = x.softmax(-1)
    assert p[0].tolist() == [0.0, 1.0, 0.0] and torch.isfinite(p[1]).all()


@pytest.mark.slow
def test_fairseq_train_takes_bf16_without_a_tpu(prepared, user_dir, tmp_path):
    """fairseq 0.12's --bf16 implies --tpu and fails in the Trainer (get_tpu_device); with the plugin it trains
    in bf16 on this machine's device: here 2 updates on the CPU, with a finite loss."""
    from .conftest import BIN, run

    out = run([str(BIN / "fairseq-train"), str(prepared / "bin"), "--user-dir", user_dir, "--task",
               "syntax_guided_translation", "-s", "en", "-t", "de", "--arch", "transformer_sla_small",
               "--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-4", "--criterion", "cross_entropy",
               "--max-tokens", "1500", "--max-update", "2", "--bf16", "--cpu", "--no-save", "--log-format", "simple",
               "--log-interval", "1", "--no-progress-bar"], cwd=str(tmp_path))
    text = out.stdout + out.stderr
    assert "not on a TPU" in text and "done training" in text
    losses = [float(line.split("| loss ")[1].split()[0]) for line in text.splitlines() if "| loss " in line]
    assert losses and all(math.isfinite(x) for x in losses)
