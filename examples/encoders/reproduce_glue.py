"""Fine-tune roberta_baseline, roberta_sgnet and roberta_sla from the lifted MiniLM-L6 weights on CoLA (MCC)
and SST-2 (accuracy), same budget and seeds for every model; dev scores go to results/encoders/.

  bash examples/encoders/reproduce_glue.sh [--tasks "CoLA SST-2"]
                                 [--archs "roberta_baseline_small roberta_sgnet_small roberta_sla_small"]
                                 [--seeds "1 2 3"] [--updates-CoLA N] [--updates-SST-2 N] [--jobs 2] [--out DIR]
                                 [--data-root DIR]

Each run trains with --max-update N (polynomial decay, 6% warm-up, batch 32, lr 5e-5), keeps the best
dev checkpoint, and evaluates it with fairseq-validate. --jobs 2 runs two fine-tunings side by side with
one thread each. A finished run (its .score file) is skipped, so the script resumes; one made with other options
(another --updates-CoLA) stops the script before anything trains, naming what differs.
Then: .venv/bin/python examples/encoders/summarize_glue.py (mean and spread per task and model).
A folder or file you name is taken from where you run the script; the defaults are in the checkout.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from fairseq_syntax.pipeline.atomic import write_text  # noqa: E402
from fairseq_syntax.pipeline.jobs import JobPool  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, from_caller, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, need_ints, parse  # noqa: E402
from examples.studies.run_record import write_record  # noqa: E402
from examples.studies.runs import (console_env, corpus_dir, lock_run, need_corpus, no_quick_study,  # noqa: E402
                                   same_run, user_dir)

ARCHS = ("roberta_baseline_small", "roberta_sgnet_small", "roberta_sla_small")
TASKS = ("CoLA", "SST-2")


def main(argv):
    o = parse(argv, {"--tasks": "CoLA SST-2", "--archs": " ".join(ARCHS), "--seeds": "1 2 3", "--updates-CoLA": "800",
                     "--updates-SST-2": "1500", "--jobs": "2", "--out": "", "--data-root": ""}, (), __doc__)
    res = from_caller(o["out"]) if "--out" in argv else f"{ROOT}/results/encoders"
    data_root = from_caller(o["data_root"]) if "--data-root" in argv else f"{ROOT}/work/glue"
    no_quick_study()
    glue_dir = need_corpus(corpus_dir("GLUE_DIR", "glue"), "GLUE_DIR", "glue")
    os.chdir(ROOT)
    updates = {"CoLA": need_int("--updates-CoLA", o["updates_CoLA"], 4),
               "SST-2": need_int("--updates-SST-2", o["updates_SST_2"], 4)}
    jobs = need_int("--jobs", o["jobs"], 1)
    seeds = need_ints("--seeds", o["seeds"])
    tasks, archs = o["tasks"].split(), o["archs"].split()
    for t in tasks:
        if t not in TASKS:
            raise Stop(f"unknown task {t} (CoLA, SST-2)")
    for a in archs:
        if a not in ARCHS:
            raise Stop(f"--archs {a}: the fine-tunings start from MiniLM, whose size only "
                       f"roberta_{{baseline,sgnet,sla}}_small have")
    env = console_env(threads=1)
    runs = [(task, arch, seed) for task in tasks for seed in seeds for arch in archs]
    # before anything trains: every finished run (its .score) was made with these options; else stop, naming its
    # log and what differs
    for task, arch, seed in runs:
        if os.path.isfile(f"{res}/{task}_{arch}_seed{seed}.score"):
            same_run(f"{res}/{task}_{arch}_seed{seed}.train.log.gz",
                     "Give another --out, or remove that run's .score and logs to train it again",
                     {"arch": arch, "seed": seed, "max_update": updates[task], "lr": "5e-5", "batch_size": 32})
    os.makedirs(res, exist_ok=True)

    if not os.path.isfile("work/minilm/model.pt"):
        run_tool(["fairseq-syntax-convert-bert", "--out", "work/minilm"], "fairseq-syntax-convert-bert failed", env=env)
    for task in tasks:
        run_tool(["bash", "data-prep/glue.sh", "--task", task, "--glue-dir", glue_dir, "--pretrained", "work/minilm",
                  "--parser", os.environ.get("PARSER") or "spacy", "--workers", jobs, "--out", f"{data_root}/{task}"],
                 f"preparing {task} into {data_root}/{task} failed", env=env)

    def finetune(pool, task, arch, seed):
        n, metric = updates[task], "mcc" if task == "CoLA" else "accuracy"
        name = f"{task}_{arch}_seed{seed}"
        if os.path.isfile(f"{res}/{name}.score"):
            log(f"[glue] skip {name} (done)")
            return True
        ck = f"{ROOT}/work/checkpoints/glue/{name}"
        log(f"[glue] {name}: {n} updates")
        lock = lock_run(ck)
        if lock is None:
            return False
        with lock:
            common = ["--user-dir", user_dir(), "--task", "syntax_sentence_prediction", "--init-token", "0",
                      "--num-classes", "2", "--max-positions", "512", "--criterion", "sentence_prediction",
                      "--report-mcc"]
            with open(f"{ck}/train.log", "wb") as fh:
                if pool.run(["fairseq-train", f"{data_root}/{task}/bin", *common, "--arch", arch, "--restore-file",
                             f"{ROOT}/work/minilm/model.pt", "--reset-optimizer", "--reset-dataloader",
                             "--reset-meters", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--adam-eps",
                             "1e-6", "--weight-decay", "0.01", "--clip-norm", "1.0", "--lr", "5e-5", "--lr-scheduler",
                             "polynomial_decay", "--warmup-updates", n * 6 // 100, "--total-num-update", n,
                             "--max-update", n, "--batch-size", "32", "--dropout", "0.1", "--attention-dropout",
                             "0.1", "--seed", seed, "--validate-interval-updates", n // 4,
                             "--save-interval-updates", n // 4, "--keep-interval-updates", "1",
                             "--no-epoch-checkpoints", "--best-checkpoint-metric", metric,
                             "--maximize-best-checkpoint-metric", "--save-dir", ck, "--log-format", "simple",
                             "--log-interval", "50"], env=env, stdout=fh, stderr=subprocess.STDOUT,
                            pass_fds=(lock.fileno(),)):
                    log(f"[glue] {name}: training failed, see {ck}/train.log")
                    return False
            with open(f"{ck}/valid.log", "wb") as fh:
                if pool.run(["fairseq-validate", f"{data_root}/{task}/bin", *common, "--path",
                             f"{ck}/checkpoint_best.pt", "--batch-size", "64", "--valid-subset", "valid"], env=env,
                            stdout=fh, stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),)):
                    log(f"[glue] {name}: validation failed, see {ck}/valid.log")
                    return False
            with open(f"{ck}/valid.log", encoding="utf-8", errors="replace") as fh:
                lines_all = fh.readlines()
            lines = [x for x in lines_all if "valid on 'valid' subset" in x]
            if not lines:
                log(f"[glue] {name}: no validation line")
                return False
            named = [(data_root, "<data>")]
            keep_log(f"{ck}/train.log", f"{res}/{name}.train.log.gz", named)
            keep_log(f"{ck}/valid.log", f"{res}/{name}.valid.log.gz", named)
            m = re.search(r"accuracy ([0-9.]+).*mcc (-?[0-9.]+)", lines[-1])
            if not m:
                log(f"[glue] {name}: no accuracy and mcc in the validation line")
                return False
            scored = re.findall(r"Loaded valid with #samples: (\d+)", "".join(lines_all))
            if not scored:
                log(f"[glue] {name}: the validation log does not say how many sentences it scored")
                return False
            write_record(f"{res}/{name}.record.json", study="glue", system=f"{task}_{arch}", seed=seed,
                         recipe={"max_update": n, "lr": 5e-05, "batch_size": 32}, data=f"{data_root}/{task}/bin",
                         split="valid", scored=int(scored[-1]), log=f"{ck}/train.log")
            score = f"task={task} arch={arch} seed={seed} accuracy={m.group(1)} mcc={m.group(2)}\n"
            write_text(f"{res}/{name}.score", score)
            for f in [f"{ck}/checkpoint_last.pt"] + glob.glob(f"{glob.escape(ck)}/checkpoint_*_*.pt"):
                if os.path.exists(f):
                    os.remove(f)  # keep only the best (disk)
            sys.stderr.write(score)
        return True

    with JobPool(jobs) as pool:
        for task, arch, seed in runs:
            pool.start(finetune, pool, task, arch, seed)
    if pool.failed:
        raise Stop("some runs failed or were stopped; run again to resume")
    run_tool([sys.executable, "examples/encoders/summarize_glue.py", "--results", res], env=env)


if __name__ == "__main__":
    sys.exit(run_main(main))
