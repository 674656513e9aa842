#!/usr/bin/env python
"""The paper's Figure 5 (BLEU by source length, two systems) and Figure 6 (an SDOI mask next to the
syntax-guided attention weights of one test sentence), as PNG files.

    .venv/bin/python examples/multi30k/plot_figures.py --data work/multi30k/bin \
        --checkpoint work/checkpoints/multi30k_sgnet_seed1/checkpoint_best.pt --sentence 3 \
        [--src work/multi30k/tok/test.en --ref work/multi30k/raw/test.de \
         --hyp baseline=results/multi30k/hyp_transformer_seed1.de --hyp SG-Net=results/multi30k/hyp_sgnet_seed1.de] \
        [--out results/multi30k/figures]
"""
import argparse
import json
import logging
from pathlib import Path

logging.getLogger("matplotlib").setLevel(logging.WARNING)

ROOT = Path(__file__).resolve().parents[2]
BUCKETS = [(1, 9), (10, 14), (15, 19), (20, 24), (25, 1000)]


def bleu_by_length(src, ref, hyps, out_png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import sacrebleu

    src_lines = Path(src).read_text(encoding="utf-8").splitlines()
    refs = Path(ref).read_text(encoding="utf-8").splitlines()
    systems = {name: Path(p).read_text(encoding="utf-8").splitlines() for name, p in hyps}
    for name, lines in systems.items():
        if len(lines) != len(refs) or len(src_lines) != len(refs):
            raise ValueError(f"{name}: {len(lines)} hypotheses, {len(refs)} references, {len(src_lines)} sources")
    labels, counts, scores = [], [], {n: [] for n in systems}
    for lo, hi in BUCKETS:
        idx = [i for i, s in enumerate(src_lines) if lo <= len(s.split()) <= hi]
        labels.append(f"{lo}-{hi}" if hi < 1000 else f"≥{lo}")
        counts.append(len(idx))
        for n, lines in systems.items():
            scores[n].append(sacrebleu.corpus_bleu([lines[i] for i in idx], [[refs[i] for i in idx]]).score
                             if idx else float("nan"))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for n, vals in scores.items():
        ax.plot(labels, vals, marker="o", label=n)
    ax.set_xlabel("source sentence length (tokens); sentences per bucket: " + ", ".join(map(str, counts)))
    ax.set_ylabel("BLEU")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png, dpi=130)
    return {"buckets": labels, "counts": counts, "bleu": scores}


def mask_and_attention(data, checkpoint, sentence, out_png, split="test"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch
    from fairseq import checkpoint_utils

    import fairseq_syntax

    fairseq_syntax.register()
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([checkpoint], arg_overrides={"data": data})
    model = models[0].eval()
    task.load_dataset(split)
    ds = task.dataset(split)
    batch = ds.collater([ds[sentence]])
    ni = batch["net_input"]
    with torch.no_grad():
        out = model.encoder(ni["src_tokens"], ni["src_lengths"], src_heads=ni["src_heads"], need_syntax_weights=True)
    mask = out["sdoi_mask"][0][0].float().numpy()
    attn = out["sdoi_attn"][0][0].mean(0).numpy()  # the first SDOI layer, heads averaged
    labels = [task.source_dictionary[t] for t in ni["src_tokens"][0].tolist()]
    fig, axes = plt.subplots(1, 2, figsize=(2 + 0.45 * len(labels) * 2, 1 + 0.45 * len(labels)))
    for ax, m, title in ((axes[0], mask, "SDOI mask"), (axes[1], attn, "syntax-guided attention (heads averaged)")):
        ax.imshow(m, cmap="Blues", vmin=0, vmax=1 if title == "SDOI mask" else max(m.max(), 1e-6))
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=8)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out_png, dpi=130)
    return labels


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--checkpoint", required=True, help="a transformer_sgnet checkpoint")
    p.add_argument("--sentence", type=int, default=3, help="test sentence id for Figure 6")
    p.add_argument("--src", help="tokenized source of the test set (Figure 5 buckets)")
    p.add_argument("--ref", help="detokenized references")
    p.add_argument("--hyp", action="append", default=[], help="NAME=FILE, detokenized hypotheses in test order")
    p.add_argument("--out", default=str(ROOT / "results/multi30k/figures"))
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    labels = mask_and_attention(args.data, args.checkpoint, args.sentence, out / "fig6_sdoi_mask_attention.png")
    print(f"wrote {out / 'fig6_sdoi_mask_attention.png'} ({len(labels)} tokens)")
    if args.hyp:
        hyps = [h.split("=", 1) for h in args.hyp]
        res = bleu_by_length(args.src, args.ref, hyps, out / "fig5_bleu_by_length.png")
        (out / "fig5_bleu_by_length.json").write_text(json.dumps(res, indent=1, ensure_ascii=False))
        print(f"wrote {out / 'fig5_bleu_by_length.png'} and .json: {res}")


if __name__ == "__main__":
    main()
