"""Train BiDAF-SA-Early with and without CorefAll supervision on the prepared LAMBADA data, same budget,
and evaluate both on the LAMBADA dev set (the `test` split of data-prep/lambada.sh).

  bash examples/lambada/reproduce.sh [--data work/lambada/bin] [--updates 1000] [--warmup 250]
                                    [--batch-size 32] [--seeds "1"] [--runs "sa_early sa_early_corefall"]
                                    [--jobs 2] [--out results/lambada] [--stopwords FILE]
                                    [--converge [--valid-interval 500] [--patience 5] [--max-update 30000]]
                                    [--fp16] [--tag NAME] [--readme FILE] [--checkpoints work/checkpoints/lambada]
                                    [--status | --summary-only | --no-summary | --snapshot]

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
The summary's table also goes into examples/lambada/README.md's lambada-summary block (--readme FILE for another
file; with --out, only if --readme is given). --fp16 (on a GPU) trains into work/checkpoints/lambada_fp16 and
results/lambada_fp16 (no README table unless --readme), never into the fp32 runs; the summary refuses a mix.
--status says where each run of the same options stands (finished, its dev accuracy; or its validations so far)
and trains nothing; --summary-only summarizes the finished runs and trains nothing
(examples/studies/study_runner.py). --snapshot trains nothing either: it scores the best checkpoint so far of each
run that has not finished (one stopped by a time limit, say) into $RES/snapshot and summarizes them there, as fixed
budgets, not converged; the runs resume and finish as before. Nothing needs installing: where fairseq and this package
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
from fairseq_syntax.pipeline.jobs import threads_per_job  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, from_caller, hide_paths, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, need_ints, need_name, parse  # noqa: E402
from examples.studies import early_stopping, run_protocol  # noqa: E402
from examples.studies.result_files import describe as describe_results  # noqa: E402
from examples.studies.run_record import write_record  # noqa: E402
from examples.studies.runs import (console_env, flag_keys, need_block, no_quick_study, require_gpu,  # noqa: E402
                                   same_run, user_dir)
from examples.studies.study_runner import MODE_FLAGS, Run, Study, each_run, mode_of, run_study  # noqa: E402
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
              ("--converge", "--fp16", "--snapshot", *MODE_FLAGS), __doc__)
    mode = "snapshot" if o["snapshot"] else mode_of(o)
    if o["snapshot"] and mode_of(o) != "train":
        raise Stop("--snapshot scores the unfinished runs; give it without --status, --summary-only, --no-summary")
    for opt in ("data", "out", "readme", "checkpoints", "stopwords"):
        if f"--{opt}" in argv:
            o[opt] = from_caller(o[opt])
    if o["tag"]:
        need_name("--tag", o["tag"])
    if mode != "status":
        no_quick_study()
    jobs = need_int("--jobs", o["jobs"], 1)
    res, ckpts = o["out"], o["checkpoints"]
    readme = o["readme"] if "--readme" in argv else ("" if "--out" in argv else None)
    if o["fp16"]:  # half-precision runs never resume, overwrite or join the fp32 ones
        if not res:
            res = f"{ROOT}/results/lambada_fp16"
            readme = o["readme"] if "--readme" in argv else ""
        ckpts = ckpts or "work/checkpoints/lambada_fp16"
        if mode in ("train", "no-summary"):
            require_gpu("lambada")
    o["out"] = res or f"{ROOT}/results/lambada"
    o["checkpoints"] = ckpts or "work/checkpoints/lambada"  # relative to the checkout: it is written into eval.json
    readme = f"{ROOT}/examples/lambada/README.md" if readme is None else readme
    if readme:
        need_block(readme, "lambada-summary")
    os.chdir(ROOT)
    stopwords = o["stopwords"] or local_copy("lambada/stopwords.txt") or "stopwords.txt"
    if o["stopwords"] and not os.path.isfile(stopwords):
        raise Stop(f"--stopwords {stopwords}: no such file")
    study = LambadaStudy(o, readme, stopwords, threads_per_job(jobs))
    if mode == "status":
        run_study(study, mode, jobs)
        return
    if not os.path.isfile(f"{study.data}/dict.txt"):
        raise Stop(f"no prepared data in {study.data}: run data-prep/lambada.sh first")
    os.makedirs(study.res, exist_ok=True)
    for run in o["runs"].split():
        if run not in RUNS:
            raise Stop(f"unknown run {run} ({', '.join(RUNS)})")
    if mode == "snapshot":
        study.snapshot(jobs)
    else:
        run_study(study, mode, jobs)
        if mode == "train":
            log(f"[lambada] results in {study.res} (summary.json: the table and exact McNemar tests between the runs)")


class LambadaStudy(Study):
    """BiDAF-SA-Early with and without supervision, same budget (or stopping rule), the best checkpoint scored."""

    label = "lambada"

    def __init__(self, o, readme, stopwords, threads):
        self.o, self.readme, self.stopwords = o, readme, stopwords
        self.res, self.ckpts = o["out"], o["checkpoints"]
        # numbers are checked as numbers before anything computes with them
        self.updates = need_int("--updates", o["updates"], 10)
        self.warmup = need_int("--warmup", o["warmup"])
        self.bsz = need_int("--batch-size", o["batch_size"], 1)
        self.interval = need_int("--valid-interval", o["valid_interval"], 1)
        self.patience = need_int("--patience", o["patience"])
        self.max_update = need_int("--max-update", o["max_update"], 1)
        self.fp16, self.converge = o["fp16"], o["converge"]
        self.data = o["data"] or f"{ROOT}/work/lambada/bin"
        self.tag = f"{o['tag']}_" if o["tag"] else ""
        self.env = console_env(threads)
        self.hide = [(self.ckpts, "<checkpoints>"), (self.data, "<data>")]  # --checkpoints or --data outside
        runs = o["runs"].split()
        super().__init__([Run(f"{self.tag}{run}_seed{seed}", run, seed)
                          for seed in need_ints("--seeds", o["seeds"]) for run in runs])
        first = self.runs[0]
        self.recipe = {k: float(v) if k in ("lr", "dropout") else v for k, v in self.keys(first).items()
                       if k in ("batch_size", "lr", "warmup_updates", "dropout", "max_update",
                                "validate_interval_updates")} if first.system in RUNS else {}

    def title(self, run):
        return f"{self.tag}{run.system} seed {run.seed}"

    def folder(self, run):
        return f"{self.ckpts}/{run.name}"

    def finished(self, run, dest=None):
        """Its evaluation and predictions are in the results (or ``dest``)."""
        dest = dest or self.res
        return os.path.isfile(f"{dest}/{run.name}.eval.json") and os.path.isfile(f"{dest}/{run.name}.pred.jsonl.gz")

    def rule(self, log_path, budget=None):
        """The convergence of a run from its log: converging, the stopping rule's; else its fixed budget's."""
        if budget is None:
            return early_stopping.convergence(log_path, "accuracy", self.patience, self.max_update, True, "update")
        return early_stopping.convergence(log_path, "accuracy", 0, budget, True, "update")

    def state(self, run):
        train_log = f"{self.ckpts}/{run.name}.train.log"
        if self.finished(run):
            found = describe_results(f"{self.res}/{run.name}.eval.json", "LAMBADA dev accuracy {all[accuracy]}")
            return f"finished; {found} ({self.res}/{run.name}.eval.json)"
        if os.path.isfile(train_log) and self.converge:
            return early_stopping.describe(self.rule(train_log), "accuracy", "update", self.patience, self.max_update)
        if os.path.isfile(train_log):
            return early_stopping.describe(self.rule(train_log, self.updates), "accuracy", "update", 0, self.updates)
        return "not started"

    def keys(self, run):
        """The fairseq options that make this run what it is."""
        k = {"seed": run.seed, "batch_size": self.bsz, "lr": "0.001", "warmup_updates": self.warmup, "dropout": "0.1",
             "fp16": "True" if self.fp16 else "False", **flag_keys(RUNS[run.system])}
        if self.converge:
            k["validate_interval_updates"] = self.interval
        else:
            k.update(max_update=self.updates, validate_interval_updates=self.updates // 10)
        return k

    def check(self, run):
        """A finished run was made with these options (and, converging, stopped where this rule stops it); a
        stopped one trained with them so far."""
        state, train_log = "running", f"{self.ckpts}/{run.name}.train.log"
        if self.finished(run):
            state, train_log = "finished", f"{self.res}/{run.name}.train.log.gz"
        same_run(train_log, HINT, self.keys(run))
        if self.converge and os.path.isfile(train_log):
            problem = early_stopping.agrees(train_log, "accuracy", self.patience, self.max_update, True, "update", 0.0,
                                            state == "finished")
            if problem:
                raise Stop(f"{problem}. {HINT}")

    def protocol(self):
        # a trial (another budget, a seed 6) never trains into the table's folder
        run_protocol.write_or_check(self.res, [r.system for r in self.runs], [r.seed for r in self.runs],
                                    self.recipe, RUNS, tag=self.o["tag"])

    def fairseq_train(self, pool, run, lock, *flags):
        """fairseq-train of one run into its folder, appending to its .train.log."""
        ck = self.folder(run)
        with open(f"{ck}.train.log", "ab") as fh:
            return pool.run(["fairseq-train", self.data, "--user-dir", user_dir(), "--task", "lambada_reader",
                             *RUNS[run.system], "--criterion", "pointer_sum", "--optimizer", "adam", "--lr", "1e-3",
                             "--lr-scheduler", "inverse_sqrt", "--warmup-updates", self.warmup, "--warmup-init-lr",
                             "1e-7", "--batch-size", self.bsz, "--dropout", "0.1", "--seed", run.seed,
                             "--keep-interval-updates", "1", "--no-epoch-checkpoints", "--best-checkpoint-metric",
                             "accuracy", "--maximize-best-checkpoint-metric", "--save-dir", ck, "--log-format",
                             "simple", "--log-interval", "25", *(["--fp16"] if self.fp16 else []), *flags],
                            env=self.env, stdout=fh, stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),)) == 0

    def evaluate(self, pool, run, dest, lock=None):
        """Score the run's best checkpoint on the test split, into ``dest``."""
        ck, name = self.folder(run), run.name
        with open(f"{ck}.eval.txt", "wb") as out, open(f"{ck}.train.log", "ab") as err:
            if pool.run(["fairseq-syntax-lambada-eval", self.data, "--path", f"{ck}/checkpoint_best.pt", "--split",
                         "test", "--json", f"{ck}.eval.json", "--predictions", f"{ck}.pred.jsonl"], env=self.env,
                        stdout=out, stderr=err, pass_fds=(lock.fileno(),) if lock else ()):
                log(f"[lambada] {name}: evaluation failed, see {ck}.train.log")
                return False
        keep_log(f"{ck}.train.log", f"{dest}/{name}.train.log.gz", self.hide)
        command_output(f"{dest}/{name}.pred.jsonl.gz", [*GZIP, "-c", f"{ck}.pred.jsonl"])
        with open(f"{ck}.eval.txt", encoding="utf-8", errors="surrogateescape") as fh:
            text = fh.read()
        write_text(f"{dest}/{name}.eval.txt", text)
        with open(f"{ck}.eval.json", encoding="utf-8") as fh:  # it names the checkpoint it scored
            scored = fh.read()
        write_record(f"{dest}/{name}.record.json", study="lambada", system=f"{self.tag}{run.system}", seed=run.seed,
                     recipe=self.recipe, data=self.data, split="test", scored=json.loads(scored)["all"]["n"],
                     log=f"{ck}.train.log")
        write_text(f"{dest}/{name}.eval.json", hide_paths(scored, self.hide))
        sys.stderr.write(text)
        return True

    def train(self, pool, run, lock):
        ck, name, interval = self.folder(run), run.name, self.interval
        if self.converge:
            while True:
                c = self.rule(f"{ck}.train.log")
                if c["stopped"]:
                    break
                nxt = early_stopping.next_update(c, interval, self.patience, self.max_update)
                log(f"[lambada] {name}: training to update {nxt}")
                if not self.fairseq_train(pool, run, lock, "--max-update", nxt, "--validate-interval-updates",
                                          interval, "--save-interval-updates", interval, "--validate-interval",
                                          "100000"):
                    return False
        elif not os.path.isfile(f"{ck}/checkpoint_best.pt") or not _done_training(f"{ck}.train.log"):
            log(f"[lambada] {name}: {self.updates} updates")
            if not self.fairseq_train(pool, run, lock, "--max-update", self.updates, "--validate-interval-updates",
                                      self.updates // 10, "--save-interval-updates", self.updates // 10):
                return False
        return self.evaluate(pool, run, self.res, lock)

    def summarize(self, folder=None, readme=None):
        """The table and paired tests of the runs in ``folder`` (the results)."""
        args = ["--results", folder or self.res, "--patience", self.patience, "--max-update", self.max_update,
                "--valid-interval", self.interval]
        readme = self.readme if readme is None else readme
        if readme:
            args += ["--readme", readme]
        inst = f"{os.path.dirname(self.data)}/raw/test.inst.jsonl"  # for the most-frequent-context-word reference
        if os.path.isfile(inst) and os.path.isfile(self.stopwords):
            args += ["--instances", inst, "--stopwords", self.stopwords]
        run_tool([sys.executable, "examples/lambada/summarize.py", *args], env=self.env)

    def snapshot(self, jobs):
        """The unfinished runs' best checkpoints so far, scored into results/snapshot and summarized there."""
        snap = f"{self.res}/snapshot"
        clear_snapshot(snap)  # a run that finished since the last snapshot is not shown as it stood

        def one(pool, run):
            ck = self.folder(run)
            if self.finished(run) or not os.path.isfile(f"{ck}/checkpoint_best.pt"):
                return True
            os.makedirs(snap, exist_ok=True)
            so_far = early_stopping.describe(self.rule(f"{ck}.train.log"), "accuracy", "update", self.patience,
                                             self.max_update)
            log(f"[lambada] snapshot of {run.name}: {so_far}")
            return self.evaluate(pool, run, snap)

        each_run(self.runs, one, jobs, f"[lambada] a snapshot's evaluation failed (see {self.ckpts}/<run>.train.log)")
        if not glob.glob(f"{glob.escape(snap)}/*.eval.json"):
            raise Stop("[lambada] no unfinished run has a checkpoint to score")
        self.summarize(snap, "")
        log(f"[lambada] snapshot in {snap} (fixed budgets, not converged; the runs resume as before)")


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
