"""benchmarks/gpu_matrix.py, the GPU benchmark, run here on the CPU on a real CoNLL-2003 slice: it checks
each syntax system's fast path against its reference path before it times anything, and writes its table."""
import json

import pytest

from .conftest import study_script
from .test_token_labeling import conll  # noqa: F401 (the fixture: a prepared CoNLL-2003 slice)


@pytest.mark.slow
def test_the_gpu_matrix_checks_then_times_every_tagging_system(conll, tmp_path):  # noqa: F811
    matrix = study_script("benchmarks/gpu_matrix.py")
    matrix.main(["run", "--device", "cpu", "--families", "tagging", "--precisions", "fp32,bf16", "--cells", "1",
                 "--rounds", "1",
                 "--steps", "1", "--warmup", "1", "--threads", "1", "--data", f"tagging={conll / 'data/bin'}",
                 "--out", str(tmp_path)])
    result = json.loads((tmp_path / "matrix.json").read_text())
    assert set(result["checks"]) == {"tagging sgnet", "tagging sla", "tagging wla"}
    assert all(c["ok"] and c["grad_rel_max"] < 1e-3 for c in result["checks"].values())
    cells = result["cells"]
    assert [(c["precision"], c["batch"]) for c in cells] == [("fp32", "32 sentences"), ("bf16", "32 sentences")]
    for c in cells:
        assert set(c["ratio"]) == {"sgnet", "sla", "wla"} and all(r > 0 for r in c["ratio"].values())
        assert c["goal"] == {"sgnet": 0.90, "sla": 0.95, "wla": 0.97}
    md = (tmp_path / "matrix.md").read_text()
    assert "| tagging | small | bf16 | 32 sentences |" in md and "Fast path against reference path" in md


def test_the_gpu_matrix_refuses_what_it_does_not_know(tmp_path):
    matrix = study_script("benchmarks/gpu_matrix.py")
    with pytest.raises(SystemExit):
        matrix.main(["run", "--families", "tagging,parsing", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        matrix.main(["run", "--data", "tagging", "--out", str(tmp_path)])
