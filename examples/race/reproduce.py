"""Fine-tune roberta_baseline, roberta_sgnet and roberta_sla (and SG-Net's controls) from the lifted MiniLM-L6
weights on RACE, same budget and seeds for every system; score the last checkpoint on RACE dev (RACE-M,
RACE-H and RACE) with per-question predictions, and summarize with paired tests (examples/race/summarize.py).

  bash examples/race/reproduce.sh [--recipe cpu|gpu] [--systems "baseline sgnet sla"] [--seeds "1"]
                                 [--train-subset train|train-middle|train-high] [--updates N] [--epochs E]
                                 [--batch-size B] [--lr LR] [--max-length P] [--eval-split valid]
                                 [--data work/race/bin] [--out results/race] [--tag NAME] [--jobs N]
                                 [--readme FILE] [--checkpoints work/checkpoints/race] [--max-hours H]
                                 [--pretrained work/minilm] [--status | --summary-only | --no-summary]

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
--status says where each run stands (finished: its RACE accuracy; training: its last update) and trains nothing;
--summary-only summarizes the finished runs and trains nothing (examples/studies/study_runner.py).
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
from fairseq_syntax.pipeline.jobs import threads_per_job  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT, from_caller, hide_paths, keep_log  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, need_ints, need_name, parse  # noqa: E402
from examples.studies import run_protocol  # noqa: E402
from examples.studies.result_files import describe, read_json  # noqa: E402
from examples.studies.run_record import write_record  # noqa: E402
from examples.studies.runs import (console_env, fine_tune_start, flag_keys, need_block, no_quick_study,  # noqa: E402
                                   require_gpu, same_run, user_dir)
from examples.studies.study_runner import MODE_FLAGS, Run, Study, mode_of, run_study  # noqa: E402
from examples.studies.training_log import last_update  # noqa: E402

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
                     "--tag": "", "--jobs": "1", "--max-hours": "0", "--pretrained": ""}, MODE_FLAGS, __doc__)
    mode = mode_of(o)
    given = {opt for opt in typed if opt in argv}
    for opt in given:
        o[opt.lstrip("-")] = from_caller(o[opt.lstrip("-")])
    if o["tag"]:
        need_name("--tag", o["tag"])
    if mode != "status":
        no_quick_study()
    os.chdir(ROOT)
    recipe = o["recipe"]
    if recipe not in RECIPES:
        raise Stop("--recipe must be cpu or gpu")
    if recipe == "gpu" and mode in ("train", "no-summary"):
        require_gpu("race")
    for key, value in RECIPES[recipe].items():
        if key == "updates" and o["epochs"]:
            continue
        o[key] = o[key] or value
    if not re.fullmatch(r"([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?", o["lr"]) or not float(o["lr"]) > 0:
        raise Stop(f"--lr takes a positive number (1e-4, 0.0001), got '{o['lr']}'")
    if not re.fullmatch(r"[0-9]+([.][0-9]+)?", o["max_hours"]):
        raise Stop(f"--max-hours takes a number of hours, got '{o['max_hours']}'")
    jobs = need_int("--jobs", o["jobs"], 1)
    need_ints("--seeds", o["seeds"])  # every number checked before anything is read with it
    for opt in ("batch_size", "max_length", "updates", "epochs"):
        if o[opt]:
            need_int(f"--{opt.replace('_', '-')}", o[opt], 1)
    data = o["data"] or f"{ROOT}/work/race/bin"
    for split in (o["train_subset"], o["eval_split"]):
        if not os.path.isfile(f"{data}/label/{split}.label"):
            raise Stop(f"{data}/label/{split}.label: no such split" +
                       (" (prepare with data-prep/race.sh)" if split == o["train_subset"] else ""))
    block = "race-summary" if recipe == "cpu" else "race-gpu-summary"
    o["out"] = o["out"] or ("results/race" if recipe == "cpu" else "results/race_gpu")
    readme = o["readme"] if "--readme" in given else ("" if "--out" in given else "examples/race/README.md")
    if readme:
        need_block(readme, block)
    for s in o["systems"].split():
        if s not in SYSTEMS:
            raise Stop(f"unknown system {s} ({', '.join(SYSTEMS)})")
    run_study(RaceStudy(o, data, readme, block, threads_per_job(jobs)), mode, jobs)


class RaceStudy(Study):
    """Every system fine-tuned from MiniLM with the same budget and seeds, the last checkpoint scored."""

    label = "race"

    def __init__(self, o, data, readme, block, threads):
        self.o, self.data, self.readme, self.block = o, data, readme, block
        self.recipe, self.res, self.subset, self.split = o["recipe"], o["out"], o["train_subset"], o["eval_split"]
        self.bsz = need_int("--batch-size", o["batch_size"], 1)
        self.maxpos = need_int("--max-length", o["max_length"], 8)
        if o["updates"]:
            self.updates = need_int("--updates", o["updates"], 1)
        else:
            epochs = need_int("--epochs", o["epochs"], 1)
            with open(f"{data}/label/{self.subset}.label", "rb") as fh:
                n = sum(1 for _ in fh)
            self.updates = need_int("--updates", str((n + self.bsz - 1) // self.bsz * epochs), 1)
        self.tag = f"{o['tag']}_" if o["tag"] else ""
        self.ckpts = o["checkpoints"] or "work/checkpoints/race"
        self.pretrained = o["pretrained"] or f"{ROOT}/work/minilm"
        self.env = console_env(threads)
        self.protocol_recipe = {"max_update": self.updates, "lr": float(o["lr"]), "batch_size": self.bsz,
                                "max_input_length": self.maxpos, "train_subset": self.subset}
        super().__init__([Run(f"{self.tag}{system}_seed{seed}", system, seed)
                          for seed in need_ints("--seeds", o["seeds"]) for system in o["systems"].split()])

    def folder(self, run):
        return os.path.join(ROOT, self.ckpts, run.name)  # (an absolute --checkpoints stays as it is)

    def finished(self, run):
        return os.path.isfile(f"{self.res}/{run.name}.eval.json")

    def keys(self, run):
        return {"seed": run.seed, "lr": self.o["lr"], "batch_size": self.bsz, "max_update": self.updates,
                "max_input_length": self.maxpos, "train_subset": self.subset,
                "fp16": "True" if self.recipe == "gpu" else "False", **flag_keys(SYSTEMS[run.system])}

    def check(self, run):
        """A finished run was made with these options and scored on this split; a stopped one trained with them."""
        if not self.finished(run):
            same_run(f"{self.folder(run)}/train.log", HINT, self.keys(run))
            return
        same_run(f"{self.res}/{run.name}.train.log.gz", HINT, self.keys(run))
        try:
            scored = read_json(f"{self.res}/{run.name}.eval.json")
        except ValueError as err:
            raise Stop(f"{err}. {HINT}") from None
        if not isinstance(scored, dict):
            raise Stop(f"{self.res}/{run.name}.eval.json: not a JSON object. {HINT}")
        if scored.get("split") != self.split:
            raise Stop(f"{self.res}/{run.name}.eval.json: scored on {scored.get('split')}; this call asks "
                       f"--eval-split {self.split}. {HINT}")

    def state(self, run):
        if self.finished(run):
            return "finished: " + describe(f"{self.res}/{run.name}.eval.json",
                                           "RACE accuracy {RACE[accuracy]} on {split}")
        train_log = f"{self.folder(run)}/train.log"
        if os.path.isfile(train_log):
            return f"update {last_update(train_log)} of {self.updates}"
        return "not started"

    def protocol(self):
        # a trial (another budget, a seed 6) never trains into the table's folder
        run_protocol.write_or_check(self.res, [r.system for r in self.runs], [r.seed for r in self.runs],
                                    self.protocol_recipe, SYSTEMS, tag=self.o["tag"], split=self.split)

    def prepare(self):
        if not os.path.isfile(f"{self.pretrained}/model.pt"):
            run_tool(["fairseq-syntax-convert-bert", "--out", self.pretrained],
                     f"converting MiniLM into {self.pretrained} failed", env=self.env)

    def train(self, pool, run, lock):
        o, ck, res, name = self.o, self.folder(run), self.res, run.name
        env, bsz, updates = self.env, self.bsz, self.updates
        start = fine_tune_start(ck, self.pretrained)
        log(f"[race] {name}: {updates} updates of {bsz} on {self.subset} ({self.recipe} recipe, {self.maxpos} "
            f"positions, lr {o['lr']})")
        device = "--fp16" if self.recipe == "gpu" else "--cpu"
        train = ["fairseq-train", self.data, "--user-dir", user_dir(), "--task", "syntax_sentence_ranking",
                 *SYSTEMS[run.system], "--layernorm-eps", "1e-12", *start, "--criterion", "sentence_ranking",
                 "--num-classes", "4", "--init-token", "0", "--separator-token", "2", "--max-option-length",
                 "128", "--max-positions", "512", "--max-input-length", self.maxpos, "--shorten-method", "truncate",
                 "--required-batch-size-multiple", "1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
                 "--adam-eps", "1e-6", "--weight-decay", "0.01", "--clip-norm", "0.0", "--lr", o["lr"],
                 "--lr-scheduler", "polynomial_decay", "--warmup-updates", updates * 6 // 100,
                 "--total-num-update", updates, "--max-update", updates, "--batch-size", bsz, "--dropout", "0.1",
                 "--attention-dropout", "0.1", "--seed", run.seed, "--train-subset", self.subset,
                 "--disable-validation", "--save-interval-updates", "50", "--keep-interval-updates", "1",
                 "--no-epoch-checkpoints", "--save-dir", ck, "--log-format", "simple", "--log-interval", "10",
                 "--num-workers", "1", "--stop-time-hours", o["max_hours"], device]
        with open(f"{ck}/train.log", "ab") as fh:
            if pool.run(train, env=env, stdout=fh, stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),)):
                log(f"[race] {name}: training failed, see {ck}/train.log")
                return False
        with open(f"{ck}/eval.txt", "wb") as out, open(f"{ck}/eval.log", "wb") as err:
            if pool.run(["fairseq-syntax-race-eval", self.data, "--path", f"{ck}/checkpoint_last.pt", "--split",
                         self.split, "--batch-size", "16", device, "--json", f"{ck}/eval.json", "--predictions",
                         f"{ck}/pred.jsonl"], env=env, stdout=out, stderr=err, pass_fds=(lock.fileno(),)):
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
        gpu = re.findall(r"\| INFO \| fairseq.utils \| rank\s+0: capabilities = .* ; total memory = .* ; "
                         r"name = (.*)", text)
        r.update(system=run.system, seed=run.seed, recipe=self.recipe, updates=updates, batch_size=bsz,
                 lr=float(o["lr"]), max_positions=self.maxpos, train_subset=self.subset,
                 updates_reached=max(reached, default=None), device=gpu[-1].strip() if gpu else "cpu")
        write_record(f"{res}/{name}.record.json", study="race", system=run.system, seed=run.seed,
                     recipe=self.protocol_recipe, data=self.data, split=self.split, scored=r["RACE"]["n"],
                     log=f"{ck}/train.log")
        write_text(f"{res}/{name}.eval.json", json.dumps(r, indent=1))
        with open(f"{ck}/eval.txt", encoding="utf-8", errors="replace") as fh:
            sys.stderr.write(fh.read())
        return True

    def summarize(self):
        extra = ["--readme", self.readme, "--block", self.block] if self.readme else []
        run_tool([sys.executable, "examples/race/summarize.py", "--results", self.res, "--tag", self.tag.rstrip("_"),
                  "--figure", f"{self.res}/{self.tag}question_length.png", *extra], env=self.env)


if __name__ == "__main__":
    sys.exit(run_main(main))
