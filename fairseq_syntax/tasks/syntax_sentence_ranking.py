"""syntax_sentence_ranking: fairseq's ``sentence_ranking`` (multiple choice, RACE) with subword heads for every choice.

Data (``data-prep/race.sh``): fairseq's RACE layout, ``input0/{split}`` (the context) and ``input1``…``inputN/``
(question with option), each with ``{split}.heads.bin/.idx`` beside it, and ``label/{split}.label``. Each choice is
``<s> context </s> [sep] question option </s>`` (SG-Net's order: the passage first; fairseq's own task puts the
option first). ``--max-option-length`` and ``--shorten-method truncate`` cut the context's tail first (to
``--max-input-length``, default ``--max-positions``), the heads in step (:mod:`fairseq_syntax.data.ranking_inputs`).
Train with ``--criterion sentence_ranking``.
"""
import logging
import os

import numpy as np
from fairseq.data import IdDataset, NestedDictionaryDataset, NumSamplesDataset, RawLabelDataset, SortDataset, data_utils
from fairseq.tasks import register_task
from fairseq.tasks.sentence_ranking import SentenceRankingTask

from ..data.heads_io import HEADS_SUFFIX, load_tokens_and_heads
from ..data.ranking_inputs import RankingChoiceDataset
from ..data.sentence_codes import SizeSumDataset
from ..distributed_check import refuse_lone_torchrun_worker
from ..dictionary_record import RecordsDictionaries

logger = logging.getLogger(__name__)


@register_task("syntax_sentence_ranking")
class SyntaxSentenceRankingTask(RecordsDictionaries, SentenceRankingTask):
    """``sentence_ranking`` plus ``src_heads`` in every ``net_input{k}``; for roberta_baseline, _sgnet and _sla."""

    @staticmethod
    def add_args(parser):
        SentenceRankingTask.add_args(parser)
        parser.add_argument("--max-input-length", type=int, default=None, metavar="N",
                            help="with --shorten-method truncate, cut each choice to N positions (the paper's 384 "
                                 "WordPieces) while the model keeps --max-positions position embeddings (512 for "
                                 "BERT and RoBERTa weights); default: --max-positions")
        parser.add_argument("--heads-suffix", default=HEADS_SUFFIX,
                            help="side files are input{k}/{split}.<suffix>.bin/.idx (randheads: the random-tree "
                                 "control of data-prep/race.sh --random-trees)")

    @classmethod
    def setup_task(cls, args, **kwargs):
        refuse_lone_torchrun_worker()
        if args.criterion != "sentence_ranking":  # (fairseq's own setup asserts it, and builds its own class)
            raise ValueError(f"--task syntax_sentence_ranking trains with --criterion sentence_ranking, not "
                             f"{args.criterion}")
        if not os.path.isdir(args.data):
            raise FileNotFoundError(f"{args.data}: no such data folder (the bin/ of data-prep/race.sh)")
        if not os.path.isfile(os.path.join(args.data, "input0", "dict.txt")):
            raise FileNotFoundError(f"{args.data}: not a RACE data folder (no input0/dict.txt); give the bin/ "
                                    "folder of data-prep/race.sh")
        missing = [k for k in range(1, args.num_classes + 1) if not os.path.isdir(os.path.join(args.data, f"input{k}"))]
        if missing:
            have = sum(os.path.isdir(os.path.join(args.data, f"input{k}")) for k in range(1, 100))
            raise ValueError(f"--num-classes {args.num_classes}: {args.data} has {have} option inputs "
                             f"(input1..input{have}), no input{missing[0]}/; RACE has 4 options a question: "
                             f"give --num-classes {have}")
        dictionary = cls.load_dictionary(args, os.path.join(args.data, "input0", "dict.txt"), source=True)
        logger.info("[input] dictionary: %d types", len(dictionary))
        return cls(args, dictionary)

    def _load_input(self, k, split, combine):
        prefix = os.path.join(self.args.data, f"input{k}", split)
        tokens, heads = load_tokens_and_heads(prefix, self.source_dictionary,
                                              getattr(self.args, "heads_suffix", HEADS_SUFFIX), combine,
                                              prep="data-prep/race.sh")
        if tokens is None:
            raise FileNotFoundError(f"{prefix}.bin: not found (prepare with data-prep/race.sh)")
        return tokens, heads

    def load_dataset(self, split, combine=False, **kwargs):
        if self.args.shorten_method not in ("none", "truncate"):
            raise ValueError(f"--shorten-method {self.args.shorten_method}: only 'truncate' keeps the heads aligned "
                             "with the tokens")
        splits = self.args.shorten_data_split_list  # as fairseq's maybe_shorten_dataset: empty means every split
        shorten = self.args.shorten_method == "truncate" and (not splits or split in splits.split(","))
        limit = getattr(self.args, "max_input_length", None) or self.args.max_positions
        if limit > self.args.max_positions:
            raise ValueError(f"--max-input-length {limit} is longer than --max-positions {self.args.max_positions}")
        context, context_heads = self._load_input(0, split, combine)
        choices = []
        for k in range(1, self.args.num_classes + 1):
            option, option_heads = self._load_input(k, split, combine)
            choices.append(RankingChoiceDataset(
                context, context_heads, option, option_heads, self.source_dictionary.pad(),
                self.source_dictionary.eos(), self.args.init_token, self.args.separator_token,
                limit if shorten else None, self.args.max_option_length,
                names=(os.path.join(self.args.data, "input0", split),
                       os.path.join(self.args.data, f"input{k}", split))))
        dataset = {"id": IdDataset(), "nsentences": NumSamplesDataset(), "ntokens": SizeSumDataset(choices[0].sizes)}
        for k, choice in enumerate(choices, 1):
            dataset[f"net_input{k}"] = choice
        label_path = os.path.join(self.args.data, "label", f"{split}.label")
        if os.path.exists(label_path):
            labels = read_labels(label_path, self.args.num_classes)
            if len(labels) != len(choices[0]):
                raise ValueError(f"{label_path}: {len(labels)} labels for {len(choices[0])} examples")
            dataset["target"] = RawLabelDataset(labels)
        sizes = np.maximum.reduce([c.sizes for c in choices])
        nested = NestedDictionaryDataset(dataset, sizes=[sizes])
        with data_utils.numpy_seed(self.args.seed):
            shuffle = np.random.permutation(len(nested))
        self.datasets[split] = nested if self.args.no_shuffle else SortDataset(nested, sort_order=[shuffle])
        logger.info("Loaded %s with #samples: %d (with heads, %d choices)", split, len(nested), len(choices))
        return self.datasets[split]


def read_labels(path: str, num_classes: int) -> list:
    """The labels (0..num_classes-1, one a line); anything else is an error naming the line."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                value = int(line)
            except ValueError:
                raise ValueError(f"{path}:{n}: {line.strip()!r} is not a label") from None
            if not 0 <= value < num_classes:
                raise ValueError(f"{path}:{n}: label {value} is outside 0..{num_classes - 1}")
            out.append(value)
    return out
