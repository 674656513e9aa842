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
    ConcatSentencesDataset,
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    OffsetTokensDataset,
    PrependTokenDataset,
    RawLabelDataset,
    RightPadDataset,
    SortDataset,
    StripTokenDataset,
    TruncateDataset,
    data_utils,
)
from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask

from ..data.heads_io import HEADS_SUFFIX, check_sizes, load_heads
from ..data.sentence_codes import AssembledCodesDataset

logger = logging.getLogger(__name__)


@dataclass
class SyntaxSentencePredictionConfig(SentencePredictionConfig):
    heads_suffix: str = field(
        default=HEADS_SUFFIX, metadata={"help": "side files are input{0,1}/{split}.<suffix>.bin/.idx"}
    )


@register_task("syntax_sentence_prediction", dataclass=SyntaxSentencePredictionConfig)
class SyntaxSentencePredictionTask(SentencePredictionTask):
    """``sentence_prediction`` plus ``src_heads``; works with roberta_baseline, roberta_sgnet and roberta_sla."""

    def _load_input(self, key, split, combine):
        prefix = os.path.join(self.cfg.data, key, split)
        tokens = data_utils.load_indexed_dataset(prefix, self.source_dictionary, combine=combine)
        if tokens is None:
            return None, None
        heads_prefix = f"{prefix}.{self.cfg.heads_suffix}"
        heads = load_heads(heads_prefix)
        check_sizes(heads.sizes, tokens.sizes, heads_prefix + ".bin", prefix + ".bin")
        return tokens, heads

    def load_dataset(self, split, combine=False, **kwargs):
        if self.cfg.d2v2_multi or self.cfg.add_prev_output_tokens:
            raise ValueError("syntax_sentence_prediction does not support --d2v2-multi or --add-prev-output-tokens")
        input0, heads0 = self._load_input("input0", split, combine)
        if input0 is None:
            raise FileNotFoundError(f"{os.path.join(self.cfg.data, 'input0', split)}.bin: not found")
        input1, heads1 = self._load_input("input1", split, combine)
        lead = 0
        if self.cfg.init_token is not None:
            input0 = PrependTokenDataset(input0, self.cfg.init_token)
            lead = 1
        separator = 0
        if input1 is None:
            src_tokens = input0
        else:
            if self.cfg.separator_token is not None:
                input1 = PrependTokenDataset(input1, self.cfg.separator_token)
                separator = 1
            src_tokens = ConcatSentencesDataset(input0, input1)

        with data_utils.numpy_seed(self.cfg.seed):
            shuffle = np.random.permutation(len(src_tokens))

        max_positions = None
        if self.cfg.shorten_method != "none" and split in self.cfg.shorten_data_split_list.split(","):
            if self.cfg.shorten_method != "truncate":
                raise ValueError(f"--shorten-method {self.cfg.shorten_method}: only 'truncate' keeps the heads "
                                 "aligned with the tokens")
            max_positions = self.max_positions()
            src_tokens = TruncateDataset(src_tokens, max_positions)
        codes = AssembledCodesDataset(heads0, heads1, lead, separator, max_positions,
                                      name=os.path.join(self.cfg.data, "input0", f"{split}.{self.cfg.heads_suffix}"))
        if not np.array_equal(codes.sizes, src_tokens.sizes):
            bad = int(np.nonzero(codes.sizes != src_tokens.sizes)[0][0])
            raise ValueError(f"{split}: heads and tokens disagree in length at sentence {bad + 1}")

        dataset = {
            "id": IdDataset(),
            "net_input": {
                "src_tokens": RightPadDataset(src_tokens, pad_idx=self.source_dictionary.pad()),
                "src_lengths": NumelDataset(src_tokens, reduce=False),
                "src_heads": codes,  # collated (right-padded with 0) in numpy
            },
            "nsentences": NumSamplesDataset(),
            "ntokens": NumelDataset(src_tokens, reduce=True),
        }
        if not self.cfg.regression_target:
            labels = data_utils.load_indexed_dataset(os.path.join(self.cfg.data, "label", split),
                                                     self.label_dictionary, combine=combine)
            if labels is not None:
                dataset["target"] = OffsetTokensDataset(
                    StripTokenDataset(labels, id_to_strip=self.label_dictionary.eos()),
                    offset=-self.label_dictionary.nspecial,
                )
        else:
            path = os.path.join(self.cfg.data, "label", f"{split}.label")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    dataset["target"] = RawLabelDataset([[float(x) for x in line.split()] for line in fh])

        nested = NestedDictionaryDataset(dataset, sizes=[src_tokens.sizes])
        self.datasets[split] = nested if self.cfg.no_shuffle else SortDataset(nested, sort_order=[shuffle])
        logger.info("Loaded %s with #samples: %d (with heads)", split, len(nested))
        return self.datasets[split]
