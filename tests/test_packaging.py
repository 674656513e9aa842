"""The package installs into a user's own environment: ranges, not pins, and pip keeps their torch and fairseq."""
import importlib.metadata
import json
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


@pytest.mark.slow
def test_pip_keeps_the_environments_torch_and_fairseq(tmp_path):
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-build-isolation", "--report",
                    str(report), "--quiet", str(ROOT)], check=True, capture_output=True, timeout=600)
    planned = {item["metadata"]["name"].lower().replace("_", "-") for item in json.loads(report.read_text())["install"]}
    assert "fairseq-syntax" in planned
    # scripts/setup.sh removes fairseq-fixed's torchaudio from this CPU environment, so pip plans it again;
    # it is fairseq's requirement, not ours, and it leaves torch as it is
    assert not planned & {"torch", "fairseq", "fairseq-fixed"}, planned


def test_old_versions_fail_with_one_clear_message():
    with pytest.raises(ImportError, match=r"needs torch >= 2.0, but torch 1.13.1\+cu117 is installed"):
        require("torch", "1.13.1+cu117", (2, 0))
    with pytest.raises(ImportError, match=r"needs fairseq >= 0.12.2, but fairseq 0.10.2 is installed"):
        require("fairseq", "0.10.2", (0, 12, 2))
    require("fairseq", "0.12.3.1", (0, 12, 2))
    require("torch", "2.11.0+cu130", (2, 0))
