"""token_labeling: cross-entropy at each word's first subword; logs accuracy and CoNLL span F1."""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..data.token_labels import IGNORE
from ..metrics import span_counts


@dataclass
class TokenLabelingConfig(FairseqDataclass):
    classification_head_name: str = "token_labeling_head"


@register_criterion("token_labeling", dataclass=TokenLabelingConfig)
class TokenLabelingCriterion(FairseqCriterion):
    def __init__(self, cfg, task):
        super().__init__(task)
        self.head = cfg.classification_head_name
        self.names = task.label_names()

    def forward(self, model, sample, reduce=True):
        target = sample["target"]
        keep = target.ne(IGNORE)
        # read_rows: only these positions are scored, so SG-Net's extra layer computes only them (roberta_sgnet)
        logits, _ = model(**sample["net_input"], features_only=True, classification_head_name=self.head,
                          read_rows=keep)
        lprobs = F.log_softmax(logits[keep], dim=-1, dtype=torch.float32)
        gold = target[keep]
        loss = F.nll_loss(lprobs, gold, reduction="sum")
        pred = lprobs.argmax(-1)
        # one transfer for the batch, then split per sentence (spans do not cross sentences)
        bounds = keep.sum(1).cumsum(0).tolist()
        gold_flat = [self.names[i] for i in gold.tolist()]
        pred_flat = [self.names[i] for i in pred.tolist()]
        gold_tags = [gold_flat[a:b] for a, b in zip([0] + bounds[:-1], bounds)]
        pred_tags = [pred_flat[a:b] for a, b in zip([0] + bounds[:-1], bounds)]
        tp, n_pred, n_gold = span_counts(gold_tags, pred_tags)
        n = int(keep.sum())
        log = {"loss": loss.data, "ntokens": sample["ntokens"], "nsentences": target.size(0), "sample_size": n,
               "ncorrect": int(pred.eq(gold).sum()), "span_tp": tp, "span_pred": n_pred,
               "span_gold": n_gold}
        return loss, n, log

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        total = lambda k: sum(log.get(k, 0) for log in logging_outputs)  # noqa: E731
        n = total("sample_size")
        metrics.log_scalar("loss", total("loss") / max(n, 1) / torch.log(torch.tensor(2.0)).item(), n, round=3)
        metrics.log_scalar("accuracy", 100.0 * total("ncorrect") / max(n, 1), n, round=2)
        for k in ("span_tp", "span_pred", "span_gold"):
            metrics.log_scalar_sum(k, total(k))
        metrics.log_derived("f1", lambda m: round(
            200.0 * m["span_tp"].sum / max(m["span_pred"].sum + m["span_gold"].sum, 1), 2))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
