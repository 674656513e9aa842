"""The syntax core, parsing and torch modules import without fairseq; the glue imports the core."""
import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "fairseq_syntax"
CORE = ["syntax", "parsing", "modules", "text_prep", "pretrained", "pipeline"]
# the reader keeps its fairseq-free modules beside its glue (docs/lambada-reader.md, reader/__init__.py)
READER_CORE = ["instances", "ptb", "annotate", "chains", "coref", "neuralcoref_worker", "supervision", "losses",
               "layers"]
READER_GLUE = {"binarize", "dataset", "model", "task", "criterion", "lambada_prep", "lambada_eval"}


def test_core_runs_with_fairseq_blocked():
    code = ("import sys; sys.modules['fairseq'] = None\n"
            "import fairseq_syntax.syntax, fairseq_syntax.parsing, fairseq_syntax.pipeline.stages, "
            "fairseq_syntax.modules, fairseq_syntax.text_prep, fairseq_syntax.pretrained, "
            "fairseq_syntax.reader.annotate, fairseq_syntax.reader.coref, fairseq_syntax.reader.losses, "
            "fairseq_syntax.reader.layers, fairseq_syntax.mmap_index\n"
            "from fairseq_syntax.syntax import ancestors_mask; print(ancestors_mask([2, 0]).sum().item())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


def core_files():
    for pkg in CORE:
        yield from (PKG / pkg).glob("*.py")
    for name in READER_CORE:
        yield PKG / "reader" / f"{name}.py"
    yield PKG / "metrics.py"
    yield PKG / "mmap_index.py"


def test_core_sources_never_import_the_glue():
    glue = {"tasks", "models", "data", "cli", "criterions", "reader", "hub_interface"}
    files = list(core_files())
    assert len(files) > 30
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                assert not mod.startswith("fairseq") or mod.startswith("fairseq_syntax"), (path, mod)
                parts = mod.split(".")
                assert not (node.level >= 2 and parts[0] in glue), (path, mod)
                if path.parent.name == "reader" and node.level == 1:
                    assert parts[0] not in READER_GLUE, (path, mod)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] != "fairseq", (path, alias.name)
