"""fairseq-syntax-options prints the options the plugin adds (fairseq's --help never lists a model's), and every
one of them is documented in docs/."""
import re

from fairseq_syntax.cli.options import option_rows, plugin_names

from .conftest import BIN, ROOT, run


def test_it_prints_an_architectures_options_with_the_filled_defaults():
    out = run([BIN / "fairseq-syntax-options", "transformer_sgnet_small"]).stdout
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([^`]+)` \| ([^|]+) \|", out, re.M)}
    assert rows["--sgnet-alpha"].strip() == "0.5" and rows["--sgnet-layers"].strip() == "1"
    assert rows["--sgnet-attention-heads"].strip() == "4"  # transformer_sgnet_small's encoder heads
    assert "--sla-distance" in rows and "--encoder-layers" not in rows  # fairseq's own options are left out
    ranking = run([BIN / "fairseq-syntax-options", "syntax_sentence_ranking"]).stdout
    assert "`--max-input-length`" in ranking and "`--num-classes`" not in ranking
    bad = run([BIN / "fairseq-syntax-options", "transformer_nope"], check=False)
    assert bad.returncode == 1 and "neither an architecture nor a task" in bad.stderr


def test_every_option_it_lists_is_in_the_docs():
    docs = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    archs, tasks = plugin_names()
    missing = sorted({(opt, name) for name in archs + tasks for opts, _, _ in option_rows(name)
                      for opt in opts.split(", ") if opt not in docs})
    assert not missing, f"options not documented in docs/*.md: {missing}"
