"""Fine-tune roberta_baseline, roberta_sgnet and roberta_sla (and SG-Net's controls) from the lifted MiniLM-L6
weights on RACE, same budget and seeds for every system; score the last checkpoint on RACE dev (RACE-M,
RACE-H and RACE) with per-question predictions, and summarize with paired tests (examples/race/summarize.py).

  bash examples/race/reproduce.sh [--recipe cpu|gpu] [--systems "baseline sgnet sla"] [--seeds "1"]
                                 [--train-subset train|train-middle|train-high] [--updates N] [--epochs E]
                                 [--batch-size B] [--lr LR] [--max-length P] [--eval-split valid]
                                 [--data work/race/bin] [--out results/race] [--tag NAME] [--jobs N]
                                 [--readme FILE] [--checkpoints work/checkpoints/race] [--max-hours H]
                                 [--pretrained work/minilm]

Systems: baseline (roberta_baseline_small), sgnet (roberta_sgnet_small, dual aggregation, alpha 0.5), sla
(roberta_sla_small), and SG-Net's components as rows of their own: sgnet_alone (the syntax-guided layer
alone, alpha 0: H-bar = H'), sgnet_nomask (the same extra layer attending to every token: the
parameter-matched control), sgnet_random_trees (random trees over the same words; needs data-prep/race.sh
--random-trees). With one SDOI layer the ranking head's <s> sees no parse, so sgnet, sgnet_nomask and
sgnet_random_trees are the same model (docs/methods.md); sgnet_2layers (--sgnet-layers 2, beyond the paper)
lets the parse reach <s>, and sgnet_2layers_nomask is its control.
--recipe gpu is the paper's: --fp16, inputs cut to 384 WordPieces (--max-length; the model keeps MiniLM's 512
position embeddings), lr 1e-5, batch 16, 3 epochs of --train-subset (updates
from its size), scored on valid. --recipe cpu (default) is a budget that fits 2 cores: RACE-M only
(train-middle, scored on valid-middle), inputs cut to 128, lr 1e-4, batch 16, --updates 400 (6,400 questions
drawn at random from the 25,421, about 45 minutes a run on one core); at lr 1e-5 (the paper's) MiniLM-L6 stays
at chance for 800 updates. A small budget decides nothing about SG-Net.
Adam (0.9, 0.98), eps 1e-6, weight decay 0.01, 6% warm-up then linear decay, no validation during training:
the last checkpoint is scored, so dev is never used to choose. A finished run (its .eval.json) is skipped;
a stopped one resumes from its checkpoint_last.pt (saved every 50 updates); one made with other options (or
scored on another split) stops the script before anything trains. --jobs N trains N runs side by
side, the cores split among them. Results go to results/race, the summary's table into examples/race/README.md's
race-summary block (results/race_gpu and race-gpu-summary for --recipe gpu; with --out, into a README only
if --readme is given). --max-hours H stops each training after H hours (fairseq's --stop-time-hours: a
machine's time limit); the summary then reports the updates reached, read from the training log.
A folder or file you name is taken from where you run the script; the defaults are in the checkout.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from fairseq_syntax.pipeline.atomic import GZIP, command_output, write_text  # noqa: E402
from fairseq_syntax.pipeline.jobs import JobPool, threads_per_job  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, from_caller, hide_paths, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, need_ints, need_name, parse  # noqa: E402
from examples.studies import run_protocol  # noqa: E402
from examples.studies.result_files import read_json  # noqa: E402
from examples.studies.run_record import write_record  # noqa: E402
from examples.studies.runs import (console_env, fine_tune_start, flag_keys, lock_run, need_block,  # noqa: E402
                                         no_quick_study, require_gpu, same_run, user_dir)

SYSTEMS = {
    "baseline": ["--arch", "roberta_baseline_small"],
    "sgnet": ["--arch", "roberta_sgnet_small"],
    "sgnet_alone": ["--arch", "roberta_sgnet_small", "--sgnet-alpha", "0"],
    "sgnet_nomask": ["--arch", "roberta_sgnet_small", "--sgnet-mask", "none"],
    "sgnet_random_trees": ["--arch", "roberta_sgnet_small", "--heads-suffix", "randheads"],
    "sgnet_2layers": ["--arch", "roberta_sgnet_small", "--sgnet-layers", "2"],
    "sgnet_2layers_nomask": ["--arch", "roberta_sgnet_small", "--sgnet-layers", "2", "--sgnet-mask", "none"],
    "sla": ["--arch", "roberta_sla_small"],
}
RECIPES = {  # batch, lr, positions, train subset, eval split, default updates or epochs
    "gpu": dict(batch_size="16", lr="1e-5", max_length="384", epochs="3", train_subset="train", eval_split="valid"),
    "cpu": dict(batch_size="16", lr="1e-4", max_length="128", updates="400", train_subset="train-middle",
                eval_split="valid-middle"),
}
HINT = ("Give another --tag (or --out and --checkpoints), or remove that run's results and checkpoints to train it "
        "again")


def main(argv):
    typed = {"--data", "--out", "--readme", "--checkpoints", "--pretrained"}
    o = parse(argv, {"--recipe": "cpu", "--systems": "baseline sgnet sla", "--seeds": "1", "--train-subset": "",
                     "--updates": "", "--epochs": "", "--batch-size": "", "--lr": "", "--max-length": "",
                     "--eval-split": "", "--data": "", "--out": "", "--readme": "", "--checkpoints": "",
                     "--tag": "", "--jobs": "1", "--max-hours": "0", "--pretrained": ""}, (), __doc__)
    given = {opt for opt in typed if opt in argv}
    for opt in given:
        o[opt.lstrip("-")] = from_caller(o[opt.lstrip("-")])
    if o["tag"]:
        need_name("--tag", o["tag"])
    no_quick_study()
    os.chdir(ROOT)
    recipe = o["recipe"]
    if recipe not in RECIPES:
        raise Stop("--recipe must be cpu or gpu")
    if recipe == "gpu":
        require_gpu("race")
    for key, value in RECIPES[recipe].items():
        if key == "updates" and o["epochs"]:
            continue
        o[key] = o[key] or value
    bsz = need_int("--batch-size", o["batch_size"], 1)
    if not re.fullmatch(r"([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?", o["lr"]) or not float(o["lr"]) > 0:
        raise Stop(f"--lr takes a positive number (1e-4, 0.0001), got '{o['lr']}'")
    maxpos = need_int("--max-length", o["max_length"], 8)
    jobs = need_int("--jobs", o["jobs"], 1)
    seeds = need_ints("--seeds", o["seeds"])
    if not re.fullmatch(r"[0-9]+([.][0-9]+)?", o["max_hours"]):
        raise Stop(f"--max-hours takes a number of hours, got '{o['max_hours']}'")
    data = o["data"] or f"{ROOT}/work/race/bin"
    subset, split = o["train_subset"], o["eval_split"]
    if not os.path.isfile(f"{data}/label/{subset}.label"):
        raise Stop(f"{data}/label/{subset}.label: no such split (prepare with data-prep/race.sh)")
    if not os.path.isfile(f"{data}/label/{split}.label"):
        raise Stop(f"{data}/label/{split}.label: no such split")
    if o["updates"]:
        updates = need_int("--updates", o["updates"], 1)
    else:
        epochs = need_int("--epochs", o["epochs"], 1)
        with open(f"{data}/label/{subset}.label", "rb") as fh:
            n = sum(1 for _ in fh)
        updates = need_int("--updates", str((n + bsz - 1) // bsz * epochs), 1)
    block = "race-summary" if recipe == "cpu" else "race-gpu-summary"
    res = o["out"] or ("results/race" if recipe == "cpu" else "results/race_gpu")
    readme = o["readme"] if "--readme" in given else ("" if "--out" in given else "examples/race/README.md")
    if readme:
        need_block(readme, block)
    systems = o["systems"].split()
    for s in systems:
        if s not in SYSTEMS:
            raise Stop(f"unknown system {s} ({', '.join(SYSTEMS)})")
    tag = f"{o['tag']}_" if o["tag"] else ""
    ckpts = o["checkpoints"] or "work/checkpoints/race"
    ck_of = {}

    def keys(system, seed):
        return {"seed": seed, "lr": o["lr"], "batch_size": bsz, "max_update": updates, "max_input_length": maxpos,
                "train_subset": subset, "fp16": "True" if recipe == "gpu" else "False", **flag_keys(SYSTEMS[system])}

    # before anything trains: every finished run was made with these options and scored on this split, and every
    # stopped one trained with them so far; else stop, naming the file and what differs
    for seed in seeds:
        for system in systems:
            name = f"{tag}{system}_seed{seed}"
            ck_of[name] = ck = os.path.join(ROOT, ckpts, name)  # (an absolute --checkpoints stays as it is)
            if os.path.isfile(f"{res}/{name}.eval.json"):
                same_run(f"{res}/{name}.train.log.gz", HINT, keys(system, seed))
                try:
                    scored = read_json(f"{res}/{name}.eval.json")
                except ValueError as err:
                    raise Stop(f"{err}. {HINT}") from None
                if not isinstance(scored, dict):
                    raise Stop(f"{res}/{name}.eval.json: not a JSON object. {HINT}")
                if scored.get("split") != split:
                    raise Stop(f"{res}/{name}.eval.json: scored on {scored.get('split')}; this call asks --eval-split "
                               f"{split}. {HINT}")
            else:
                same_run(f"{ck}/train.log", HINT, keys(system, seed))
    protocol_recipe = {"max_update": updates, "lr": float(o["lr"]), "batch_size": bsz, "max_input_length": maxpos,
                       "train_subset": subset}
    # a trial (another budget, a seed 6) never trains into the table's folder
    run_protocol.write_or_check(res, systems, seeds, protocol_recipe, SYSTEMS, tag=o["tag"], split=split)
    pretrained = o["pretrained"] or f"{ROOT}/work/minilm"
    threads = threads_per_job(jobs)
    env = console_env(threads)
    if not os.path.isfile(f"{pretrained}/model.pt"):
        run_tool(["fairseq-syntax-convert-bert", "--out", pretrained], f"converting MiniLM into {pretrained} failed",
                 env=env)

    def finetune(pool, system, seed):
        name = f"{tag}{system}_seed{seed}"
        if os.path.isfile(f"{res}/{name}.eval.json"):
            log(f"[race] skip {name} (done)")
            return True
        ck = ck_of[name]
        lock = lock_run(ck)
        if lock is None:
            return False
        with lock:
            start = fine_tune_start(ck, pretrained)
            log(f"[race] {name}: {updates} updates of {bsz} on {subset} ({recipe} recipe, {maxpos} positions, "
                f"lr {o['lr']})")
            train = ["fairseq-train", data, "--user-dir", user_dir(), "--task", "syntax_sentence_ranking",
                     *SYSTEMS[system], "--layernorm-eps", "1e-12", *start, "--criterion", "sentence_ranking",
                     "--num-classes", "4", "--init-token", "0", "--separator-token", "2", "--max-option-length",
                     "128", "--max-positions", "512", "--max-input-length", maxpos, "--shorten-method", "truncate",
                     "--required-batch-size-multiple", "1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
                     "--adam-eps", "1e-6", "--weight-decay", "0.01", "--clip-norm", "0.0", "--lr", o["lr"],
                     "--lr-scheduler", "polynomial_decay", "--warmup-updates", updates * 6 // 100,
                     "--total-num-update", updates, "--max-update", updates, "--batch-size", bsz, "--dropout", "0.1",
                     "--attention-dropout", "0.1", "--seed", seed, "--train-subset", subset, "--disable-validation",
                     "--save-interval-updates", "50", "--keep-interval-updates", "1", "--no-epoch-checkpoints",
                     "--save-dir", ck, "--log-format", "simple", "--log-interval", "10", "--num-workers", "1",
                     "--stop-time-hours", o["max_hours"], "--fp16" if recipe == "gpu" else "--cpu"]
            with open(f"{ck}/train.log", "ab") as fh:
                if pool.run(train, env=env, stdout=fh, stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),)):
                    log(f"[race] {name}: training failed, see {ck}/train.log")
                    return False
            with open(f"{ck}/eval.txt", "wb") as out, open(f"{ck}/eval.log", "wb") as err:
                if pool.run(["fairseq-syntax-race-eval", data, "--path", f"{ck}/checkpoint_last.pt", "--split", split,
                             "--batch-size", "16", "--fp16" if recipe == "gpu" else "--cpu", "--json",
                             f"{ck}/eval.json", "--predictions", f"{ck}/pred.jsonl"], env=env, stdout=out,
                            stderr=err, pass_fds=(lock.fileno(),)):
                    log(f"[race] {name}: evaluation failed, see {ck}/eval.log")
                    return False
            command_output(f"{res}/{name}.pred.jsonl.gz", [*GZIP, "-c", f"{ck}/pred.jsonl"])
            named = [(os.path.dirname(ck), "<checkpoints>")]
            keep_log(f"{ck}/train.log", f"{res}/{name}.train.log.gz", named)
            shutil.copyfile(f"{ck}/eval.txt", f"{res}/{name}.eval.txt.tmp")
            os.replace(f"{res}/{name}.eval.txt.tmp", f"{res}/{name}.eval.txt")
            with open(f"{ck}/eval.json", encoding="utf-8") as fh:
                r = json.load(fh)
            # written as the train log's paths are (keep_log); inside the checkout relative to it
            shown = hide_paths(f"{ck}/checkpoint_last.pt", named)
            r["checkpoint"] = shown[2:] if shown.startswith("./") else shown
            with open(f"{ck}/train.log", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            reached = [int(x) for x in re.findall(r"num_updates[ =](\d+)", text)]
            device = re.findall(r"\| INFO \| fairseq.utils \| rank\s+0: capabilities = .* ; total memory = .* ; "
                                r"name = (.*)", text)
            r.update(system=system, seed=seed, recipe=recipe, updates=updates, batch_size=bsz, lr=float(o["lr"]),
                     max_positions=maxpos, train_subset=subset, updates_reached=max(reached, default=None),
                     device=device[-1].strip() if device else "cpu")
            write_record(f"{res}/{name}.record.json", study="race", system=system, seed=seed, recipe=protocol_recipe,
                         data=data, split=split, scored=r["RACE"]["n"], log=f"{ck}/train.log")
            write_text(f"{res}/{name}.eval.json", json.dumps(r, indent=1))
            with open(f"{ck}/eval.txt", encoding="utf-8", errors="replace") as fh:
                sys.stderr.write(fh.read())
        return True

    with JobPool(jobs) as pool:
        for seed in seeds:
            for system in systems:
                pool.start(finetune, pool, system, seed)
    if pool.failed:
        raise Stop("some runs failed or were stopped; run again to resume")
    extra = ["--readme", readme, "--block", block] if readme else []
    run_tool([sys.executable, "examples/race/summarize.py", "--results", res, "--tag", tag.rstrip("_"), "--figure",
         f"{res}/{tag}question_length.png", *extra], env=env)


if __name__ == "__main__":
    sys.exit(run_main(main))
