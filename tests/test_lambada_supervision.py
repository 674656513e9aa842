"""The LAMBADA reader's core against hand-worked passages: instances, the five signals, losses, pointer-sum."""
import json
import math

import numpy as np
import pytest
import torch

from fairseq_syntax.parsing.conllu import ParsedSentence, format_conllu
from fairseq_syntax.reader.annotate import join, parse_lines, target_type, write_instances, read_instances
from fairseq_syntax.reader.chains import mention_head, read_coref_jsonl
from fairseq_syntax.reader.instances import (Rejected, check_training_instance, cut_passages, make_instance,
                                             split_sentences)
from fairseq_syntax.reader.losses import (attention_supervision_nll, pointer_log_probs, pointer_sum_nll,
                                          pointer_sum_predict, supervision_targets)
from fairseq_syntax.reader.ptb import ptb_tokenize
from fairseq_syntax.reader.supervision import PassageAnnotation, build_signals, dense

# "john saw mary . he gave her a book ." + query "then she thanked", answer "him"
PASSAGE = "john saw mary . he gave her a book . then she thanked him".split()
HEADS = [1, -1, 1, 1, 5, -1, 5, 8, 5, 5, 12, 12, -1]
DEPRELS = ["nsubj", "ROOT", "dobj", "punct", "nsubj", "ROOT", "dative", "det", "dobj", "punct", "advmod", "nsubj",
           "ROOT"]
UPOS = ["PROPN", "VERB", "PROPN", "PUNCT", "PRON", "VERB", "PRON", "DET", "NOUN", "PUNCT", "ADV", "PRON", "VERB"]
CHAINS = [[0, 4], [2, 6, 11]]  # john/he, mary/her/she (she is in the query)

EXPECTED = {
    "DepParse": {(0, 1), (2, 1), (3, 1), (4, 5), (6, 5), (7, 8), (8, 5), (9, 5)},  # roots 1 and 5 have no row
    "CorefAll": {(0, 4), (4, 0), (2, 6), (6, 2)},  # "she" (11) is outside the context
    "CorefPrev": {(4, 0), (6, 2)},
    "CorefNext": {(0, 4), (2, 6)},
    # john(0) and he(4) are arguments of saw(1) and gave(5); so are mary(2, dobj) and her(6, dative);
    # she(11) is an argument of thanked(12), which lies in the query
    "Narrative": {(0, 1), (0, 5), (4, 1), (4, 5), (2, 1), (2, 5), (6, 1), (6, 5)},
}


def annotation():
    return PassageAnnotation(10, HEADS, DEPRELS, UPOS, CHAINS)


@pytest.mark.parametrize("signal", sorted(EXPECTED))
def test_signals_of_hand_worked_passage(signal):
    pairs = build_signals(annotation(), [signal])[signal]
    assert pairs.dtype == np.int32 and pairs.shape[1] == 2
    assert {tuple(p) for p in pairs.tolist()} == EXPECTED[signal]
    m = dense(pairs, 10)
    assert m.sum() == len(EXPECTED[signal])


def test_signals_are_stored_as_pairs_not_matrices():
    sig = build_signals(annotation())
    assert sum(v.size for v in sig.values()) == 2 * sum(len(v) for v in EXPECTED.values())


def test_unknown_signal_is_named():
    with pytest.raises(ValueError, match="Coref"):
        build_signals(annotation(), ["Coref"])


def test_instance_cut_and_chu_filter():
    inst = make_instance(PASSAGE)
    assert inst.context == PASSAGE[:10] and inst.query == ["then", "she", "thanked"] and inst.answer == "him"
    assert inst.sentences == [(0, 4), (4, 10)]
    assert inst.annotated_tokens == PASSAGE[:-1]  # the answer is never shown to the parser or coreference
    with pytest.raises(Rejected, match="not in context"):
        check_training_instance(inst, frozenset())
    with pytest.raises(Rejected, match="stop-word"):
        check_training_instance(inst, frozenset({"him"}))
    ok = make_instance("the dog barked . i fed the dog".split())
    check_training_instance(ok, frozenset({"the"}))
    assert ok.answer_positions == [1]


def test_sentence_split_keeps_closing_quotes():
    toks = "`` go away ! '' he said . * * * then she left".split()
    assert split_sentences(toks) == [(0, 5), (5, 8), (8, 11), (11, 14)]


def test_passages_cut_from_novel_text():
    sents = [ptb_tokenize(s) for s in [
        "Tom walked into the garden with his old dog.", "The garden was quiet and the roses were red.",
        "He sat on the bench and waited for an hour.", "Nobody came, so he called the dog."]]
    out = list(cut_passages(sents, frozenset({"the", "he"}), min_context=20, max_context=60))
    assert out == [sents[0] + sents[1] + sents[2] + sents[3][:-1]]  # target "dog" occurs in the context
    assert ptb_tokenize('"Don\'t," she said.') == ["``", "do", "n't", ",", "''", "she", "said", "."]


def test_attention_supervision_loss_by_hand():
    attn = torch.tensor([[[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]])
    t = supervision_targets((torch.tensor([3]), torch.tensor([[0, 1], [1, 0], [1, 2]], dtype=torch.int32)), 1, 3)
    total, rows = attention_supervision_nll(attn, t)
    assert int(rows) == 2  # the third row has no target and is not counted
    assert total.item() == pytest.approx(-math.log(0.3) - math.log(0.1 + 0.8), rel=1e-6)


def test_pointer_sum_prefers_a_repeated_answer():
    # positions: a b a c; b has the largest single probability, a the largest sum
    probs = torch.tensor([[0.3, 0.35, 0.3, 0.05]])
    mask = torch.ones(1, 4, dtype=torch.bool)
    logp = pointer_log_probs(probs.log(), mask)
    types = torch.tensor([[0, 1, 0, 2]])
    assert pointer_sum_predict(logp, mask, types).tolist() == [0]
    nll, has = pointer_sum_nll(logp, types.eq(0))
    assert has.tolist() == [True] and nll.item() == pytest.approx(-math.log(0.6), rel=1e-5)
    # padding never takes probability, an absent answer gives no loss
    logp2 = pointer_log_probs(torch.zeros(1, 4), torch.tensor([[True, True, False, False]]))
    assert logp2.exp()[0, :2].sum().item() == pytest.approx(1.0)
    nll2, has2 = pointer_sum_nll(logp2, torch.zeros(1, 4, dtype=torch.bool))
    assert has2.tolist() == [False] and nll2.item() == 0


def _files(tmp_path, record):
    inst = make_instance(PASSAGE)
    insts = [(1, inst)]
    write_instances(tmp_path / "x.inst.jsonl", insts)
    conllu = tmp_path / "x.conllu"
    with open(conllu, "w") as fh:
        off = 0
        for sent in parse_lines(inst):
            n = len(sent)
            heads = [h - off + 1 if h >= 0 else 0 for h in HEADS[off:off + n]] if off < 10 else [3, 3, 0, 3]
            deprels = DEPRELS[off:off + n] + ["dobj"] * (n - len(DEPRELS[off:off + n]))
            fh.write(format_conllu(ParsedSentence(sent, heads, deprels,
                                                  UPOS[off:off + n] + ["PRON"] * (n - len(UPOS[off:off + n])))))
            off += n
    coref = tmp_path / "x.coref.jsonl"
    coref.write_text(json.dumps(record) + "\n")
    return read_instances(tmp_path / "x.inst.jsonl"), str(conllu), str(coref)


def test_join_files_gives_the_hand_worked_signals(tmp_path):
    # mentions as spans; "a book" and "the"-less spans get their heads from the parse
    record = {"tokens": PASSAGE[:-1], "clusters": [[[0, 1], [4, 5]], [[2, 3], [6, 7], [11, 12]], [[7, 9]]],
              "entities": [[0, 1, "PERSON"]]}
    insts, conllu, coref = _files(tmp_path, record)
    (a,) = list(join(insts, conllu, coref))
    assert mention_head(7, 9, a.ann.heads) == 8
    sig = build_signals(a.ann)
    for name, want in EXPECTED.items():
        assert {tuple(p) for p in sig[name].tolist()} == want, name
    assert target_type(a) == {"pos": "pronoun", "entity": "none"}


def test_coreference_that_does_not_match_the_tokens_is_rejected(tmp_path):
    record = {"tokens": PASSAGE[:5] + ["HE"] + PASSAGE[6:-1], "clusters": []}
    insts, conllu, coref = _files(tmp_path, record)
    with pytest.raises(ValueError, match=r"x\.coref\.jsonl:1: the coreference output does not match .* token 5 "
                                         r"\('HE' vs 'gave'\)"):
        list(join(insts, conllu, coref))
    (tmp_path / "y.jsonl").write_text(json.dumps({"tokens": PASSAGE[:-1], "clusters": [[[3, 40]]]}) + "\n")
    with pytest.raises(ValueError, match=r"y\.jsonl:1: cluster 0 has mention \[3, 40\] outside"):
        list(read_coref_jsonl(str(tmp_path / "y.jsonl"), [PASSAGE[:-1]]))
    (tmp_path / "z.jsonl").write_text(json.dumps({"tokens": PASSAGE[:-1], "clusters": [[[3, 4]]]}) + "\n")
    with pytest.raises(ValueError, match="1 records, but there are 2 passages"):
        list(read_coref_jsonl(str(tmp_path / "z.jsonl"), [PASSAGE[:-1], PASSAGE]))


def _item(answer, context=PASSAGE[:10], sentences=((0, 4), (4, 10))):
    """One annotated instance for write_split: the hand-worked passage's annotation, any context and answer."""
    from fairseq_syntax.reader.annotate import Annotated
    from fairseq_syntax.reader.instances import Instance

    return Annotated(Instance(list(context), PASSAGE[10:13], answer, list(sentences)), annotation(), "PRON", "")


def test_binarized_reader_split_uses_two_bytes_and_reads_like_the_four_byte_files(tmp_path):
    """Word ids as fairseq-preprocess stores them, positions in int16; earlier preps wrote int32 throughout,
    and those files must give the same batches and signals."""
    from fairseq.data import Dictionary, indexed_dataset

    from fairseq_syntax.data.heads_io import IndexedWriter
    from fairseq_syntax.reader.binarize import write_split
    from fairseq_syntax.reader.dataset import PARTS, ReaderDataset
    from fairseq_syntax.reader.supervision import SIGNALS

    d = Dictionary()
    for w in PASSAGE:
        d.add_symbol(w)
    new, old = tmp_path / "new", tmp_path / "old"
    new.mkdir()
    old.mkdir()
    assert write_split(str(new), "train", [_item(a) for a in ("him", "mary", "book")], d) == 3
    names = list(PARTS) + [f"sup.{s}" for s in SIGNALS]
    for name in names:
        ds = indexed_dataset.MMapIndexedDataset(str(new / f"train.{name}"))
        assert ds._index.dtype == (np.uint16 if name in ("context", "query") else np.int16), name
        with IndexedWriter(str(old / f"train.{name}"), np.int32) as w:
            for i in range(len(ds)):
                w.add(ds[i].numpy())
        del ds
    assert (new / "train.ctypes.bin").stat().st_size == 2 * 3 * 10
    (old / "train.types.jsonl").write_text((new / "train.types.jsonl").read_text())
    batches = []
    for where in (new, old):
        ds = ReaderDataset(str(where), "train", d, SIGNALS, shuffle=False)
        batch = ds.collater([2, 0, 1])
        batches.append((batch, ds.signal_targets(batch["id"], batch["net_input"]["context"].size(1))))
    (a, sig_a), (b, sig_b) = batches
    for key in ("ctypes", "answer", "answer_mask"):
        assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key
    for key in ("context", "query", "sentence_ids"):
        assert a["net_input"][key].dtype == torch.int64 and torch.equal(a["net_input"][key], b["net_input"][key])
    assert a["answer"].tolist() == [8, -1, 2]  # types in order: john saw mary . he gave her a book; "him" is absent
    for s in SIGNALS:
        x, y = sig_a[s], sig_b[s]
        assert all(torch.equal(u, v) for u, v in zip(x, y)) if isinstance(x, tuple) else torch.equal(x, y), s


def test_a_split_that_fails_midway_leaves_no_files(tmp_path):
    from fairseq.data import Dictionary

    from fairseq_syntax.reader.binarize import write_split

    long = [f"w{i}" for i in range(40000)]  # 40,000 distinct words: local type ids past int16
    d = Dictionary()
    for w in PASSAGE + long:
        d.add_symbol(w)
    with pytest.raises(ValueError, match=r"train\.ctypes\.bin: item 1 holds 32768, outside int16"):
        write_split(str(tmp_path), "train", [_item("him"), _item("w1", long, [(0, len(long))])], d)
    assert list(tmp_path.iterdir()) == []
