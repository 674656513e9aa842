"""BERT-style encoders: BERT's tokenization, the exact weight conversion, roberta_sgnet and roberta_sla."""
import copy
import importlib.util
import random

import pytest
import torch

import fairseq_syntax
from fairseq_syntax.cli.glue_conll_prep import pieces_file
from fairseq_syntax.cli.convert_hf import build_fairseq_model
from fairseq_syntax.parsing.conllu import ParsedSentence, format_conllu
from fairseq_syntax.pretrained.hf_encoders import load_bert, minilm_model_dir
from fairseq_syntax.syntax import align_heads_to_word_starts, check_subword_heads, sdoi_mask, shift_codes, sla_mask
from fairseq_syntax.text_prep.wordpiece import WordPieceTokenizer, basic_words

from .conftest import BIN, SHARED_DATA, run

fairseq_syntax.register()


def real_sentences(n=300, seed=0):
    cola = [line.rstrip("\n").split("\t")[3] for line in open(SHARED_DATA / "glue/CoLA/dev.tsv", encoding="utf-8")]
    sst = [line.split("\t")[0] for line in list(open(SHARED_DATA / "glue/SST-2/dev.tsv", encoding="utf-8"))[1:]]
    rng = random.Random(seed)
    return rng.sample(cola, n // 2) + rng.sample(sst, n // 2)


@pytest.fixture(scope="module")
def minilm():
    return load_bert(minilm_model_dir())


@pytest.fixture(scope="module")
def converted(minilm_converted):
    return minilm_converted


@pytest.fixture(scope="module")
def hf_bert():
    if importlib.util.find_spec("torchaudio") is not None:
        pytest.fail("torchaudio is installed (scripts/setup.sh leaves it out); transformers would crash importing it")
    from transformers import BertModel, BertTokenizer

    path = minilm_model_dir()
    return BertModel.from_pretrained(path).eval(), BertTokenizer.from_pretrained(path)


def load_converted(converted, minilm, arch):
    model, dictionary, _ = build_fairseq_model(minilm, arch)
    state = torch.load(converted / "model.pt")["model"]
    model.upgrade_state_dict_named(state, "")
    model.load_state_dict(state, strict=True)
    return model.eval(), dictionary


def test_wordpiece_matches_berts_own_tokenizer_on_real_sentences(minilm, hf_bert):
    _, hf_tok = hf_bert
    ours = WordPieceTokenizer(minilm.model_dir + "/vocab.txt")
    sents = real_sentences(400) + ["Café déjà vu, naïve résumé!", "He can't go -- isn't it?", "数学 test"]
    for s in sents:
        assert ours.tokenize(s) == hf_tok.tokenize(s), s


def test_parsed_words_keep_case_and_every_piece_belongs_to_one_word(minilm):
    tok = WordPieceTokenizer(minilm.model_dir + "/vocab.txt")
    words = basic_words("John can't believe it.")
    assert words == ["John", "can", "'", "t", "believe", "it", "."]  # BERT's split, case kept for the parser
    per_word = tok.split_words(["Unbelievably", "John"])
    assert per_word[0][0] == "un" and all(p.startswith("##") for p in per_word[0][1:]) and per_word[1] == ["john"]
    # explicit grouping: the middle word has three pieces (as "n't" -> n, ', t), none marked with ##
    codes = align_heads_to_word_starts([2, 0, 2], [0, 1, 4], 5)
    assert codes == [2, 2, -2, -2, 2]
    check_subword_heads(codes)


def test_converted_minilm_reproduces_the_original_hidden_states(converted, minilm, hf_bert):
    """Real CoLA/SST-2 sentences, padded in batches: max abs diff < 1e-4 on every real token."""
    hf, _ = hf_bert
    model, d = load_converted(converted, minilm, "roberta_baseline_small")
    tok = WordPieceTokenizer(minilm.model_dir + "/vocab.txt")
    vocab = {t: i for i, t in enumerate(minilm.vocab)}
    sents = real_sentences(64, seed=1)
    worst = 0.0
    for start in range(0, len(sents), 16):
        pieces = [tok.tokenize(s) for s in sents[start:start + 16]]
        width = max(len(p) for p in pieces) + 2
        ids_hf = torch.zeros(len(pieces), width, dtype=torch.long)  # [PAD] = 0
        ids_fs = torch.full((len(pieces), width), d.pad())
        for r, p in enumerate(pieces):
            ids_hf[r, :len(p) + 2] = torch.tensor([vocab["[CLS]"]] + [vocab[x] for x in p] + [vocab["[SEP]"]])
            ids_fs[r, :len(p) + 2] = torch.tensor([d.bos()] + [d.index(x) for x in p] + [d.eos()])
        assert not ids_fs.eq(d.unk()).any()
        with torch.no_grad():
            a = hf(ids_hf, attention_mask=ids_hf.ne(0).long()).last_hidden_state
            b, _ = model(ids_fs, features_only=True)
        real = ids_hf.ne(0)
        worst = max(worst, (a - b).abs()[real].max().item())
    assert worst < 1e-4, worst


def real_pairs(n, seed=0):
    """Sentence pairs of GLUE's RTE and MRPC dev sets (MRPC's file starts with a byte-order mark)."""
    rte = [line.rstrip("\n").split("\t")[1:3] for line in
           list(open(SHARED_DATA / "glue/RTE/dev.tsv", encoding="utf-8"))[1:]]
    mrpc = [line.rstrip("\n").split("\t")[3:5] for line in
            list(open(SHARED_DATA / "glue/MRPC/dev.tsv", encoding="utf-8-sig"))[1:]]
    rng = random.Random(seed)
    return rng.sample(rte, n // 2) + rng.sample(mrpc, n // 2)


def pair_batches(minilm, d, pairs, separators=1):
    """(BERT's ids, token_type_ids, attention mask, ours) of ``[CLS] a [SEP] b [SEP]``, padded; with separators=2
    RACE's layout as the recipe trains it (--separator-token 2): ``[CLS] a [SEP] [SEP] b [SEP]``, the second [SEP]
    and b of type 1."""
    tok = WordPieceTokenizer(minilm.model_dir + "/vocab.txt")
    vocab = {t: i for i, t in enumerate(minilm.vocab)}
    rows = []
    for a, b in pairs:
        pa, pb = tok.tokenize(a)[:200], tok.tokenize(b)[:100]
        first = ["[CLS]"] + pa + ["[SEP]"]
        second = ["[SEP]"] * (separators - 1) + pb + ["[SEP]"]
        rows.append((first, second))
    width = max(len(f) + len(s) for f, s in rows)
    ids_hf = torch.zeros(len(rows), width, dtype=torch.long)
    types = torch.zeros(len(rows), width, dtype=torch.long)
    ids_fs = torch.full((len(rows), width), d.pad())
    fs = {"[CLS]": d.bos(), "[SEP]": d.eos()}
    for r, (f, s) in enumerate(rows):
        pieces = f + s
        ids_hf[r, :len(pieces)] = torch.tensor([vocab[x] for x in pieces])
        types[r, len(f):len(pieces)] = 1
        ids_fs[r, :len(pieces)] = torch.tensor([fs.get(x) if x in fs else d.index(x) for x in pieces])
    assert not ids_fs.eq(d.unk()).any()
    return ids_hf, types, ids_hf.ne(0).long(), ids_fs


@pytest.mark.parametrize("separators", [1, 2], ids=["glue-pair", "race-layout"])
def test_converted_minilm_encodes_a_pairs_second_text_as_bert_does(converted, minilm, hf_bert, separators):
    """Real RTE/MRPC pairs: the lifted model's hidden states equal transformers' BertModel given token_type_ids
    (type 1 from the token after the first [SEP]) on every real token; without the segment offset they do not."""
    hf, _ = hf_bert
    model, d = load_converted(converted, minilm, "roberta_baseline_small")
    assert model.encoder.segment_offset.abs().max() > 0
    worst, without = 0.0, 0.0
    pairs = real_pairs(32, seed=separators)
    for start in range(0, len(pairs), 8):
        ids_hf, types, mask, ids_fs = pair_batches(minilm, d, pairs[start:start + 8], separators)
        with torch.no_grad():
            a = hf(ids_hf, attention_mask=mask, token_type_ids=types).last_hidden_state
            b, _ = model(ids_fs, features_only=True)
            offset = model.encoder.segment_offset.clone()
            model.encoder.segment_offset.zero_()
            c, _ = model(ids_fs, features_only=True)
            model.encoder.segment_offset.copy_(offset)
        real = mask.bool()
        worst = max(worst, (a - b).abs()[real].max().item())
        without = max(without, (a - c).abs()[types.bool()].max().item())
    assert worst < 1e-4, worst
    assert without > 1e-2, without  # the second text really is encoded differently from the first


@pytest.mark.parametrize("arch", ["roberta_sgnet_small", "roberta_sla_small"])
def test_sgnet_and_sla_add_the_segment_offset_only_to_a_pairs_second_text(converted, minilm, arch):
    """The offset reaches SG-Net's and SLA's encoders too: changing it changes a pair's second text and leaves a
    single sentence unchanged."""
    model, d = load_converted(converted, minilm, arch)
    tok = WordPieceTokenizer(minilm.model_dir + "/vocab.txt")
    single, single_heads = toy_batch(d, tok)
    (wa, ha), (wb, hb) = TOY_SENTENCES
    pa, pb = tok.split_words(wa), tok.split_words(wb)
    flat_a, flat_b = [p for ps in pa for p in ps], [p for ps in pb for p in ps]
    ca = align_heads_to_word_starts(ha, [sum(len(x) for x in pa[:i]) for i in range(len(wa))], len(flat_a))
    cb = align_heads_to_word_starts(hb, [sum(len(x) for x in pb[:i]) for i in range(len(wb))], len(flat_b))
    toks = torch.tensor([[d.bos()] + [d.index(p) for p in flat_a] + [d.eos()] + [d.index(p) for p in flat_b] +
                         [d.eos()]])
    heads = torch.tensor([[0] + shift_codes(torch.tensor(ca), 1).tolist() + [0] +
                          shift_codes(torch.tensor(cb), len(flat_a) + 2).tolist() + [0]])
    second = torch.zeros_like(toks, dtype=torch.bool)
    second[0, len(flat_a) + 2:] = True
    with torch.no_grad():
        p1, _ = model(toks, features_only=True, src_heads=heads)
        s1, _ = model(single, features_only=True, src_heads=single_heads)
        # a constant LayerNorm removes
        model.encoder.segment_offset.add_(torch.randn_like(model.encoder.segment_offset))
        p2, _ = model(toks, features_only=True, src_heads=heads)
        s2, _ = model(single, features_only=True, src_heads=single_heads)
    assert torch.equal(s1, s2)
    assert (p1 - p2)[second].abs().max() > 1e-2


def test_a_second_conversion_writes_the_same_bytes(converted, tmp_path):
    """The LM head BERT lacks starts from a fixed seed, so a re-made work/minilm is the same file."""
    run([BIN / "fairseq-syntax-convert-hf", "--out", tmp_path])
    for name in ("model.pt", "dict.txt", "vocab.txt", "hf_config.json"):
        assert (tmp_path / name).read_bytes() == (converted / name).read_bytes(), name


def test_checkpoint_lifts_into_sgnet_and_sla_with_fresh_new_parameters(converted, minilm):
    base, _ = load_converted(converted, minilm, "roberta_baseline_small")
    for arch, fragment in (("roberta_sgnet_small", "syntax_guided."), ("roberta_sla_small", ".sla_gate.")):
        model, _ = load_converted(converted, minilm, arch)
        sd, bsd = model.state_dict(), base.state_dict()
        new = [k for k in sd if fragment in k]
        assert new, arch
        for k, v in bsd.items():
            assert torch.equal(sd[k], v), (arch, k)
        assert set(sd) - set(bsd) == set(new)


TOY_SENTENCES = [(["The", "increase", "reflects", "lower", "credit", "losses"], [2, 3, 0, 6, 6, 3]),
                 (["A", "hearing", "is", "scheduled", "on", "the", "issue", "today"], [2, 4, 4, 0, 2, 7, 5, 4])]


def toy_batch(d, tok, sents=TOY_SENTENCES):
    """Two real sentences with hand-written parses, as <s> pieces </s>."""
    rows, codes = [], []
    for words, heads in sents:
        per_word = tok.split_words(words)
        flat = [p for ps in per_word for p in ps]
        c = align_heads_to_word_starts(heads, [sum(len(x) for x in per_word[:i]) for i in range(len(words))], len(flat))
        rows.append([d.bos()] + [d.index(p) for p in flat] + [d.eos()])
        codes.append([0] + shift_codes(torch.tensor(c), 1).tolist() + [0])
    width = max(len(r) for r in rows)
    toks = torch.full((len(rows), width), d.pad())
    heads = torch.zeros(len(rows), width, dtype=torch.long)
    for r, (row, c) in enumerate(zip(rows, codes)):
        toks[r, :len(row)] = torch.tensor(row)
        heads[r, :len(c)] = torch.tensor(c)
    return toks, heads


def test_sla_with_every_gate_closed_is_the_plain_encoder(converted, minilm):
    base, d = load_converted(converted, minilm, "roberta_baseline_small")
    sla, _ = load_converted(converted, minilm, "roberta_sla_small")
    toks, heads = toy_batch(d, WordPieceTokenizer(minilm.model_dir + "/vocab.txt"))
    with torch.no_grad():
        for layer in sla.encoder.sentence_encoder.layers:
            layer.sla_gate.weight.zero_()
            layer.sla_gate.bias.fill_(-float("inf"))  # g = 0 exactly
        a, _ = base(toks, features_only=True)
        b, _ = sla(toks, features_only=True, src_heads=heads)
        real = toks.ne(d.pad())
        assert (a - b).abs()[real].max() < 1e-5
        for layer in sla.encoder.sentence_encoder.layers:
            layer.sla_gate.bias.fill_(float("inf"))  # g = 1: local attention only
        sla.encoder.args.sla_distance = 1  # (with m = 3 these short sentences see everything)
        assert not sla_mask(heads, 1)[toks.ne(d.pad())].all()
        c, _ = sla(toks, features_only=True, src_heads=heads)
        assert (a - c).abs()[real].max() > 1e-2
    with pytest.raises(ValueError, match="src_heads"):
        sla(toks, features_only=True)


def test_sla_local_attention_only_reads_the_syntactic_neighbourhood(converted, minilm):
    """With g = 1, a change outside row i's local window (m = 1) leaves row i of the layer's output unchanged."""
    sla, d = load_converted(converted, minilm, "roberta_sla_small")
    toks, heads = toy_batch(d, WordPieceTokenizer(minilm.model_dir + "/vocab.txt"))
    toks, heads = toks[1:], heads[1:]  # "A hearing is scheduled on the issue today"
    layer = sla.encoder.sentence_encoder.layers[-1]
    with torch.no_grad():
        layer.sla_gate.weight.zero_()
        layer.sla_gate.bias.fill_(float("inf"))
        local = sla_mask(heads, 1)
        row = 1  # "A"
        outside = [j for j in range(1, toks.size(1) - 1) if not local[0, row, j]]
        assert outside
        h = torch.randn(toks.size(1), 1, layer.embed_dim)
        out1 = layer(h, None, local_allowed=local)
        h2 = h.clone()
        h2[outside[0], 0] += 1.0
        out2 = layer(h2, None, local_allowed=local)
        assert torch.allclose(out1[row], out2[row], atol=1e-5)
        assert not torch.allclose(out1[outside[0]], out2[outside[0]], atol=1e-3)
        inside = [j for j in range(1, toks.size(1) - 1) if local[0, row, j] and j != row]
        h3 = h.clone()
        h3[inside[0], 0] += 1.0
        assert not torch.allclose(out1[row], layer(h3, None, local_allowed=local)[row], atol=1e-4)


def test_sgnet_cls_reads_the_syntax_guided_output_only_with_sentence_scope(converted, minilm):
    tok = WordPieceTokenizer(minilm.model_dir + "/vocab.txt")
    sg, d = load_converted(converted, minilm, "roberta_sgnet_small")
    base, _ = load_converted(converted, minilm, "roberta_baseline_small")
    toks, heads = toy_batch(d, tok)
    with torch.no_grad():
        a, _ = base(toks, features_only=True)
        b, extra = sg(toks, features_only=True, src_heads=heads, need_syntax_weights=True)
        assert not torch.allclose(a[:, 0], b[:, 0], atol=1e-3)  # [CLS] sees H'
        allowed = extra["sdoi_mask"]
        assert allowed[0, 0, 1:7].all() and not allowed[0, 0, 7:].any()  # [CLS] row: every parsed token
        assert torch.equal(allowed[:, 1:], sdoi_mask(heads)[:, 1:])
        sg.encoder.cls_scope = "self"  # the paper's reading: [CLS] keeps H, the classifier sees no syntax
        c, _ = sg(toks, features_only=True, src_heads=heads)
        assert torch.allclose(c[:, 0], a[:, 0], atol=1e-5)
        assert not torch.allclose(c[:, 1:], a[:, 1:], atol=1e-3)


def test_one_sdoi_layer_gives_cls_the_same_output_under_any_parse(converted, minilm):
    """What a [CLS]-reading head (classification, RACE's ranking) sees of SG-Net does not depend on the parse: with
    one SDOI layer, [CLS]'s row attends to every parsed token whatever the tree, over keys and values from H, so
    the hand parse, a right-branching chain and --sgnet-mask none give [CLS] the same H̄; the other tokens differ.
    With two layers the second reads the first's syntax-guided output, and [CLS] sees the parse."""
    tok = WordPieceTokenizer(minilm.model_dir + "/vocab.txt")
    sg, d = load_converted(converted, minilm, "roberta_sgnet_small")
    chains = [(words, [i + 2 if i + 1 < len(words) else 0 for i in range(len(words))]) for words, _ in TOY_SENTENCES]
    toks, heads = toy_batch(d, tok)
    toks2, chain = toy_batch(d, tok, chains)
    assert torch.equal(toks, toks2) and not torch.equal(heads, chain)
    with torch.no_grad():
        a, _ = sg(toks, features_only=True, src_heads=heads)
        b, _ = sg(toks, features_only=True, src_heads=chain)
        sg.encoder.syntax_guided.mask = "none"
        c, _ = sg(toks, features_only=True, src_heads=heads)
        sg.encoder.syntax_guided.mask = "sdoi"
        assert torch.allclose(a[:, 0], b[:, 0], atol=1e-6) and torch.allclose(a[:, 0], c[:, 0], atol=1e-6)
        assert not torch.allclose(a[:, 1:], b[:, 1:], atol=1e-3)
        layer = sg.encoder.syntax_guided.layers[0]
        sg.encoder.syntax_guided.layers.append(layer)  # a second SDOI layer (shared weights suffice here)
        a2, _ = sg(toks, features_only=True, src_heads=heads)
        b2, _ = sg(toks, features_only=True, src_heads=chain)
        assert not torch.allclose(a2[:, 0], b2[:, 0], atol=1e-4)


@pytest.mark.parametrize("scope,layers", [("sentence", 1), ("self", 1), ("sentence", 2)])
def test_a_classification_head_gets_the_full_sdoi_output_of_its_one_row(converted, minilm, scope, layers):
    """With a classification head (it reads <s> only) SG-Net computes the SDOI layer's last row set at <s> alone:
    the head's logits and the gradients are those of the full computation."""
    torch.manual_seed(0)
    sg, d = load_converted(converted, minilm, "roberta_sgnet_small")
    sg.encoder.cls_scope = scope
    if layers == 2:
        sg.encoder.syntax_guided.layers.append(copy.deepcopy(sg.encoder.syntax_guided.layers[0]))
    sg.register_classification_head("cls", num_classes=3)
    sg.eval()
    toks, heads = toy_batch(d, WordPieceTokenizer(minilm.model_dir + "/vocab.txt"))
    params = [p for p in sg.parameters() if p.requires_grad]
    outputs = []
    for head_in_model in (False, True):  # every row computed, then the head applied; then the head's own row
        if head_in_model:
            logits, _ = sg(toks, src_heads=heads, classification_head_name="cls")
        else:
            logits = sg.classification_heads["cls"](sg(toks, src_heads=heads, features_only=True)[0])
        grads = torch.autograd.grad(logits.pow(2).sum(), params, allow_unused=True)
        outputs.append((logits, grads))
    (full, g_full), (one, g_one) = outputs
    assert torch.allclose(full, one, atol=1e-5)
    for a, b in zip(g_full, g_one):
        assert (a is None) == (b is None) and (a is None or torch.allclose(a, b, atol=1e-5))


def test_pieces_step_names_the_file_and_sentence_on_a_mismatch(tmp_path, minilm):
    words = tmp_path / "w.txt"
    words.write_text("The cat sat .\nA dog ran .\n")
    conllu = tmp_path / "p.conllu"
    conllu.write_text(format_conllu(ParsedSentence(["The", "cat", "sat", "."], [2, 3, 0, 3]))
                      + format_conllu(ParsedSentence(["A", "dog", "ran"], [2, 3, 0])))
    with pytest.raises(ValueError, match=r"p.conllu: sentence 2 .*w.txt:2"):
        pieces_file(minilm.model_dir, str(words), str(conllu), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
