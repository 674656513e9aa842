#!/usr/bin/env python
"""Fine-tuning throughput of roberta_sgnet and roberta_sla (and WLA) as ratios to roberta_baseline, in one run.

All three start from the same lifted weights (work/minilm/model.pt), see the same real batches with the
same threads, and run interleaved (the order rotates every round); each round's ratio is taken against
the baseline's run in the same round, and the median over rounds is reported. Each step is fairseq's own
``Trainer.train_step``, as ``fairseq-train`` runs it (``--fp16``: fairseq's FP16Optimizer and loss scaling).

    .venv/bin/python benchmarks/bench_encoders.py --data work/glue/CoLA/bin [--rounds 9] [--steps 6] [--threads 2]
    .venv/bin/python benchmarks/bench_encoders.py --ranking --data work/race/bin --max-positions 384 --batch-size 2 \
        [--size base] --out results/race/bench_encoders_small.json   # RACE: 4 choices x 384 positions

    .venv/bin/python benchmarks/bench_encoders.py --tagging --data work/conll2003/bin \
        --out results/benchmarks/bench_encoders_conll2003.json   # NER at CoNLL-2003 lengths, with WLA
    python benchmarks/bench_encoders.py --tagging --data work/conll2003/bin --device cuda --fp16 \
        --pretrained none --out bench.json         # on a GPU, in fp16 (random weights: a ratio needs no more)
    .venv/bin/python benchmarks/bench_encoders.py --data work/glue/RTE/bin \
        --out results/benchmarks/bench_encoders_rte.json   # a sentence pair task, with WLA

``--tagging`` measures token labeling (``syntax_token_labeling``, CoNLL-2003), where the SLA paper's WLA
(``roberta_sla --sla-mask window``) joins the three; the goals there are SG-Net >= 0.90, SLA and WLA >= 0.95.
There SG-Net computes its extra layer only at the first subwords the criterion scores (``read_rows``); the
system ``roberta_sgnet_every_row`` is the same model made to compute every position, as before that.
Data with ``input1/`` is a sentence pair task (RTE, MRPC, STS-B), read as BERT reads a pair (``[CLS] a [SEP] b
[SEP]``, the SLA paper's Table 2): WLA joins there too, with the same goals as CoNLL-2003's.
``--ranking`` measures the multiple-choice task (``syntax_sentence_ranking``, fairseq's ``sentence_ranking``
criterion: four choices per question). ``--size base`` (12 layers, d = 768) starts from random weights of the
same seed for all three, which is all a throughput ratio needs.
"""
import argparse
import contextlib
import functools
import json
import os
import platform
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHS = ["roberta_baseline", "roberta_sgnet", "roberta_sla"]
WLA = ["--sla-mask", "window"]  # the SLA paper's window-local attention, |i - j| <= 3


def every_row(model):
    """SG-Net's model made to ignore the criterion's ``read_rows``: its extra layer computes every position.
    (On the instance, so that fairseq's Trainer, which moves and halves the model, keeps it.)"""
    forward = model.forward

    def every_row_forward(*args, read_rows=None, **kwargs):
        return forward(*args, **kwargs)

    model.forward = every_row_forward


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(ROOT / "work/glue/CoLA/bin"))
    p.add_argument("--pretrained", default=str(ROOT / "work/minilm/model.pt"),
                   help="the lifted weights for --size small; 'none': random weights of seed 1")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--steps", type=int, default=6, help="training steps per model per round")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "results/benchmarks/bench_encoders.json"))
    p.add_argument("--ranking", action="store_true", help="multiple choice (RACE) instead of classification")
    p.add_argument("--tagging", action="store_true", help="token labeling (CoNLL-2003 NER), with WLA as well")
    p.add_argument("--max-positions", type=int, default=512)
    p.add_argument("--size", choices=("small", "base"), default="small")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--fp16", action="store_true", help="fairseq's --fp16 (needs --device cuda)")
    p.add_argument("--warmup-steps", type=int, default=1, help="untimed steps per system before the first round")
    p.add_argument("--sdpa-backends", help="the torch SDPBackend names every system's attention may use, "
                   "comma-separated (EFFICIENT_ATTENTION,MATH: not cuDNN, which builds a graph per new shape); "
                   "torch's own choice when not given")
    args = p.parse_args()
    if args.ranking and args.tagging:
        p.error("--ranking and --tagging are two different tasks: give one")
    if args.fp16 and args.device != "cuda":
        p.error("--fp16 trains in half precision on a GPU: give --device cuda as well")
    systems = {f"{a}_{args.size}": (f"{a}_{args.size}", []) for a in ARCHS}
    pairs = not (args.ranking or args.tagging) and os.path.isdir(os.path.join(args.data, "input1"))
    if args.tagging or pairs:
        systems[f"roberta_wla_{args.size}"] = (f"roberta_sla_{args.size}", WLA)
    if args.tagging:
        systems[f"roberta_sgnet_every_row_{args.size}"] = (f"roberta_sgnet_{args.size}", [])
    archs = list(systems)

    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    import fairseq_syntax

    fairseq_syntax.register()
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no GPU here")
    kernels = contextlib.nullcontext
    if args.sdpa_backends:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        names = [b.strip().upper() for b in args.sdpa_backends.split(",")]
        unknown = [b for b in names if not hasattr(SDPBackend, b)]
        if unknown:
            p.error(f"--sdpa-backends: {', '.join(unknown)} not in torch's SDPBackend "
                    f"({', '.join(b for b in dir(SDPBackend) if b.isupper())})")
        kernels = functools.partial(sdpa_kernel, [getattr(SDPBackend, b) for b in names])
    state = (torch.load(args.pretrained, weights_only=True)["model"]
             if args.size == "small" and args.pretrained != "none" else None)
    if args.tagging:
        task_args = ["--task", "syntax_token_labeling", "--criterion", "token_labeling"]
    elif args.ranking:
        task_args = ["--task", "syntax_sentence_ranking", "--num-classes", "4", "--init-token", "0",
                     "--separator-token", "2", "--max-option-length", "128", "--shorten-method", "truncate",
                     "--criterion", "sentence_ranking"]
    else:
        task_args = ["--task", "syntax_sentence_prediction", "--init-token", "0", "--num-classes", "2",
                     "--criterion", "sentence_prediction"]
    # fairseq-train's step: Adam, fp16 with its loss scaler, on the chosen device
    train_args = ["--optimizer", "adam", "--lr", "1e-5", "--batch-size", str(args.batch_size),
                  *(["--cpu"] if args.device == "cpu" else []), *(["--fp16"] if args.fp16 else [])]
    trainers, task = {}, None
    for name, (arch, extra) in systems.items():
        a = options.parse_args_and_arch(options.get_training_parser(), [
            args.data, "--user-dir", fairseq_syntax.USER_DIR, "--arch", arch, *extra, *task_args, *train_args,
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
        if "every_row" in name:
            every_row(m)
        cfg = convert_namespace_to_omegaconf(a)
        trainers[name] = Trainer(cfg, task, m, task.build_criterion(cfg.criterion))
    itr = task.get_batch_iterator(task.dataset("train"), max_sentences=args.batch_size, seed=1,
                                  max_positions=task.max_positions()).next_epoch_itr(shuffle=True)
    batches = [next(itr) for _ in range(args.warmup_steps + args.rounds * args.steps)]
    warmup, batches = batches[:args.warmup_steps], batches[args.warmup_steps:]

    def sync():
        if args.device == "cuda":
            torch.cuda.synchronize()

    for n in archs:  # the first steps build the optimizer and, on a GPU, its kernels: not timed
        for b in warmup:
            with kernels():
                trainers[n].train_step([b])
    skipped = {n: 0 for n in archs}
    speed = {n: [] for n in archs}
    for r in range(args.rounds):
        chunk = batches[r * args.steps:(r + 1) * args.steps]
        order = archs[r % len(archs):] + archs[:r % len(archs)]
        for n in order:
            tokens = 0
            sync()
            t0 = time.perf_counter()
            for b in chunk:
                with kernels():
                    if trainers[n].train_step([b]) is None:  # fp16 overflow: fairseq skips the update
                        skipped[n] += 1
                tokens += int(sum(b[k]["src_lengths"].sum() for k in b if k.startswith("net_input")))
            sync()
            speed[n].append(tokens / (time.perf_counter() - t0))
        print(f"round {r + 1}: " + ", ".join(f"{n} {speed[n][-1]:.0f} tok/s" for n in archs), flush=True)
    base = archs[0]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}",
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "precision": "fp16 (fairseq's FP16Optimizer)" if args.fp16 else "fp32",
        "step": "fairseq.trainer.Trainer.train_step, Adam lr 1e-5",
        "warmup_steps": args.warmup_steps,
        "sdpa_backends": args.sdpa_backends or "torch's choice",
        "updates_skipped_by_fp16_overflow": skipped,
        "data": os.path.relpath(args.data, ROOT) if os.path.isabs(args.data) else args.data,
        "task": ("syntax_token_labeling" if args.tagging else "syntax_sentence_ranking (4 choices)" if args.ranking
                 else "syntax_sentence_prediction, sentence pairs ([CLS] a [SEP] b [SEP])" if pairs
                 else "syntax_sentence_prediction"),
        "systems": {n: " ".join([arch, *extra]) + (" (every row: no read_rows)" if "every_row" in n else "")
                    for n, (arch, extra) in systems.items()},
        "max_positions": args.max_positions, "size": args.size,
        "weights": "lifted MiniLM-L6" if state is not None else "random (seed 1)", "rounds": args.rounds,
        "steps_per_round": args.steps, "batch_size": args.batch_size,
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
