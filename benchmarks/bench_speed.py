#!/usr/bin/env python
"""transformer_sgnet against fairseq's transformer: training and generation speed, mask cost, memory.

Both models have identical sizes (transformer_sgnet_small / transformer_small_vanilla), start from the
same weights, and see the same batches of real Multi30k data with the same threads. Runs are
interleaved (A B, B A, ...) and medians are reported with their ratio. Peak memory is the peak
resident set (VmHWM, reset just before training) of a separate process per model (data and that model
only) doing the same training steps.
Generation decodes as many steps as the source is long (match_source_len), so both models do the same
work whatever they output.

    .venv/bin/python benchmarks/bench_speed.py --data work/multi30k/bin [--rounds 5] [--steps 8]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(args, only=None):
    import torch
    from fairseq import options
    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
    from fairseq.models.transformer import TransformerModel

    import fairseq_syntax

    fairseq_syntax.register()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    def parse(arch, task):
        return options.parse_args_and_arch(options.get_training_parser(), [
            args.data, "--user-dir", fairseq_syntax.USER_DIR, "--task", task, "--arch", arch,
            "--share-all-embeddings", "--max-tokens", str(args.max_tokens), "-s", "en", "-t", "de"])

    from fairseq import tasks

    sg_args = parse("transformer_sgnet_small", "syntax_guided_translation")
    task = tasks.setup_task(sg_args)
    task.load_dataset("train")
    task.load_dataset("valid")
    models = {}
    if only in (None, "transformer"):
        models["transformer"] = TransformerModel.build_model(parse("transformer_small_vanilla", "translation"), task)
    if only in (None, "transformer_sgnet"):
        models["transformer_sgnet"] = task.build_model(sg_args)
    if only is None:  # same weights; the SDOI layer keeps its fresh init
        models["transformer_sgnet"].load_state_dict(models["transformer"].state_dict())
    crit = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    itr = task.get_batch_iterator(task.dataset("train"), max_tokens=args.max_tokens, seed=1,
                                  max_positions=(1024, 1024)).next_epoch_itr(shuffle=True)
    batches = [next(itr) for _ in range(args.rounds * args.steps)]
    return task, models, crit, batches


def net_input(name, batch):
    ni = dict(batch["net_input"])
    if name == "transformer":
        ni.pop("src_heads")
    return ni


def train_steps(name, model, opt, crit, batches):
    model.train()
    tokens = 0
    t0 = time.perf_counter()
    for b in batches:
        sample = dict(b, net_input=net_input(name, b))
        loss, _, log = crit(model, sample)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tokens += log["ntokens"]
    return tokens / (time.perf_counter() - t0)


def memory_probe(args):
    import torch

    task, models, crit, batches = build(args, only=args.memory_probe)
    model = models[args.memory_probe]
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    import gc

    gc.collect()
    with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current resident set
        fh.write("5")
    train_steps(args.memory_probe, model, opt, crit, batches[: args.steps])
    with open("/proc/self/status") as fh:
        hwm = next(line for line in fh if line.startswith("VmHWM:"))
    print(int(hwm.split()[1]))  # KiB: the peak resident set while training


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(ROOT / "work/multi30k/bin"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=8, help="training steps per model per round")
    p.add_argument("--gen-sentences", type=int, default=96)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--out", default=str(ROOT / "results/benchmarks/bench_speed.json"))
    p.add_argument("--memory-probe", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.memory_probe:
        return memory_probe(args)

    import torch
    from fairseq.sequence_generator import SequenceGenerator

    from fairseq_syntax.syntax import sdoi_mask

    task, models, crit, batches = build(args)
    opts = {n: torch.optim.Adam(m.parameters(), lr=1e-4) for n, m in models.items()}
    names = list(models)
    train = {n: [] for n in names}
    for r in range(args.rounds):
        chunk = batches[r * args.steps:(r + 1) * args.steps]
        for n in (names if r % 2 == 0 else names[::-1]):
            train[n].append(train_steps(n, models[n], opts[n], crit, chunk))
        print(f"round {r + 1}: " + ", ".join(f"{n} {train[n][-1]:.0f} tok/s" for n in names), flush=True)

    # mask building, timed alone on the same batches, against the SG-Net step time per batch
    codes = [b["net_input"]["src_heads"] for b in batches]
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        for c in codes:
            sdoi_mask(c)
    mask_s = (time.perf_counter() - t0) / (reps * len(codes))
    tok_per_batch = statistics.mean(b["ntokens"] for b in batches)
    step_s = tok_per_batch / statistics.median(train["transformer_sgnet"])
    mask_share = mask_s / step_s

    # generation, beam 5, on the first valid sentences
    vitr = task.get_batch_iterator(task.dataset("valid"), max_sentences=args.gen_sentences // 2,
                                   max_positions=(1024, 1024)).next_epoch_itr(shuffle=False)
    vbatches = [next(vitr) for _ in range(2)]
    # match_source_len: both models decode the same number of steps, whatever their (untrained) outputs
    gens = {n: SequenceGenerator([m.eval()], task.target_dictionary, beam_size=5, match_source_len=True)
            for n, m in models.items()}
    gen = {n: [] for n in names}
    for r in range(args.rounds):
        for n in (names if r % 2 == 0 else names[::-1]):
            sents = 0
            t0 = time.perf_counter()
            with torch.no_grad():
                for b in vbatches:
                    gens[n].generate([models[n]], dict(b, net_input=net_input(n, b)))
                    sents += b["nsentences"]
            gen[n].append(sents / (time.perf_counter() - t0))

    mem = {}
    for n in names:
        out = subprocess.run([sys.executable, __file__, "--data", args.data, "--steps", str(args.steps),
                              "--rounds", "1", "--threads", str(args.threads), "--max-tokens",
                              str(args.max_tokens), "--memory-probe", n], capture_output=True, text=True,
                             check=True)
        mem[n] = int(out.stdout.strip().splitlines()[-1]) / 1024

    med = {k: {n: statistics.median(v[n]) for n in names} for k, v in (("train", train), ("gen", gen))}
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}",
        "data": args.data, "rounds": args.rounds, "steps_per_round": args.steps, "max_tokens": args.max_tokens,
        "train_target_tok_per_s": {n: {"median": med["train"][n], "runs": train[n]} for n in names},
        "train_ratio": med["train"]["transformer_sgnet"] / med["train"]["transformer"],
        # each round runs both models back to back on the same batches: the per-round ratio cancels drift
        "train_ratio_paired_median": statistics.median(
            a / b for a, b in zip(train["transformer_sgnet"], train["transformer"])),
        "gen_sent_per_s_beam5": {n: {"median": med["gen"][n], "runs": gen[n]} for n in names},
        "gen_ratio": med["gen"]["transformer_sgnet"] / med["gen"]["transformer"],
        "gen_ratio_paired_median": statistics.median(a / b
                                                     for a, b in zip(gen["transformer_sgnet"], gen["transformer"])),
        "mask_ms_per_batch": 1000 * mask_s, "sgnet_step_ms": 1000 * step_s, "mask_share_of_step": mask_share,
        "peak_rss_mb": mem, "memory_ratio": mem["transformer_sgnet"] / mem["transformer"],
    }
    print("\n| measure | transformer | transformer_sgnet | ratio |\n|---|---|---|---|")
    print(f"| training, target tok/s (median of {args.rounds}) | {med['train']['transformer']:.0f} | "
          f"{med['train']['transformer_sgnet']:.0f} | {result['train_ratio']:.3f} "
          f"(paired {result['train_ratio_paired_median']:.3f}) |")
    print(f"| generation, sent/s, beam 5 (median of {args.rounds}) | {med['gen']['transformer']:.1f} | "
          f"{med['gen']['transformer_sgnet']:.1f} | {result['gen_ratio']:.3f} "
          f"(paired {result['gen_ratio_paired_median']:.3f}) |")
    print(f"| peak resident memory, MB | {mem['transformer']:.0f} | {mem['transformer_sgnet']:.0f} | "
          f"{result['memory_ratio']:.3f} |")
    print(f"| mask building, ms per batch / share of a step | – | {1000 * mask_s:.2f} / "
          f"{100 * mask_share:.2f}% | – |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
