"""The package installs into a user's own environment: ranges, not pins, and pip keeps their torch and fairseq."""
import importlib.metadata
import json
import os
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from fairseq_syntax.versions import require

from .conftest import ROOT

SUPPORTED_PYTHONS = ["3.10", "3.11", "3.12"]


def test_metadata_has_ranges_and_optional_parsers():
    meta = importlib.metadata.metadata("fairseq_syntax")
    reqs = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    pinned = [str(r) for r in reqs if any(s.operator in ("==", "===") for s in r.specifier)]
    assert not pinned, pinned
    assert all(SpecifierSet(meta["Requires-Python"]).contains(v) for v in SUPPORTED_PYTHONS)
    runtime = {r.name for r in reqs if r.marker is None or "extra" not in str(r.marker)}
    assert {"torch", "sacrebleu", "subword-nmt", "sacremoses"} <= runtime
    assert not {"spacy", "stanza"} & runtime  # parsers are extras: fairseq_syntax[spacy], fairseq_syntax[stanza]
    fairseqs = {r.name: r for r in reqs if r.name in ("fairseq", "fairseq-fixed")}
    # exactly one of the two applies to any Python
    for v in SUPPORTED_PYTHONS:
        env = {"python_version": v, "extra": ""}
        assert sum(r.marker.evaluate(env) for r in fairseqs.values()) == 1, v


def test_the_installed_package_holds_no_study_machinery():
    """pip installs fairseq_syntax alone: the studies (examples/, their shared examples/studies) stay beside it, and
    no module of the package imports them, nor names the license anywhere but MIT."""
    import ast

    from setuptools import find_packages

    packages = find_packages(str(ROOT), include=["fairseq_syntax", "fairseq_syntax.*"])
    assert packages and all(p.startswith("fairseq_syntax") for p in packages)
    assert not [p for p in packages if "studies" in p]
    for path in (ROOT / "fairseq_syntax").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            assert not [n for n in names if n.split(".")[0] in ("examples", "benchmarks", "tests")], path
    assert importlib.metadata.metadata("fairseq_syntax")["License"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.slow
def test_pip_keeps_the_environments_torch_and_fairseq(tmp_path):
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-build-isolation", "--report",
                    str(report), "--quiet", str(ROOT)], check=True, capture_output=True, timeout=600)
    planned = {item["metadata"]["name"].lower().replace("_", "-") for item in json.loads(report.read_text())["install"]}
    assert "fairseq-syntax" in planned
    # scripts/setup.sh installs fairseq-fixed without its torchaudio in this CPU environment, so pip plans it;
    # it is fairseq's requirement, not ours, and it leaves torch as it is
    assert not planned & {"torch", "fairseq", "fairseq-fixed"}, planned


def test_setup_takes_coref_and_refuses_an_unknown_option_before_installing_anything():
    """scripts/setup.sh reads its options first: a typo stops it with the options it has, before any pip runs."""
    script = ROOT / "scripts/setup.sh"
    bad = subprocess.run(["bash", str(script), "--corf"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "unknown option '--corf' (options: --coref, --help)" in bad.stderr
    assert bad.stdout == ""  # nothing installed, nothing checked
    # --coref without a Python 3.7 (PYTHON37 names none): said before anything installs
    env = dict(os.environ, PYTHON37=str(ROOT / "no-such-python3.7"), PYTHON=sys.executable)
    no37 = subprocess.run(["bash", str(script), "--coref"], capture_output=True, text=True, timeout=60, env=env)
    assert no37.returncode == 1 and "--coref: neuralcoref needs a Python 3.7" in no37.stderr and no37.stdout == ""
    usage = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 0 and usage.stdout.startswith("Create .venv")
    assert "--coref: also neuralcoref" in usage.stdout


def test_old_versions_fail_with_one_clear_message():
    with pytest.raises(ImportError, match=r"needs torch >= 2.0, but torch 1.13.1\+cu117 is installed"):
        require("torch", "1.13.1+cu117", (2, 0))
    with pytest.raises(ImportError, match=r"needs fairseq >= 0.12.2, but fairseq 0.10.2 is installed"):
        require("fairseq", "0.10.2", (0, 12, 2))
    require("fairseq", "0.12.3.1", (0, 12, 2))
    require("torch", "2.11.0+cu130", (2, 0))


def without_install(tmp_path):
    """A checkout on a machine with nothing installed: fairseq and this package importable, neither installed, no
    `python` (only python3) and no console scripts on PATH."""
    import shutil

    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copy(ROOT / "setup.py", root)
    for part in ("scripts", "data-prep", "fairseq_syntax", "examples", "benchmarks"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "python3").write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    (tools / "python3").chmod(0o755)
    for tool in ("bash", "dirname", "wc", "gzip", "sed", "grep", "cat", "mkdir", "mv", "rm", "nproc", "cut", "tr",
                 "date", "tail", "sort", "head", "touch", "flock", "sleep"):
        (tools / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(tools), "HOME": str(tmp_path), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    return root, env


def test_console_scripts_run_where_nothing_is_installed(tmp_path):
    """examples/studies/runs.py, console_env: where nothing is installed, wrappers for every console script of
    the package (the installed metadata's, read here from setup.py) and of fairseq, and `python`, go first on PATH."""
    root, env = without_install(tmp_path)
    code = ("import subprocess, sys; sys.path.insert(0, sys.argv[1]); from examples.studies.runs import console_env\n"
            "import shutil; e = console_env(); w = lambda c: shutil.which(c, path=e['PATH'])\n"
            "print(w('python')); print(w('fairseq-train')); print(w('fairseq-generate'))\n"
            "print(subprocess.run(['fairseq-syntax-user-dir'], env=e, capture_output=True, text=True).stdout.strip())\n"
            "for c in ('fairseq-train', 'fairseq-syntax-average'):\n"
            "    print(next(x for x in subprocess.run([c, '--help'], env=e, capture_output=True, text=True).stdout"
            ".splitlines() if x.startswith('usage')))")
    proc = subprocess.run(["python3", "-c", code, str(root)], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    wrappers = root / "work/console-scripts"
    lines = proc.stdout.splitlines()
    assert lines[:3] == [str(wrappers / c) for c in ("python", "fairseq-train", "fairseq-generate")]
    assert lines[3] == str(root / "fairseq_syntax")  # the checkout's package, from PYTHONPATH
    assert lines[4].startswith("usage: fairseq-train") and lines[5].startswith("usage: fairseq-syntax-average")
    installed = {ep.name for ep in importlib.metadata.entry_points(group="console_scripts")
                 if ep.dist is not None and ep.dist.name == "fairseq_syntax"}
    assert len(installed) >= 10 and installed <= {p.name for p in wrappers.iterdir()}
    written = (wrappers / "fairseq-train").stat().st_mtime_ns
    again = subprocess.run(["python3", "-c", code.split("\nprint(subprocess")[0], str(root)], cwd=root,
                           env=dict(env, PATH=f"{wrappers}:{env['PATH']}"), capture_output=True, text=True)
    assert again.stdout.splitlines()[0] == str(wrappers / "python")
    assert (wrappers / "fairseq-train").stat().st_mtime_ns == written  # on PATH already: nothing written again
