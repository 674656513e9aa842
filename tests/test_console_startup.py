"""Console scripts that need no model answer without importing torch or fairseq. The process boundary is the point
here: what a fresh interpreter imports. Times are measured by benchmarks/bench_startup.py, not here."""
import importlib.metadata
import os

import pytest

from .conftest import BIN, run

SCRIPTS = sorted(ep.name for ep in importlib.metadata.entry_points(group="console_scripts")
                 if ep.dist is not None and ep.dist.name == "fairseq_syntax")


def imported(proc) -> set:
    """Top-level modules named in a ``-X importtime`` trace."""
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_user_dir_prints_the_package_path_without_torch():
    proc = run([BIN / "fairseq-syntax-user-dir"], cwd="/", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert os.path.isfile(os.path.join(proc.stdout.strip(), "__init__.py"))
    mods = imported(proc)
    assert "fairseq_syntax" in mods and not mods & {"torch", "fairseq", "numpy"}, sorted(mods)


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s != "fairseq-syntax-user-dir"])
def test_help_and_argument_errors_import_neither_torch_nor_fairseq(script):
    assert len(SCRIPTS) >= 14
    helped = run([BIN / script, "--help"], cwd="/", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert helped.stdout.startswith("usage: ")
    wrong = run([BIN / script, "--no-such-option"], cwd="/", env={"PYTHONPROFILEIMPORTTIME": "1"}, check=False)
    assert wrong.returncode == 2 and ("unrecognized arguments: --no-such-option" in wrong.stderr
                                      or "the following arguments are required" in wrong.stderr), wrong.stderr[-500:]
    for proc in (helped, wrong):
        assert not imported(proc) & {"torch", "fairseq"}, script
