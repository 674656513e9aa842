"""syntax_guided_translation: fairseq's translation task, with source dependency heads in every batch."""

import itertools
import logging
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from fairseq import utils
from fairseq.data import ConcatDataset, indexed_dataset
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ..data.heads_io import HEADS_SUFFIX, check_sizes, load_heads
from ..data.packed import check_index, checked_indexed
from ..data.syntax_dataset import SyntaxLanguagePairDataset
from ..syntax.alignment import align_heads_to_subwords, words_from_subwords
from ..distributed_check import refuse_lone_torchrun_worker
from ..syntax.masks import shift_codes
from ..dictionary_record import RecordsDictionaries

logger = logging.getLogger(__name__)


@dataclass
class SyntaxGuidedTranslationConfig(TranslationConfig):
    heads_suffix: str = field(
        default=HEADS_SUFFIX,
        metadata={"help": "side files are {split}.{src}-{tgt}.{src}.<suffix>.bin/.idx beside the binarized source"},
    )
    parser: ChoiceEnum(["auto", "stanza", "spacy"]) = field(
        default="auto",
        metadata={"help": "parser for raw input (fairseq-interactive, the hub): auto takes the one recorded in the "
                          "data's preprocessing.json (an error if it is not installed); another runs with a warning"},
    )
    subword_style: ChoiceEnum(["bpe", "sentencepiece", "wordpiece"]) = field(
        default="bpe",
        metadata={"help": "how source subwords mark words: subword-nmt '@@', SentencePiece '▁' or WordPiece '##'"},
    )


def source_prefix(data_path: str, split: str, src: str, tgt: str) -> "str | None":
    """The binarized source of a split, in either direction's file naming, as load_langpair_dataset finds it."""
    for a, b in ((src, tgt), (tgt, src)):
        prefix = os.path.join(data_path, f"{split}.{a}-{b}.{src}")
        if indexed_dataset.MMapIndexedDataset.exists(prefix):
            return prefix
    return None


@register_task("syntax_guided_translation", dataclass=SyntaxGuidedTranslationConfig)
class SyntaxGuidedTranslationTask(RecordsDictionaries, TranslationTask):
    """Translation whose batches carry ``net_input['src_heads']``, the source's subword head codes.

    Binarized data needs ``.heads`` side files (``fairseq-syntax-binarize-heads``);
    a batch without heads (fairseq-interactive, the hub interface) is parsed on the fly.
    """

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        refuse_lone_torchrun_worker()
        return super().setup_task(cfg, **kwargs)

    cfg: SyntaxGuidedTranslationConfig

    def __init__(self, cfg, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self._parser = None

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        for path in self.cfg.data.split(os.pathsep):  # a cut text .idx is named, as the heads' is
            for a, b in ((src, tgt), (tgt, src)):
                for lang in (src, tgt):
                    check_index(os.path.join(path, f"{split}.{a}-{b}.{lang}"))
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        checked_indexed(self.datasets[split].src)  # fairseq's loader does not check a .bin against its .idx
        checked_indexed(self.datasets[split].tgt)
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        parts, files = [], []
        for k in itertools.count():
            split_k = split + (str(k) if k > 0 else "")
            prefix = source_prefix(data_path, split_k, src, tgt)
            if prefix is None:
                break
            heads_name = f"{prefix}.{self.cfg.heads_suffix}"
            heads = load_heads(heads_name)
            src_data = indexed_dataset.MMapIndexedDataset(prefix)  # keep it alive: .sizes is a view of its mmap
            check_sizes(heads.sizes, src_data.sizes, heads_name + ".bin", prefix + ".bin")
            del src_data
            parts.append(heads)
            files.append(heads_name + ".bin")
            if not combine:
                break
        if not parts:
            raise FileNotFoundError(f"no binarized source for split {split!r} in {data_path}")
        if len(parts) == 1:
            heads = parts[0]
        else:
            heads = ConcatDataset(parts, [self.cfg.upsample_primary] + [1] * (len(parts) - 1))
        self.datasets[split] = SyntaxLanguagePairDataset(self.datasets[split], heads, files)
        logger.info("%s: %d sentences with source heads (%s)", split, len(heads), self.cfg.heads_suffix)

    @property
    def parser(self):
        if self._parser is None:
            from ..parsing.provenance import parser_for_raw_input

            self._parser = parser_for_raw_input(self.cfg.parser, utils.split_paths(self.cfg.data)[0])
            logger.info("parsing raw source input with %s", self._parser.describe())
        return self._parser

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        dataset = super().build_dataset_for_inference(src_tokens, src_lengths, constraints=constraints)
        dataset.raw_input = True  # see get_batch_iterator
        return dataset

    def get_batch_iterator(self, dataset, max_tokens=None, max_sentences=None, max_positions=None,
                           ignore_invalid_inputs=False, **kwargs):
        """Raw input (fairseq-interactive) longer than the model's source positions is skipped with a message
        naming it, where fairseq would end the whole program."""
        if getattr(dataset, "raw_input", False) and max_positions is not None and not ignore_invalid_inputs:
            limit = max_positions[0] if isinstance(max_positions, (tuple, list)) else max_positions
            if limit is not None:
                for i in np.flatnonzero(np.asarray(dataset.src_sizes) > limit):
                    words = self.src_dict.string(dataset.src[i][:12])
                    logger.warning("skipped an input of %d tokens (after BPE, with </s>), longer than the %d source "
                                   "positions of the model: %s ...", int(dataset.src_sizes[i]), limit, words)
                ignore_invalid_inputs = True
        return super().get_batch_iterator(dataset, max_tokens=max_tokens, max_sentences=max_sentences,
                                          max_positions=max_positions, ignore_invalid_inputs=ignore_invalid_inputs,
                                          **kwargs)

    def parse_batch(self, src_tokens: torch.Tensor) -> torch.Tensor:
        """Subword head codes [B, T] for a collated batch of raw input, parsed on the fly.

        fairseq-interactive (and the hub interface) hand the task token ids only, so
        the words are recovered from the subwords, parsed, and aligned back.
        """
        style = self.cfg.subword_style
        d = self.src_dict
        special = src_tokens.eq(d.pad()) | src_tokens.eq(d.eos()) | src_tokens.eq(d.bos())
        rows, pieces = [], []
        for b in range(src_tokens.size(0)):
            cols = (~special[b]).nonzero().squeeze(1)
            rows.append(cols)
            pieces.append([d[t] for t in src_tokens[b, cols].tolist()])
        parsed = self.parser.parse([words_from_subwords(p, style) for p in pieces])
        codes = torch.zeros_like(src_tokens)
        for b, (cols, p, s) in enumerate(zip(rows, pieces, parsed)):
            if len(p) == 0:
                continue
            if not torch.equal(cols, torch.arange(cols[0], cols[0] + len(cols), device=cols.device)):
                raise ValueError(f"input {b + 1}: special tokens inside the sentence")
            row = torch.tensor(align_heads_to_subwords(s.heads, p, style, where=f"input {b + 1}"))
            codes[b, cols] = shift_codes(row, int(cols[0])).to(codes.device)
        return codes

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        net_input = sample["net_input"]
        if "src_heads" not in net_input:
            net_input["src_heads"] = self.parse_batch(net_input["src_tokens"])
        return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens,
                                      constraints=constraints)
