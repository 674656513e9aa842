"""Every tracked Python file keeps to the width setup.cfg gives pycodestyle and flake8, so the code reads in one
column on a laptop and in a side-by-side diff."""
import configparser

from .conftest import ROOT
from .test_product_words import tracked_text_files


def test_every_python_line_fits_the_configured_width():
    cfg = configparser.ConfigParser()
    assert cfg.read(ROOT / "setup.cfg"), "setup.cfg is missing"
    width = cfg.getint("pycodestyle", "max-line-length")
    assert width == cfg.getint("flake8", "max-line-length")
    long = [f"{name}:{n}: {len(line)} characters" for name, text in tracked_text_files() if name.endswith(".py")
            for n, line in enumerate(text.splitlines(), 1) if len(line) > width]
    assert not long, f"lines wider than {width} characters:\n" + "\n".join(long)
