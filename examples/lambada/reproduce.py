"""Train BiDAF-SA-Early with and without CorefAll supervision on the prepared LAMBADA data, same budget,
and evaluate both on the LAMBADA dev set (the `test` split of data-prep/lambada.sh).

  bash examples/lambada/reproduce.sh [--data work/lambada/bin] [--updates 1000] [--warmup 250]
                                    [--batch-size 32] [--seeds "1"] [--runs "sa_early sa_early_corefall"]
                                    [--jobs 2] [--out results/lambada] [--stopwords FILE]
                                    [--converge [--valid-interval 500] [--patience 5] [--max-update 30000]]
                                    [--fp16] [--tag NAME] [--readme FILE] [--checkpoints work/checkpoints/lambada]
                                    [--status] [--snapshot]

Runs: sa_early (no supervision), sa_early_corefall (CorefAll on head 0 of layer 3, λ = 0.3), and, if
asked for, bidaf (the baseline), sa_early_depparse, sa_early_corefprev, sa_early_corefnext, sa_early_narrative
(the paper's Table 5, the same head and λ). Adam lr 1e-3 with the Transformer schedule
(inverse square root after --warmup updates), dropout 0.1, weights averaged with decay 0.9999; the
best checkpoint by valid accuracy (chu_sample_valid, checked 10 times) is evaluated with
fairseq-syntax-lambada-eval (accuracies in {run}_seed{s}.eval.json, one line per instance in .pred.jsonl.gz),
and examples/lambada/summarize.py tabulates them with exact McNemar tests between runs. --jobs 2 trains
two runs side by side, the cores split among them. A finished run (its .eval.json and .pred.jsonl.gz) is skipped,
so the script resumes; a stopped run continues from checkpoint_last. One made with other options (its log's
fairseq configuration, or where the stopping rule ends it) stops the script before anything trains.
--converge trains until valid accuracy has not improved for --patience validations (one every
--valid-interval updates; capped at --max-update), decided from the whole log by examples/studies/early_stopping.py,
so an interrupted run stops where an uninterrupted one would. --tag prefixes the run names (e.g. converged).
The summary's table also goes into examples/lambada/README.md's lambada-summary block (--readme FILE for another file; with
--out, only if --readme is given). --fp16 (on a GPU) trains into work/checkpoints/lambada_fp16 and
results/lambada_fp16 (no README table unless --readme), never into the fp32 runs; the summary refuses a mix.
--status says where each run of the same options stands (finished, its dev accuracy; or its validations so far)
and trains nothing. --snapshot trains nothing either: it scores the best checkpoint so far of each run that has
not finished (one stopped by a time limit, say) into $RES/snapshot and summarizes them there, as fixed budgets,
not converged; the runs resume and finish as before. Nothing needs installing: where fairseq and this package
are only importable (fairseq's source on PYTHONPATH, nothing installed), wrappers stand in for their console scripts
(examples/studies/runs.py).
A folder or file you name is taken from where you run the script; the defaults are in the checkout.
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from fairseq_syntax.local_data import local_copy  # noqa: E402
from fairseq_syntax.pipeline.atomic import GZIP, command_output, write_text  # noqa: E402
from fairseq_syntax.pipeline.jobs import JobPool, threads_per_job  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, from_caller, hide_paths, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, need_ints, need_name, parse  # noqa: E402
from examples.studies import early_stopping, run_protocol  # noqa: E402
from examples.studies.result_files import describe as describe_results  # noqa: E402
from examples.studies.run_record import write_record  # noqa: E402
from examples.studies.runs import (console_env, flag_keys, lock_run, need_block, no_quick_study,  # noqa: E402
                                         require_gpu, same_run, user_dir)
from examples.studies.training_log import open_log  # noqa: E402

RUNS = {  # the arch and supervision of a named run
    "bidaf": ["--arch", "bidaf", "--signals", "none"],
    "sa_early": ["--arch", "bidaf_sa_early", "--signals", "none"],
    "sa_early_corefall": ["--arch", "bidaf_sa_early", "--signals", "CorefAll", "--sup-lambda", "0.3"],
    "sa_early_narrative": ["--arch", "bidaf_sa_early", "--signals", "Narrative", "--sup-lambda", "0.3"],
    "sa_early_depparse": ["--arch", "bidaf_sa_early", "--signals", "DepParse", "--sup-lambda", "0.3"],
    "sa_early_corefprev": ["--arch", "bidaf_sa_early", "--signals", "CorefPrev", "--sup-lambda", "0.3"],
    "sa_early_corefnext": ["--arch", "bidaf_sa_early", "--signals", "CorefNext", "--sup-lambda", "0.3"],
}
HINT = ("Give another --tag (or --out and --checkpoints), or remove that run's results and checkpoints to train it "
        "again")


def main(argv):
    o = parse(argv, {"--data": "", "--updates": "1000", "--warmup": "250", "--batch-size": "32", "--seeds": "1",
                     "--runs": "sa_early sa_early_corefall", "--jobs": "2", "--out": "", "--readme": "",
                     "--checkpoints": "", "--stopwords": "", "--valid-interval": "500", "--patience": "5",
                     "--max-update": "30000", "--tag": ""},
              ("--converge", "--fp16", "--status", "--snapshot"), __doc__)
    for opt in ("data", "out", "readme", "checkpoints", "stopwords"):
        if f"--{opt}" in argv:
            o[opt] = from_caller(o[opt])
    if o["tag"]:
        need_name("--tag", o["tag"])
    if not o["status"]:
        no_quick_study()
    # numbers are checked as numbers before anything computes with them
    updates = need_int("--updates", o["updates"], 10)
    warmup = need_int("--warmup", o["warmup"])
    bsz = need_int("--batch-size", o["batch_size"], 1)
    jobs = need_int("--jobs", o["jobs"], 1)
    interval = need_int("--valid-interval", o["valid_interval"], 1)
    patience = need_int("--patience", o["patience"])
    max_update = need_int("--max-update", o["max_update"], 1)
    seeds = need_ints("--seeds", o["seeds"])
    env = console_env(threads_per_job(jobs))
    fp16, converge = o["fp16"], o["converge"]
    res, ckpts = o["out"], o["checkpoints"]
    readme = o["readme"] if "--readme" in argv else ("" if "--out" in argv else None)
    if fp16:  # half-precision runs never resume, overwrite or join the fp32 ones
        if not res:
            res = f"{ROOT}/results/lambada_fp16"
            readme = o["readme"] if "--readme" in argv else ""
        ckpts = ckpts or "work/checkpoints/lambada_fp16"
        if not (o["status"] or o["snapshot"]):
            require_gpu("lambada")
    res = res or f"{ROOT}/results/lambada"
    ckpts = ckpts or "work/checkpoints/lambada"  # relative to the checkout: it is written into eval.json
    readme = f"{ROOT}/examples/lambada/README.md" if readme is None else readme
    if readme:
        need_block(readme, "lambada-summary")
    os.chdir(ROOT)
    stopwords = o["stopwords"] or local_copy("lambada/stopwords.txt") or "stopwords.txt"
    if o["stopwords"] and not os.path.isfile(stopwords):
        raise Stop(f"--stopwords {stopwords}: no such file")
    data = o["data"] or f"{ROOT}/work/lambada/bin"
    tag = f"{o['tag']}_" if o["tag"] else ""
    runs = o["runs"].split()
    names = [(run, seed, f"{tag}{run}_seed{seed}") for seed in seeds for run in runs]

    def finished(name, dest=res):  # its evaluation and predictions are in the results
        return os.path.isfile(f"{dest}/{name}.eval.json") and os.path.isfile(f"{dest}/{name}.pred.jsonl.gz")

    def rule(log_path, budget=None):
        """The convergence of a run from its log: converging, the stopping rule's; else its fixed budget's."""
        if budget is None:
            return early_stopping.convergence(log_path, "accuracy", patience, max_update, True, "update")
        return early_stopping.convergence(log_path, "accuracy", 0, budget, True, "update")

    if o["status"]:  # where each run stands, from its results or its log; trains nothing
        for run, seed, name in names:
            train_log = f"{ckpts}/{name}.train.log"
            if finished(name):
                state = (f"finished; {describe_results(f'{res}/{name}.eval.json', 'LAMBADA dev accuracy {all[accuracy]}')}"
                         f" ({res}/{name}.eval.json)")
            elif os.path.isfile(train_log) and converge:
                state = early_stopping.describe(rule(train_log), "accuracy", "update", patience, max_update)
            elif os.path.isfile(train_log):
                state = early_stopping.describe(rule(train_log, updates), "accuracy", "update", 0, updates)
            else:
                state = "not started"
            print(f"{tag}{run} seed {seed}: {state}", flush=True)
        return
    if not os.path.isfile(f"{data}/dict.txt"):
        raise Stop(f"no prepared data in {data}: run data-prep/lambada.sh first")
    os.makedirs(res, exist_ok=True)
    for run in runs:
        if run not in RUNS:
            raise Stop(f"unknown run {run} ({', '.join(RUNS)})")

    def keys(run, seed):  # the fairseq options that make this run what it is
        k = {"seed": seed, "batch_size": bsz, "lr": "0.001", "warmup_updates": warmup, "dropout": "0.1",
             "fp16": "True" if fp16 else "False", **flag_keys(RUNS[run])}
        if converge:
            k["validate_interval_updates"] = interval
        else:
            k.update(max_update=updates, validate_interval_updates=updates // 10)
        return k

    # before anything trains or is scored: every finished run was made with these options (and, converging,
    # stopped where this rule stops it), and every stopped one trained with them so far
    for run, seed, name in names:
        state, train_log = "running", f"{ckpts}/{name}.train.log"
        if finished(name):
            state, train_log = "finished", f"{res}/{name}.train.log.gz"
        same_run(train_log, HINT, keys(run, seed))
        if converge and os.path.isfile(train_log):
            problem = early_stopping.agrees(train_log, "accuracy", patience, max_update, True, "update", 0.0,
                                            state == "finished")
            if problem:
                raise Stop(f"{problem}. {HINT}")
    recipe = {k: float(v) if k in ("lr", "dropout") else v for k, v in keys(runs[0], seeds[0]).items()
              if k in ("batch_size", "lr", "warmup_updates", "dropout", "max_update", "validate_interval_updates")}
    # a trial (another budget, a seed 6) never trains into the table's folder
    run_protocol.write_or_check(res, runs, seeds, recipe, RUNS, tag=o["tag"])

    hide = [(ckpts, "<checkpoints>"), (data, "<data>")]  # --checkpoints or --data outside the checkout

    def train(pool, run, seed, ck, lock, *flags):  # fairseq-train of one run into ck, appending to ck.train.log
        with open(f"{ck}.train.log", "ab") as fh:
            return pool.run(["fairseq-train", data, "--user-dir", user_dir(), "--task", "lambada_reader", *RUNS[run],
                             "--criterion", "pointer_sum", "--optimizer", "adam", "--lr", "1e-3", "--lr-scheduler",
                             "inverse_sqrt", "--warmup-updates", warmup, "--warmup-init-lr", "1e-7", "--batch-size",
                             bsz, "--dropout", "0.1", "--seed", seed, "--keep-interval-updates", "1",
                             "--no-epoch-checkpoints", "--best-checkpoint-metric", "accuracy",
                             "--maximize-best-checkpoint-metric", "--save-dir", ck, "--log-format", "simple",
                             "--log-interval", "25", *(["--fp16"] if fp16 else []), *flags],
                            env=env, stdout=fh, stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),)) == 0

    def evaluate(pool, name, ck, dest, lock=None):  # score ck's best checkpoint on the test split, into dest
        with open(f"{ck}.eval.txt", "wb") as out, open(f"{ck}.train.log", "ab") as err:
            if pool.run(["fairseq-syntax-lambada-eval", data, "--path", f"{ck}/checkpoint_best.pt", "--split", "test",
                         "--json", f"{ck}.eval.json", "--predictions", f"{ck}.pred.jsonl"], env=env, stdout=out,
                        stderr=err, pass_fds=(lock.fileno(),) if lock else ()):
                log(f"[lambada] {name}: evaluation failed, see {ck}.train.log")
                return False
        keep_log(f"{ck}.train.log", f"{dest}/{name}.train.log.gz", hide)
        command_output(f"{dest}/{name}.pred.jsonl.gz", [*GZIP, "-c", f"{ck}.pred.jsonl"])
        with open(f"{ck}.eval.txt", encoding="utf-8", errors="surrogateescape") as fh:
            text = fh.read()
        write_text(f"{dest}/{name}.eval.txt", text)
        with open(f"{ck}.eval.json", encoding="utf-8") as fh:  # it names the checkpoint it scored
            scored = fh.read()
        run, seed = run_protocol.split_run(name[len(tag):])
        write_record(f"{dest}/{name}.record.json", study="lambada", system=f"{tag}{run}", seed=seed, recipe=recipe,
                     data=data, split="test", scored=json.loads(scored)["all"]["n"], log=f"{ck}.train.log")
        write_text(f"{dest}/{name}.eval.json", hide_paths(scored, hide))
        sys.stderr.write(text)
        return True

    def train_eval(pool, run, seed, name):
        if finished(name):
            log(f"[lambada] skip {name} (done)")
            return True
        ck = f"{ckpts}/{name}"
        lock = lock_run(ck)
        if lock is None:
            return False
        with lock:
            if converge:
                while True:
                    c = rule(f"{ck}.train.log")
                    if c["stopped"]:
                        break
                    nxt = early_stopping.next_update(c, interval, patience, max_update)
                    log(f"[lambada] {name}: training to update {nxt}")
                    if not train(pool, run, seed, ck, lock, "--max-update", nxt, "--validate-interval-updates",
                                 interval, "--save-interval-updates", interval, "--validate-interval", "100000"):
                        return False
            elif not os.path.isfile(f"{ck}/checkpoint_best.pt") or not _done_training(f"{ck}.train.log"):
                log(f"[lambada] {name}: {updates} updates")
                if not train(pool, run, seed, ck, lock, "--max-update", updates, "--validate-interval-updates",
                             updates // 10, "--save-interval-updates", updates // 10):
                    return False
            return evaluate(pool, name, ck, res, lock)

    def summarize(folder, readme_path=""):  # the table and paired tests of the runs in folder
        args = ["--results", folder, "--patience", patience, "--max-update", max_update, "--valid-interval", interval]
        if readme_path:
            args += ["--readme", readme_path]
        inst = f"{os.path.dirname(data)}/raw/test.inst.jsonl"  # for the most-frequent-context-word reference
        if os.path.isfile(inst) and os.path.isfile(stopwords):
            args += ["--instances", inst, "--stopwords", stopwords]
        run_tool([sys.executable, "examples/lambada/summarize.py", *args], env=env)

    if o["snapshot"]:  # the unfinished runs' best checkpoints so far, scored beside the results
        clear_snapshot(f"{res}/snapshot")  # a run that finished since the last snapshot is not shown as it stood

        def snapshot(pool, run, seed, name):
            ck = f"{ckpts}/{name}"
            if finished(name) or not os.path.isfile(f"{ck}/checkpoint_best.pt"):
                return True
            os.makedirs(f"{res}/snapshot", exist_ok=True)
            log(f"[lambada] snapshot of {name}: "
                f"{early_stopping.describe(rule(f'{ck}.train.log'), 'accuracy', 'update', patience, max_update)}")
            return evaluate(pool, name, ck, f"{res}/snapshot")

        with JobPool(jobs) as pool:
            for run, seed, name in names:
                pool.start(snapshot, pool, run, seed, name)
        if pool.failed:
            raise Stop(f"[lambada] a snapshot's evaluation failed (see {ckpts}/<run>.train.log)")
        if not glob.glob(f"{glob.escape(res)}/snapshot/*.eval.json"):
            raise Stop("[lambada] no unfinished run has a checkpoint to score")
        summarize(f"{res}/snapshot")
        log(f"[lambada] snapshot in {res}/snapshot (fixed budgets, not converged; the runs resume as before)")
        return

    with JobPool(jobs) as pool:
        for run, seed, name in names:
            pool.start(train_eval, pool, run, seed, name)
    if pool.failed:
        raise Stop("[lambada] some runs failed or were stopped; run again to resume")
    summarize(res, readme)
    log(f"[lambada] results in {res} (summary.json: the table and exact McNemar tests between the runs)")


def _done_training(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    with open_log(path) as fh:
        return any("done training" in line for line in fh)


def clear_snapshot(d: str) -> None:
    """The files an earlier snapshot wrote go; nothing else there is touched, nothing through a link."""
    if os.path.islink(d):
        raise Stop(f"{d} is a link; nothing is deleted through it: remove it or give another --out")
    for pattern in ("*.eval.json", "*.eval.txt", "*.pred.jsonl.gz", "*.train.log.gz", "summary.json", "summary.md"):
        for f in glob.glob(f"{glob.escape(d)}/{pattern}"):
            if os.path.isfile(f) and not os.path.islink(f):
                os.remove(f)


if __name__ == "__main__":
    sys.exit(run_main(main))
