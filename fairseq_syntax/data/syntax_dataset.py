"""A language-pair dataset whose source side carries subword head codes into every batch."""
from __future__ import annotations

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset

from ..syntax.batch_codes import check_code_range, collate_codes, pad_rows
from .packed import PackedRows


class SyntaxLanguagePairDataset(BaseWrapperDataset):
    """Wraps fairseq's ``LanguagePairDataset``; adds ``net_input['src_heads']`` ([B, T] codes).

    Filtering, ordering and batching are the wrapped dataset's, by index, so the heads
    follow every sample. Items are the wrapped dataset's own: the collater gathers the
    batch's codes from the mmap in one indexing and shifts them to batch columns in numpy
    (BOS, EOS and padding get code 0); masks are built on the model's device.
    """

    def __init__(self, dataset, heads, heads_name="heads"):
        """``heads_name``: the side file, or one name per part of a ``ConcatDataset`` of them, for errors."""
        super().__init__(dataset)
        names = [heads_name] if isinstance(heads_name, str) else list(heads_name)
        if len(heads) != len(dataset):
            raise ValueError(f"{' + '.join(names)}: {len(heads)} sentences, but the source has {len(dataset)}")
        self.heads = PackedRows(heads, " + ".join(names))
        if len(names) != len(self.heads.parts):
            names = [" + ".join(names)] * len(self.heads.parts)
        self.heads_names = names

    def describe(self, i: int) -> str:
        """``FILE: sentence N`` of item ``i`` (numbered within its own file)."""
        p = int(np.searchsorted(self.heads.bounds, i, side="right"))
        start = int(self.heads.bounds[p - 1]) if p else 0
        return f"{self.heads_names[p]}: sentence {(i - start) % int(self.heads.real[p]) + 1}"

    def __getattr__(self, name):
        # src, tgt, src_dict, left_pad_source, ... of the wrapped LanguagePairDataset
        if name in ("dataset", "heads") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        batches = self.dataset.batch_by_size(indices, max_tokens=max_tokens, max_sentences=max_sentences,
                                             required_batch_size_multiple=required_batch_size_multiple)
        return keep_last_batch(indices, batches)

    def collater(self, samples, pad_to_length=None):
        ds = self.dataset
        plain = (ds.align_dataset is None and ds.constraints is None and ds.src_lang_id is None
                 and ds.tgt_lang_id is None and ds.input_feeding and "prev_output_tokens" not in samples[0]) \
            if samples else False
        batch = collate_pairs(samples, ds.src_dict.pad(), ds.eos, ds.left_pad_source, ds.left_pad_target,
                              pad_to_length, ds.pad_to_multiple) if plain \
            else ds.collater(samples, pad_to_length=pad_to_length)
        if not batch:
            return batch
        net_input = batch["net_input"]
        net_input["src_heads"] = torch.from_numpy(
            self.batch_codes(batch["id"].numpy(), net_input["src_tokens"].numpy(), net_input["src_lengths"].numpy()))
        return batch

    def batch_codes(self, ids: np.ndarray, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """[B, T] codes lined up with collated ``tokens``: a BOS before and an EOS after the stored codes
        get 0, and a source cut by ``--truncate-source`` keeps the first codes, as a valid tree."""
        bsz, width = tokens.shape
        rows = np.arange(bsz)
        first = width - lengths if self.dataset.left_pad_source else np.zeros_like(lengths)
        nonempty = lengths > 0
        lead = nonempty & (tokens[rows, np.minimum(first, width - 1)] == self.dataset.src_dict.bos())
        trail = (lengths > lead) & (tokens[rows, np.clip(first + lengths - 1, 0, width - 1)]
                                    == self.dataset.src_dict.eos())
        body = lengths - lead - trail
        flat, n = self.heads.gather(ids)
        names = lambda k: self.describe(int(ids[k]))  # noqa: E731
        over = np.nonzero(body > n)[0]
        if len(over):
            k = int(over[0])
            raise ValueError(f"{names(k)} has {int(n[k])} head codes for {int(body[k])} source tokens")
        check_code_range(flat, n, names)
        return collate_codes(flat, n, body, first + lead, width)


def _width(lengths: np.ndarray, pad_to_length, multiple: int) -> int:
    size = int(lengths.max())
    if pad_to_length is not None:
        size = max(size, pad_to_length)
    if multiple != 1 and size % multiple != 0:
        size = int(((size - 0.1) // multiple + 1) * multiple)
    return size


def collate_pairs(samples, pad: int, eos: int, left_pad_source: bool, left_pad_target: bool,
                  pad_to_length=None, pad_to_multiple: int = 1) -> dict:
    """fairseq's ``LanguagePairDataset`` collation (input feeding, no alignments or constraints), built with
    one ``torch.cat`` per side and numpy scatters instead of a tensor copy per sentence; the same batch,
    tensor for tensor (tested against fairseq's own)."""
    pad_to_length = pad_to_length or {}
    ids = torch.tensor([s["id"] for s in samples], dtype=torch.long)

    def side(key, left, move_eos=False):
        flat = torch.cat([s[key] for s in samples]).numpy()
        lengths = np.fromiter((len(s[key]) for s in samples), dtype=np.int64, count=len(samples))
        width = _width(lengths, pad_to_length.get(key if key == "source" else "target"), pad_to_multiple)
        if move_eos:  # prev_output_tokens: EOS first, then all but the last token
            flat = flat.copy()
            starts = np.cumsum(lengths) - lengths
            flat[1:] = flat[:-1]
            flat[starts[lengths > 0]] = eos
        tokens = pad_rows(flat, lengths, width, pad, left_pad=left, dtype=flat.dtype)
        nonpad = np.add.reduceat(flat != pad, np.cumsum(lengths) - lengths) if len(flat) else lengths * 0
        return torch.from_numpy(tokens), torch.from_numpy(np.where(lengths > 0, nonpad, 0).astype(np.int64))

    src_tokens, src_lengths = side("source", left_pad_source)
    src_lengths, order = src_lengths.sort(descending=True)
    batch = {"id": ids.index_select(0, order), "nsentences": len(samples),
             "net_input": {"src_tokens": src_tokens.index_select(0, order), "src_lengths": src_lengths}}
    if samples[0].get("target", None) is not None:
        target, tgt_lengths = side("target", left_pad_target)
        batch["target"] = target.index_select(0, order)
        batch["ntokens"] = tgt_lengths.index_select(0, order).sum().item()
        prev, _ = side("target", left_pad_target, move_eos=True)
        batch["net_input"]["prev_output_tokens"] = prev.index_select(0, order)
    else:
        batch["ntokens"] = src_lengths.sum().item()
        batch["target"] = None
    return batch


def keep_last_batch(indices, batches):
    """Put back the final batch that fairseq-fixed 0.12.3.1's ``batch_by_size`` drops.

    With ``--required-batch-size-multiple`` > 1 (8 by default) it discards the last
    batch when its size is not a multiple, so fairseq-generate silently skips the
    longest test sentences and training never sees the longest pairs. The batches
    are consecutive slices of ``indices``, so the dropped ones are the tail.
    """
    kept = sum(len(b) for b in batches)
    if kept < len(indices):
        batches = list(batches) + [np.asarray(indices[kept:])]
    return batches
