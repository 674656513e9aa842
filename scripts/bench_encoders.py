#!/usr/bin/env python
"""Fine-tuning throughput of roberta_sgnet and roberta_sla as ratios to roberta_baseline, in one run.

All three start from the same lifted weights (work/minilm/model.pt), see the same real batches with the
same threads, and run interleaved (the order rotates every round); each round's ratio is taken against
the baseline's run in the same round, and the median over rounds is reported.

    .venv/bin/python scripts/bench_encoders.py --data work/glue/CoLA/bin [--rounds 9] [--steps 6] [--threads 2]
"""
import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHS = ["roberta_baseline_small", "roberta_sgnet_small", "roberta_sla_small"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(ROOT / "work/glue/CoLA/bin"))
    p.add_argument("--pretrained", default=str(ROOT / "work/minilm/model.pt"))
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--steps", type=int, default=6, help="training steps per model per round")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "results/bench_encoders.json"))
    args = p.parse_args()

    import torch
    from fairseq import options, tasks
    from fairseq.criterions.sentence_prediction import SentencePredictionCriterion, SentencePredictionConfig

    import fairseq_syntax

    fairseq_syntax.register()
    torch.set_num_threads(args.threads)
    state = torch.load(args.pretrained)["model"]
    models, task = {}, None
    for arch in ARCHS:
        a = options.parse_args_and_arch(options.get_training_parser(), [
            args.data, "--user-dir", fairseq_syntax.USER_DIR, "--task", "syntax_sentence_prediction", "--arch", arch,
            "--init-token", "0", "--num-classes", "2", "--max-positions", "512", "--criterion", "sentence_prediction"])
        a.classification_head_name = "sentence_classification_head"
        if task is None:
            task = tasks.setup_task(a)
            task.load_dataset("train")
        torch.manual_seed(1)
        m = task.build_model(a)
        sd = dict(state)
        m.upgrade_state_dict_named(sd, "")
        m.load_state_dict(sd, strict=True)
        models[arch] = m
    crit = SentencePredictionCriterion(SentencePredictionConfig(classification_head_name="sentence_classification_head"),
                                       task)
    itr = task.get_batch_iterator(task.dataset("train"), max_sentences=args.batch_size, seed=1,
                                  max_positions=512).next_epoch_itr(shuffle=True)
    batches = [next(itr) for _ in range(args.rounds * args.steps)]
    opts = {n: torch.optim.Adam(m.parameters(), lr=1e-5) for n, m in models.items()}
    speed = {n: [] for n in ARCHS}
    for r in range(args.rounds):
        chunk = batches[r * args.steps:(r + 1) * args.steps]
        order = ARCHS[r % 3:] + ARCHS[:r % 3]
        for n in order:
            model = models[n].train()
            tokens, t0 = 0, time.perf_counter()
            for b in chunk:
                loss, _, log = crit(model, b)
                opts[n].zero_grad()
                loss.backward()
                opts[n].step()
                tokens += log["ntokens"]
            speed[n].append(tokens / (time.perf_counter() - t0))
        print(f"round {r + 1}: " + ", ".join(f"{n} {speed[n][-1]:.0f} tok/s" for n in ARCHS), flush=True)
    base = ARCHS[0]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}",
        "data": args.data, "rounds": args.rounds, "steps_per_round": args.steps, "batch_size": args.batch_size,
        "train_tok_per_s": {n: {"median": statistics.median(v), "runs": v} for n, v in speed.items()},
        "ratio_to_baseline_paired_median": {n: statistics.median(a / b for a, b in zip(speed[n], speed[base]))
                                            for n in ARCHS[1:]},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    for n in ARCHS:
        extra = f", ratio {result['ratio_to_baseline_paired_median'][n]:.3f}" if n != base else ""
        print(f"{n}: {result['train_tok_per_s'][n]['median']:.0f} tok/s{extra}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
