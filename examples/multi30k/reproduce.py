"""Converged comparison on Multi30k EN->DE: the vanilla transformer, SG-Net, and SG-Net's controls, several seeds,
each trained until validation loss stops improving, the best checkpoint scored on every prepared test set.

  bash examples/multi30k/reproduce.sh [--runs "SYSTEM:SEED ..."] [--jobs N] [--patience P] [--min-delta D]
                                     [--max-update N] [--max-len-b N] [--fp16] [--out DIR] [--readme FILE]
                                     [--no-summary | --summary-only | --status]

Systems (same small sizes, recipe and batches; only what the name says differs):
  vanilla              transformer_small_vanilla (3+3 layers)
  sgnet                transformer_sgnet_small (vanilla + one SDOI layer and dual aggregation)
  sgnet_random_trees   sgnet, every source parse replaced by a random tree over the same words (seed 1)
  vanilla_plus1        vanilla with a 4th encoder layer: the parameter-matched baseline
  sgnet_learn_alpha    sgnet --sgnet-learn-alpha
  sgnet_first_head     sgnet --sgnet-subword-mode first_head
The default runs: vanilla and sgnet seeds 1-3, then each control seeds 1-2 (RUNS).
Validation every epoch; training stops after --patience (default 5) epochs without a validation loss lower by
more than --min-delta (default 0.01) than the one that started the count, or at --max-update (default 8000);
the best checkpoint by validation loss is scored. A finished run is stamped and skipped; a stopped one resumes from
checkpoint_last.pt; one whose kept log and hypotheses are in results/ and whose checkpoints are not here (a fresh
clone) is skipped. A run made with other options (its log's fairseq configuration, or where the stopping rule
ends it) stops the script before anything is prepared or trains. --jobs runs that many trainings side by side
(default 2), the cores split among them.
--max-len-b caps each hypothesis at N tokens (fairseq-generate's option; default 200, fairseq's own). A model of a
few updates rarely ends a sentence and decodes the whole 200; the tests give 10. Hypotheses decoded with another cap
are never mixed with these: a folder of hypotheses records a cap other than 200 in hyp/max-len-b, and a call
asking another stops before anything trains.
--fp16 trains in half precision (on a GPU), into checkpoints of their own and results/multi30k_fp16 (no README
table unless --readme): the summary records each run's precision and device, and refuses to average across them.
Hypotheses, compressed logs and the α of learned-α runs go to results/multi30k/ (or --out); then
examples/multi30k/summarize.py writes summary.json and summary.md there (sacreBLEU, mean ± std over seeds, paired
bootstrap per seed) and the table into examples/multi30k/README.md's multi30k-summary block (--readme FILE for
another file; with --out, only if --readme is given).
--summary-only writes the summary of the runs finished so far and trains nothing; --status says where each run is.
The data are $MULTI30K_DATA (default work/multi30k): a finished preparation there is used as it was made;
otherwise data-prep/multi30k.sh prepares the full corpus there. The summary scores the committed hypotheses
against that folder's references, so it must hold the full test sets, not a --max-eval slice.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from fairseq_syntax.local_data import local_copy  # noqa: E402
from fairseq_syntax.pipeline.atomic import GZIP, atomic_path, command_output, write_text  # noqa: E402
from fairseq_syntax.pipeline.jobs import threads_per_job  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, parse  # noqa: E402
from examples.studies import early_stopping, run_protocol  # noqa: E402
from examples.studies.run_record import write_record  # noqa: E402
from examples.studies.runs import (console_env, flag_keys, need_block, no_quick_study, require_gpu,  # noqa: E402
                                   same_run, user_dir)
from examples.studies.study_runner import MODE_FLAGS, Run, Study, mode_of, run_study  # noqa: E402
from examples.studies.training_log import open_log  # noqa: E402

RUNS = ("vanilla:1 sgnet:1 vanilla:2 sgnet:2 vanilla:3 sgnet:3 sgnet_random_trees:1 vanilla_plus1:1 "
        "sgnet_random_trees:2 vanilla_plus1:2 sgnet_learn_alpha:1 sgnet_learn_alpha:2 sgnet_first_head:1 "
        "sgnet_first_head:2")
SG = ["--task", "syntax_guided_translation", "--arch", "transformer_sgnet_small"]
SYSTEMS = {  # --task and --arch and what else the system differs in
    "vanilla": ["--task", "translation", "--arch", "transformer_small_vanilla"],
    "vanilla_plus1": ["--task", "translation", "--arch", "transformer_small_vanilla", "--encoder-layers", "4"],
    "sgnet": SG,
    "sgnet_random_trees": SG + ["--heads-suffix", "randheads"],
    "sgnet_learn_alpha": SG + ["--sgnet-learn-alpha"],
    "sgnet_first_head": SG + ["--sgnet-subword-mode", "first_head"],
}
RECIPE = {"lr": 0.001, "warmup_updates": 400, "max_tokens": 4096}  # what every run shares (common, below)
HINT = "Give another --out and MULTI30K_CHECKPOINTS, or remove that run's log and checkpoints to train it again"


def main(argv):
    o = parse(argv, {"--runs": RUNS, "--jobs": "2", "--patience": "5", "--min-delta": "0.01", "--max-update": "8000",
                     "--max-len-b": "200", "--out": "", "--readme": ""}, (*MODE_FLAGS, "--fp16"), __doc__)
    mode = mode_of(o)
    if mode != "status":
        no_quick_study()
    jobs = need_int("--jobs", o["jobs"], 1)
    if not re.fullmatch(r"[0-9]+([.][0-9]*)?|[.][0-9]+", o["min_delta"]):
        raise Stop(f"--min-delta takes a validation-loss difference, got '{o['min_delta']}'")
    runs = []
    for run in o["runs"].split():
        if not re.fullmatch(r".+:.*", run) or run.startswith(":"):
            raise Stop(f"--runs takes SYSTEM:SEED pairs (sgnet:1 vanilla:2), got '{run}'")
        system, seed = run.rsplit(":", 1)
        runs.append(Run(f"{system}_seed{need_int(f'--runs (the seed of {run})', seed)}", system, int(seed)))
    res, readme = o["out"], o["readme"] if "--readme" in argv else ("" if "--out" in argv else None)
    if o["fp16"]:  # half-precision runs never resume, overwrite or join the fp32 ones
        if not res:
            res = f"{ROOT}/results/multi30k_fp16"
            readme = readme or ""
        if mode in ("train", "no-summary"):
            require_gpu("reproduce")
    o["out"] = res or f"{ROOT}/results/multi30k"
    readme = f"{ROOT}/examples/multi30k/README.md" if readme is None else readme
    if readme:
        need_block(readme, "multi30k-summary")
    if mode in ("train", "no-summary"):
        for run in runs:
            if run.system not in SYSTEMS:
                raise Stop(f"--runs: unknown system {run.system} ({', '.join(SYSTEMS)})")
    run_study(Multi30kStudy(runs, o, readme, threads_per_job(jobs)), mode, jobs)


class Multi30kStudy(Study):
    """Each system trained until validation loss stops improving, the best checkpoint scored on every test set."""

    label = "reproduce"

    def __init__(self, runs, o, readme, threads):
        super().__init__(runs)
        self.o, self.readme, self.res, self.fp16 = o, readme, o["out"], o["fp16"]
        self.patience = need_int("--patience", o["patience"])
        self.max_update = need_int("--max-update", o["max_update"], 1)
        self.max_len_b = need_int("--max-len-b", o["max_len_b"], 1)
        self.min_delta = float(o["min_delta"])
        self.suffix = "_fp16" if self.fp16 else ""
        self.env = console_env(threads)
        self.local = os.environ.get("MULTI30K_DIR", "") or os.path.dirname(local_copy("multi30k/train.en.gz") or "")
        self.data = os.environ.get("MULTI30K_DATA") or f"{ROOT}/work/multi30k"
        self.ckpts = os.environ.get("MULTI30K_CHECKPOINTS") or f"{ROOT}/work/checkpoints"
        self.splits, self.test_sizes = [], {}

    def folder(self, run):
        return f"{self.ckpts}/multi30k_{run.name}{self.suffix}"

    def rule(self, log_path):
        """The convergence of a run from its log (validation every epoch)."""
        return early_stopping.convergence(log_path, "loss", self.patience, self.max_update, False, "epoch",
                                          self.min_delta)

    def tests(self):
        """{split: sentences} of the prepared test sets, as testsets.tsv records them."""
        if not os.path.isfile(f"{self.data}/bin/testsets.tsv"):
            return {}
        with open(f"{self.data}/bin/testsets.tsv", encoding="utf-8") as fh:
            return {f[0]: int(f[2]) for f in (line.rstrip("\n").split("\t") for line in fh if line.strip())}

    def kept(self, run):
        return f"{self.res}/logs/{run.name}.train.log.gz"

    def finished(self, run):
        """Its checkpoints are not here (a fresh clone) and its kept log says it stopped, with hypotheses for every
        test set; a run with checkpoints here is finished by train (scoring what is missing)."""
        return not os.path.isfile(f"{self.folder(run)}/train.log") and os.path.isfile(self.kept(run)) and \
            self.rule(self.kept(run))["stopped"] and \
            all(os.path.isfile(f"{self.res}/hyp/{run.name}.{split}.de.gz") for split in self.tests())

    def when_finished(self, pool, run):
        log(f"[reproduce] {run.system} seed {run.seed}: finished and scored in {self.res}; skipped (remove its log "
            f"there to train it again)")
        return True

    def state(self, run):
        train_log = f"{self.folder(run)}/train.log"
        if os.path.isfile(train_log):
            return early_stopping.describe(self.rule(train_log), "loss", "epoch", self.patience, self.max_update)
        if self.finished(run):
            return f"finished; its log and hypotheses are in {self.res}"
        return "not started"

    def check(self, run):
        """Every run found here (its checkpoints' log) or in the results (its kept log) was trained with these
        options and, if finished, stopped where this rule stops it."""
        # (not max_update: the rule holds the cap, and a run stopped by patience before it agrees with any higher)
        keys = {"seed": run.seed, **RECIPE, "fp16": "True" if self.fp16 else "False",
                **flag_keys(SYSTEMS[run.system])}
        ck = self.folder(run)
        for train_log in (f"{ck}/train.log", self.kept(run)):
            if not os.path.isfile(train_log):
                continue
            same_run(train_log, HINT, keys)
            finished = train_log == self.kept(run) or os.path.isfile(f"{ck}/done")
            problem = early_stopping.agrees(train_log, "loss", self.patience, self.max_update, False, "epoch",
                                            self.min_delta, finished)
            if problem:
                raise Stop(f"{problem}. {HINT}")

    def protocol(self):
        res = self.res
        # hypotheses of one cap only (--max-len-b): a folder without the record was decoded with fairseq's default
        made_with = "200"
        if os.path.isfile(f"{res}/hyp/max-len-b"):
            with open(f"{res}/hyp/max-len-b", encoding="utf-8") as fh:
                made_with = fh.read().strip()
        if made_with != str(self.max_len_b) and glob.glob(f"{glob.escape(res)}/hyp/*.de.gz"):
            raise Stop(f"[reproduce] the hypotheses in {res}/hyp were decoded with --max-len-b {made_with}, not "
                       f"{self.max_len_b}: give that cap again, or another --out")
        # a trial (--max-update 10, a seed 6) never trains into the table
        run_protocol.write_or_check(res, [r.system for r in self.runs], [r.seed for r in self.runs],
                                    {**RECIPE, "max_update": self.max_update}, SYSTEMS)
        os.makedirs(f"{res}/hyp", exist_ok=True)
        os.makedirs(f"{res}/logs", exist_ok=True)
        if self.max_len_b != 200:
            write_text(f"{res}/hyp/max-len-b", f"{self.max_len_b}\n")

    def prepare(self):
        data = self.data
        if os.path.isfile(f"{data}/.stamps/binarize") and os.path.isfile(f"{data}/bin/preprocessing.json"):
            # a finished preparation is used as it is, with the options it was made with (data-prep would redo it
            # with the defaults below, since its stage records hold the options: a --max-train slice would become
            # the corpus)
            with open(f"{data}/bpe/train.en", "rb") as fh:
                log(f"[reproduce] using the data prepared in {data} ({sum(1 for _ in fh)} training pairs)")
        else:
            run_tool(["bash", f"{ROOT}/data-prep/multi30k.sh", *(["--local-dir", self.local] if self.local else []),
                      "--out", data, "--parser", "spacy", "--workers", "2"], f"preparing Multi30k into {data} failed",
                     env=self.env)
        self.test_sizes = self.tests()
        self.splits = list(self.test_sizes)
        # the random-tree control's side files, beside the real heads (same words, same subwords, seed 1)
        if not os.path.isfile(f"{data}/bin/test.en-de.en.randheads.idx"):
            every = ["train", "valid", *self.splits]
            run_tool(["fairseq-syntax-binarize-heads", "--heads", *[f"{data}/bpe/{s}.en.heads" for s in every],
                      "--split", *every, "--destdir", f"{data}/bin", "-s", "en", "-t", "de", "--suffix", "randheads",
                      "--random-trees", "1"], "writing the random trees failed", env=self.env)

    def train(self, pool, run, lock):
        """Train (or resume), then generate every test set."""
        system, seed, res, data, env = run.system, run.seed, self.res, self.data, self.env
        flags, ck = SYSTEMS[system], self.folder(run)
        train_log = f"{ck}/train.log"
        common = ["-s", "en", "-t", "de", "--share-all-embeddings", "--optimizer", "adam", "--adam-betas",
                  "(0.9, 0.98)", "--lr", str(RECIPE["lr"]), "--lr-scheduler", "inverse_sqrt", "--warmup-updates",
                  str(RECIPE["warmup_updates"]), "--criterion", "label_smoothed_cross_entropy", "--label-smoothing",
                  "0.1", "--max-tokens", str(RECIPE["max_tokens"]), "--required-batch-size-multiple", "1",
                  "--max-update", str(self.max_update), "--best-checkpoint-metric", "loss", "--no-epoch-checkpoints",
                  "--log-format", "simple", "--log-interval", "50", *(["--fp16"] if self.fp16 else [])]
        # one epoch per call: the whole log decides when to stop, so an interrupted run stops where an
        # uninterrupted one would (fairseq's own --patience restarts its count on resume); and a process that
        # goes on into the next epoch trains it differently from one resumed there (fairseq keeps the batches
        # it made in a process's first epoch; examples/multi30k/README.md, "Why one process per epoch"), so
        # only this makes a resume exact
        while not os.path.isfile(f"{ck}/done"):
            c = self.rule(train_log)
            if c["stopped"]:
                open(f"{ck}/done", "w").close()
                log(f"[reproduce] {system} seed {seed}: stopped after {_validations(train_log)} validations")
                break
            epoch = c.get("last_epoch", 0) + 1
            if epoch == 1:
                log(f"[reproduce] training {system} seed {seed}")
            with open(train_log, "ab") as fh:
                if pool.run(["fairseq-train", f"{data}/bin", "--user-dir", user_dir(), *flags, *common, "--seed",
                             str(seed), "--save-dir", ck, "--max-epoch", str(epoch)], env=env, stdout=fh,
                            stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),)):
                    log(f"[reproduce] {system} seed {seed} failed or was stopped; see {train_log}")
                    return False
        keep_log(train_log, self.kept(run), [(self.ckpts, "<checkpoints>"), (data, "<data>")])
        write_record(f"{res}/logs/{run.name}.record.json", study="multi30k", system=system, seed=seed,
                     recipe={**RECIPE, "max_update": self.max_update}, data=f"{data}/bin", split=" ".join(self.splits),
                     scored=sum(self.test_sizes.values()), log=train_log)
        task = [x for i, f in enumerate(flags) if f in ("--task", "--heads-suffix") for x in flags[i:i + 2]]
        for split in self.splits:
            hyp = f"{res}/hyp/{run.name}.{split}.de.gz"
            if os.path.isfile(hyp) and os.path.getmtime(hyp) > os.path.getmtime(f"{ck}/checkpoint_best.pt"):
                continue
            with open(f"{ck}/generate.{split}.txt", "wb") as out, open(f"{ck}/generate.{split}.log", "wb") as err:
                rc = pool.run(["fairseq-generate", f"{data}/bin", "--user-dir", user_dir(), *task, "-s", "en",
                               "-t", "de", "--gen-subset", split, "--path", f"{ck}/checkpoint_best.pt", "--beam",
                               "5", "--max-len-b", str(self.max_len_b), "--batch-size", "128",
                               "--required-batch-size-multiple", "1", "--remove-bpe", "--tokenizer", "moses",
                               "--moses-no-escape"], env=env, stdout=out, stderr=err, pass_fds=(lock.fileno(),))
            if rc:
                with open(f"{ck}/generate.{split}.log", encoding="utf-8", errors="replace") as fh:
                    sys.stderr.write("".join(fh.readlines()[-5:]))
                return False
            with open(f"{ck}/generate.{split}.txt", encoding="utf-8", errors="surrogateescape") as fh:
                detok = sorted((int(line[2:].split("\t", 1)[0]), line.rstrip("\n").split("\t")[2])
                               for line in fh if line.startswith("D-"))
            with open(f"{data}/raw/{split}.de", "rb") as fh:
                if len(detok) != sum(1 for _ in fh):
                    log(f"[reproduce] {system} seed {seed} {split}: hypotheses missing")
                    return False
            text = "".join(h + "\n" for _, h in detok).encode("utf-8", "surrogateescape")
            command_output(hyp, GZIP, input=text)
        if "--sgnet-learn-alpha" in flags:  # the α it learned (checkpoints are not committed)
            os.makedirs(f"{res}/learned_alpha", exist_ok=True)
            with atomic_path(f"{res}/learned_alpha/{run.name}.json") as tmp, open(tmp, "wb") as out:
                if pool.run([sys.executable, "-m", "examples.studies.learned_alpha",
                             f"{ck}/checkpoint_best.pt"], env=env, stdout=out):
                    raise Stop(f"reading the learned alpha of {ck} failed")
        log(f"[reproduce] {system} seed {seed} scored on: {' '.join(self.splits)} ")
        return True

    def summarize(self):
        """The table of the finished runs: summary.json, summary.md and the README block."""
        os.makedirs(self.res, exist_ok=True)
        run_tool([sys.executable, f"{ROOT}/examples/multi30k/summarize.py", "--data", self.data, "--results", self.res,
                  "--patience", self.patience, "--min-delta", self.o["min_delta"], "--max-update", self.max_update,
                  "--planned", self.o["runs"], *(["--readme", self.readme] if self.readme else [])], env=self.env)


def _validations(path: str) -> int:
    with open_log(path) as fh:
        return sum(1 for line in fh if "valid on 'valid'" in line)


if __name__ == "__main__":
    sys.exit(run_main(main))
