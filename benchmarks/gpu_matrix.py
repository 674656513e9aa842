#!/usr/bin/env python
"""Every syntax family against its vanilla counterpart, in fp16, bf16 and fp32, in one command on one GPU.

Each cell is one family at one size, precision and batch: its systems train interleaved on the same real batches
(the order rotates every round), each step fairseq's ``Trainer.train_step`` as ``fairseq-train`` runs it, and each
system's ratio is the median over rounds of its tokens/s over the vanilla system's in the same round. Before a
family is timed, every syntax system's fast path (modules/attention_kernels.py: what the device gets by default)
is compared on the device with its reference path, in fp32, on one batch: the loss and every gradient; the
command stops if they differ. Weights are random (seed 1): a throughput ratio needs no more.

    python benchmarks/gpu_matrix.py prepare --out work/gpu_matrix    # sliced real corpora, parsed (any machine)
    python benchmarks/gpu_matrix.py run --data-root work/gpu_matrix --device cuda --out results/gpu_matrix
        [--families tagging,classification,ranking,translation,reader] [--precisions fp16,bf16,fp32]
        [--rounds 4] [--steps 6] [--budget-s 300]

``run`` writes ``matrix.json`` and ``matrix.md`` (one row per cell: family, size, precision, batch, kernels, the
GPU, vanilla tokens/s and each system's ratio with its goal), rewritten after every cell, so a run cut by its
budget keeps what it measured. Goals: SG-Net >= 0.90, SLA >= 0.95, WLA >= 0.97 on the encoders;
translation >= 0.95; RACE ranking at or above the CPU's 0.851 (SG-Net) and 0.965 (SLA); the supervised reader
>= 0.95 of the unsupervised one.
"""
from __future__ import annotations

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
if str(ROOT) not in sys.path:  # where the package is not installed (fairseq on PYTHONPATH only): this checkout's
    sys.path.insert(0, str(ROOT))
PRECISIONS = {"fp16": ["--fp16"], "bf16": ["--bf16"], "fp32": []}
WLA = ["--sla-mask", "window"]

# family: data folder under --data-root, task options, cells (size, batch options, label), systems (name, arch,
# options, goal); the first system is the vanilla one every ratio is taken against
ENCODER_SYSTEMS = [("baseline", "roberta_baseline_{size}", [], None), ("sgnet", "roberta_sgnet_{size}", [], 0.90),
                   ("sla", "roberta_sla_{size}", [], 0.95)]
FAMILIES = {
    "tagging": {
        "data": "conll2003/bin",
        "task": ["--task", "syntax_token_labeling", "--criterion", "token_labeling", "--max-positions", "512"],
        "cells": [("small", ["--batch-size", "32"], "32 sentences"),
                  ("small", ["--max-tokens", "16384", "--batch-size", "1024"], "16k tokens")],
        "systems": ENCODER_SYSTEMS + [("wla", "roberta_sla_{size}", WLA, 0.97)],
    },
    "classification": {
        "data": "glue/SST-2/bin",
        "task": ["--task", "syntax_sentence_prediction", "--init-token", "0", "--num-classes", "2",
                 "--criterion", "sentence_prediction", "--max-positions", "512"],
        "cells": [("small", ["--batch-size", "32"], "32 sentences"),
                  ("small", ["--max-tokens", "16384", "--batch-size", "1024"], "16k tokens")],
        "systems": ENCODER_SYSTEMS,
    },
    "ranking": {
        "data": "race/bin",
        "task": ["--task", "syntax_sentence_ranking", "--num-classes", "4", "--init-token", "0",
                 "--separator-token", "2", "--max-option-length", "128", "--shorten-method", "truncate",
                 "--criterion", "sentence_ranking", "--max-positions", "512", "--max-input-length", "384"],
        "cells": [("small", ["--batch-size", "8"], "8 questions (4 x 384)"),
                  ("base", ["--batch-size", "8"], "8 questions (4 x 384)")],
        "systems": [("baseline", "roberta_baseline_{size}", [], None), ("sgnet", "roberta_sgnet_{size}", [], 0.851),
                    ("sla", "roberta_sla_{size}", [], 0.965)],
    },
    "translation": {
        "data": "multi30k/bin",
        "task": ["--task", "syntax_guided_translation", "-s", "en", "-t", "de", "--share-all-embeddings",
                 "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"],
        "cells": [("base", ["--max-tokens", "32768"], "32k tokens")],
        "systems": [("transformer", "transformer", [], None), ("sgnet", "transformer_sgnet", [], 0.95),
                    ("sla", "transformer_sla", [], 0.95)],
    },
    "reader": {
        "data": "lambada/bin",
        "task": ["--task", "lambada_reader", "--criterion", "pointer_sum"],
        "cells": [("paper", ["--batch-size", "32"], "32 passages"), ("paper", ["--batch-size", "128"], "128 passages")],
        "systems": [("sa_early", "bidaf_sa_early", ["--signals", "none"], None),
                    ("sa_early_corefall", "bidaf_sa_early", ["--signals", "CorefAll"], 0.95)],
    },
}


def kernels_text(device: str) -> str:
    if device != "cuda":
        return "CPU paths (SLA's written-out softmax pair, SG-Net's read_rows)"
    return ("fused SDPA, cuDNN kept out of masked calls; SLA two calls mixed by its gate; SG-Net every row, "
            "additive mask built once")


def build_trainers(family, size, batch_opts, precision, data, device):
    """One fairseq Trainer per system, each on its own task (the reader's differ in --signals)."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    import fairseq_syntax

    spec = FAMILIES[family]
    trainers, first_task = {}, None
    for name, arch, extra, goal in spec["systems"]:
        argv = [data, "--user-dir", fairseq_syntax.USER_DIR, "--arch", arch.format(size=size), *extra, *spec["task"],
                *batch_opts, "--optimizer", "adam", "--lr", "1e-5", "--seed", "1", "--num-workers", "0",
                *PRECISIONS[precision], *(["--cpu"] if device == "cpu" else [])]
        a = options.parse_args_and_arch(options.get_training_parser(), argv)
        if family in ("classification", "ranking"):
            a.classification_head_name = "sentence_classification_head"
        task = tasks.setup_task(a)
        task.load_dataset("train")
        torch.manual_seed(1)
        model = task.build_model(a)
        if family == "translation" and name == "transformer":  # fairseq's own model: the heads are not its input
            drop_heads(model)
        cfg = convert_namespace_to_omegaconf(a)
        trainers[name] = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
        first_task = first_task or (task, a)
    task, a = first_task
    max_tokens = getattr(a, "max_tokens", None)
    itr = task.get_batch_iterator(task.dataset("train"), max_tokens=max_tokens, max_sentences=a.batch_size, seed=1,
                                  max_positions=task.max_positions(), ignore_invalid_inputs=True)
    return trainers, itr.next_epoch_itr(shuffle=True)


def drop_heads(model):
    forward = model.forward

    def without_heads(*args, src_heads=None, **kwargs):
        return forward(*args, **kwargs)

    model.forward = without_heads


def same_function(trainer, sample) -> dict:
    """The fast path against the reference path on one batch, in fp32 (no TF32), in eval mode: the loss and
    every gradient of the model. Returns the largest differences."""
    import torch

    from fairseq_syntax.modules.attention_kernels import forced_path

    model, crit = trainer.model, trainer.criterion
    sample = trainer._prepare_sample(sample)[0]  # on the trainer's device, as train_step moves it
    saved = model.training
    model.float().eval()
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    out = []
    try:
        for fused in (False, True):
            model.zero_grad()
            with forced_path(fused):
                loss, _, _ = crit(model, _to_float(sample))
                loss.backward()
            out.append((loss.detach().float(), [p.grad.detach().float().clone() if p.grad is not None else None
                                                for p in model.parameters()]))
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        model.zero_grad()
        model.train(saved)
    (l0, g0), (l1, g1) = out
    loss_rel = float((l0 - l1).abs() / l0.abs().clamp_min(1e-6))
    # against the largest gradient of the model: a gradient that is zero in exact arithmetic (the key bias's,
    # which a softmax cancels) is rounding noise on either path, and relative to itself it is anything
    pairs = [(a, b) for a, b in zip(g0, g1) if a is not None and b is not None]
    scale = max((float(a.abs().max()) for a, _ in pairs), default=1.0) or 1.0
    grad_rel = max((float((a - b).abs().max()) / scale for a, b in pairs), default=0.0)
    return {"loss_rel": loss_rel, "grad_rel_max": grad_rel, "ok": loss_rel < 1e-4 and grad_rel < 1e-3}


def _to_float(sample):
    import torch

    if isinstance(sample, dict):
        return {k: _to_float(v) for k, v in sample.items()}
    if torch.is_tensor(sample) and sample.is_floating_point():
        return sample.float()
    return sample


def tokens_of(sample) -> int:
    """The input tokens of a batch, padding excluded: every choice of a ranking batch, the source of a translation
    batch, the context and query of a reader batch (its ntokens)."""
    inputs = [v for k, v in sample.items() if k.startswith("net_input")]
    if all("src_lengths" in ni for ni in inputs):
        return sum(int(ni["src_lengths"].sum()) for ni in inputs)
    return int(sample["ntokens"])


def time_cell(trainers, batches, warmup, rounds, steps, device):
    import torch

    names = list(trainers)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    for n in names:  # the optimizer's state and, on a GPU, each kernel for these shapes: not timed
        for b in batches[:warmup]:
            trainers[n].train_step([b])
    timed = batches[warmup:]
    speed, skipped = {n: [] for n in names}, {n: 0 for n in names}
    for r in range(rounds):
        chunk = timed[(r * steps) % len(timed):][:steps] or timed[:steps]
        for n in names[r % len(names):] + names[:r % len(names)]:
            sync()
            t0 = time.perf_counter()
            toks = 0
            for b in chunk:
                if trainers[n].train_step([b]) is None:  # a half-precision overflow: fairseq skips the update
                    skipped[n] += 1
                toks += tokens_of(b)
            sync()
            speed[n].append(toks / (time.perf_counter() - t0))
    base = names[0]
    ratios = {n: statistics.median(a / b for a, b in zip(speed[n], speed[base])) for n in names[1:]}
    return speed, ratios, skipped


def run(a) -> int:
    import torch

    import fairseq_syntax

    fairseq_syntax.register()
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_matrix: --device cuda, but torch sees no GPU")
    torch.set_num_threads(a.threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = torch.cuda.get_device_name() if a.device == "cuda" else f"cpu ({platform.machine()}, {a.threads} threads)"
    result = {"device": gpu, "torch": torch.__version__, "kernels": kernels_text(a.device),
              "step": "fairseq.trainer.Trainer.train_step, Adam lr 1e-5, random weights (seed 1)",
              "rounds": a.rounds, "steps_per_round": a.steps, "warmup_steps": a.warmup, "checks": {}, "cells": []}
    start = time.time()
    for family in a.families:
        data = a.data.get(family) or str(Path(a.data_root) / FAMILIES[family]["data"])
        if not Path(data).is_dir():
            print(f"[matrix] {family}: no prepared data at {data}; skipped (benchmarks/gpu_matrix.py prepare)",
                  flush=True)
            result["cells"].append({"family": family, "skipped": f"no data at {FAMILIES[family]['data']}"})
            continue
        checked = False
        for size, batch_opts, batch_label in FAMILIES[family]["cells"][:a.cells]:
            for precision in a.precisions:
                if time.time() - start > a.budget_s:
                    result["cells"].append({"family": family, "size": size, "precision": precision,
                                            "batch": batch_label, "skipped": "the run's --budget-s was spent"})
                    continue
                t0 = time.time()
                trainers, itr = build_trainers(family, size, batch_opts, precision, data, a.device)
                need = a.warmup + a.rounds * a.steps
                batches = [next(itr) for _ in range(min(len(itr), need))]
                batches = (batches * need)[:need]  # a small slice's batches come round again: a ratio allows it
                if not checked:  # the fast path computes the reference function here, or nothing is timed
                    for name, tr in list(trainers.items())[1:]:
                        check = same_function(tr, batches[0])
                        result["checks"][f"{family} {name}"] = check
                        print(f"[matrix] {family} {name}: fused against reference: {check}", flush=True)
                        if not check["ok"]:
                            write(out, result)
                            sys.exit(f"gpu_matrix: {family} {name}: the fast path differs from the reference "
                                     f"path ({check}); nothing timed")
                    checked = True
                    trainers, itr = build_trainers(family, size, batch_opts, precision, data, a.device)
                speed, ratios, skipped = time_cell(trainers, batches, a.warmup, a.rounds, a.steps, a.device)
                systems = FAMILIES[family]["systems"]
                cell = {"family": family, "size": size, "precision": precision, "batch": batch_label,
                        "systems": {n: " ".join([arch.format(size=size), *extra]) for n, arch, extra, _ in systems},
                        "tok_per_s_median": {n: round(statistics.median(v)) for n, v in speed.items()},
                        "ratio": {n: round(r, 3) for n, r in ratios.items()},
                        "goal": {n: g for n, _, _, g in systems if g is not None},
                        "updates_skipped_by_overflow": skipped, "seconds": round(time.time() - t0, 1)}
                result["cells"].append(cell)
                print(f"[matrix] {family} {size} {precision} {batch_label}: " +
                      ", ".join(f"{n} {r:.3f}" for n, r in ratios.items()) + f" ({cell['seconds']} s)", flush=True)
                write(out, result)
                del trainers
                if a.device == "cuda":
                    torch.cuda.empty_cache()
    write(out, result)
    return 0


def write(out: Path, result: dict) -> None:
    (out / "matrix.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "matrix.md").write_text(markdown(result))


def markdown(result: dict) -> str:
    lines = [f"Device: {result['device']}, torch {result['torch']}. Kernels: {result['kernels']}. "
             f"Each ratio: the median over {result['rounds']} rounds of {result['steps_per_round']} steps of the "
             "system's training tokens/s over the vanilla system's in the same round (goal in brackets).", "",
             "| family | size | precision | batch | vanilla tok/s | ratios (goal) |", "|---|---|---|---|---|---|"]
    for c in result["cells"]:
        if "skipped" in c:
            lines.append(f"| {c['family']} | {c.get('size', '–')} | {c.get('precision', '–')} | "
                         f"{c.get('batch', '–')} | skipped: {c['skipped']} | |")
            continue
        base = next(iter(c["tok_per_s_median"]))
        ratios = ", ".join(f"{n} {r:.3f}" + (f" ({c['goal'][n]})" if n in c["goal"] else "") +
                           (" below" if n in c["goal"] and r < c["goal"][n] else "") for n, r in c["ratio"].items())
        lines.append(f"| {c['family']} | {c['size']} | {c['precision']} | {c['batch']} | "
                     f"{c['tok_per_s_median'][base]:,} | {ratios} |")
    if result["checks"]:
        lines += ["", "Fast path against reference path (fp32, one batch, loss and gradients, relative): " +
                  "; ".join(f"{k}: loss {v['loss_rel']:.1e}, gradients {v['grad_rel_max']:.1e}"
                            for k, v in result["checks"].items())]
    return "\n".join(lines) + "\n"


# the slices `prepare` cuts: enough batches for every cell, small enough to carry to a GPU (each real data-prep)
SLICES = [
    ("conll2003", ["data-prep/conll2003.sh", "--conll-dir", "{data}/conll2003", "--max-train", "3000",
                   "--max-eval", "50"]),
    ("glue", ["data-prep/glue.sh", "--task", "SST-2", "--glue-dir", "{data}/glue", "--max-train", "6000",
              "--max-eval", "50"]),
    ("race", ["data-prep/race.sh", "--race", "{data}/race/RACE.tar.gz", "--max-train", "200",
              "--max-eval", "10"]),
    ("multi30k", ["data-prep/multi30k.sh", "--local-dir", "{data}/multi30k", "--max-train", "12000",
                  "--max-eval", "50"]),
    ("lambada", ["data-prep/lambada.sh", "--lambada-dir", "{data}/lambada", "--train-sample", "3000",
                 "--max-eval", "50"]),
]


def prepare(a) -> int:
    """Each family's corpus, sliced, through its own data-prep script (the encoders' with MiniLM's vocabulary)."""
    out = Path(a.out).resolve()
    from fairseq_syntax.local_data import ENV, data_root

    local = data_root()
    if local is None:
        raise SystemExit(f"gpu_matrix.py prepare: no local copies of the corpora; set ${ENV} to their folder")
    minilm = out / "minilm"
    if not (minilm / "model.pt").exists():
        subprocess.run([sys.executable, "-m", "fairseq_syntax.cli.convert_hf", "--out", str(minilm)], check=True)
    for name, cmd in SLICES:
        if a.only and name not in a.only:
            continue
        argv = ["bash", str(ROOT / cmd[0]), *(c.format(data=local) for c in cmd[1:]),
                "--out", str(out / name), "--parser", "spacy", "--workers", str(a.workers)]
        if name in ("conll2003", "glue", "race"):
            argv += ["--pretrained", str(minilm)]
        if name == "glue":  # glue.sh's --out is its task's folder
            argv[argv.index("--out") + 1] = str(out / "glue" / "SST-2")
        print("[matrix] " + " ".join(argv), flush=True)
        subprocess.run(argv, check=True, cwd=ROOT)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="measure the matrix on this machine's device")
    r.add_argument("--data-root", default=str(ROOT / "work/gpu_matrix"), help="the folder `prepare` filled")
    r.add_argument("--data", action="append", default=[], metavar="FAMILY=DIR",
                   help="a family's prepared bin/ elsewhere than under --data-root")
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    r.add_argument("--families", default=",".join(FAMILIES), type=lambda s: s.split(","))
    r.add_argument("--precisions", default=",".join(PRECISIONS), type=lambda s: s.split(","))
    r.add_argument("--rounds", type=int, default=4)
    r.add_argument("--steps", type=int, default=6, help="training steps per system per round")
    r.add_argument("--warmup", type=int, default=3, help="untimed steps per system before the first round")
    r.add_argument("--budget-s", type=float, default=300, help="no new cell starts after this many seconds")
    r.add_argument("--cells", type=int, default=None, help="only each family's first N size-and-batch cells")
    r.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    r.add_argument("--out", required=True, help="folder for matrix.json and matrix.md")
    q = sub.add_parser("prepare", help="slice and prepare each family's corpus here (parsers needed)")
    q.add_argument("--out", default=str(ROOT / "work/gpu_matrix"))
    q.add_argument("--only", type=lambda s: s.split(","), default=None)
    q.add_argument("--workers", type=int, default=2)
    a = p.parse_args(argv)
    if a.cmd == "run":
        if any("=" not in d for d in a.data):
            p.error("--data takes FAMILY=DIR")
        a.data = dict(d.split("=", 1) for d in a.data)
        bad = [f for f in a.families if f not in FAMILIES] + [x for x in a.precisions if x not in PRECISIONS]
        if bad:
            p.error(f"unknown {', '.join(bad)}: families are {', '.join(FAMILIES)}; precisions {', '.join(PRECISIONS)}")
        return run(a)
    return prepare(a)


if __name__ == "__main__":
    raise SystemExit(main())
