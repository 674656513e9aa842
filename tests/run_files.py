"""Training logs and results files as the studies leave them, written by the tests of their summaries."""
import gzip
import json
import subprocess
import sys

from .conftest import ROOT, study_script


REAL_LOG = ROOT / "results/multi30k/logs/vanilla_seed1.train.log.gz"  # a CPU fp32 run, resumed once an epoch
GPU_LINES = ("2026-11-23 06:00:01 | INFO | fairseq.utils | ***********************CUDA enviroments for all 1 workers"
             "***********************\n2026-11-23 06:00:01 | INFO | fairseq.utils | rank   0: capabilities =  9.0  ; "
             "total memory = 79.109 GB ; name = NVIDIA H100 80GB HBM3                    \n")


def config_line(fp16=False):
    """The config fairseq logs at every start, taken from a real run's log."""
    with gzip.open(REAL_LOG, "rt", encoding="utf-8") as fh:
        line = next(line for line in fh if "'common': {" in line)
    return line.replace("'fp16': False", "'fp16': True") if fp16 else line


def valid_line(epoch, updates, **metrics):
    fields = " | ".join(f"{k} {v}" for k, v in metrics.items())
    return (f"2026-11-23 06:13:18 | INFO | valid | epoch {epoch:03d} | valid on 'valid' subset | {fields} | "
            f"wps 2386.1 | num_updates {updates} | best_loss 8.899\n")


def next_target(log, *args):
    out = subprocess.run([sys.executable, "-m", "examples.studies.early_stopping", str(log), *args],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def write_run_record(path, study, name, scored=9, split="test", recipe=None, data="0" * 40, **fields):
    """The record a study's reproduce script writes beside a run it scores (examples/studies/run_record.py)."""
    system, seed = name.rsplit("_seed", 1)
    record = {"study": study, "system": system, "seed": int(seed), "recipe": recipe or {}, "data": data,
              "split": split, "scored": scored, "precision": "fp32", "device": "CPU", "quick": False,
              "code": "0" * 40, **fields}
    path.write_text(json.dumps(record))
    return record


def write_converged_run(res, name, best, acc, correct=None):
    """A LAMBADA run's results as examples/lambada/reproduce.sh leaves them: a log validated every 500 updates whose
    best is at ``best``, then 5 validations below it (the rule stops it); its eval.json; and with ``correct``, its
    per-instance predictions for the McNemar tests."""
    ROWS = study_script("examples/lambada/summarize.py").ROWS

    curve = [(u, (u if u <= best else best - u) / 100) for u in range(500, best + 3000, 500)]
    text = config_line() + "".join(valid_line(1, u, loss=3.0, accuracy=a) for u, a in curve)
    (res / f"{name}.train.log.gz").write_bytes(gzip.compress(text.encode()))
    (res / f"{name}.eval.json").write_text(json.dumps({k: {"n": 9, "accuracy": acc} for k in ROWS}))
    write_run_record(res / f"{name}.record.json", "lambada", name)
    if correct is not None:
        lines = "".join(json.dumps({"correct": c}) + "\n" for c in correct)
        (res / f"{name}.pred.jsonl.gz").write_bytes(gzip.compress(lines.encode()))


def multi30k_folders(tmp, sentences):
    """A Multi30k data folder with one test set of ``sentences`` references, and an empty results folder, as
    examples/multi30k/summarize.py reads them: (data, results, references)."""
    data, res = tmp / "data", tmp / "res"
    (data / "bin").mkdir(parents=True)
    (data / "raw").mkdir()
    (res / "hyp").mkdir(parents=True)
    (res / "logs").mkdir()
    refs = [f"ein Mann mit Hut fährt Rad Nummer {i} ." for i in range(sentences)]
    (data / "raw/test.de").write_text("\n".join(refs) + "\n")
    (data / "bin/testsets.tsv").write_text(f"test\ttest_2016_flickr\t{sentences}\n")
    return data, res, refs
