"""The syntax dataset: heads follow samples through ordering, padding, BOS/EOS and truncation."""
import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset

from fairseq_syntax.data.packed import PackedRows, open_indexed
from fairseq_syntax.data.heads_io import IndexedWriter
from fairseq_syntax.data.syntax_dataset import SyntaxLanguagePairDataset, keep_last_batch
from fairseq_syntax.syntax import align_heads_to_subwords, sdoi_mask
from fairseq_syntax.syntax.batch_codes import collate_codes, pad_rows

from .test_trees import NONPROJ_HEADS, PAPER_HEADS

SENTS = [("The in@@ crea@@ se reflects lower credit los@@ ses", PAPER_HEADS),
         ("A hear@@ ing is sched@@ u@@ led on the issue today", NONPROJ_HEADS),
         ("Hi@@ !", [0])]


def build(left_pad=True, append_bos=False):
    d = Dictionary()
    for s, _ in SENTS:
        for w in s.split():
            d.add_symbol(w)
    src = [d.encode_line(s, add_if_not_exist=False) for s, _ in SENTS]
    heads = [torch.tensor(align_heads_to_subwords(h, s.split())) for s, h in SENTS]
    base = LanguagePairDataset(src, [len(x) for x in src], d, tgt=src, tgt_sizes=[len(x) for x in src], tgt_dict=d,
                               left_pad_source=left_pad, append_bos=append_bos, shuffle=False)
    return SyntaxLanguagePairDataset(base, heads), heads, d


@pytest.mark.parametrize("left_pad", [True, False])
@pytest.mark.parametrize("append_bos", [False, True])
def test_collated_heads_line_up_with_source_tokens(left_pad, append_bos):
    ds, heads, d = build(left_pad, append_bos)
    batch = ds.collater([ds[i] for i in range(len(ds))])
    toks, codes = batch["net_input"]["src_tokens"], batch["net_input"]["src_heads"]
    assert codes.shape == toks.shape
    special = toks.eq(d.pad()) | toks.eq(d.eos()) | toks.eq(d.bos())
    assert torch.equal(codes.eq(0), special)
    masks = sdoi_mask(codes)
    for row, idx in enumerate(batch["id"].tolist()):
        cols = (~special[row]).nonzero().flatten()
        start = int(cols[0])
        # the codes of the row are the sentence's codes shifted by its first column
        assert codes[row, cols].tolist() == [c + start * (1 if c > 0 else -1) for c in heads[idx].tolist()]
        alone = sdoi_mask(torch.tensor([[v for v in heads[idx].tolist()]]))[0]
        assert torch.equal(masks[row][cols][:, cols], alone)


def test_mismatched_lengths_are_errors():
    ds, heads, _ = build()
    with pytest.raises(ValueError, match="heads"):
        SyntaxLanguagePairDataset(ds.dataset, heads[:2], "heads")
    short = SyntaxLanguagePairDataset(ds.dataset, heads[:2] + [heads[2][:1]], "x.heads")
    with pytest.raises(ValueError, match="x.heads: sentence 3 has 1 head codes for 2 source tokens"):
        short.collater([short[i] for i in range(3)])


def test_codes_out_of_range_name_the_file_and_sentence():
    ds, heads, _ = build()
    bad = [h.clone() for h in heads]
    bad[1][3] = 40  # a head past the sentence's end: what random bytes in a .bin look like
    corrupt = SyntaxLanguagePairDataset(ds.dataset, bad, "valid.en-de.en.heads")
    with pytest.raises(ValueError, match=r"valid.en-de.en.heads: sentence 2: head code 40 outside 1..11"):
        corrupt.collater([corrupt[i] for i in range(3)])


def test_truncated_source_keeps_a_valid_tree():
    codes = align_heads_to_subwords(PAPER_HEADS, "The increase reflects lower credit losses".split())
    cut = collate_codes(np.array(codes), np.array([6]), np.array([4]), np.array([1]), 6)
    # "lower" (4) had its head "losses" (6) cut off: it becomes a root; BOS at column 0, EOS and padding 0
    assert cut.tolist() == [[0, 3, 4, 4, 5, 0]]


@pytest.mark.parametrize("left_pad", [True, False])
def test_truncate_source_through_fairseq(left_pad):
    """--truncate-source cuts the source before its EOS: the codes keep their first tokens, as a tree."""
    from fairseq.data import AppendTokenDataset, ListDataset, StripTokenDataset, TruncateDataset

    _, heads, d = build()
    src = [d.encode_line(s, add_if_not_exist=False) for s, _ in SENTS]
    src = ListDataset(src, np.array([len(x) for x in src]))
    cut = AppendTokenDataset(TruncateDataset(StripTokenDataset(src, d.eos()), 5), d.eos())
    base = LanguagePairDataset(cut, cut.sizes, d, tgt=src, tgt_sizes=[len(x) for x in src], tgt_dict=d,
                               left_pad_source=left_pad, shuffle=False)
    ds = SyntaxLanguagePairDataset(base, heads)
    batch = ds.collater([ds[i] for i in range(3)])
    toks, codes = batch["net_input"]["src_tokens"], batch["net_input"]["src_heads"]
    assert torch.equal(codes.eq(0), toks.eq(d.pad()) | toks.eq(d.eos()))
    for row, idx in enumerate(batch["id"].tolist()):
        cols = codes[row].ne(0).nonzero().flatten()
        n = len(cols)
        assert n == min(5, len(heads[idx]))
        kept = [c if abs(c) <= n else k + 1 for k, c in enumerate(heads[idx][:n].tolist())]
        start = int(cols[0])
        assert codes[row, cols].tolist() == [c + start * (1 if c > 0 else -1) for c in kept]


def test_packed_rows_read_mmap_files_and_concatenations(tmp_path):
    """Rows gathered from .bin/.idx (one file, or two with upsampling) equal the rows fairseq reads."""
    from fairseq.data import ConcatDataset

    rng = np.random.default_rng(0)
    parts = []
    for k, n in enumerate((7, 4)):
        w = IndexedWriter(str(tmp_path / f"p{k}"), np.int16)
        rows = [rng.integers(-30, 30, size=rng.integers(1, 9)) for _ in range(n)]
        for r in rows:
            w.add(r)
        w.close()
        parts.append(open_indexed(str(tmp_path / f"p{k}")))
    both = ConcatDataset(parts, [1, 2])
    for ds in (parts[0], both):
        packed = PackedRows(ds, "x")
        ids = rng.permutation(len(ds))
        flat, n = packed.gather(ids)
        assert n.tolist() == [len(ds[i]) for i in ids]
        assert flat.tolist() == [v for i in ids for v in ds[i].tolist()]
    assert len(PackedRows(both, "x")) == 7 + 2 * 4
    assert pad_rows(np.array([1, 2, 3]), np.array([2, 1]), 3, 0, left_pad=True).tolist() == [[0, 1, 2], [0, 0, 3]]


def test_truncated_or_padded_bin_is_named_when_it_loads(tmp_path):
    w = IndexedWriter(str(tmp_path / "h"), np.int16)
    for r in ([1, 1, 2], [1]):
        w.add(r)
    w.close()
    binfile = tmp_path / "h.bin"
    data = binfile.read_bytes()
    binfile.write_bytes(data[:-2])
    with pytest.raises(ValueError, match=r"h.bin: 6 bytes, but its .idx describes 8 \(2 items\)"):
        open_indexed(str(tmp_path / "h"))
    binfile.write_bytes(data + b"\0\0")
    with pytest.raises(ValueError, match="h.bin: 10 bytes"):
        open_indexed(str(tmp_path / "h"))


def test_a_file_of_empty_rows_loads_gathers_and_pickles(tmp_path):
    """A signal with no pairs in a split: fairseq writes a 0-byte .bin, which numpy cannot map."""
    import pickle

    w = IndexedWriter(str(tmp_path / "none"), np.int16)
    for _ in range(3):
        w.add(np.zeros(0, dtype=np.int16))
    w.close()
    assert (tmp_path / "none.bin").stat().st_size == 0
    ds = open_indexed(str(tmp_path / "none"))
    for d in (ds, pickle.loads(pickle.dumps(ds))):  # a data-loader worker gets it pickled
        flat, n = PackedRows(d, "none").gather(np.array([2, 0, 0]))
        assert flat.size == 0 and n.tolist() == [0, 0, 0] and len(d[1]) == 0
    w = IndexedWriter(str(tmp_path / "some"), np.int16)
    w.add(np.array([1, 2], dtype=np.int16))
    w.close()
    (tmp_path / "some.bin").write_bytes(b"")  # emptied by accident: still named
    with pytest.raises(ValueError, match=r"some.bin: 0 bytes, but its .idx describes 4 \(1 items\)"):
        open_indexed(str(tmp_path / "some"))


def test_a_writer_whose_index_cannot_be_written_leaves_no_files(tmp_path, monkeypatch):
    """The index is written last; if that fails (a full disk), neither temporary file stays behind."""
    from fairseq_syntax import mmap_index

    def full_disk(path, sizes, dtype):
        open(path, "wb").write(b"\0" * 3)
        raise OSError(28, "No space left on device")

    w = IndexedWriter(str(tmp_path / "h"), np.int16)
    w.add([1, 2])
    monkeypatch.setattr(mmap_index, "write_index", full_disk)
    with pytest.raises(OSError, match="No space left"):
        w.close()
    assert list(tmp_path.iterdir()) == []


def test_last_batch_is_kept():
    indices = np.arange(50)
    batches = [indices[:32], indices[32:48]]  # what fairseq-fixed returns with required_batch_size_multiple=8
    fixed = keep_last_batch(indices, batches)
    assert [len(b) for b in fixed] == [32, 16, 2]
    assert np.array_equal(np.concatenate(fixed), indices)
    ds, _, _ = build()
    got = ds.batch_by_size(np.arange(3), max_sentences=2, required_batch_size_multiple=2)
    assert sorted(np.concatenate(got).tolist()) == [0, 1, 2]


def assert_same_batch(got, want):
    assert set(got) == set(want) and set(got["net_input"]) == set(want["net_input"])
    for k in ("id", "target"):
        assert torch.equal(got[k], want[k]), k
    for k in want["net_input"]:
        assert torch.equal(got["net_input"][k], want["net_input"][k]), k
        assert got["net_input"][k].dtype == want["net_input"][k].dtype
    assert got["ntokens"] == want["ntokens"] and got["nsentences"] == want["nsentences"]


@pytest.mark.parametrize("left_pad", [True, False])
@pytest.mark.parametrize("append_bos", [False, True])
@pytest.mark.parametrize("pad_to_multiple", [1, 8])
def test_vectorized_collation_is_fairseqs(left_pad, append_bos, pad_to_multiple):
    ds, _, _ = build(left_pad, append_bos)
    ds.dataset.pad_to_multiple = pad_to_multiple
    samples = [ds[i] for i in (2, 0, 1)]
    want = ds.dataset.collater(samples)
    got = ds.collater(samples)
    del got["net_input"]["src_heads"]
    assert_same_batch(got, want)
    padded = ds.collater(samples, pad_to_length={"source": 16, "target": 13})
    assert padded["net_input"]["src_tokens"].shape[1] == 16
    assert padded["target"].shape[1] == (13 if pad_to_multiple == 1 else 16)
    del padded["net_input"]["src_heads"]
    assert_same_batch(padded, ds.dataset.collater(samples, pad_to_length={"source": 16, "target": 13}))


def test_a_token_labeled_split_given_to_sentence_classification_names_its_first_sentence():
    """CoNLL-2003's labels (one per word) under --task syntax_sentence_prediction: the error says which sentence and
    which task and evaluator take such data, instead of a wrong target shape later."""
    from fairseq_syntax.data.sentence_codes import ClassLabelDataset

    ok = ClassLabelDataset([[5, 2], [6, 2]], offset=-4)
    assert ok.collater([1, 0]).tolist() == [[2], [1]]
    with pytest.raises(ValueError, match=r"label/test: sentence 2 has 3 labels .*syntax_token_labeling.*ner-eval"):
        ClassLabelDataset([[5, 2], [5, 6, 7, 2], [5, 2]], offset=-4, name="label/test")
