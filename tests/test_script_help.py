"""Every entry point's --help prints the whole usage text of the program it runs, and none of its code: a shell
entry point (data-prep/*.sh, examples/*/*.sh, benchmarks/*.sh) its Python program's docstring; a shell program
(scripts/train_multi30k.sh) its header comment."""
import ast
import re
import subprocess

import pytest

from .conftest import ROOT

ENTRIES = sorted(p for d in ("data-prep", "benchmarks", "examples/*") for p in ROOT.glob(f"{d}/*.sh")
                 if "exec \"$PY\"" in p.read_text())
SHELL = [ROOT / "scripts/train_multi30k.sh"]


def program(entry):
    """The Python file an entry point runs: a script path, or a data-prep recipe's module."""
    text = entry.read_text()
    m = re.search(r'exec "\$PY" "\$ROOT/([^"]+\.py)"', text)
    if m:
        return ROOT / m.group(1)
    m = re.search(r"-m fairseq_syntax\.data_prep (\w+)", text)
    return ROOT / "fairseq_syntax/data_prep" / f"{m.group(1)}.py"


def header(path):
    lines = path.read_text().splitlines()[1:]  # after the #! line, up to the first line of code
    out = []
    for line in lines:
        if not line.startswith("#"):
            break
        out.append(line[2:] if line.startswith("# ") else line[1:])
    return out


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_help_prints_the_programs_usage(entry, tmp_path):
    out = subprocess.run(["bash", str(entry), "--help"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = ast.get_docstring(ast.parse(program(entry).read_text()), clean=False)
    assert out.stdout.strip("\n") == doc.strip("\n") and len(doc.splitlines()) > 2
    assert not any(tmp_path.iterdir())  # --help writes nothing


@pytest.mark.parametrize("script", SHELL, ids=lambda p: p.name)
def test_a_shell_programs_help_prints_its_header(script):
    out = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == header(script) and len(header(script)) > 2


def test_every_entry_point_is_checked():
    assert len(ENTRIES) >= 12 and all(len(p.read_text().splitlines()) <= 15 for p in ENTRIES)
