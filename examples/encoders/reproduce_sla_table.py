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
left at its pace) and how many runs of each task are not finished; --summary-only summarizes the finished runs and
trains nothing (it does compute the gates of a finished run that lacks them, from --checkpoints).
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
from fairseq_syntax.pipeline.jobs import threads_per_job  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, from_caller, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, need_ints, parse  # noqa: E402
from examples.studies.early_stopping import fairseq_best, validations  # noqa: E402
from examples.studies.result_files import describe as describe_results  # noqa: E402
from examples.studies.run_record import data_fingerprint, most_held, read_record, write_record  # noqa: E402
from examples.studies.runs import (console_env, corpus_dir, fine_tune_start, flag_keys, need_block,  # noqa: E402
                                   need_corpus, no_quick_study, same_run, user_dir)
from examples.studies.study_runner import MODE_FLAGS, Run, Study, mode_of, run_study  # noqa: E402
from examples.studies.table_protocol import METRIC, SCORED_SPLIT, write_or_check  # noqa: E402
from examples.studies.training_log import last_update, open_log, pace  # noqa: E402

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
    "CoNLL-2003": ["--task", "syntax_token_labeling", "--criterion", "token_labeling",
                   "--best-checkpoint-metric", "f1"],
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
    table_name = table_of(argv)
    table = TABLES[table_name]
    o = parse(argv, {"--table": "1", "--tasks": " ".join(table["tasks"]), "--seeds": " ".join(map(str, ALL_SEEDS)),
                     "--systems": " ".join(table["systems"]),
                     **{f"--updates-{t}": n for t, n in table["updates"].items()},
                     "--jobs": "2", "--validations": "10", "--out": "", "--checkpoints": "", "--data-root": "",
                     "--pretrained": "", "--readme": ""}, (*MODE_FLAGS, "--fp16"), __doc__)
    for opt in ("out", "checkpoints", "data_root", "pretrained", "readme"):
        if f"--{opt.replace('_', '-')}" in argv:
            o[opt] = from_caller(o[opt])
    mode = mode_of(o)
    if mode != "status":
        no_quick_study()
    conll_dir, glue_dir = corpus_dir("CONLL2003_DIR", "conll2003"), corpus_dir("GLUE_DIR", "glue")
    os.chdir(ROOT)
    jobs = need_int("--jobs", o["jobs"], 1)
    every_n = need_int("--validations", o["validations"], 1)
    for t in o["tasks"].split():
        if t not in table["tasks"]:
            raise Stop(f"unknown task {t} (table {table_name}: {', '.join(table['tasks'])})")
    for s in o["systems"].split():
        if s not in table["systems"]:
            raise Stop(f"unknown system {s} (table {table_name}: {' '.join(table['systems'])})")
    suffix = "_fp16" if o["fp16"] else ""
    if "--readme" in argv:
        readme = o["readme"]
    else:
        readme = "" if "--out" in argv or suffix else f"{ROOT}/examples/encoders/README.md"
    if readme:
        need_block(readme, table["block"])
    study = TableStudy(table_name, o, every_n, suffix, readme, jobs, {"CoNLL-2003": conll_dir, "glue": glue_dir})
    run_study(study, mode, jobs)


class TableStudy(Study):
    """One table: its tasks x systems x seeds, each fine-tuned from MiniLM to its task's budget, the best checkpoint
    by dev scored."""

    label = "table"

    def __init__(self, table_name, o, every_n, suffix, readme, jobs, local):
        self.table_name, self.table, self.o = table_name, TABLES[table_name], o
        self.every_n, self.suffix = every_n, suffix
        self.readme, self.jobs, self.local = readme, jobs, local
        self.seeds = need_ints("--seeds", o["seeds"])
        self.tasks = o["tasks"].split()
        self.budget = {t: need_int(f"--updates-{t}", o[f"updates_{t.replace('-', '_')}"], every_n)
                       for t in self.table["tasks"]}
        self.res = o["out"] or f"{ROOT}/results/encoders_table{table_name}{suffix}"
        self.ckpts = os.path.join(ROOT, o["checkpoints"] or f"work/checkpoints/encoders_table{table_name}{suffix}")
        self.data_root = os.path.join(ROOT, o["data_root"] or "work")
        self.pretrained = os.path.join(ROOT, o["pretrained"] or "work/minilm")
        self.env, self.run_env = console_env(), console_env(threads_per_job(jobs))
        systems, controls = o["systems"].split(), self.table["controls"]
        # the order they train in: the first seed's baselines (the budget check), then seeds, tasks, systems
        plan = [(task, "baseline", self.seeds[0]) for task in self.tasks] if "baseline" in systems else []
        for seed in self.seeds:
            for task in self.tasks:
                for system in systems:
                    if task in controls.get(system, (task,)) and (task, system, seed) not in plan:
                        plan.append((task, system, seed))
        if not plan:
            raise Stop(f"no run in this plan (--tasks '{o['tasks']}', --systems '{o['systems']}'): the controls run on "
                       + "; ".join(f"{c}: {', '.join(t)}" for c, t in controls.items()))
        super().__init__([Run(f"{task}_{system}_seed{seed}", system, seed, task) for task, system, seed in plan])

    def title(self, run):
        return f"{run.task} {run.system} seed {run.seed}"

    def prepared_in(self, task):
        return f"{self.data_root}/conll2003" if task == "CoNLL-2003" else f"{self.data_root}/glue/{task}"

    def folder(self, run):
        return f"{self.ckpts}/{run.name}"

    def finished(self, run):
        return os.path.isfile(f"{self.res}/{run.name}.eval.json")

    def check(self, run):
        n = self.budget[run.task]
        keys = {"seed": run.seed, "lr": "5e-05", "batch_size": 32, "max_update": n,
                "validate_interval_updates": n // self.every_n, "fp16": "True" if self.suffix else "False",
                **flag_keys(SYSTEMS[run.system])}
        for train_log in (f"{self.res}/{run.name}.train.log.gz", f"{self.folder(run)}/train.log"):
            if os.path.isfile(train_log):
                same_run(train_log, HINT, keys)
                break

    def state(self, run):
        """Finished: its score; begun: its update, best dev score so far and time left at its pace."""
        m, n, train_log = METRIC[run.task], self.budget[run.task], f"{self.folder(run)}/train.log"
        if self.finished(run):
            return "finished: " + describe_results(f"{self.res}/{run.name}.eval.json",
                                                   f"{m} {{{m}:.2f}} on {{split}}, best at update {{best_update}}")
        if not os.path.isfile(train_log):
            return "not started"
        last = last_update(train_log)
        state = f"update {last} of {n}"
        vals = validations(train_log, m, by="update")
        if vals:
            best = fairseq_best(vals)
            state += f", best dev {m} so far {vals[best][0]} at update {best}"
        p = pace(train_log)
        if p and last < n:
            state += f"; about {round((n - last) * p[0] / 60)} min left at its pace of the last {p[1]} updates"
        return state

    def status_end(self):
        # a mistyped --out or --checkpoints would otherwise read as a table nothing has started on
        if not os.path.isdir(self.res):
            log(f"[table] note: {self.res} does not exist: no run has finished there")
        if not os.path.isdir(self.ckpts):
            log(f"[table] note: {self.ckpts} does not exist: no run has started there")
        left = {}
        for run in self.runs:
            if not self.finished(run):
                left[run.task] = left.get(run.task, 0) + 1
        rest = ", ".join(f"{t} {left[t]}" for t in self.tasks if t in left)
        todo = sum(left.values())
        print(f"finished {len(self.runs) - todo} of {len(self.runs)}" + (f"; not finished: {rest}" if rest else ""),
              flush=True)

    def protocol(self):
        # the folder's protocol.json (table_protocol.py): written by the call that makes the table, and every later
        # call must fit it, so a trial never trains into a table
        try:
            write_or_check(f"{self.res}/protocol.json", self.budget, self.every_n, self.tasks, self.seeds,
                           self.o["systems"].split(), ALL_SEEDS, list(self.table["systems"]), self.table["tasks"])
        except ValueError as e:
            raise Stop(str(e)) from None

    def prepare(self):
        if not os.path.isfile(f"{self.pretrained}/model.pt"):
            run_tool(["fairseq-syntax-convert-bert", "--out", self.pretrained],
                     f"converting MiniLM into {self.pretrained} failed", env=self.env)
        controls = self.table["controls"]
        random_trees = {t for c in controls if c.endswith("_random_trees") for t in controls[c]}
        for task in self.tasks:
            out = self.prepared_in(task)
            if os.path.isfile(f"{out}/.stamps/binarize") and (
                    task not in random_trees or glob.glob(f"{glob.escape(out)}/bin/input0/*.randheads.bin")):
                # used as it was made: data-prep would redo it with the defaults below (a slice would become the
                # corpus)
                log(f"[table] {task}: using the data prepared in {out}")
                continue
            if task == "CoNLL-2003":
                prep = ["bash", "data-prep/conll2003.sh", "--conll-dir",
                        need_corpus(self.local["CoNLL-2003"], "CONLL2003_DIR", "conll2003")]
            else:
                prep = ["bash", "data-prep/glue.sh", "--task", task, "--glue-dir",
                        need_corpus(self.local["glue"], "GLUE_DIR", "glue")]
            prep += ["--random-trees", "1"] if task in random_trees else []
            run_tool([*prep, "--out", out, "--pretrained", self.pretrained, "--parser", "spacy", "--workers",
                      self.jobs, "--wait"], f"preparing {task} into {out} failed", env=self.env)
        refusals = [why for why in map(self.other_data, self.tasks) if why]
        if refusals:
            raise Stop("; and ".join(refusals))
        os.makedirs(self.res, exist_ok=True)

    def other_data(self, task):
        """Why the prepared data of a task with runs left to train is not the data its finished runs trained on
        (the fingerprint most of their records hold, as the summary holds every run to it), or None: a run on
        other data would train for hours and then be left out of the table by the summary."""
        if all(self.finished(run) for run in self.runs if run.task == task):
            return None
        records = []
        for path in sorted(glob.glob(f"{glob.escape(self.res)}/{glob.escape(task)}_*_seed*.record.json")):
            try:
                records.append(read_record(path))
            except ValueError:
                continue  # the summary names it
        held = most_held([r["data"] for r in records]) if records else None
        bin_dir = f"{self.prepared_in(task)}/bin"
        if held is None or (ours := data_fingerprint(bin_dir)) == held:
            return None  # (records that cannot vouch for their data are the summary's to note)
        holders = [r for r in records if r["data"] == held]
        codes = ", ".join(sorted({str(r["code"]) for r in holders}))
        return (f"{task}: the data in {bin_dir} (fingerprint {ours[:12]}) is not the data the table's "
                f"{len(holders)} finished runs of {task} in {self.res} trained on ({held[:12]}; their records name "
                f"the code {codes}), so the summary would leave every new run out: prepare {task} with that code "
                f"into another --data-root, or give another --out for a new table")

    def gates(self, pool, run):
        """A finished SLA or WLA run's mean gate per layer (Figure 2), from its best checkpoint, once."""
        ck, out = f"{self.folder(run)}/checkpoint_best.pt", f"{self.res}/{run.name}.gates.json"
        if run.system not in GATED or not self.finished(run) or os.path.isfile(out) or not os.path.isfile(ck):
            return True
        with open(f"{self.folder(run)}/gates.log", "wb") as err:
            rc = (pool.run if pool else _status)(
                [sys.executable, "examples/encoders/plot_sla_gates.py", "--checkpoint", ck, "--data",
                 f"{self.prepared_in(run.task)}/bin", "--split", SCORED_SPLIT[run.task], "--run-json", out],
                env=self.run_env, stdout=subprocess.DEVNULL, stderr=err)
        if rc:
            log(f"[table] {run.name}: the gate values failed, see {self.folder(run)}/gates.log")
            return False
        return True

    def when_finished(self, pool, run):
        ok = self.gates(pool, run)
        log(f"[table] skip {run.name} (done)")
        return ok

    def train(self, pool, run, lock):
        task, name, res, ck = run.task, run.name, self.res, self.folder(run)
        n, data = self.budget[task], f"{self.prepared_in(task)}/bin"
        every = n // self.every_n
        start = fine_tune_start(ck, self.pretrained)
        if len(start) > 2:
            log(f"[table] {name}: {n} updates of 32, validation every {every}")
        fp16 = ["--fp16"] if self.suffix else []
        with open(f"{ck}/train.log", "ab") as fh:
            rc = pool.run(["fairseq-train", data, "--user-dir", user_dir(), *TASK_ARGS[task], *SYSTEMS[run.system],
                           *start, "--maximize-best-checkpoint-metric", "--max-positions", "512", "--optimizer",
                           "adam", "--adam-betas", "(0.9, 0.98)", "--adam-eps", "1e-6", "--weight-decay", "0.01",
                           "--clip-norm", "1.0", "--lr", "5e-5", "--lr-scheduler", "polynomial_decay",
                           "--warmup-updates", n * 6 // 100, "--total-num-update", n, "--max-update", n,
                           "--batch-size", "32", "--required-batch-size-multiple", "1", "--dropout", "0.1",
                           "--attention-dropout", "0.1", "--seed", run.seed, "--validate-interval-updates", every,
                           "--save-interval-updates", every, "--keep-interval-updates", "1",
                           "--no-epoch-checkpoints", "--save-dir", ck, "--log-format", "simple", "--log-interval",
                           "50", "--num-workers", "1", *fp16], env=self.run_env, stdout=fh,
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
        # the best checkpoint is scored on the device it trained on, in its precision, as fairseq-train chose it:
        # the GPU where torch sees one (in fp16 for --fp16), else the CPU
        with open(f"{ck}/eval.txt", "wb") as out, open(f"{ck}/eval.log", "wb") as err:
            if pool.run([evaluate, data, "--path", f"{ck}/checkpoint_best.pt", "--split", SCORED_SPLIT[task], *fp16,
                         "--json", f"{ck}/eval.json", "--predictions", f"{ck}/pred.jsonl"],
                        env=self.run_env, stdout=out, stderr=err, pass_fds=(lock.fileno(),)):
                log(f"[table] {name}: evaluation failed, see {ck}/eval.log")
                return False
        command_output(f"{res}/{name}.pred.jsonl.gz", [*GZIP, "-c", f"{ck}/pred.jsonl"])
        keep_log(f"{ck}/train.log", f"{res}/{name}.train.log.gz",
                 [(self.ckpts, "<checkpoints>"), (self.pretrained, "<pretrained>"), (self.data_root, "<data>")])
        with open(f"{ck}/eval.txt", encoding="utf-8", errors="surrogateescape") as fh:
            scored = fh.read()
        write_text(f"{res}/{name}.eval.txt", scored)
        with open(f"{ck}/eval.json", encoding="utf-8") as fh:
            r = json.load(fh)
        with open(f"{ck}/train.log", encoding="utf-8", errors="replace") as fh:
            device = re.findall(r"rank\s+0: capabilities = .* ; name = (.*)", fh.read())
        r.pop("checkpoint", None)  # a machine path; the run is named by task, system and seed
        r.update(task=task, system=run.system, seed=run.seed, max_update=n, metric=metric,
                 best_update=fairseq_best(validations(f"{ck}/train.log", metric, by="update")),
                 device=device[-1].strip() if device else "cpu")
        write_record(f"{res}/{name}.record.json", study=self.table["study"], system=f"{task}_{run.system}",
                     seed=run.seed, recipe={"max_update": n, "lr": 5e-05, "batch_size": 32}, data=data,
                     split=SCORED_SPLIT[task], scored=r.get("sentences"), log=f"{ck}/train.log")
        write_text(f"{res}/{name}.eval.json", json.dumps(r, indent=1))
        for f in [f"{ck}/checkpoint_last.pt"] + glob.glob(f"{glob.escape(ck)}/checkpoint_*_*.pt"):
            if os.path.exists(f):
                os.remove(f)  # the best stays (the gate figure, the NER hub)
        log(f"[table] {name}: {scored.splitlines()[0] if scored else ''}")
        return self.gates(pool, run)

    def summarize(self):
        if os.path.isfile(f"{self.res}/protocol.json"):  # (a folder without one is the summarizer's to refuse)
            self.protocol()
        for run in self.runs:  # runs finished by an older copy of this script
            if not self.gates(None, run):
                raise Stop("the gate values failed")
        run_tool([sys.executable, "examples/encoders/summarize_sla_table.py", "--table", self.table_name, "--results",
                  self.res, "--planned", *[r.name for r in self.runs],
                  *(["--readme", self.readme] if self.readme else [])], env=self.env)


def _status(argv, **kwargs) -> int:
    """A command's exit status, outside the pool (the gates of runs an older copy finished)."""
    return subprocess.run([str(a) for a in argv], **kwargs).returncode


if __name__ == "__main__":
    sys.exit(run_main(main))
