"""The SLA paper's Tables 1 and 2 on MiniLM-L6: roberta_baseline, WLA, SLA and SG-Net fine-tuned, 5 seeds each.
Table 1 (the default): CoLA (MCC, dev), SST-2 (accuracy, dev) and CoNLL-2003 NER (entity F1, test), with SG-Net's and
SLA's controls on CoNLL-2003, the one task where SG-Net's parse reaches the output. Table 2 (--table 2): the sentence
pairs RTE (accuracy), MRPC (accuracy, and F1) and STS-B (Pearson, and Spearman) on dev, read as BERT reads a pair
([CLS] a [SEP] b [SEP], the second text of token type 1), each text parsed on its own, with SLA on random trees on
MRPC and STS-B, where the paper reports SLA's gains (examples/encoders/README.md).

  bash examples/encoders/reproduce_sla_table.sh [--table 1|2] [--tasks "CoNLL-2003 CoLA SST-2"] [--seeds "1 2 3 4 5"]
                                 [--systems "baseline wla sla sgnet sgnet_nomask sgnet_random_trees sla_random_trees"]
                                 [--updates-CoLA N] [--updates-SST-2 N] [--updates-CoNLL-2003 N] [--validations 10]
                                 [--updates-RTE N] [--updates-MRPC N] [--updates-STS-B N]
                                 [--jobs 2] [--fp16]
                                 [--out results/encoders_tableN] [--checkpoints work/checkpoints/encoders_tableN]
                                 [--data-root work] [--pretrained work/minilm] [--readme FILE]
                                 [--status | --summary-only | --no-summary]

Systems: baseline (roberta_baseline_small), wla (roberta_sla_small --sla-mask window: |i-j| <= 3), sla
(roberta_sla_small: tree distance <= 3), sgnet (roberta_sgnet_small), and on CoNLL-2003 only the controls
sgnet_nomask (the same extra layer attending to every token: parameter-matched), sgnet_random_trees and
sla_random_trees (random trees over the same words, data-prep/conll2003.sh --random-trees 1).
Protocol (the paper's, at our size): batch 32, Adam, lr 5e-5 with 6 % warm-up and linear decay, --validations
on dev evenly over the run (each also a checkpoint to resume from), the best checkpoint by dev MCC /
accuracy / entity F1 scored on dev (CoLA, SST-2) or test (CoNLL-2003) with fairseq-syntax-sentence-eval /
fairseq-syntax-ner-eval, which also write one line per sentence for the paired tests. The runs go in the order:
the first seed's baseline of every task (the budget is checked on its dev curve before the rest of the table
spends it), then seeds x tasks x systems, --jobs side by side (a slot is refilled as soon as any run ends), the
cores split among them. A stopped run resumes from its checkpoint_last.pt (saved at every validation); a finished
one (its .eval.json in --out) is skipped; one made with other options stops the script before anything trains,
naming what differs. --fp16 trains in half precision on a GPU, into their own folders.
Each finished SLA or WLA run also keeps its mean gate per layer on the scored split ({run}.gates.json, from its
best checkpoint; the SLA paper's Figure 2). Then examples/encoders/summarize_sla_table.py writes summary.json,
summary.md, the figures and the sla-table block of examples/encoders/README.md (--readme FILE for another file;
with --out, only if --readme is given).
--status says where each run stands (a run in training: its best dev score so far and about how long it has
left at its pace) and how many runs of each task are not finished; --summary-only summarizes the finished runs and trains nothing (it does
compute the gates of a finished run that lacks them, from --checkpoints).
Data: --data-root/conll2003 and --data-root/glue/TASK; a finished preparation there is used as it was made (with
its random trees where the table has a random-tree control), else data-prep prepares the full corpus from the
local copy (CONLL2003_DIR, GLUE_DIR, else the shared data folder beside the checkout).
A folder or file you name is taken from where you run the script; the defaults are in the checkout.
set -euo pipefail
"""
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from fairseq_syntax.pipeline.atomic import GZIP, command_output, write_text  # noqa: E402
from fairseq_syntax.pipeline.jobs import JobPool, threads_per_job  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, from_caller, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, need_ints, parse  # noqa: E402
from examples.studies.early_stopping import fairseq_best, validations  # noqa: E402
from examples.studies.result_files import describe as describe_results  # noqa: E402
from examples.studies.run_record import write_record  # noqa: E402
from examples.studies.runs import (console_env, corpus_dir, fine_tune_start, flag_keys, lock_run,  # noqa: E402
                                   need_block, need_corpus, no_quick_study, same_run, user_dir)
from examples.studies.table_protocol import METRIC, SCORED_SPLIT, write_or_check  # noqa: E402
from examples.studies.training_log import open_log, pace  # noqa: E402

SYSTEMS = {  # what each system's fairseq-train command differs in
    "baseline": ["--arch", "roberta_baseline_small"],
    "wla": ["--arch", "roberta_sla_small", "--sla-mask", "window"],
    "sla": ["--arch", "roberta_sla_small"],
    "sgnet": ["--arch", "roberta_sgnet_small"],
    "sgnet_nomask": ["--arch", "roberta_sgnet_small", "--sgnet-mask", "none"],
    "sgnet_random_trees": ["--arch", "roberta_sgnet_small", "--heads-suffix", "randheads"],
    "sla_random_trees": ["--arch", "roberta_sla_small", "--heads-suffix", "randheads"],
}
GATED = ("wla", "sla", "sla_random_trees")
SENTENCE = ["--task", "syntax_sentence_prediction", "--init-token", "0", "--criterion", "sentence_prediction"]
TASK_ARGS = {  # the task, criterion and best-checkpoint metric (a pair: BERT's [CLS] a [SEP] b [SEP], no separator)
    "CoNLL-2003": ["--task", "syntax_token_labeling", "--criterion", "token_labeling", "--best-checkpoint-metric", "f1"],
    "CoLA": [*SENTENCE, "--num-classes", "2", "--report-mcc", "--best-checkpoint-metric", "mcc"],
    "SST-2": [*SENTENCE, "--num-classes", "2", "--report-mcc", "--best-checkpoint-metric", "accuracy"],
    "RTE": [*SENTENCE, "--num-classes", "2", "--best-checkpoint-metric", "accuracy"],  # (its labels are words)
    "MRPC": [*SENTENCE, "--num-classes", "2", "--report-acc-and-f1", "--best-checkpoint-metric", "accuracy"],
    "STS-B": [*SENTENCE, "--num-classes", "1", "--regression-target", "--report-pearson-and-spearman",
              "--best-checkpoint-metric", "pearson"],
}
# Each table: its tasks, its systems, the controls and the tasks they run on, the budgets in updates of 32
# (examples/encoders/README.md, "Budget"), its study name and README block (summarize_sla_table.py --table N).
TABLES = {
    "1": {"tasks": ("CoNLL-2003", "CoLA", "SST-2"), "systems": tuple(SYSTEMS),
          "controls": {"sgnet_nomask": ("CoNLL-2003",), "sgnet_random_trees": ("CoNLL-2003",),
                       "sla_random_trees": ("CoNLL-2003",)},
          # CoLA 9 epochs, SST-2 2, CoNLL-2003 5
          "updates": {"CoLA": "2400", "SST-2": "4200", "CoNLL-2003": "2200"},
          "study": "sla_table", "block": "sla-table-summary"},
    "2": {"tasks": ("RTE", "MRPC", "STS-B"), "systems": ("baseline", "wla", "sla", "sgnet", "sla_random_trees"),
          "controls": {"sla_random_trees": ("MRPC", "STS-B")},
          # RTE 10 epochs, MRPC 5, STS-B 5
          "updates": {"RTE": "780", "MRPC": "580", "STS-B": "900"},
          "study": "sla_table2", "block": "sla-table2-summary"},
}
ALL_SEEDS = [1, 2, 3, 4, 5]  # the table's, whatever a call asks for
HINT = "Give another --out and --checkpoints, or remove that run's results and checkpoints to train it again"


def table_of(argv) -> str:
    """The table a call is for (--table, default 1): it sets the other options' defaults."""
    for k, a in enumerate(argv):
        if a == "--table" and k + 1 < len(argv):
            if argv[k + 1] not in TABLES:
                raise Stop(f"--table {argv[k + 1]}: the tables are {', '.join(TABLES)}")
            return argv[k + 1]
    return "1"


def main(argv):
    table = TABLES[table_of(argv)]
    o = parse(argv, {"--table": "1", "--tasks": " ".join(table["tasks"]), "--seeds": " ".join(map(str, ALL_SEEDS)),
                     "--systems": " ".join(table["systems"]),
                     **{f"--updates-{t}": n for t, n in table["updates"].items()},
                     "--jobs": "2", "--validations": "10", "--out": "", "--checkpoints": "", "--data-root": "",
                     "--pretrained": "", "--readme": ""},
              ("--status", "--summary-only", "--no-summary", "--fp16"), __doc__)
    for opt in ("out", "checkpoints", "data_root", "pretrained", "readme"):
        if f"--{opt.replace('_', '-')}" in argv:
            o[opt] = from_caller(o[opt])
    mode = "status" if o["status"] else "summary" if o["summary_only"] else "no-summary" if o["no_summary"] else "train"
    if mode != "status":
        no_quick_study()
    conll_dir, glue_dir = corpus_dir("CONLL2003_DIR", "conll2003"), corpus_dir("GLUE_DIR", "glue")
    os.chdir(ROOT)
    jobs = need_int("--jobs", o["jobs"], 1)
    seeds = need_ints("--seeds", o["seeds"])
    every_n = need_int("--validations", o["validations"], 1)
    budget = {t: need_int(f"--updates-{t}", o[f"updates_{t.replace('-', '_')}"], every_n) for t in table["tasks"]}
    tasks = o["tasks"].split()
    for t in tasks:
        if t not in table["tasks"]:
            raise Stop(f"unknown task {t} (table {o['table']}: {', '.join(table['tasks'])})")
    suffix = "_fp16" if o["fp16"] else ""
    res = o["out"] or f"{ROOT}/results/encoders_table{o['table']}{suffix}"
    ckpts = os.path.join(ROOT, o["checkpoints"] or f"work/checkpoints/encoders_table{o['table']}{suffix}")
    data_root = os.path.join(ROOT, o["data_root"] or "work")
    pretrained = os.path.join(ROOT, o["pretrained"] or "work/minilm")
    if "--readme" in argv:
        readme = o["readme"]
    else:
        readme = "" if "--out" in argv or suffix else f"{ROOT}/examples/encoders/README.md"
    env = console_env()
    if readme:
        need_block(readme, table["block"])
    systems = o["systems"].split()
    for s in systems:
        if s not in table["systems"]:
            raise Stop(f"unknown system {s} (table {o['table']}: {' '.join(table['systems'])})")
    controls = table["controls"]

    def prepared_in(task):
        return f"{data_root}/conll2003" if task == "CoNLL-2003" else f"{data_root}/glue/{task}"

    runs = []  # the order they train in: the first seed's baselines (the budget check), then seeds, tasks, systems
    if "baseline" in systems:
        runs += [(task, "baseline", seeds[0]) for task in tasks]
    for seed in seeds:
        for task in tasks:
            for system in systems:
                if task in controls.get(system, (task,)) and (task, system, seed) not in runs:
                    runs.append((task, system, seed))
    if not runs:
        raise Stop(f"no run in this plan (--tasks '{o['tasks']}', --systems '{o['systems']}'): the controls run on "
                   + "; ".join(f"{c}: {', '.join(t)}" for c, t in controls.items()))
    # the folder's protocol.json (table_protocol.py): written by the call that makes the table, and every later call
    # must fit it, so a trial never trains into a table
    if mode != "status" and (mode != "summary" or os.path.isfile(f"{res}/protocol.json")):
        try:
            write_or_check(f"{res}/protocol.json", budget, every_n, tasks, seeds, systems, ALL_SEEDS,
                           list(table["systems"]), table["tasks"])
        except ValueError as e:
            raise Stop(str(e)) from None
    threads = threads_per_job(jobs)

    def name_of(task, system, seed):
        return f"{task}_{system}_seed{seed}"

    def sla_gates(pool, task, system, seed):  # a finished SLA or WLA run's mean gate per layer (Figure 2)
        name = name_of(task, system, seed)
        ck, out = f"{ckpts}/{name}/checkpoint_best.pt", f"{res}/{name}.gates.json"
        if system not in GATED or not os.path.isfile(f"{res}/{name}.eval.json") or os.path.isfile(out) or \
                not os.path.isfile(ck):
            return True
        with open(f"{ckpts}/{name}/gates.log", "wb") as err:
            rc = (pool.run if pool else _status)([sys.executable, "examples/encoders/plot_sla_gates.py", "--checkpoint",
                                               ck, "--data", f"{prepared_in(task)}/bin", "--split", SCORED_SPLIT[task],
                                               "--run-json", out], env=console_env(threads),
                                              stdout=subprocess.DEVNULL, stderr=err)
        if rc:
            log(f"[table] {name}: the gate values failed, see {ckpts}/{name}/gates.log")
            return False
        return True

    def summarize():
        for r in runs:  # runs finished by an older copy of this script
            if not sla_gates(None, *r):
                raise Stop("the gate values failed")
        run_tool([sys.executable, "examples/encoders/summarize_sla_table.py", "--table", o["table"], "--results", res,
                  "--planned",
             *[name_of(*r) for r in runs], *(["--readme", readme] if readme else [])], env=env)

    if mode == "summary":
        summarize()
        return
    if mode == "status":
        status(runs, res, ckpts, budget, tasks)
        return

    # before anything is prepared or trains: every run found was made with these options
    for task, system, seed in runs:
        name = name_of(task, system, seed)
        keys = {"seed": seed, "lr": "5e-05", "batch_size": 32, "max_update": budget[task],
                "validate_interval_updates": budget[task] // every_n, "fp16": "True" if suffix else "False",
                **flag_keys(SYSTEMS[system])}
        for train_log in (f"{res}/{name}.train.log.gz", f"{ckpts}/{name}/train.log"):
            if os.path.isfile(train_log):
                same_run(train_log, HINT, keys)
                break

    if not os.path.isfile(f"{pretrained}/model.pt"):
        run_tool(["fairseq-syntax-convert-bert", "--out", pretrained], f"converting MiniLM into {pretrained} failed",
                 env=env)
    random_trees = {t for c in controls if c.endswith("_random_trees") for t in controls[c]}
    for task in tasks:
        out = prepared_in(task)
        if os.path.isfile(f"{out}/.stamps/binarize") and (task not in random_trees or
                                                          glob.glob(f"{glob.escape(out)}/bin/input0/*.randheads.bin")):
            # used as it was made: data-prep would redo it with the defaults below (a slice would become the corpus)
            log(f"[table] {task}: using the data prepared in {out}")
            continue
        if task == "CoNLL-2003":
            prep = ["bash", "data-prep/conll2003.sh", "--conll-dir",
                    need_corpus(conll_dir, "CONLL2003_DIR", "conll2003")]
        else:
            prep = ["bash", "data-prep/glue.sh", "--task", task, "--glue-dir",
                    need_corpus(glue_dir, "GLUE_DIR", "glue")]
        prep += ["--random-trees", "1"] if task in random_trees else []
        run_tool([*prep, "--out", out, "--pretrained", pretrained, "--parser", "spacy", "--workers", jobs, "--wait"],
            f"preparing {task} into {out} failed", env=env)
    os.makedirs(res, exist_ok=True)
    run_env = console_env(threads)
    # the best checkpoint is scored on the device it trained on, in its precision, as fairseq-train chose it: the
    # GPU where torch sees one (in fp16 for --fp16), else the CPU
    eval_on = ["--fp16"] if suffix else []

    def finetune(pool, task, system, seed):
        n, name = budget[task], name_of(task, system, seed)
        if os.path.isfile(f"{res}/{name}.eval.json"):
            ok = sla_gates(pool, task, system, seed)
            log(f"[table] skip {name} (done)")
            return ok
        ck, data, every = f"{ckpts}/{name}", f"{prepared_in(task)}/bin", n // every_n
        lock = lock_run(ck)
        if lock is None:
            return False
        with lock:
            start = fine_tune_start(ck, pretrained)
            if len(start) > 2:
                log(f"[table] {name}: {n} updates of 32, validation every {every}")
            with open(f"{ck}/train.log", "ab") as fh:
                rc = pool.run(["fairseq-train", data, "--user-dir", user_dir(), *TASK_ARGS[task], *SYSTEMS[system],
                               *start, "--maximize-best-checkpoint-metric", "--max-positions", "512", "--optimizer",
                               "adam", "--adam-betas", "(0.9, 0.98)", "--adam-eps", "1e-6", "--weight-decay", "0.01",
                               "--clip-norm", "1.0", "--lr", "5e-5", "--lr-scheduler", "polynomial_decay",
                               "--warmup-updates", n * 6 // 100, "--total-num-update", n, "--max-update", n,
                               "--batch-size", "32", "--required-batch-size-multiple", "1", "--dropout", "0.1",
                               "--attention-dropout", "0.1", "--seed", seed, "--validate-interval-updates", every,
                               "--save-interval-updates", every, "--keep-interval-updates", "1",
                               "--no-epoch-checkpoints", "--save-dir", ck, "--log-format", "simple", "--log-interval",
                               "50", "--num-workers", "1", *(["--fp16"] if suffix else [])], env=run_env, stdout=fh,
                              stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),))
            if rc:
                log(f"[table] {name}: training failed or was stopped, see {ck}/train.log")
                return False
            with open_log(f"{ck}/train.log") as fh:
                if not any("done training" in line for line in fh):
                    log(f"[table] {name}: stopped before update {n}; run again to resume")
                    return False
            metric = METRIC[task]
            evaluate = "fairseq-syntax-ner-eval" if task == "CoNLL-2003" else "fairseq-syntax-sentence-eval"
            with open(f"{ck}/eval.txt", "wb") as out, open(f"{ck}/eval.log", "wb") as err:
                if pool.run([evaluate, data, "--path", f"{ck}/checkpoint_best.pt", "--split", SCORED_SPLIT[task],
                             *eval_on, "--json", f"{ck}/eval.json", "--predictions", f"{ck}/pred.jsonl"],
                            env=run_env, stdout=out, stderr=err, pass_fds=(lock.fileno(),)):
                    log(f"[table] {name}: evaluation failed, see {ck}/eval.log")
                    return False
            command_output(f"{res}/{name}.pred.jsonl.gz", [*GZIP, "-c", f"{ck}/pred.jsonl"])
            keep_log(f"{ck}/train.log", f"{res}/{name}.train.log.gz",
                     [(ckpts, "<checkpoints>"), (pretrained, "<pretrained>"), (data_root, "<data>")])
            with open(f"{ck}/eval.txt", encoding="utf-8", errors="surrogateescape") as fh:
                scored = fh.read()
            write_text(f"{res}/{name}.eval.txt", scored)
            with open(f"{ck}/eval.json", encoding="utf-8") as fh:
                r = json.load(fh)
            with open(f"{ck}/train.log", encoding="utf-8", errors="replace") as fh:
                device = re.findall(r"rank\s+0: capabilities = .* ; name = (.*)", fh.read())
            r.pop("checkpoint", None)  # a machine path; the run is named by task, system and seed
            r.update(task=task, system=system, seed=seed, max_update=n, metric=metric,
                     best_update=fairseq_best(validations(f"{ck}/train.log", metric, by="update")),
                     device=device[-1].strip() if device else "cpu")
            write_record(f"{res}/{name}.record.json", study=table["study"], system=f"{task}_{system}", seed=seed,
                         recipe={"max_update": n, "lr": 5e-05, "batch_size": 32}, data=data,
                         split=SCORED_SPLIT[task], scored=r.get("sentences"), log=f"{ck}/train.log")
            write_text(f"{res}/{name}.eval.json", json.dumps(r, indent=1))
            for f in [f"{ck}/checkpoint_last.pt"] + glob.glob(f"{glob.escape(ck)}/checkpoint_*_*.pt"):
                if os.path.exists(f):
                    os.remove(f)  # the best stays (the gate figure, the NER hub)
            log(f"[table] {name}: {scored.splitlines()[0] if scored else ''}")
            return sla_gates(pool, task, system, seed)

    with JobPool(jobs) as pool:
        for r in runs:
            pool.start(finetune, pool, *r)
    if pool.failed:
        raise Stop("[table] some runs failed or were stopped; run again to resume")
    if mode != "no-summary":
        summarize()


def status(runs, res, ckpts, budget, tasks):
    """Where each run stands, and how many of each task are not finished; trains nothing."""
    # a mistyped --out or --checkpoints would otherwise read as a table nothing has started on
    if not os.path.isdir(res):
        log(f"[table] note: {res} does not exist: no run has finished there")
    if not os.path.isdir(ckpts):
        log(f"[table] note: {ckpts} does not exist: no run has started there")
    left = {}
    for task, system, seed in runs:
        name, m = f"{task}_{system}_seed{seed}", METRIC[task]
        train_log = f"{ckpts}/{name}/train.log"
        if os.path.isfile(f"{res}/{name}.eval.json"):
            state = "finished: " + describe_results(f"{res}/{name}.eval.json",
                                                    f"{m} {{{m}:.2f}} on {{split}}, best at update {{best_update}}")
        else:
            left[task] = left.get(task, 0) + 1
            if os.path.isfile(train_log):  # the last update logged (train_inner: num_updates=N, valid: num_updates N)
                with open(train_log, encoding="utf-8", errors="replace") as fh:
                    found = re.findall(r"num_updates[ =]([0-9]+)", fh.read())
                last = int(found[-1]) if found else 0
                state = f"training: update {last} of {budget[task]}"
                vals = validations(train_log, m, by="update")
                if vals:
                    best = fairseq_best(vals)
                    state += f", best dev {m} so far {vals[best][0]} at update {best}"
                p = pace(train_log)
                if p and last < budget[task]:
                    state += f"; about {round((budget[task] - last) * p[0] / 60)} min left at its pace of the last {p[1]} updates"
            else:
                state = "not started"
        print(f"{task} {system} seed {seed}: {state}", flush=True)
    rest = ", ".join(f"{t} {left[t]}" for t in tasks if t in left)
    todo = sum(left.values())
    print(f"finished {len(runs) - todo} of {len(runs)}" + (f"; not finished: {rest}" if rest else ""), flush=True)


def _status(argv, **kwargs) -> int:
    """A command's exit status, outside the pool (the gates of runs an older copy finished)."""
    return subprocess.run([str(a) for a in argv], **kwargs).returncode


if __name__ == "__main__":
    sys.exit(run_main(main))
