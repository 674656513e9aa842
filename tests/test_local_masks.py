"""Syntax-aware local attention masks (docs/methods.md §2) against a plain-Python reading of the definition."""
import torch

from fairseq_syntax.syntax import align_heads_to_subwords, tree_distance
from fairseq_syntax.syntax.local import batch_tree_distance, sla_mask, window_mask

from .test_alignment_and_masks import batch
from .test_trees import NONPROJ_HEADS, PAPER_HEADS

NONPROJ_PIECES = "A hear@@ ing is sched@@ u@@ led on the issue today".split()
PAPER_PIECES = "The in@@ crea@@ se reflects lower credit los@@ ses".split()


def owners(pieces):
    """Word index of every subword (bpe)."""
    out, w = [], 0
    for i, p in enumerate(pieces):
        out.append(w)
        if not p.endswith("@@"):
            w += 1
    return out


def expected_sla(heads, pieces, m):
    """The definition, word by word: D(i, j) = min_{k in {i-1, i, i+1}} dis(k, j) <= m."""
    dis = tree_distance(heads)
    n = len(heads)
    own = owners(pieces)
    allowed = torch.zeros(len(pieces), len(pieces), dtype=torch.bool)
    for a, wi in enumerate(own):
        for b, wj in enumerate(own):
            d = min(int(dis[k, wj]) for k in (wi - 1, wi, wi + 1) if 0 <= k < n)
            allowed[a, b] = d <= m
    return allowed


def test_batched_tree_distance_matches_single_sentence_distances():
    codes = [align_heads_to_subwords(h, p) for h, p in ((PAPER_HEADS, PAPER_PIECES), (NONPROJ_HEADS, NONPROJ_PIECES))]
    b = batch(codes)
    dist = batch_tree_distance(b)
    for r, (heads, pieces) in enumerate(((PAPER_HEADS, PAPER_PIECES), (NONPROJ_HEADS, NONPROJ_PIECES))):
        n = len(pieces)
        off = b.size(1) - (n + 1)
        own = owners(pieces)
        want = tree_distance(heads)[own][:, own]
        assert torch.equal(dist[r, off:off + n, off:off + n], want)


def test_sla_mask_follows_the_neighbour_rule_for_every_m():
    for heads, pieces in ((PAPER_HEADS, PAPER_PIECES), (NONPROJ_HEADS, NONPROJ_PIECES)):
        b = batch([align_heads_to_subwords(heads, pieces)])
        n = len(pieces)
        for m in (1, 2, 3, 4):
            got = sla_mask(b, m)[0]
            assert torch.equal(got[:n, :n], expected_sla(heads, pieces, m)), (pieces[0], m)
    # hand-worked: with m = 1, "A" reaches "scheduled" through its neighbour "hearing" (dis 1), but not "is"
    b = batch([align_heads_to_subwords(NONPROJ_HEADS, NONPROJ_PIECES)])
    got = sla_mask(b, 1)[0]
    assert got[0, 4] and not got[0, 3]  # A -> sched@@ yes, A -> is no


def test_special_tokens_are_never_masked():
    b = batch([align_heads_to_subwords(NONPROJ_HEADS, NONPROJ_PIECES), [1]])  # padding in row 2
    got = sla_mask(b, 1)
    special = b.eq(0)
    for r in range(2):
        assert got[r][special[r]].all() and got[r][:, special[r]].all()


def pair_codes():
    """[CLS] the dog runs [SEP] cats sleep [SEP]: each sentence parsed on its own (dog and sleep the roots)."""
    a = align_heads_to_subwords([2, 0, 2], "the dog runs".split())
    c = align_heads_to_subwords([2, 0], "cats sleep".split())
    codes = torch.tensor([[0] + [v + 1 for v in a] + [0] + [v + 5 for v in c] + [0]])
    return codes, torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1]])


def test_in_a_pair_the_sla_scope_stays_inside_its_sentence():
    codes, segments = pair_codes()
    got = sla_mask(codes, 0, segments)[0].int().tolist()
    # m = 0: "runs" sees itself and, through its neighbour "dog", "dog" (D = 0); not "the" (D = dis(dog, the) = 1),
    # and nothing of "cats sleep"; the neighbour rule does not reach across [SEP]; specials stay open
    assert got[3] == [1, 0, 1, 1, 1, 0, 0, 1]
    # "cats" (its previous neighbour would be [SEP]: none) sees itself and, through "sleep", "sleep"
    assert got[5] == [1, 0, 0, 0, 1, 1, 1, 1]
    assert got[0] == [1] * 8 and [row[4] for row in got] == [1] * 8  # [CLS] row, [SEP] column
    # the same without segments: two trees, so no distance joins them either
    assert sla_mask(codes, 0)[0].int().tolist()[3] == got[3]


def test_in_a_pair_the_wla_window_stays_inside_its_sentence():
    codes, segments = pair_codes()
    got = window_mask(codes, 2, segments)[0].int().tolist()
    assert got[3] == [1, 1, 1, 1, 1, 0, 0, 1]  # |3 - 5| = 2, but "cats" is the other sentence's
    assert got[5] == [1, 0, 0, 0, 1, 1, 1, 1]  # and "runs" is not "cats"'s
    no_pair = window_mask(codes, 2)[0].int().tolist()
    assert no_pair[3][5] == 1 and no_pair[5][3] == 1  # without segments the window crosses [SEP]


def test_window_baseline():
    b = batch([align_heads_to_subwords(NONPROJ_HEADS, NONPROJ_PIECES)])
    got = window_mask(b, 2)[0]
    t = b.size(1)
    for i in range(t - 1):
        for j in range(t - 1):
            assert bool(got[i, j]) == (abs(i - j) <= 2)
    assert got[t - 1].all() and got[:, t - 1].all()  # EOS never masked


def test_gated_attention_is_the_gated_mix_of_two_softmaxes_written_out():
    """out = W_o((g·softmax_local + (1−g)·softmax_global) V), padding closed in both, computed row by row
    in plain Python loops over softmax of lists; the per-batch biases shared by the layers give the same."""
    import math

    import torch.nn as nn

    from fairseq_syntax.modules.sla_attention import attention_biases, gated_local_global_attention

    torch.manual_seed(0)
    tlen, bsz, dim, nh = 5, 2, 4, 2
    proj = [nn.Linear(dim, dim) for _ in range(4)]
    x = torch.randn(tlen, bsz, dim)
    local = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [1, 0, 0, 1, 1]],
                         dtype=torch.bool).expand(bsz, tlen, tlen).clone()
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    gate = torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0]).view(tlen, 1, 1).expand(tlen, bsz, 1)
    with torch.no_grad():
        got = gated_local_global_attention(x, *proj, nh, local, gate, pad)
        shared = gated_local_global_attention(x, *proj, nh, None, gate, biases=attention_biases(local, pad))
        q, k, v = (p(x) for p in proj[:3])
        hd = dim // nh
        want = torch.zeros(tlen, bsz, dim)
        for b in range(bsz):
            for h in range(nh):
                sl = slice(h * hd, (h + 1) * hd)
                for i in range(tlen):
                    s = [float(q[i, b, sl] @ k[j, b, sl]) / math.sqrt(hd) for j in range(tlen)]
                    keys = [j for j in range(tlen) if not pad[b, j]]
                    loc = [j for j in keys if local[b, i, j]]
                    zg = sum(math.exp(s[j]) for j in keys)
                    zl = sum(math.exp(s[j]) for j in loc)
                    g = float(gate[i, b, 0])
                    for j in keys:
                        p = (1 - g) * math.exp(s[j]) / zg + (g * math.exp(s[j]) / zl if j in loc else 0.0)
                        want[i, b, sl] += p * v[j, b, sl]
        want = proj[3](want)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.equal(got, shared)


def test_gated_attention_weights_gradient_equals_autograd_of_the_formula():
    """The hand-written backward of the gated weights gives the gradients autograd takes through q kᵀ, two
    softmaxes and a lerp, for q, k and the gate, with and without padding (float64)."""
    from fairseq_syntax.modules.sla_attention import GatedAttentionWeights, attention_biases

    torch.manual_seed(0)
    bsz, nh, tlen, hd = 2, 3, 6, 4
    local = torch.rand(bsz, tlen, tlen) < 0.5
    local |= torch.eye(tlen, dtype=torch.bool)
    for pad in (None, torch.tensor([[False] * 6, [False] * 4 + [True] * 2])):
        lb, gb = attention_biases(local, pad)
        lb, gb = lb.double(), None if gb is None else gb.double()
        q, k = (torch.randn(bsz, nh, tlen, hd, dtype=torch.float64, requires_grad=True) for _ in range(2))
        g = torch.rand(bsz, 1, tlen, 1, dtype=torch.float64, requires_grad=True)
        upstream = torch.randn(bsz, nh, tlen, tlen, dtype=torch.float64)
        scores = q @ k.transpose(-1, -2)
        glb = (scores if gb is None else scores + gb).softmax(-1)
        want = torch.lerp(glb, (scores + lb).softmax(-1), g)
        want_grads = torch.autograd.grad(want, (q, k, g), upstream)
        got = GatedAttentionWeights.apply(q, k, lb, gb, g)
        got_grads = torch.autograd.grad(got, (q, k, g), upstream)
        assert torch.allclose(got, want, equal_nan=True)  # (a padded query row with no open key is NaN in both)
        for a, b in zip(got_grads, want_grads):
            assert torch.allclose(a, b, atol=1e-12, equal_nan=True)
        first = (q[:1].detach().requires_grad_(), k[:1].detach().requires_grad_(), lb[:1],
                 None if gb is None else gb[:1], g[:1].detach().requires_grad_())
        assert torch.autograd.gradcheck(GatedAttentionWeights.apply, first)


def test_gated_attention_weights_in_chunks_of_the_batch_equal_the_whole_batch_at_once(monkeypatch):
    """On the CPU the weights and their gradient run a few samples at a time (chunks of 2 of 5 here, the last
    one short); the weights and the gradients of q, k and the gate equal those of the batch in one chunk."""
    from fairseq_syntax.modules import sla_attention
    from fairseq_syntax.modules.sla_attention import GatedAttentionWeights, attention_biases

    torch.manual_seed(1)
    bsz, nh, tlen, hd = 5, 3, 7, 4
    local = (torch.rand(bsz, tlen, tlen) < 0.4) | torch.eye(tlen, dtype=torch.bool)
    pad = torch.zeros(bsz, tlen, dtype=torch.bool)
    pad[1, 5:] = pad[4, 6:] = True
    lb, gb = attention_biases(local, pad)
    q, k = (torch.randn(bsz, nh, tlen, hd, requires_grad=True) for _ in range(2))
    g = torch.rand(bsz, 1, tlen, 1, requires_grad=True)
    upstream = torch.randn(bsz, nh, tlen, tlen)
    results = {}
    for rows in (bsz, 2):
        monkeypatch.setattr(sla_attention, "CHUNK_BYTES", rows * nh * tlen * tlen * 4)
        weights = GatedAttentionWeights.apply(q, k, lb, gb, g)
        results[rows] = (weights, *torch.autograd.grad(weights, (q, k, g), upstream))
    for whole, chunked in zip(results[bsz], results[2]):
        assert torch.allclose(whole, chunked, atol=1e-6, equal_nan=True)
