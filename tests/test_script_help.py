"""Every shell script's --help prints its whole header comment, and none of its code."""
import subprocess

import pytest

from .conftest import ROOT

SCRIPTS = sorted(p for d in ("scripts", "data-prep", "benchmarks", "examples/*") for p in ROOT.glob(f"{d}/*.sh")
                 if "--help)" in p.read_text())


def header(path):
    lines = path.read_text().splitlines()[1:]  # after the #! line, up to the first line of code
    out = []
    for line in lines:
        if not line.startswith("#"):
            break
        out.append(line[2:] if line.startswith("# ") else line[1:])
    return out


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_help_prints_the_header(script):
    out = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == header(script)
    assert len(header(script)) > 2


def test_every_script_with_options_is_checked():
    assert len(SCRIPTS) >= 10
