"""On a GPU: fp16 (or --bf16) training of every model family for a few hundred updates, then transformer-base throughput
(SG-Net against vanilla) at --max-tokens 32768 with fairseq's default --num-workers. Prints one table.

  bash benchmarks/gpu_check.sh --multi30k work/multi30k/bin [--cola work/glue/CoLA/bin] [--lambada work/lambada/bin]
                            [--race work/race/bin]
                            [--updates 300] [--speed-updates 150] [--speed-rounds 2] [--speed-max-tokens 32768]
                            [--out results/benchmarks/gpu_check.md] [--logs DIR] [--cpu | --bf16] [--speed-only]

Uses the fairseq-train on PATH (else a wrapper: examples/studies/runs.py, console_env) and this checkout as
--user-dir (no install needed). A family whose data is not given is reported as not run. Each training must end
with a finite loss. Throughput: --speed-rounds rounds of transformer_wmt_en_de and transformer_sgnet_wmt_en_de
on the same batches, the order alternating by round, logged every update; benchmarks/train_speed.py gives SG-Net's
words/s over vanilla's, steady (median update after the first 20) and overall (epoch starts included), the
median over rounds (goal >= 0.93). --out is rewritten after every run, so a call cut short keeps the rows it
finished; --logs keeps fairseq's logs (default: a temporary folder, removed). --cpu trains in fp32 on the CPU,
to try the script without a GPU (its words/s say nothing about one). --speed-only measures the throughput pair
alone (the families are reported as not run), when there is no time for both; --speed-rounds 0 leaves the pair out
(its row says so), for a check of the families alone.
"""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fairseq_syntax.pipeline.atomic import write_text  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main  # noqa: E402
from fairseq_syntax.pipeline.options import need_int, parse  # noqa: E402
from examples.studies.runs import console_env, user_dir  # noqa: E402

NMT = ["-s", "en", "-t", "de", "--share-all-embeddings", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr",
       "5e-4", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "100", "--criterion",
       "label_smoothed_cross_entropy", "--label-smoothing", "0.1"]
ENCODERS = ("roberta_baseline_small", "roberta_sgnet_small", "roberta_sla_small")


class Check:
    """The rows so far, rewritten into --out after every run, so a call cut short keeps what it finished."""

    def __init__(self, o, env, work):
        self.o, self.env, self.work = o, env, work
        self.logs = o["logs"] or os.path.join(work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.prec = "--cpu" if o["cpu"] else "--bf16" if o["bf16"] else "--fp16"
        info = "import sys, torch, fairseq\nprint(f'Python {sys.version.split()[0]}, torch {torch.__version__}, " \
               "fairseq {fairseq.__version__}')\nprint(torch.cuda.get_device_name(0) if torch.cuda.is_available() " \
               "else 'no GPU')"
        versions, gpu = subprocess.run([sys.executable, "-c", info], env=env, capture_output=True, text=True,
                                       check=True).stdout.splitlines()[:2]
        if self.prec == "--cpu":
            gpu, mode = "CPU", "fp32 on the CPU (--cpu: a trial of the script, not a GPU check)"
        else:
            mode = self.prec[2:]
        self.head = f"GPU check on {gpu} ({versions}), {time.strftime('%Y-%m-%d')}, {mode}"
        self.rows, self.ratio = [], "not measured"

    def table(self, progress: str = "") -> str:
        text = "\n".join([self.head + (f" ({progress})" if progress else ""), "",
                          "| run | updates | final train loss | words/s (last epoch summary) | status |",
                          "|---|---|---|---|---|", *self.rows, "",
                          f"transformer_sgnet_wmt_en_de / transformer_wmt_en_de words/s at --max-tokens "
                          f"{self.o['speed_max_tokens']}, default --num-workers: {self.ratio} (goal >= 0.93)"]) + "\n"
        if self.o["out"]:
            write_text(self.o["out"], text)
        return text

    def train(self, name, data, task, arch, n, *flags):
        """One run; its row: name, updates, final loss, words/s."""
        path = os.path.join(self.logs, f"{name}.log")
        with open(path, "wb") as fh:
            rc = subprocess.run(["fairseq-train", data, "--user-dir", user_dir(), "--task", task, "--arch", arch,
                                 self.prec, "--max-update", str(n), "--seed", "1", "--save-dir",
                                 os.path.join(self.work, f"ck_{name}"), "--no-save", "--disable-validation",
                                 "--log-format", "simple", "--log-interval", "50", *map(str, flags)],
                                env=self.env, stdout=fh, stderr=subprocess.STDOUT).returncode
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if rc == 0:
            summary = [line for line in text.splitlines() if re.search(r"\| train \|", line)]
            loss, wps = (_field(summary[-1], k) if summary else "" for k in ("loss", "wps"))
            status = "ok" if _finite(loss) else "NOT FINITE"
        else:
            loss = wps = "-"
            first = next((line for line in text.splitlines() if re.search("Error|error", line)), "")
            status = f"FAILED: {first[:80]}"
        self.rows.append(f"| {name} | {n} | {loss} | {wps} | {status} |")
        log(f"[gpu_check] {name}: {status} (loss {loss}, {wps} words/s)")
        self.table("in progress")
        return path


def _field(line: str, key: str) -> str:
    m = re.search(rf"\| {key} ([0-9.]+)", line)
    return m.group(1) if m else line


def _finite(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def main(argv):
    o = parse(argv, {"--multi30k": "", "--cola": "", "--lambada": "", "--race": "", "--updates": "300",
                     "--speed-updates": "150", "--speed-rounds": "2", "--speed-max-tokens": "32768", "--out": "",
                     "--logs": ""}, ("--cpu", "--bf16", "--speed-only"), __doc__)
    updates = need_int("--updates", o["updates"], 1)
    speed_updates = need_int("--speed-updates", o["speed_updates"], 1)
    rounds = need_int("--speed-rounds", o["speed_rounds"])
    tokens = need_int("--speed-max-tokens", o["speed_max_tokens"], 1)
    if o["speed_only"] and rounds == 0:
        raise Stop("--speed-only with --speed-rounds 0 measures nothing")
    env = console_env()
    work = tempfile.mkdtemp()
    try:
        c = Check(o, env, work)
        m30k, speed_only = o["multi30k"], o["speed_only"]
        if speed_only:
            c.rows.append("| transformer_*_small | - | - | - | not run (--speed-only) |")
        elif m30k:
            c.train("transformer_sgnet_small", m30k, "syntax_guided_translation", "transformer_sgnet_small", updates,
                    *NMT, "--max-tokens", "4096")
            c.train("transformer_sgnet_small+alpha+first_head", m30k, "syntax_guided_translation",
                    "transformer_sgnet_small", updates, *NMT, "--max-tokens", "4096", "--sgnet-learn-alpha",
                    "--sgnet-subword-mode", "first_head")
            c.train("transformer_sla_small", m30k, "syntax_guided_translation", "transformer_sla_small", updates,
                    *NMT, "--max-tokens", "4096")
        if m30k and rounds == 0:
            c.rows.append("| speed_* (transformer-base pair) | - | - | - | not run (--speed-rounds 0) |")
            c.ratio = "not measured (--speed-rounds 0)"
        elif m30k:
            # throughput: transformer-base, the same batches, every update logged; the order alternates by round
            base, cand = [], []
            for r in range(1, rounds + 1):
                for m in (("vanilla", "sgnet") if r % 2 else ("sgnet", "vanilla")):
                    if m == "vanilla":
                        base.append(c.train(f"speed_vanilla_r{r}", m30k, "translation", "transformer_wmt_en_de",
                                            speed_updates, *NMT, "--max-tokens", tokens, "--log-interval", "1"))
                    else:
                        cand.append(c.train(f"speed_sgnet_r{r}", m30k, "syntax_guided_translation",
                                            "transformer_sgnet_wmt_en_de", speed_updates, *NMT, "--max-tokens", tokens,
                                            "--log-interval", "1"))
            proc = subprocess.run([sys.executable, f"{ROOT}/benchmarks/train_speed.py", "--baseline", *base,
                                   "--candidate", *cand, "--skip", "0" if speed_updates < 40 else "20", "--json",
                                   os.path.join(c.logs, "speed.json"), "--line"], env=env, stdout=subprocess.PIPE,
                                  text=True)
            c.ratio = proc.stdout.strip() if proc.returncode == 0 else "not measured (see the logs)"
            c.table("in progress")
        else:
            c.rows.append("| translation families | - | - | - | not run (no --multi30k) |")
        if speed_only:
            c.rows.append("| roberta_*, bidaf* | - | - | - | not run (--speed-only) |")
        else:
            if o["cola"]:
                for arch in ENCODERS:
                    c.train(arch, o["cola"], "syntax_sentence_prediction", arch, updates, "--criterion",
                            "sentence_prediction", "--num-classes", "2", "--optimizer", "adam", "--lr", "1e-4",
                            "--batch-size", "32", "--max-positions", "512")
            else:
                c.rows.append("| roberta_* | - | - | - | not run (no --cola) |")
            if o["race"]:  # the ranking family: four choices of <s> article </s> </s> question option </s>
                for arch in ENCODERS:
                    c.train(f"{arch}_ranking", o["race"], "syntax_sentence_ranking", arch, updates, "--criterion",
                            "sentence_ranking", "--num-classes", "4", "--init-token", "0", "--separator-token", "2",
                            "--max-option-length", "128", "--max-positions", "512", "--max-input-length", "384",
                            "--shorten-method", "truncate", "--optimizer", "adam", "--lr", "1e-5", "--batch-size", "16")
            else:
                c.rows.append("| roberta_* ranking (RACE) | - | - | - | not run (no --race) |")
            if o["lambada"]:
                for arch in ("bidaf", "bidaf_sa_early", "bidaf_sa_late", "bidaf_sa_both"):
                    c.train(arch, o["lambada"], "lambada_reader", arch, updates, "--criterion", "pointer_sum",
                            "--signals", "none" if arch == "bidaf" else "CorefAll", "--optimizer", "adam", "--lr",
                            "1e-3", "--max-tokens", "8000")
            else:
                c.rows.append("| bidaf* | - | - | - | not run (no --lambada) |")
        sys.stdout.write(c.table())
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run_main(main))
