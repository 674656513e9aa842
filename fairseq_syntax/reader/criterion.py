"""pointer_sum: the answer loss -log Σ_{i: c_i = answer} p_i plus λ times each attention-supervision loss.

Each loss is logged apart (``answer_loss``, ``sup_<Signal>``), with pointer-sum accuracy over all
instances and over those whose answer is in the context.
"""
from dataclasses import dataclass

from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from .losses import (attention_supervision_nll, pointer_log_probs, pointer_sum_nll, pointer_sum_predict,
                     supervision_targets)


@dataclass
class PointerSumConfig(FairseqDataclass):
    pass


@register_criterion("pointer_sum", dataclass=PointerSumConfig)
class PointerSumCriterion(FairseqCriterion):
    def __init__(self, cfg, task):
        super().__init__(task)
        self.signals = task.signals
        self.lam = task.cfg.sup_lambda

    def forward(self, model, sample, reduce=True):
        supervised = bool(self.signals) and model.training
        logits, extra = model(**sample["net_input"])
        mask = extra["context_mask"]
        logp = pointer_log_probs(logits, mask)
        nll, has = pointer_sum_nll(logp, sample["answer_mask"])
        bsz = logits.size(0)
        answer_loss = nll.sum()
        loss = answer_loss
        log = {"ntokens": sample["ntokens"], "nsentences": bsz, "sample_size": bsz, "answer_loss": answer_loss.data,
               "n_answerable": int(has.sum())}
        if supervised:
            attn, n = extra["sup_attn"], logits.size(1)
            # training batches come from the training subset; its signals are gathered on the model's device
            signals = self.task.dataset(self.task.cfg.train_subset).signal_targets(sample["id"], n)
            for sig in self.signals:
                if sig not in signals:
                    raise ValueError(f"--signals {sig}: this training split has no {sig} side data "
                                     f"(.sup.{sig}.bin/.idx); prepare it with data-prep/lambada.sh")
                targets = supervision_targets(signals[sig], bsz, n)
                s, count = attention_supervision_nll(attn, targets)
                if int(count):
                    # the mean over supervised rows, weighted per instance like the answer loss
                    loss = loss + self.lam * bsz * s / count
                log[f"sup_{sig}"] = (s / count.clamp_min(1)).data * bsz
        pred = pointer_sum_predict(logp, mask, sample["ctypes"])
        log["ncorrect"] = int((pred.eq(sample["answer"]) & has).sum())
        log["loss"] = loss.data
        return loss, bsz, log

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        total = lambda k: sum(log.get(k, 0) for log in logging_outputs)  # noqa: E731
        n = total("sample_size")
        metrics.log_scalar("loss", total("loss") / max(n, 1), n, round=3)
        metrics.log_scalar("answer_loss", total("answer_loss") / max(n, 1), n, round=3)
        for k in sorted({k for log in logging_outputs for k in log if k.startswith("sup_")}):
            metrics.log_scalar(k, total(k) / max(n, 1), n, round=3)
        metrics.log_scalar("accuracy", 100.0 * total("ncorrect") / max(n, 1), n, round=2)
        metrics.log_scalar("accuracy_in_context", 100.0 * total("ncorrect") / max(total("n_answerable"), 1), n, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
