"""The README's Use section, run as written: every bash and Python block in order, in a fresh working folder,
on real data, shrunk only by the documented FAIRSEQ_SYNTAX_QUICK=1 (slices in data-prep, 2 CPU updates per
training). A block that needs the web says so in the README (a marker line before it) and is the only kind left
out."""
import os
import re

import pytest

from .conftest import BIN, ROOT, SHARED_DATA, run

pytestmark = pytest.mark.slow
SKIP = "<!-- README test: skipped"


def use_blocks():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    use = text[text.index("\n## Use\n"):text.index("\n## Results")]
    blocks = []
    for m in re.finditer(r"(?P<before>[^\n]*)\n```(?P<lang>bash|python)\n(?P<body>.*?)```", use, re.S):
        blocks.append((m.group("lang"), m.group("body"), m.group("before").startswith(SKIP),
                       use.count("\n", 0, m.start()) + 1))
    return blocks


def test_the_use_section_has_every_studys_commands():
    blocks = use_blocks()
    text = "".join(b for _, b, _, _ in blocks)
    for needed in ("data-prep/multi30k.sh", "data-prep/glue.sh", "data-prep/lambada.sh",
                   "data-prep/race.sh", "fairseq-generate", "from_pretrained",
                   "fairseq-syntax-race-eval", "fairseq-syntax-lambada-eval"):
        assert needed in text, needed
    saves = re.findall(r"--save-dir (\S+)", text)
    assert len(saves) == len(set(saves)) == text.count("fairseq-train"), saves  # no two trainings share a folder
    assert all("wmt14.sh" in b for _, b, s, _ in blocks if s)  # only a download is left out


@pytest.mark.long  # minutes: started first (tests/conftest.py)
def test_the_use_section_runs_in_order_as_written(tmp_path, coref_env):
    ws = tmp_path / "repo"
    ws.mkdir()
    for name in ("data-prep", "scripts"):
        os.symlink(ROOT / name, ws / name)
    env = {"FAIRSEQ_SYNTAX_QUICK": "1", "FAIRSEQ_SYNTAX_COREF_WHEELS": "", "FAIRSEQ_SYNTAX_DATA": str(SHARED_DATA),
           "PATH": f"{BIN}:{os.environ.get('PATH', '')}", "HOME": os.environ.get("HOME", str(tmp_path))}
    (ws / "work").mkdir(exist_ok=True)  # the coreference environment, installed once for every test here
    os.symlink(coref_env, ws / "work" / "coref-env")
    for lang, body, skipped, line in use_blocks():
        if skipped:
            continue
        cmd = ["bash", "-euo", "pipefail", "-c", body] if lang == "bash" else [str(BIN / "python"), "-c", body]
        proc = run(cmd, cwd=ws, env=env, check=False, timeout=1800)
        assert proc.returncode == 0, (f"README.md, the {lang} block of the Use section at line {line} failed:\n"
                                      f"{body}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    assert (ws / "checkpoints" / "sgnet" / "checkpoint_best.pt").exists()
    assert (ws / "checkpoints" / "race_sgnet" / "checkpoint_last.pt").exists()
