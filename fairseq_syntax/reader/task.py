"""lambada_reader: LAMBADA as reading comprehension, with attention-supervision side data.

Data (``data-prep/lambada.sh``): ``dict.txt`` and, per split, the indexed datasets of
:mod:`fairseq_syntax.reader.dataset`. ``--signals`` loads the supervision pairs the criterion uses;
evaluation needs none. Validation and ``fairseq-syntax-lambada-eval`` use the averaged weights.
"""
import logging
import os
from dataclasses import dataclass, field

from fairseq.data import Dictionary
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II

from .dataset import ReaderDataset, prefix
from .supervision import SIGNALS
from ..distributed_check import refuse_lone_torchrun_worker
from ..dictionary_record import RecordsDictionaries

logger = logging.getLogger(__name__)


def parse_signals(value: str) -> tuple:
    names = tuple(s for s in value.replace(",", " ").split() if s and s.lower() != "none")
    unknown = [s for s in names if s not in SIGNALS]
    if unknown:
        raise ValueError(f"--signals: unknown {unknown}; expected some of {', '.join(SIGNALS)} (or none)")
    return names


@dataclass
class LambadaReaderConfig(FairseqDataclass):
    data: str = field(default="", metadata={"help": "directory written by data-prep/lambada.sh (bin/)"})
    signals: str = field(default="none", metadata={
        "help": "supervision signals, e.g. CorefAll or 'CorefAll Narrative' (DepParse CorefAll CorefPrev CorefNext "
                "Narrative)"})
    sup_lambda: float = field(default=0.3, metadata={"help": "weight λ of each attention-supervision loss"})
    max_context: int = field(default=400, metadata={"help": "keep the last N context tokens"})
    seed: int = II("common.seed")
    train_subset: str = II("dataset.train_subset")
    # read by FairseqTask.get_batch_iterator, which defaults to True. ReaderDataset cannot reuse its iterator
    # (can_reuse_epoch_itr_across_epochs, for exact resumes), so each validation and epoch builds a new loader,
    # whose worker would then outlive it: a copy of the trainer's memory each (2.4 GB here), until out of memory
    persistent_workers: bool = field(default=False, metadata={
        "help": "keep data-loader workers alive after their pass (fairseq's default; they accumulate, one for "
                "every validation and epoch of the process)"})


@register_task("lambada_reader", dataclass=LambadaReaderConfig)
class LambadaReaderTask(RecordsDictionaries, FairseqTask):
    def __init__(self, cfg, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.signals = parse_signals(cfg.signals)

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        refuse_lone_torchrun_worker()
        path = os.path.join(cfg.data, "dict.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: missing; prepare the data with data-prep/lambada.sh")
        d = Dictionary.load(path)
        logger.info("dictionary: %d types", len(d))
        return cls(cfg, d)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary

    def load_dataset(self, split, combine=False, epoch=1, **kwargs):
        # only the training subset carries supervision (the criterion uses it in training alone) and is
        # shuffled; a signal whose side files it lacks is named by the criterion
        train = split == self.cfg.train_subset
        have = tuple(s for s in self.signals
                     if train and os.path.exists(prefix(self.cfg.data, split, f"sup.{s}") + ".idx"))
        self.datasets[split] = ReaderDataset(self.cfg.data, split, self.dictionary, have, self.cfg.max_context,
                                             self.cfg.seed, shuffle=train)
        logger.info("%s: %d instances, supervision %s", split, len(self.datasets[split]), ",".join(have) or "none")
        return self.datasets[split]

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if self.signals and not getattr(model, "supervisable", False):
            raise ValueError(f"--signals {' '.join(self.signals)} needs a self-attention layer to supervise: use "
                             "--arch bidaf_sa_early, bidaf_sa_late or bidaf_sa_both")
        model.restrict_to_sentence = "DepParse" in self.signals
        model.attention_supervised = bool(self.signals)  # else no head's weights are read (a GPU skips them)
        return model

    def optimizer_step(self, optimizer, model, update_num):
        super().optimizer_step(optimizer, model, update_num)
        model.update_ema()

    def valid_step(self, sample, model, criterion):
        with model.averaged_weights():
            return super().valid_step(sample, model, criterion)

    def max_positions(self):
        return None
