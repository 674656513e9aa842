"""syntax_sentence_prediction: fairseq's sentence(-pair) classification, with subword heads in every batch.

Data (``data-prep/glue.sh``): ``input0/{split}.bin/.idx`` (+ ``input1`` for pairs), their heads
``input0/{split}.heads.bin/.idx``, and ``label/{split}.bin/.idx``, as fairseq's GLUE recipe
lays them out. ``net_input['src_heads']`` carries the codes for ``<s> a </s> b </s>``.
"""

import logging
import os
from dataclasses import dataclass, field

import numpy as np
from fairseq.data import (
    IdDataset,
    NestedDictionaryDataset,
    NumSamplesDataset,
    RawLabelDataset,
    SortDataset,
    data_utils,
)
from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask

from ..data.heads_io import HEADS_SUFFIX, load_tokens_and_heads
from ..data.packed import load_text
from ..data.sentence_codes import AssembledCodesDataset, AssembledInputDataset, ClassLabelDataset, SizeSumDataset
from ..distributed_check import refuse_lone_torchrun_worker
from ..dictionary_record import RecordsDictionaries

logger = logging.getLogger(__name__)


@dataclass
class SyntaxSentencePredictionConfig(SentencePredictionConfig):
    heads_suffix: str = field(
        default=HEADS_SUFFIX, metadata={"help": "side files are input{0,1}/{split}.<suffix>.bin/.idx"}
    )


@register_task("syntax_sentence_prediction", dataclass=SyntaxSentencePredictionConfig)
class SyntaxSentencePredictionTask(RecordsDictionaries, SentencePredictionTask):
    """``sentence_prediction`` plus ``src_heads``; works with roberta_baseline, roberta_sgnet and roberta_sla."""

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        refuse_lone_torchrun_worker()
        return super().setup_task(cfg, **kwargs)

    def label_names(self) -> list | None:
        """The classes in the order of the head's outputs; None for a regression target. (fairseq's task appends
        ``<mask>`` to every dictionary it loads, the label dictionary's too.)"""
        if self.cfg.regression_target:
            return None
        labels = self.label_dictionary
        return [x for x in labels.symbols[labels.nspecial:] if x != "<mask>"]

    def _load_input(self, key, split, combine):
        return load_tokens_and_heads(os.path.join(self.cfg.data, key, split), self.source_dictionary,
                                     self.cfg.heads_suffix, combine, prep="data-prep/glue.sh")

    def load_dataset(self, split, combine=False, **kwargs):
        if self.cfg.d2v2_multi or self.cfg.add_prev_output_tokens:
            raise ValueError("syntax_sentence_prediction does not support --d2v2-multi or --add-prev-output-tokens")
        input0, heads0 = self._load_input("input0", split, combine)
        if input0 is None:
            raise FileNotFoundError(f"{os.path.join(self.cfg.data, 'input0', split)}.bin: not found")
        input1, heads1 = self._load_input("input1", split, combine)
        lead = int(self.cfg.init_token is not None)
        separator = int(input1 is not None and self.cfg.separator_token is not None)
        max_positions = None
        splits = self.cfg.shorten_data_split_list  # as fairseq's maybe_shorten_dataset: empty means every split
        if self.cfg.shorten_method != "none" and (split in splits.split(",") or not splits):
            if self.cfg.shorten_method != "truncate":
                raise ValueError(f"--shorten-method {self.cfg.shorten_method}: only 'truncate' keeps the heads "
                                 "aligned with the tokens")
            max_positions = self.max_positions()
        name = os.path.join(self.cfg.data, "input0", split)
        codes = AssembledCodesDataset(heads0, heads1, lead, separator, max_positions,
                                      name=f"{name}.{self.cfg.heads_suffix}")
        # <s> input0 </s> [sep] input1 </s>, truncated and right-padded per batch in numpy: the batches of
        # fairseq's PrependToken/ConcatSentences/Truncate/RightPad datasets, without a tensor per sentence
        net_input = AssembledInputDataset(input0, input1, codes, self.source_dictionary.pad(), self.cfg.init_token,
                                          self.cfg.separator_token if input1 is not None else None, max_positions,
                                          name=name)
        if not np.array_equal(codes.sizes, net_input.sizes):
            bad = int(np.nonzero(codes.sizes != net_input.sizes)[0][0])
            raise ValueError(f"{split}: heads and tokens disagree in length at sentence {bad + 1}")
        with data_utils.numpy_seed(self.cfg.seed):
            shuffle = np.random.permutation(len(net_input))

        dataset = {"id": IdDataset(), "net_input": net_input, "nsentences": NumSamplesDataset(),
                   "ntokens": SizeSumDataset(net_input.sizes)}
        if not self.cfg.regression_target:
            labels = load_text(os.path.join(self.cfg.data, "label", split), self.label_dictionary, combine)
            if labels is not None:
                dataset["target"] = ClassLabelDataset(labels, -self.label_dictionary.nspecial,
                                                      os.path.join(self.cfg.data, "label", split))
        else:
            path = os.path.join(self.cfg.data, "label", f"{split}.label")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    dataset["target"] = RawLabelDataset([[float(x) for x in line.split()] for line in fh])

        nested = NestedDictionaryDataset(dataset, sizes=[net_input.sizes])
        self.datasets[split] = nested if self.cfg.no_shuffle else SortDataset(nested, sort_order=[shuffle])
        logger.info("Loaded %s with #samples: %d (with heads)", split, len(nested))
        return self.datasets[split]
