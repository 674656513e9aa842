"""Early stopping that survives interruptions, decided from the whole training log.

fairseq's ``--patience`` keeps its count in memory: after a resume it starts again from zero and from
whatever the first validation gives, so an interrupted run stops later than an uninterrupted one. The
reproduce scripts instead train one stretch at a time (``--max-epoch`` or ``--max-update``) and ask this
script, which reads every validation in the log, whether to go on:

    python -m examples.studies.early_stopping LOG --metric loss --patience 5 --max-update 8000  # per epoch
    python -m examples.studies.early_stopping LOG --metric accuracy --maximize --patience 5 --interval 500
        # per 500 updates

It prints the next ``--max-epoch`` (the next epoch) or ``--max-update`` (as far as the validations left to the
patience count reach) to train to, or ``stop``; ``--describe`` prints where the run
stands instead (for the reproduce scripts' ``--status``); ``--patience 0`` describes a fixed budget of
``--max-update`` updates, which only the cap ends. A validation repeated after a
resume counts once (its last value). With ``--min-delta D`` only a value better by more than D than the one that
started the count restarts it (Keras' ``min_delta``): a validation loss still creeping down by a few thousandths
an epoch then counts as converged. The checkpoint to score stays the best one, by any margin.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from examples.studies.training_log import open_log


def validations(log: str, metric: str, by: str = "epoch") -> dict[int, tuple[float, int]]:
    """{epoch or update: (metric value, num_updates)} of every validation on the 'valid' subset in ``log``."""
    line_re = re.compile(r"epoch (\d+) \| valid on 'valid' subset \|(.*)")
    out: dict[int, tuple[float, int]] = {}
    if not os.path.exists(log):
        return out
    with open_log(log) as fh:
        for line in fh:
            m = line_re.search(line)
            if not m:
                continue
            fields = dict(f.strip().split(" ", 1) for f in m.group(2).split("|") if " " in f.strip())
            if metric not in fields or "num_updates" not in fields:
                continue
            updates = int(fields["num_updates"])
            out[int(m.group(1)) if by == "epoch" else updates] = (float(fields[metric]), updates)
    return out


def convergence(log: str, metric: str, patience: int, max_update: int, maximize: bool = False,
                by: str = "epoch", min_delta: float = 0.0, spacing: int = 0) -> dict:
    """The validation curve and whether training is over: ``patience`` validations without a value better by
    more than ``min_delta`` than the one that started the count, or ``max_update`` reached. With ``spacing``,
    patience ends only a run validated at multiples of that many updates: one validated more often (a fixed
    budget every 100 updates) counts shorter stretches than the rule's, so only the cap ends it."""
    return _convergence(validations(log, metric, by), metric, patience, max_update, maximize, by, min_delta, spacing)


def fairseq_best(vals: dict):
    """The key of the validation whose checkpoint fairseq keeps as checkpoint_best.pt when maximizing: a score
    >= the best so far replaces it, so the last of the highest (None without validations)."""
    return max(vals, key=lambda k: (vals[k][0], k)) if vals else None


def _convergence(vals: dict, metric: str, patience: int, max_update: int, maximize: bool, by: str,
                 min_delta: float, spacing: int) -> dict:
    keys = sorted(vals)
    out = {"validations": len(keys), f"valid_{metric}": [vals[k][0] for k in keys], "stopped": None}
    if not keys:
        return out
    sign = -1 if maximize else 1
    best = min(keys, key=lambda k: (sign * vals[k][0], k))
    improved = keys[0]  # started the patience count: better than the previous starter by more than min_delta
    for k in keys[1:]:
        if sign * vals[k][0] < sign * vals[improved][0] - min_delta:
            improved = k
    last = keys[-1]
    since = sum(1 for k in keys if k > improved)
    out.update({f"best_{by}": best, "best_update": vals[best][1], f"best_valid_{metric}": vals[best][0],
                f"last_{by}": last, "last_update": vals[last][1],
                "validations_after_best": sum(1 for k in keys if k > best), "min_delta": min_delta,
                f"last_improvement_{by}": improved, "validations_since_improvement": since})
    if vals[last][1] >= max_update:
        out["stopped"] = "max_update"
    elif patience and since >= patience and not (spacing and any(vals[k][1] % spacing for k in keys)):
        out["stopped"] = "patience"
    return out


def agrees(log: str, metric: str, patience: int, max_update: int, maximize: bool = False, by: str = "epoch",
           min_delta: float = 0.0, finished: bool = False) -> str | None:
    """None when the rule, replayed on the log's validations one at a time, stops the run at its last one (or, unless
    ``finished``, not yet); else why not. A run trained under other stopping options (a longer patience, a higher
    cap) goes past where these stop it, and its best checkpoint may not be the one these would score."""
    vals = validations(log, metric, by)
    keys = sorted(vals)
    for i in range(1, len(keys) + 1):
        c = _convergence({k: vals[k] for k in keys[:i]}, metric, patience, max_update, maximize, by, min_delta, 0)
        if c["stopped"]:
            if i == len(keys):
                return None
            return (f"{log}: these options stop it at {by} {keys[i - 1]} ({c['stopped']}), but it trained on to "
                    f"{by} {keys[-1]}: it was trained under other stopping options")
    if finished:
        last = f"{by} {keys[-1]}" if keys else "its start"
        return f"{log}: it finished at {last}, where these options would train it further"
    return None


def next_update(c: dict, interval: int, patience: int, max_update: int) -> int:
    """The furthest update the rule cannot stop a run before: the validations its patience has left, or the cap.
    One process trains that whole stretch, as an uninterrupted run would (the rule can stop it only at the
    stretch's end), instead of a new start every interval, which costs a GPU more than the interval's training."""
    if not patience:  # a fixed budget
        return max_update
    left = patience - c.get("validations_since_improvement", 0)
    return min(c.get("last_update", 0) + left * interval, max_update)


def describe(c: dict, metric: str, by: str, patience: int, max_update: int) -> str:
    """One line: how far the run is, its best validation, and how near the rule is to stopping it (patience 0:
    how near it is to the end of its fixed budget)."""
    if not c["validations"]:
        return "no validation yet"
    if not patience:
        state = f"trained its budget of {max_update} updates" if c["stopped"] else f"{max_update} updates planned"
    else:
        running = f"{c['validations_since_improvement']} of {patience} validations without improvement so far"
        state = {"patience": "finished (patience)", "max_update": "finished (update cap)"}.get(c["stopped"], running)
    return (f"{by} {c[f'last_{by}']} ({c['last_update']} updates): best valid {metric} {c[f'best_valid_{metric}']} "
            f"at {by} {c[f'best_{by}']}; {state}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log")
    p.add_argument("--metric", default="loss")
    p.add_argument("--maximize", action="store_true")
    p.add_argument("--patience", type=int, required=True,
                   help="validations without improvement (0: none, a fixed budget of --max-update updates)")
    p.add_argument("--max-update", type=int, required=True)
    p.add_argument("--min-delta", type=float, default=0.0,
                   help="an improvement must exceed this to restart the patience count (default 0: any)")
    p.add_argument("--interval", type=int, default=0,
                   help="validate every N updates (the script prints the next --max-update); 0: every epoch")
    p.add_argument("--describe", action="store_true", help="say where the run stands instead")
    p.add_argument("--agrees", choices=["running", "finished"],
                   help="print nothing and exit 0 if the rule stops the run at its last validation (running: or not "
                        "yet); else say why not and exit 1")
    p.add_argument("--hint", default="", help="with --agrees: what to do about a difference")
    a = p.parse_args(argv)
    by = "update" if a.interval else "epoch"
    if a.agrees:
        problem = agrees(a.log, a.metric, a.patience, a.max_update, a.maximize, by, a.min_delta,
                         a.agrees == "finished")
        if problem:
            print(f"error: {problem}" + (f". {a.hint}" if a.hint else ""), file=sys.stderr)
        return 1 if problem else 0
    c = convergence(a.log, a.metric, a.patience, a.max_update, a.maximize, by, a.min_delta)
    if a.describe:
        print(describe(c, a.metric, by, a.patience, a.max_update))
    elif c["stopped"]:
        print("stop")
    elif a.interval:
        print(next_update(c, a.interval, a.patience, a.max_update))
    else:
        print(c.get("last_epoch", 0) + 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
