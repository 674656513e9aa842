"""syntax_token_labeling: one label per word (NER, CoNLL-2003) on a BERT-style encoder, with subword heads.

Data (``data-prep/conll2003.sh``): ``input0/{split}.bin/.idx`` (WordPieces), ``input0/{split}.heads.bin/.idx``
and ``label/{split}.bin/.idx`` (one tag per word). The tag of a word is predicted at its first subword.
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq.data import (
    Dictionary,
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    PrependTokenDataset,
    RightPadDataset,
    SortDataset,
    data_utils,
)
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II

from ..data.heads_io import HEADS_SUFFIX, load_tokens_and_heads
from ..data.packed import load_text
from ..data.sentence_codes import AssembledCodesDataset
from ..data.token_labels import WordStartLabelsDataset
from ..distributed_check import refuse_lone_torchrun_worker
from ..dictionary_record import RecordsDictionaries

logger = logging.getLogger(__name__)


@dataclass
class SyntaxTokenLabelingConfig(FairseqDataclass):
    data: str = field(default="", metadata={"help": "directory with input0/ and label/"})
    heads_suffix: str = field(default=HEADS_SUFFIX, metadata={"help": "input0/{split}.<suffix>.bin/.idx"})
    init_token: Optional[int] = field(default=0, metadata={"help": "token prepended to every sentence (<s>)"})
    max_positions: int = field(default=512, metadata={"help": "longest input in subwords"})
    classification_head_name: str = field(default="token_labeling_head")
    no_shuffle: bool = False
    seed: int = II("common.seed")


@register_task("syntax_token_labeling", dataclass=SyntaxTokenLabelingConfig)
class SyntaxTokenLabelingTask(RecordsDictionaries, FairseqTask):
    def __init__(self, cfg, dictionary, label_dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.label_dictionary = label_dictionary

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        refuse_lone_torchrun_worker()
        dictionary = Dictionary.load(os.path.join(cfg.data, "input0", "dict.txt"))
        dictionary.add_symbol("<mask>")
        labels = Dictionary.load(os.path.join(cfg.data, "label", "dict.txt"))
        logger.info("[input] dictionary: %d types; [label] %d tags", len(dictionary), len(labels) - labels.nspecial)
        return cls(cfg, dictionary, labels)

    @property
    def num_labels(self) -> int:
        return len(self.label_dictionary) - self.label_dictionary.nspecial

    def label_names(self) -> list:
        return self.label_dictionary.symbols[self.label_dictionary.nspecial:]

    def load_dataset(self, split, combine=False, **kwargs):
        prefix = os.path.join(self.cfg.data, "input0", split)
        tokens, heads = load_tokens_and_heads(prefix, self.dictionary, self.cfg.heads_suffix, combine,
                                              prep="data-prep/conll2003.sh")
        if tokens is None:
            raise FileNotFoundError(f"{prefix}.bin: not found")
        heads_prefix = f"{prefix}.{self.cfg.heads_suffix}"
        label_prefix = os.path.join(self.cfg.data, "label", split)
        labels = load_text(label_prefix, self.label_dictionary, combine)
        if labels is None:
            raise FileNotFoundError(f"{label_prefix}.bin: not found")
        lead = 0
        if self.cfg.init_token is not None:
            tokens = PrependTokenDataset(tokens, self.cfg.init_token)
            lead = 1
        too_long = np.nonzero(tokens.sizes > self.cfg.max_positions)[0]
        if len(too_long):
            raise ValueError(f"{prefix}: sentence {too_long[0] + 1} has {tokens.sizes[too_long[0]]} subwords, more "
                             f"than --max-positions {self.cfg.max_positions} (labels cannot be truncated)")
        codes = AssembledCodesDataset(heads, None, lead, name=heads_prefix)
        targets = WordStartLabelsDataset(codes, labels, self.label_dictionary.eos(), self.label_dictionary.nspecial,
                                         name=label_prefix)
        dataset = {
            "id": IdDataset(),
            "net_input": {
                "src_tokens": RightPadDataset(tokens, pad_idx=self.dictionary.pad()),
                "src_lengths": NumelDataset(tokens, reduce=False),
                "src_heads": codes,  # collated (right-padded with 0) in numpy
            },
            "target": targets,  # IGNORE off the first subwords and at padding
            "nsentences": NumSamplesDataset(),
            "ntokens": NumelDataset(tokens, reduce=True),
        }
        nested = NestedDictionaryDataset(dataset, sizes=[tokens.sizes])
        if self.cfg.no_shuffle:
            self.datasets[split] = nested
        else:
            with data_utils.numpy_seed(self.cfg.seed):
                shuffle = np.random.permutation(len(nested))
            self.datasets[split] = SortDataset(nested, sort_order=[shuffle])
        logger.info("Loaded %s with #samples: %d (with heads)", split, len(nested))
        return self.datasets[split]

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if not hasattr(model, "register_token_head"):
            raise ValueError("syntax_token_labeling needs roberta_baseline, roberta_sgnet or roberta_sla")
        model.register_token_head(self.cfg.classification_head_name, self.num_labels)
        return model

    def max_positions(self):
        return self.cfg.max_positions

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
