#!/usr/bin/env python
"""Fine-tuning throughput of roberta_sgnet and roberta_sla (and WLA) as ratios to roberta_baseline, in one run.

All three start from the same lifted weights (work/minilm/model.pt), see the same real batches with the
same threads, and run interleaved (the order rotates every round); each round's ratio is taken against
the baseline's run in the same round, and the median over rounds is reported.

    .venv/bin/python benchmarks/bench_encoders.py --data work/glue/CoLA/bin [--rounds 9] [--steps 6] [--threads 2]
    .venv/bin/python benchmarks/bench_encoders.py --ranking --data work/race/bin --max-positions 384 --batch-size 2 \
        [--size base] --out results/race/bench_encoders_small.json   # RACE: 4 choices x 384 positions

    .venv/bin/python benchmarks/bench_encoders.py --tagging --data work/conll2003/bin \
        --out results/benchmarks/bench_encoders_conll2003.json   # NER at CoNLL-2003 lengths, with WLA

``--tagging`` measures token labeling (``syntax_token_labeling``, CoNLL-2003), where the SLA paper's WLA
(``roberta_sla --sla-mask window``) joins the three; the goals there are SG-Net >= 0.90, SLA and WLA >= 0.95.
There SG-Net computes its extra layer only at the first subwords the criterion scores (``read_rows``); the
system ``roberta_sgnet_every_row`` is the same model made to compute every position, as before that.
``--ranking`` measures the multiple-choice task (``syntax_sentence_ranking``, fairseq's ``sentence_ranking``
criterion: four choices per question). ``--size base`` (12 layers, d = 768) starts from random weights of the
same seed for all three, which is all a throughput ratio needs.
"""
import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHS = ["roberta_baseline", "roberta_sgnet", "roberta_sla"]
WLA = ["--sla-mask", "window"]  # the SLA paper's window-local attention, |i - j| <= 3


class EveryRow:
    """SG-Net's model without the criterion's ``read_rows``: its extra layer computes every position."""

    def __init__(self, model):
        self.model = model

    def __call__(self, *args, read_rows=None, **kwargs):
        return self.model(*args, **kwargs)

    def train(self, mode=True):
        self.model.train(mode)
        return self

    def __getattr__(self, name):
        return getattr(self.model, name)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(ROOT / "work/glue/CoLA/bin"))
    p.add_argument("--pretrained", default=str(ROOT / "work/minilm/model.pt"))
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--steps", type=int, default=6, help="training steps per model per round")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "results/benchmarks/bench_encoders.json"))
    p.add_argument("--ranking", action="store_true", help="multiple choice (RACE) instead of classification")
    p.add_argument("--tagging", action="store_true", help="token labeling (CoNLL-2003 NER), with WLA as well")
    p.add_argument("--max-positions", type=int, default=512)
    p.add_argument("--size", choices=("small", "base"), default="small")
    args = p.parse_args()
    if args.ranking and args.tagging:
        p.error("--ranking and --tagging are two different tasks: give one")
    systems = {f"{a}_{args.size}": (f"{a}_{args.size}", []) for a in ARCHS}
    if args.tagging:
        systems[f"roberta_wla_{args.size}"] = (f"roberta_sla_{args.size}", WLA)
        systems[f"roberta_sgnet_every_row_{args.size}"] = (f"roberta_sgnet_{args.size}", [])
    archs = list(systems)

    import torch
    from fairseq import options, tasks
    from fairseq.criterions.sentence_prediction import SentencePredictionCriterion, SentencePredictionConfig

    import fairseq_syntax

    fairseq_syntax.register()
    torch.set_num_threads(args.threads)
    state = torch.load(args.pretrained)["model"] if args.size == "small" else None
    if args.tagging:
        task_args = ["--task", "syntax_token_labeling", "--criterion", "token_labeling"]
    elif args.ranking:
        task_args = ["--task", "syntax_sentence_ranking", "--num-classes", "4", "--init-token", "0",
                     "--separator-token", "2", "--max-option-length", "128", "--shorten-method", "truncate",
                     "--criterion", "sentence_ranking"]
    else:
        task_args = ["--task", "syntax_sentence_prediction", "--init-token", "0", "--num-classes", "2",
                     "--criterion", "sentence_prediction"]
    models, task = {}, None
    for name, (arch, extra) in systems.items():
        a = options.parse_args_and_arch(options.get_training_parser(), [
            args.data, "--user-dir", fairseq_syntax.USER_DIR, "--arch", arch, *extra, *task_args,
            # ranking: the model keeps 512 positions and the choices are cut to --max-positions (the paper's 384)
            *(["--max-positions", "512", "--max-input-length", str(args.max_positions)] if args.ranking
              else ["--max-positions", str(args.max_positions)])])
        if not args.tagging:
            a.classification_head_name = "sentence_classification_head"
        if task is None:
            task = tasks.setup_task(a)
            task.load_dataset("train")
        torch.manual_seed(1)
        m = task.build_model(a)
        if state is not None:
            sd = dict(state)
            m.upgrade_state_dict_named(sd, "")
            # (a ranking or tagging head is new: the criterion or the task registers it)
            m.load_state_dict(sd, strict=not (args.ranking or args.tagging))
        models[name] = EveryRow(m) if "every_row" in name else m
    if args.tagging:
        from fairseq_syntax.criterions.token_labeling import TokenLabelingConfig, TokenLabelingCriterion

        crit = TokenLabelingCriterion(TokenLabelingConfig(), task)
    elif args.ranking:
        from fairseq.criterions.sentence_ranking import SentenceRankingCriterion

        crit = SentenceRankingCriterion(task, "sentence_classification_head", None, 4)
    else:
        crit = SentencePredictionCriterion(
            SentencePredictionConfig(classification_head_name="sentence_classification_head"), task)
    itr = task.get_batch_iterator(task.dataset("train"), max_sentences=args.batch_size, seed=1,
                                  max_positions=task.max_positions()).next_epoch_itr(shuffle=True)
    batches = [next(itr) for _ in range(args.rounds * args.steps)]
    opts = {n: torch.optim.Adam(m.parameters(), lr=1e-5) for n, m in models.items()}
    speed = {n: [] for n in archs}
    for r in range(args.rounds):
        chunk = batches[r * args.steps:(r + 1) * args.steps]
        order = archs[r % len(archs):] + archs[:r % len(archs)]
        for n in order:
            model = models[n].train()
            tokens, t0 = 0, time.perf_counter()
            for b in chunk:
                loss, _, log = crit(model, b)
                opts[n].zero_grad()
                loss.backward()
                opts[n].step()
                tokens += int(sum(b[k]["src_lengths"].sum() for k in b if k.startswith("net_input")))
            speed[n].append(tokens / (time.perf_counter() - t0))
        print(f"round {r + 1}: " + ", ".join(f"{n} {speed[n][-1]:.0f} tok/s" for n in archs), flush=True)
    base = archs[0]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}",
        "data": os.path.relpath(args.data, ROOT) if os.path.isabs(args.data) else args.data,
        "task": ("syntax_token_labeling" if args.tagging else "syntax_sentence_ranking (4 choices)" if args.ranking
                 else "syntax_sentence_prediction"),
        "systems": {n: " ".join([arch, *extra]) + (" (every row: no read_rows)" if "every_row" in n else "")
                    for n, (arch, extra) in systems.items()},
        "max_positions": args.max_positions, "size": args.size,
        "weights": "lifted MiniLM-L6" if state is not None else "random (seed 1)", "rounds": args.rounds, "steps_per_round": args.steps, "batch_size": args.batch_size,
        "train_tok_per_s": {n: {"median": statistics.median(v), "runs": v} for n, v in speed.items()},
        "ratio_to_baseline_paired_median": {n: statistics.median(a / b for a, b in zip(speed[n], speed[base]))
                                            for n in archs[1:]},
        "tokens": "every input token of the batch (all choices), padding excluded",
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    for n in archs:
        extra = f", ratio {result['ratio_to_baseline_paired_median'][n]:.3f}" if n != base else ""
        print(f"{n}: {result['train_tok_per_s'][n]['median']:.0f} tok/s{extra}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
