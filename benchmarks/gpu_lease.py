"""Runs of a study moved to a lent GPU whose calls each carry at most 64 MiB, and brought back.

The device tool copies the checkout and what a call names (``carry``) to a GPU machine that has no index and no
web. A study's prepared data and the lifted MiniLM weights (91 MB) are more than one call carries, so 'pack' here
splits the weights where the two calls of one warm machine carry the same; 'first' keeps the first half there,
'second' joins the halves (checked against their SHA-256 before anything trains), trains within the call's time
and packs every finished run into $OUT; 'back' here checks every run before any file is copied and then copies
them all into their table, or none. The study it moves is the SLA table (examples/encoders/reproduce_sla_table.sh).

  here:    bash benchmarks/gpu_lease.sh pack [--tasks "CoNLL-2003 CoLA SST-2"]
           # after the table's data are prepared here; prints the two calls' carry lists and sizes
  call 1:  bash benchmarks/gpu_lease.sh first           # builds fairseq, keeps the first half in /tmp
  call 2:  bash benchmarks/gpu_lease.sh second SECONDS [reproduce_sla_table.sh options]
           # (within the 30 s the machine stays warm) joins and checks the weights, unpacks the data, trains
           # (default options: --fp16 --jobs 8) and packs every finished run, and the logs of the runs the limit
           # stopped, into $OUT/table1_lease.tgz, all within SECONDS: give the call's timeout_s, less a few
           # seconds (the training stops 40 s before it, for its runs to stop and the pack to be made)
  here:    bash benchmarks/gpu_lease.sh back TGZ [--into DIR]
           # checks every run that finished there, then copies them all into their table or none
           # (examples/studies/bring_back.py: a run there already must come back identical), and
           # summarizes it: results/encoders_table1_fp16 for --fp16 runs (a table of its own: the summary does not
           # mix fp16 and fp32 runs), results/encoders_table1 for runs without --fp16, which are the fp32 table's
           # own protocol on a faster device (each run's eval.json names its device)

Runs already in that table travel with the checkout and are skipped there; a run the time limit stops is lost
with the machine (checkpoints are too large to bring back). --work DIR (before the command): where the data, the
weights and the packed files are (default work).
"""
import glob
import gzip
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fairseq_syntax.pipeline.atomic import atomic_path, write_text  # noqa: E402
from fairseq_syntax.pipeline.logs import ROOT  # noqa: E402
from fairseq_syntax.pipeline.messages import Stop, log, run_main, run_tool  # noqa: E402
from fairseq_syntax.pipeline.options import need_int  # noqa: E402
from fairseq_syntax.pipeline.records import file_digest  # noqa: E402

LIMIT = 64 * 1024 * 1024
TASK_DIRS = {"CoNLL-2003": "conll2003", "CoLA": "glue/CoLA", "SST-2": "glue/SST-2"}
TABLES = ("results/encoders_table1", "results/encoders_table1_fp16")


def main(argv):
    work = os.path.join(ROOT, "work")
    if argv[:1] == ["--work"]:
        if len(argv) < 2 or not argv[1] or argv[1].startswith("--"):
            raise Stop("--work needs a value; --help lists the options")
        work, argv = os.path.abspath(argv[1]), argv[2:]
    os.chdir(ROOT)
    command = argv[0] if argv else ""
    commands = {"pack": pack, "first": first, "second": second, "back": back}
    if command not in commands:
        print(__doc__.strip())
        return None if command in ("", "-h", "--help") else _exit(1)
    commands[command](work, argv[1:])


def _exit(code):
    raise SystemExit(code)


def _bytes(*paths) -> int:
    """Files' bytes, as the device tool counts them."""
    total = 0
    for p in paths:
        if os.path.isfile(p):
            total += os.path.getsize(p)
        for top, _, files in os.walk(p):
            total += sum(os.path.getsize(os.path.join(top, f)) for f in files if os.path.isfile(os.path.join(top, f)))
    return total


def _checkout_bytes() -> int:
    """What every call carries anyway: the tracked files and the untracked ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True,
                         check=True).stdout.decode("utf-8", "surrogateescape")
    return sum(os.path.getsize(p) for p in out.split("\0") if p and os.path.isfile(p))


def _sha256(path: str) -> str:
    return file_digest(path, "sha256")


def pack(work, args):
    tasks = "CoNLL-2003 CoLA SST-2"
    if args[:1] == ["--tasks"]:
        if len(args) < 2 or not args[1] or args[1].startswith("--"):
            raise Stop("--tasks needs a value; --help lists the options")
        tasks = args[1]
    lease = os.path.join(work, "gpu-lease")
    if not (lease + "/").startswith(ROOT + "/"):
        raise Stop(f"--work {work}: outside the checkout, where the device tool cannot carry it")
    if not (os.path.isfile(".device/device-fairseq.sh") and os.path.isdir(".device/whl")):
        raise Stop("no .device here: run 'bash ../shared/tools/device-fairseq.sh fetch' first")
    model = f"{work}/minilm/model.pt"
    if not os.path.isfile(model):
        raise Stop(f"{model}: no lifted weights (fairseq-syntax-convert-bert --out {work}/minilm)")
    data = ["minilm/dict.txt", "minilm/vocab.txt", "minilm/bert_config.json"]
    for t in tasks.split():
        if t not in TASK_DIRS:
            raise Stop(f"unknown task {t} (CoLA, SST-2, CoNLL-2003)")
        d = TASK_DIRS[t]
        if not os.path.isfile(f"{work}/{d}/.stamps/binarize"):
            raise Stop(f"{work}/{d}: not prepared; the reproduction prepares it before it trains (bash "
                       f"examples/encoders/reproduce_sla_table.sh, here), or data-prep/conll2003.sh and "
                       f"data-prep/glue.sh as it does")
        if t == "CoNLL-2003" and not os.path.isfile(f"{work}/{d}/bin/input0/test.randheads.bin"):
            raise Stop(f"{work}/{d}: prepared without --random-trees 1")
        data += [f"{d}/bin", f"{d}/.stamps"]
        if t == "CoNLL-2003":  # the scored split's words, which fairseq-syntax-ner-eval writes beside predictions
            if not os.path.isfile(f"{work}/{d}/raw/test.words"):
                raise Stop(f"{work}/{d}/raw/test.words: missing; prepare the data again (data-prep/conll2003.sh)")
            data.append(f"{d}/raw/test.words")
    os.makedirs(lease, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".pack.", dir=lease)
    try:
        with open(f"{tmp}/model.sha256", "w") as fh:
            fh.write(f"{_sha256(model)}  model.pt\n")
        subprocess.run(["tar", "czf", f"{tmp}/data.tgz", "-C", work, *data], check=True)
        # the weights split where the two calls carry the same: call 1 carries the fairseq wheels, call 2 the data
        size = os.path.getsize(model)
        cut = (size + _bytes(f"{tmp}/data.tgz", f"{tmp}/model.sha256", ".device/device-fairseq.sh")
               - _bytes(".device")) // 2
        if not 0 < cut < size:
            cut = size // 2
        with open(model, "rb") as src:
            head = src.read(cut)
            tail = src.read()
        with open(f"{tmp}/minilm.part00", "wb") as fh:
            fh.write(head)
        with open(f"{tmp}/minilm.part01", "wb") as fh:
            fh.write(tail)
        for f in ("minilm.part00", "minilm.part01", "model.sha256", "data.tgz"):
            os.replace(f"{tmp}/{f}", f"{lease}/{f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = _checkout_bytes()
    one = base + _bytes(".device", f"{lease}/minilm.part00")
    two = base + _bytes(".device/device-fairseq.sh", f"{lease}/minilm.part01", f"{lease}/model.sha256",
                        f"{lease}/data.tgz")
    rel = os.path.relpath(lease)
    print(f'call 1 carries {one // 1048576} MiB (limit 64): carry [".device", "{rel}/minilm.part00"]')
    print(f'call 2 carries {two // 1048576} MiB (limit 64): carry [".device/device-fairseq.sh", "{rel}/minilm.part01", '
          f'"{rel}/model.sha256", "{rel}/data.tgz"]')
    if one > LIMIT or two > LIMIT:
        raise Stop("a call would carry more than 64 MiB")


def _half() -> str:
    return os.environ.get("GPU_LEASE_TMP") or "/tmp/gpu-lease"  # where call 1 leaves the first half for call 2


def _fairseq_here() -> None:
    """The entry point built the device's fairseq (.device/device-fairseq.sh setup); else one must be importable."""
    if subprocess.run([sys.executable, "-c", "import fairseq"], capture_output=True).returncode:
        raise Stop("no fairseq: carry .device (bash ../shared/tools/device-fairseq.sh fetch, here)")


def first(work, args):
    part = f"{work}/gpu-lease/minilm.part00"
    if not os.path.isfile(part):
        raise Stop(f"{part}: not carried (call 1 carries .device and it)")
    _fairseq_here()
    os.makedirs(_half(), exist_ok=True)
    with atomic_path(f"{_half()}/minilm.part00") as tmp:
        shutil.copyfile(part, tmp)
    log(f"the first half is in {_half()}; make call 2 within the 30 s the machine stays warm")


def second(work, args):
    if not args:
        raise Stop("second SECONDS [reproduce_sla_table.sh options]: how long the whole call may take")
    limit = need_int("SECONDS", args[0], 1)
    started = time.monotonic()
    opts = args[1:] or ["--fp16", "--jobs", "8"]
    out = os.environ.get("OUT", "")
    if not (out and os.path.isdir(out)):
        raise Stop("$OUT: not a folder; the device tool brings back what is written there")
    lease, half = f"{work}/gpu-lease", _half()
    if not os.path.isfile(f"{half}/minilm.part00"):
        raise Stop(f"{half}/minilm.part00: not here; call 1 ('first') must run on this machine, and this call within "
                   f"30 s of it")
    for f in ("minilm.part01", "model.sha256", "data.tgz"):
        if not os.path.isfile(f"{lease}/{f}"):
            raise Stop(f"{lease}/{f}: not carried")
    _fairseq_here()
    with open(f"{lease}/model.sha256") as fh:
        want = fh.read().split()[0]
    model = f"{work}/minilm/model.pt"
    if not os.path.isfile(model) or _sha256(model) != want:
        os.makedirs(f"{work}/minilm", exist_ok=True)
        with open(f"{model}.tmp", "wb") as fh:
            for part in (f"{half}/minilm.part00", f"{lease}/minilm.part01"):
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, fh)
        got = _sha256(f"{model}.tmp")
        if got != want:
            os.remove(f"{model}.tmp")
            raise Stop(f"the joined weights' SHA-256 is {got}, not {want}: a half is damaged or from another pack; "
                       f"pack and carry both again")
        os.replace(f"{model}.tmp", model)
    subprocess.run(["tar", "xzf", f"{lease}/data.tgz", "-C", work, "--skip-old-files"], check=True)
    res, ck = f"{lease}/results", f"{lease}/checkpoints"
    os.makedirs(res, exist_ok=True)
    # the runs finished in the table these options train for travel with the checkout, and are skipped here
    table = TABLES[1] if "--fp16" in opts else TABLES[0]
    for f in glob.glob(f"{table}/*_seed*.*"):
        if not os.path.exists(f"{res}/{os.path.basename(f)}"):
            shutil.copy(f, res)
    write_text(f"{lease}/table", table + "\n")  # where 'back' puts these runs
    packing = threading.Lock()

    def pack_runs():  # every finished run, and the logs of the runs in training, whole or not at all
        with packing:
            logs = sorted(os.path.relpath(p, work) for p in glob.glob(f"{glob.escape(ck)}/*/train.log"))
            part = f"{out}/table1_lease.tgz.part{threading.get_ident()}"
            rc = subprocess.run(["tar", "czf", part, "--warning=no-file-changed", "-C", work, "gpu-lease/table",
                                 "gpu-lease/results", *logs]).returncode
            if rc in (0, 1):  # tar's 1 is a log that grew while it was read
                os.replace(part, f"{out}/table1_lease.tgz")
                return True
            return False

    # what the set-up left, less the time to stop the runs (timeout's 20 s grace) and to pack them
    train_s = int(limit - (time.monotonic() - started) - 40)
    if train_s < 10:
        raise Stop(f"SECONDS {limit} leaves {train_s} s to train after the set-up and the packing; give more")
    log(f"training for at most {train_s} s (of the call's {limit}): reproduce_sla_table.sh {' '.join(opts)}")
    done = threading.Event()

    def packer():  # packed every minute as well: a call the device tool stops still brings back what finished
        while not done.wait(60):
            pack_runs()
    thread = threading.Thread(target=packer, daemon=True)
    thread.start()
    rc = subprocess.run(["timeout", "--signal=INT", "--kill-after=20", str(train_s), "bash",
                         "examples/encoders/reproduce_sla_table.sh", *opts, "--data-root", work, "--pretrained",
                         f"{work}/minilm", "--out", res, "--checkpoints", ck, "--no-summary"]).returncode
    done.set()
    thread.join()
    if rc:
        log(f"the reproduction ended with {rc} (124: the time limit); packing what finished")
    if not pack_runs():
        raise Stop(f"packing the finished runs into {out}/table1_lease.tgz failed")
    for f in glob.glob(f"{glob.escape(out)}/table1_lease.tgz.part*"):
        os.remove(f)
    log(f"{len(glob.glob(f'{glob.escape(res)}/*.eval.json'))} finished runs in {out}/table1_lease.tgz")


def back(work, args):
    if not args:
        raise Stop("back TGZ [--into DIR]: the table1_lease.tgz a 'second' call brought back")
    tgz, into, rest = args[0], "", args[1:]
    while rest:
        if rest[0] == "--into" and len(rest) >= 2 and rest[1] and not rest[1].startswith("--"):
            into, rest = rest[1], rest[2:]
        elif rest[0] == "--into":
            raise Stop("--into needs a value; --help lists the options")
        else:
            raise Stop(f"back: unknown option {rest[0]} (back TGZ [--into DIR])")
    if not os.path.isfile(tgz):
        raise Stop(f"{tgz}: no such file")
    try:
        with gzip.open(tgz) as fh:
            while fh.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error):
        raise Stop(f"{tgz}: a damaged or cut archive; bring it back again") from None
    table = TABLES[1]  # archives from before 'second' named their table were all fp16
    with tarfile.open(tgz) as tar:
        try:
            member = tar.getmember("gpu-lease/table")
        except KeyError:
            member = None
        if member is not None:
            if not member.isfile():
                raise Stop(f"{tgz}: its gpu-lease/table is a link; not an archive of 'second'")
            table = tar.extractfile(member).read().decode("utf-8", "replace").splitlines()[0]
    if table not in TABLES:
        raise Stop(f"{tgz}: names the table '{table}', neither {TABLES[0]} nor {TABLES[1]}")
    fp16 = table == TABLES[1]
    into = into or table
    # every run checked (names, protocol, precision, finite scores, complete files) before any file is copied
    env = dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH")
                                                else ""))
    run_tool([sys.executable, "-m", "examples.studies.bring_back", tgz, "--into", into, "--precision",
         "fp16" if fp16 else "fp32"], env=env)
    if not glob.glob(f"{glob.escape(into)}/*.eval.json"):
        raise Stop(f"{tgz}: no run finished there")
    # into the fp32 table (its own folder): the summary writes its block of examples/encoders/README.md too
    where = [] if into == TABLES[0] else ["--out", into]
    with tempfile.TemporaryDirectory() as none:
        run_tool(["bash", "examples/encoders/reproduce_sla_table.sh", *(["--fp16"] if fp16 else []), "--summary-only",
             *where, "--checkpoints", f"{none}/none"])


if __name__ == "__main__":
    sys.exit(run_main(main))
