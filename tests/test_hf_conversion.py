"""fairseq-syntax-convert-hf on the Hugging Face encoders a fairseq user owns: BERT, RoBERTa, XLM-R and ELECTRA's
discriminator, each a small model with random weights built from its transformers config (no download). The lifted
fairseq encoder's hidden states equal transformers' own model's on every real token: RoBERTa's and XLM-R's positions
counted from the padding index, and BERT's and ELECTRA's segment embedding on a pair's second text."""
import json

import pytest
import torch

import fairseq_syntax
from fairseq_syntax.cli.convert_hf import build_fairseq_model, convert, main
from fairseq_syntax.pretrained.hf_encoders import load_hf_encoder, row_order

fairseq_syntax.register()
SIZES = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
             max_position_embeddings=80, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
WORDS = 60  # pieces besides the specials


def wordpiece_vocab():
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(WORDS)]


def make_model(family, folder):
    """A random-weight transformers model of ``family``, saved as save_pretrained writes it, with its tokenizer's
    vocabulary: vocab.txt (BERT, ELECTRA), vocab.json (RoBERTa, <mask> last), tokenizer.json with a Unigram
    vocabulary and <mask> as an added token (XLM-R)."""
    import transformers

    torch.manual_seed(0)
    folder.mkdir()
    if family in ("bert", "electra"):
        vocab = wordpiece_vocab()
        (folder / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
        if family == "bert":
            cfg = transformers.BertConfig(vocab_size=len(vocab), type_vocab_size=2, pad_token_id=0, **SIZES)
            model = transformers.BertModel(cfg, add_pooling_layer=False)
        else:
            cfg = transformers.ElectraConfig(vocab_size=len(vocab), embedding_size=SIZES["hidden_size"],
                                             type_vocab_size=2, pad_token_id=0, **SIZES)
            model = transformers.ElectraModel(cfg)
    else:
        pieces = ["<s>", "<pad>", "</s>", "<unk>"] + [f"\u2581w{i}" for i in range(WORDS)] + ["<mask>"]
        if family == "roberta":
            (folder / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(pieces)}), encoding="utf-8")
            cfg = transformers.RobertaConfig(vocab_size=len(pieces), type_vocab_size=1, pad_token_id=1,
                                             bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5, **SIZES)
            model = transformers.RobertaModel(cfg, add_pooling_layer=False)
        else:
            tok = {"model": {"type": "Unigram", "vocab": [[p, -1.0] for p in pieces[:-1]]},
                   "added_tokens": [{"id": len(pieces) - 1, "content": "<mask>"}]}
            (folder / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
            cfg = transformers.XLMRobertaConfig(vocab_size=len(pieces), type_vocab_size=1, pad_token_id=1,
                                                bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5, **SIZES)
            model = transformers.XLMRobertaModel(cfg, add_pooling_layer=False)
    with torch.no_grad():  # BERT's type embeddings start near zero: make type 1 tell apart
        for p in model.parameters():
            p.normal_(0, 0.2)
    model.eval().save_pretrained(str(folder))
    return model


def pair_batch(family, hf_ids_of, rng):
    """Rows ``[CLS] a [SEP] b [SEP]`` (RoBERTa, XLM-R: ``<s> a </s> </s> b </s>``), padded, as transformers' ids,
    token types and mask."""
    bert_like = family in ("bert", "electra")
    cls, sep, pad = (2, 3, 0) if bert_like else (0, 2, 1)
    rows, types = [], []
    for n0, n1 in ((7, 5), (3, 9), (12, 1), (4, 4)):
        a = [hf_ids_of(int(x)) for x in torch.randint(0, WORDS, (n0,), generator=rng)]
        b = [hf_ids_of(int(x)) for x in torch.randint(0, WORDS, (n1,), generator=rng)]
        first = [cls] + a + [sep]
        second = ([] if bert_like else [sep]) + b + [sep]
        rows.append(first + second)
        types.append([0] * len(first) + [1 if bert_like else 0] * len(second))
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), pad)
    tt = torch.zeros(len(rows), width, dtype=torch.long)
    for r, (row, t) in enumerate(zip(rows, types)):
        ids[r, :len(row)] = torch.tensor(row)
        tt[r, :len(t)] = torch.tensor(t)
    return ids, tt, ids.ne(pad).long()


@pytest.mark.parametrize("family", ["bert", "roberta", "xlm-roberta", "electra"])
def test_each_encoder_converts_to_the_same_hidden_states(family, tmp_path, capsys):
    hf = make_model(family, tmp_path / "hf")
    assert main(["--model-dir", str(tmp_path / "hf"), "--out", str(tmp_path / "fs")]) == 0
    assert "--layernorm-eps" in capsys.readouterr().err
    ck = load_hf_encoder(str(tmp_path / "hf"))
    model, dictionary, _ = build_fairseq_model(ck, "roberta_baseline")
    state = torch.load(tmp_path / "fs" / "model.pt", weights_only=False)["model"]
    model.upgrade_state_dict_named(state, "")
    model.load_state_dict(state, strict=True)
    model.eval()
    order = row_order(ck)
    to_fairseq = {hf_id: k for k, hf_id in enumerate(order)}
    symbols = (tmp_path / "fs" / "dict.txt").read_text(encoding="utf-8").split("\n")
    assert len(symbols) - 1 + 5 == len(dictionary) == len(order)  # + the 4 specials and <mask>
    first_word = 5 if family in ("bert", "electra") else 4
    ids, types, mask = pair_batch(family, lambda w: first_word + w, torch.Generator().manual_seed(1))
    fs_ids = ids.clone().apply_(lambda i: to_fairseq[i])
    assert dictionary[int(fs_ids[0, 1])].lstrip("\u2581").startswith("w")  # a word piece, where BERT has it
    with torch.no_grad():
        want = hf(ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        got, _ = model(fs_ids, features_only=True)
    worst = (want - got).abs()[mask.bool()].max().item()
    assert worst < 1e-4, (family, worst)
    if family in ("bert", "electra"):  # the second text really reads its segment
        with torch.no_grad():
            model.encoder.segment_offset.zero_()
            without, _ = model(fs_ids, features_only=True)
        assert (want - without).abs()[types.bool()].max() > 1e-2
    else:
        assert model.encoder.segment_offset.abs().max() == 0
    print(f"{family}: largest absolute difference {worst:.2e}")


def test_an_electra_that_projects_its_embeddings_is_refused_by_name(tmp_path, capsys):
    import transformers

    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "vocab.txt").write_text("".join(t + "\n" for t in wordpiece_vocab()))
    cfg = transformers.ElectraConfig(vocab_size=len(wordpiece_vocab()), embedding_size=32, **SIZES)
    transformers.ElectraModel(cfg).save_pretrained(str(tmp_path / "hf"))
    assert main(["--model-dir", str(tmp_path / "hf"), "--out", str(tmp_path / "fs")]) == 1
    err = capsys.readouterr().err
    assert "embedding_size 32 and hidden_size 64" in err and "no layer for" in err
    assert not (tmp_path / "fs" / "model.pt").exists()


def test_a_model_without_its_tokenizer_files_is_named(tmp_path):
    make_model("roberta", tmp_path / "hf")
    (tmp_path / "hf" / "vocab.json").unlink()
    with pytest.raises(ValueError, match="no tokenizer files"):
        convert(str(tmp_path / "hf"), str(tmp_path / "fs"))
