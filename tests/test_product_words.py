"""The product speaks of the project alone: no tracked file outside results/ speaks of how its authors organised
their work rather than of what the project does, and one place knows where the local copies of the corpora are."""
import re
import subprocess

import pytest

from .conftest import ROOT

# what the project's own working notes said; the allow-list below keeps the legitimate uses
NOTEBOOK = re.compile(r"lent GPU|lease|\bsession|device tool|\$OUT|\.device/|64 MiB|issue [0-9]|\(issue:", re.I)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
DATE_OF_WORK = re.compile(rf"\b[0-9]{{1,2}} ({MONTHS})\b|\b({MONTHS}),? 20[0-9]{{2}}\b")
ALLOWED = (
    re.compile(r"release", re.I),  # a corpus release, a lock's release()
    re.compile(r'scope="session"'),  # pytest's fixture scope
)


def tracked_text_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    for name in out.decode().split("\0"):
        if not name or name.startswith("results/") or name == "LICENSE":
            continue
        path = ROOT / name
        try:
            yield name, path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # a binary file, or one removed from the working tree


def offending_lines(pattern):
    """Every line that matches ``pattern`` once the allowed uses are taken out of it."""
    found = []
    for name, text in tracked_text_files():
        if name == "tests/test_product_words.py":
            continue
        for n, line in enumerate(text.splitlines(), 1):
            rest = line
            for allowed in ALLOWED:
                rest = allowed.sub(" ", rest)
            if pattern.search(rest):
                found.append(f"{name}:{n}: {line.strip()[:120]}")
    return found


def test_no_file_outside_results_speaks_of_sessions_leases_or_issue_numbers():
    assert offending_lines(NOTEBOOK) == []


def test_no_file_outside_results_dates_the_work():
    assert offending_lines(DATE_OF_WORK) == []


def test_one_place_knows_where_the_local_corpora_are():
    named = sorted(name for name, text in tracked_text_files() if "../shared" in text
                   and name != "tests/test_product_words.py")
    assert named == [".ci/run"]  # fairseq_syntax/local_data.py finds the folder without spelling the path
