#!/usr/bin/env python
"""Mean SLA gate g = σ(W_g h + b_g) per layer on a data split (Figure 2 of the SLA paper), as a PNG and JSON.

g near 1: the layer reads its syntactic neighbourhood; near 0: global attention.

    .venv/bin/python examples/encoders/plot_sla_gates.py --checkpoint CK1 [--checkpoint CK2 ...] \
        --data work/glue/CoLA/bin [--data DATA2 ...] [--split valid] [--out results/encoders/sla_gates.png]

Several checkpoints (e.g. one per seed or per task) are drawn side by side; their labels are the names of
the checkpoint directories unless given as LABEL=PATH. One --data serves every checkpoint; or give one
per checkpoint, in the same order (checkpoints of different tasks).

``--run-json FILE`` writes one checkpoint's gates and nothing else (no figure): reproduce_sla_table.sh keeps one
such file per finished SLA or WLA run, and summarize_sla_table.py draws the table's figure from them.
"""
import argparse
import json
import logging
from pathlib import Path

import torch

logging.getLogger("matplotlib").setLevel(logging.WARNING)
ROOT = Path(__file__).resolve().parents[2]


def mean_gates(checkpoint, data, split, max_sentences=64, with_count=False):
    """Each layer's gate averaged over every real token of the split (with_count: also how many tokens, and each
    layer's standard deviation over those tokens, which tells a gate that stayed near its start of 0.5 from one
    that opened for some tokens and closed for others)."""
    from fairseq import checkpoint_utils

    import fairseq_syntax

    fairseq_syntax.register()
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([checkpoint], arg_overrides={"data": data})
    model = models[0].eval()
    gates = [m for name, m in model.named_modules() if name.endswith("sla_gate")]
    if not gates:
        raise ValueError(f"{checkpoint}: no SLA gates (not a roberta_sla / transformer_sla model)")
    sums, counts = torch.zeros(len(gates), dtype=torch.float64), torch.zeros(len(gates), dtype=torch.float64)
    squares = torch.zeros(len(gates), dtype=torch.float64)
    current = {}
    hooks = [g.register_forward_hook(lambda mod, inp, out, i=i: current.__setitem__(i, out.detach()))
             for i, g in enumerate(gates)]
    task.load_dataset(split)
    itr = task.get_batch_iterator(task.dataset(split), max_sentences=max_sentences).next_epoch_itr(shuffle=False)
    pad = task.source_dictionary.pad()
    with torch.no_grad():
        for batch in itr:
            ni = batch["net_input"]
            if hasattr(model, "classification_heads"):
                model(**ni, features_only=True)
            else:
                model.encoder(ni["src_tokens"], src_lengths=ni["src_lengths"], src_heads=ni["src_heads"])
            real = ni["src_tokens"].ne(pad).T.unsqueeze(-1)  # [T, B, 1], as the gates
            for i, g in current.items():
                g = g[real].double()
                sums[i] += g.sum()
                squares[i] += g.square().sum()
                counts[i] += real.sum()
    for h in hooks:
        h.remove()
    means = sums / counts
    stds = (squares / counts - means.square()).clamp(min=0).sqrt()
    return (means.tolist(), int(counts[0]), stds.tolist()) if with_count else means.tolist()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", action="append", required=True, help="PATH or LABEL=PATH")
    p.add_argument("--data", action="append", required=True, help="once, or once per --checkpoint")
    p.add_argument("--split", default="valid")
    p.add_argument("--out", default=str(ROOT / "results/encoders/sla_gates.png"))
    p.add_argument("--run-json", metavar="FILE", help="write the one --checkpoint's gates to FILE, without a figure")
    args = p.parse_args()
    from fairseq_syntax.pipeline.atomic import atomic_path

    def gates_of(*a, **kw):  # a checkpoint without gates, a missing split: one line naming it, no traceback
        try:
            return mean_gates(*a, **kw)
        except (ValueError, OSError) as e:
            p.exit(1, f"plot_sla_gates.py: error: {e}\n")

    if args.run_json:
        if len(args.checkpoint) != 1 or len(args.data) != 1:
            p.error("--run-json takes one --checkpoint and one --data")
        gates, tokens, stds = gates_of(args.checkpoint[0].rpartition("=")[2], args.data[0], args.split,
                                       with_count=True)
        with atomic_path(args.run_json) as tmp:
            Path(tmp).write_text(json.dumps({"split": args.split, "tokens": tokens, "mean_gate": gates,
                                             "token_std": stds}, indent=1) + "\n")
        print(" ".join(f"{g:.3f}" for g in gates))
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if len(args.data) not in (1, len(args.checkpoint)):
        p.error(f"give --data once or once per --checkpoint ({len(args.checkpoint)}), not {len(args.data)} times")
    if Path(args.out).suffix.lower() != ".png":
        p.error(f"--out {args.out}: a .png (its numbers go beside it, in the same name with .json)")
    datas = args.data * len(args.checkpoint) if len(args.data) == 1 else args.data
    results = {}
    for spec, data in zip(args.checkpoint, datas):
        label, _, path = spec.rpartition("=") if "=" in spec else (Path(spec).parent.name, "", spec)
        results[label] = gates_of(path, data, args.split)
        print(label, " ".join(f"{g:.3f}" for g in results[label]))
    fig, ax = plt.subplots(figsize=(6, 3.2))
    width = 0.8 / len(results)
    for k, (label, gates) in enumerate(results.items()):
        ax.bar([i + 1 + (k - (len(results) - 1) / 2) * width for i in range(len(gates))], gates, width, label=label)
    ax.set_xlabel("layer")
    ax.set_ylabel("mean gate g (local share)")
    ax.set_ylim(0, 1)
    ax.set_xticks(range(1, len(next(iter(results.values()))) + 1))
    names = sorted({Path(d).parent.name for d in datas})
    ax.set_title(f"SLA gates on {' and '.join(names)} {args.split}")
    if len(results) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(str(out)) as tmp:
        fig.savefig(tmp, dpi=130, format="png")
    with atomic_path(str(out.with_suffix(".json"))) as tmp:
        Path(tmp).write_text(json.dumps({"data": datas, "split": args.split, "mean_gate": results}, indent=1))
    print(f"wrote {out} and {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
