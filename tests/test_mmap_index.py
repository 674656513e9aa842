"""fairseq's mmap indexed format written without fairseq (fairseq_syntax/mmap_index.py): the same bytes as fairseq's
own builder, read back by fairseq, and a damaged index named."""
import numpy as np
import pytest
import torch
from fairseq.data import indexed_dataset

from fairseq_syntax import mmap_index
from fairseq_syntax.data.heads_io import IndexedWriter


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.uint16, np.uint8])
def test_the_bytes_are_fairseqs_own(tmp_path, dtype):
    items = [[3, 1, 4], [], [1, 5, 9, 2, 6], [5]]
    theirs = tmp_path / "theirs"
    b = indexed_dataset.MMapIndexedDatasetBuilder(str(theirs) + ".bin", dtype=dtype)
    for item in items:
        b.add_item(torch.tensor(item, dtype=torch.long))
    b.finalize(str(theirs) + ".idx")
    ours = tmp_path / "ours"
    with IndexedWriter(str(ours), dtype) as w:
        for item in items:
            w.add(item)
    for ext in (".bin", ".idx"):
        assert (tmp_path / f"ours{ext}").read_bytes() == (tmp_path / f"theirs{ext}").read_bytes(), ext
    assert mmap_index.read_sizes(str(ours)).tolist() == [3, 0, 5, 1]
    read = indexed_dataset.MMapIndexedDataset(str(ours))
    assert [read[i].tolist() for i in range(len(items))] == items


def test_a_damaged_index_is_named(tmp_path):
    prefix = tmp_path / "x"
    with IndexedWriter(str(prefix), np.int16) as w:
        w.add([1, 2])
        w.add([3])
    idx = (tmp_path / "x.idx").read_bytes()
    (tmp_path / "x.idx").write_bytes(idx[:28])
    with pytest.raises(ValueError, match=r"x.idx: cut short \(0 of 2 sizes\)"):
        mmap_index.read_sizes(str(prefix))
    (tmp_path / "x.idx").write_bytes(b"TNTIDX\x00\x00" + idx[8:])
    with pytest.raises(ValueError, match=r"x.idx: not a fairseq mmap index"):
        mmap_index.read_sizes(str(prefix))


def test_an_item_outside_its_dtype_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match=r"item 1 holds 40000, outside int16"):
        with IndexedWriter(str(tmp_path / "y"), np.int16) as w:
            w.add([1])
            w.add([40000])
    assert list(tmp_path.iterdir()) == []
