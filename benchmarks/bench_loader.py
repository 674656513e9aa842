"""Data-path throughput: each syntax task against its vanilla counterpart, same data, same batches.

    python benchmarks/bench_loader.py --multi30k work/multi30k/bin --cola work/glue/CoLA/bin \
        --conll work/conll2003/bin --lambada work/lambada/bin --rounds 5 --out results/benchmarks/bench_loader.json

Whole epochs of the training split are drawn through ``task.get_batch_iterator`` (``--max-tokens``, 32,768
by default, ``num_workers=0``: the loader's own work, in this process) until ``--min-seconds`` have passed,
and the sentences per second are timed (one untimed warm-up epoch per side first).
The pairs run interleaved, round after round, so both sides see the same machine load; the ratio is
syntax / vanilla per round and of the medians. The counterparts:

* ``syntax_guided_translation`` against fairseq's ``translation``;
* ``syntax_sentence_prediction`` against fairseq's ``sentence_prediction`` (the same ``input0``/``label``);
* ``syntax_token_labeling`` against the same tokens and word labels padded by fairseq's ``RightPadDataset``
  (fairseq has no token-labeling task);
* ``syntax_sentence_ranking`` against fairseq's ``sentence_ranking`` on the same RACE ``input0``–``input4``/``label``
  (fairseq's RACE recipe: 512 positions, options cut to 128, ``--shorten-method truncate``);
* ``lambada_reader`` with the supervision side data (``--signals``: CorefAll, the measured runs' signal, and all
  five) against the same reader without it.

A corpus not given is left out, and the JSON says so; ``--merge`` keeps the other tasks of an existing ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from fairseq_syntax.pipeline.atomic import atomic_path


def user_args(data, task, arch, *extra):
    from fairseq import options

    import fairseq_syntax

    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, [data, "--user-dir", fairseq_syntax.USER_DIR, "--task", task,
                                                "--arch", arch, *extra])


def translation_pair(data):
    from fairseq import tasks

    out = {}
    for name, task in (("vanilla", "translation"), ("syntax", "syntax_guided_translation")):
        t = tasks.setup_task(user_args(data, task, "transformer_sgnet_small", "-s", "en", "-t", "de"))
        t.load_dataset("train")
        out[name] = (t, t.dataset("train"))
    return out


def sentence_prediction_pair(data):
    from fairseq import tasks

    out = {}
    for name, task in (("vanilla", "sentence_prediction"), ("syntax", "syntax_sentence_prediction")):
        t = tasks.setup_task(user_args(data, task, "roberta_sgnet_small", "--num-classes", "2", "--init-token", "0",
                                       "--criterion", "sentence_prediction"))
        t.load_dataset("train")
        out[name] = (t, t.dataset("train"))
    return out


def token_labeling_pair(data):
    from fairseq import tasks
    from fairseq.data import (IdDataset, NestedDictionaryDataset, NumelDataset, NumSamplesDataset,
                              PrependTokenDataset, RightPadDataset, SortDataset, StripTokenDataset, data_utils)

    t = tasks.setup_task(user_args(data, "syntax_token_labeling", "roberta_sgnet_small"))
    t.load_dataset("train")
    syntax = t.dataset("train")
    tokens = PrependTokenDataset(data_utils.load_indexed_dataset(os.path.join(data, "input0", "train"), t.dictionary),
                                 t.cfg.init_token)
    labels = StripTokenDataset(data_utils.load_indexed_dataset(os.path.join(data, "label", "train"),
                                                               t.label_dictionary), t.label_dictionary.eos())
    plain = NestedDictionaryDataset({
        "id": IdDataset(),
        "net_input": {"src_tokens": RightPadDataset(tokens, pad_idx=t.dictionary.pad()),
                      "src_lengths": NumelDataset(tokens, reduce=False)},
        "target": RightPadDataset(labels, pad_idx=-100),
        "nsentences": NumSamplesDataset(), "ntokens": NumelDataset(tokens, reduce=True)}, sizes=[tokens.sizes])
    with data_utils.numpy_seed(t.cfg.seed):
        order = np.random.permutation(len(plain))
    return {"vanilla": (t, SortDataset(plain, sort_order=[order])), "syntax": (t, syntax)}


RANKING = ["--num-classes", "4", "--init-token", "0", "--separator-token", "2", "--max-option-length", "128",
           "--max-positions", "512", "--shorten-method", "truncate", "--criterion", "sentence_ranking"]


def ranking_pair(data, split="train"):
    from fairseq import tasks

    out = {}
    for name, task in (("vanilla", "sentence_ranking"), ("syntax", "syntax_sentence_ranking")):
        t = tasks.setup_task(user_args(data, task, "roberta_sgnet_small", *RANKING))
        t.load_dataset(split)
        out[name] = (t, t.dataset(split))
    return out


def reader_pair(data, signals):
    from fairseq import tasks

    out = {}
    for name, sig in (("vanilla", "none"), ("syntax", signals)):
        t = tasks.setup_task(user_args(data, "lambada_reader", "bidaf_sa_early", "--signals", sig))
        t.load_dataset("train")
        out[name] = (t, t.dataset("train"))
    return out


def batch_iterator(task, dataset, max_tokens: int):
    return task.get_batch_iterator(dataset=dataset, max_tokens=max_tokens, max_positions=None,
                                   ignore_invalid_inputs=True, required_batch_size_multiple=1, seed=1,
                                   num_workers=0, epoch=1)


def epochs_rate(itr, min_seconds: float) -> tuple[float, int, int]:
    """(sentences/s, sentences, batches) over whole epochs, as many as fill ``min_seconds`` (small corpora)."""
    n = b = 0
    t0 = time.perf_counter()
    while True:
        for batch in itr.next_epoch_itr(shuffle=True):
            n += batch["nsentences"]
            b += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds:
            return n / elapsed, n, b


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--multi30k", help="data-prep/multi30k.sh output (bin/)")
    p.add_argument("--cola", help="data-prep/glue.sh output for a single-sentence task (bin/)")
    p.add_argument("--conll", help="data-prep/conll2003.sh output (bin/)")
    p.add_argument("--lambada", help="data-prep/lambada.sh output (bin/)")
    p.add_argument("--race", help="data-prep/race.sh output (bin/)")
    p.add_argument("--race-split", default="train", help="the RACE split to draw (train-middle: a quicker epoch)")
    p.add_argument("--merge", action="store_true", help="keep the other tasks of an existing --out file")
    p.add_argument("--signals", action="append",
                   help="the reader's side data loaded on the syntax side; repeat for several settings (default: "
                        "CorefAll, the signal of the measured runs, and all five)")
    p.add_argument("--max-tokens", type=int, default=32768)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-seconds", type=float, default=3.0,
                   help="each measurement runs whole epochs until this much time has passed")
    p.add_argument("--out", help="write the JSON here")
    args = p.parse_args(argv)

    import fairseq
    import torch

    import fairseq_syntax

    fairseq_syntax.register()
    torch.set_num_threads(1)
    builders = {"translation": (args.multi30k, translation_pair),
                "sentence_prediction": (args.cola, sentence_prediction_pair),
                "token_labeling": (args.conll, token_labeling_pair),
                "sentence_ranking": (args.race, lambda d: ranking_pair(d, args.race_split))}
    for signals in args.signals or ["CorefAll", "DepParse CorefAll CorefPrev CorefNext Narrative"]:
        builders[f"lambada_reader [{signals}]"] = (args.lambada, lambda d, s=signals: reader_pair(d, s))
    pairs, skipped = {}, []
    for name, (data, build) in builders.items():
        if data:
            pairs[name] = build(data)
        else:
            skipped.append(name)
    rates = {name: {"vanilla": [], "syntax": []} for name in pairs}
    counts = {}
    iterators = {name: {side: batch_iterator(*pair[side], args.max_tokens) for side in pair}
                 for name, pair in pairs.items()}
    for name, its in iterators.items():  # warm-up: batches built, mmaps paged in, on both sides
        for itr in its.values():
            epochs_rate(itr, 0.0)
    for r in range(args.rounds):
        for name in pairs:
            sides = ("vanilla", "syntax") if r % 2 == 0 else ("syntax", "vanilla")  # alternate who goes first
            for side in sides:
                rate, n, b = epochs_rate(iterators[name][side], args.min_seconds)
                rates[name][side].append(rate)
                counts.setdefault(name, {})[side] = {"sentences_per_epoch": len(pairs[name][side][1]),
                                                     "last_measurement": {"sentences": n, "batches": b}}
            print(f"round {r + 1} {name}: vanilla {rates[name]['vanilla'][-1]:,.0f} sent/s, "
                  f"syntax {rates[name]['syntax'][-1]:,.0f} sent/s", file=sys.stderr)
    result = {"what": "sentences/s through task.get_batch_iterator (num_workers=0), whole training epochs for at "
                      f"least {args.min_seconds} s per measurement, after one warm-up epoch per side",
              "max_tokens": args.max_tokens, "rounds": args.rounds, "skipped": skipped,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
                          "fairseq": fairseq.__version__},
              "tasks": {}}
    if args.merge and args.out and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as fh:
            old = json.load(fh)
        result["tasks"] = {k: v for k, v in old.get("tasks", {}).items() if k not in rates}
        result["skipped"] = [k for k in skipped if k not in result["tasks"]]
        result["merged_from_earlier_runs"] = sorted(result["tasks"])
    for name, r in rates.items():
        per_round = [s / v for s, v in zip(r["syntax"], r["vanilla"])]
        result["tasks"][name] = {
            "vanilla_sent_per_s": [round(x) for x in r["vanilla"]],
            "syntax_sent_per_s": [round(x) for x in r["syntax"]],
            "ratio_per_round": [round(x, 3) for x in per_round],
            "ratio_of_medians": round(statistics.median(r["syntax"]) / statistics.median(r["vanilla"]), 3),
            "goal": 1.0 if name in ("translation", "sentence_ranking") else 0.95, **counts[name]}
        res = result["tasks"][name]
        res["meets_goal"] = res["ratio_of_medians"] >= res["goal"]
        print(f"{name}: syntax / vanilla = {res['ratio_of_medians']:.3f} (rounds {min(per_round):.3f}-"
              f"{max(per_round):.3f}; goal >= {res['goal']})")
    if args.out:
        with atomic_path(args.out) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
