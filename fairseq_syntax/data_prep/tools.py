"""What every recipe does around its stages: the console tools it calls, and checks of the text between them."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
import zlib

from ..pipeline.atomic import atomic_path
from ..pipeline.messages import Stop, log
from ..pipeline.stages import Preparation


def check_out_path(out: str) -> None:
    """Before any work: an --out fairseq's tools can take. fairseq-preprocess splits a data path at commas and
    fairseq-train at colons, a name starting with a dash reads as an option, and a file cannot be the folder."""
    if not out:
        raise Stop("--out needs a folder")
    name = os.path.normpath(out)
    bad = [why for ok, why in ((("," not in name), "a comma (fairseq-preprocess splits its paths at commas)"),
                               ((":" not in name), "a colon (fairseq-train splits its data path at colons)"),
                               (not any(part.startswith("-") for part in name.split(os.sep)),
                                "a part starting with '-' (a tool would read it as an option)")) if not ok]
    if bad:
        raise Stop(f"--out {out}: holds {' and '.join(bad)}; give another folder")
    if os.path.exists(out) and not os.path.isdir(out):
        raise Stop(f"--out {out}: is a file, not a folder; give a folder")


class Recipe:
    """One preparation: its ``--out`` (locked and claimed), its stages, and the tools it runs, found beside the
    interpreter (the environment's console scripts), each holding the folder's lock while it runs."""

    def __init__(self, out: str, corpus: str, wait: bool = False):
        check_out_path(out)
        self.out = out
        self.prep = Preparation(out, corpus, wait)
        bin_dir = os.path.dirname(sys.executable)
        self.env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")

    def stage(self, name, command, key="", inputs=(), outputs=()):
        self.prep.stage(name, command, key=key, inputs=inputs, outputs=outputs)

    def tool(self, *argv, fail: str | None = None, stdout=None, quiet_tensorboard: bool = False) -> None:
        """Run a console tool; it reports its own error, and ``fail`` (or its name) stops the recipe."""
        argv = [str(a) for a in argv]
        fds = () if self.prep.lock.fh.closed else (self.prep.lock.fileno(),)
        try:
            if quiet_tensorboard:  # fairseq's imports warn about tensorboardX on every call
                proc = subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        pass_fds=fds, text=True, errors="replace")
                for line in proc.stdout:
                    if "tensorboardX" not in line:
                        sys.stderr.write(line)
                rc = proc.wait()
            else:
                rc = subprocess.run(argv, env=self.env, stdout=stdout, pass_fds=fds).returncode
        except FileNotFoundError:
            raise Stop(f"{argv[0]}: not found (run scripts/setup.sh, or install fairseq_syntax)") from None
        if rc != 0:
            raise Stop(fail or f"{os.path.basename(argv[0])} failed (exit {rc})")

    def tool_output(self, path: str, *argv, fail: str | None = None) -> None:
        """A tool's standard output into ``path``, which appears only if the tool succeeds."""
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            self.tool(*argv, fail=fail or f"failed while writing {path}", stdout=fh)


def count_lines(path: str) -> int:
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))


def same_lines(a: str, b: str) -> int:
    """Both files have the same number of lines, and not none."""
    na, nb = count_lines(a), count_lines(b)
    if na != nb:
        raise Stop(f"{a} has {na} lines but {b} has {nb}")
    if na == 0:
        raise Stop(f"{a} and {b} are empty: no sentences to prepare (an empty or truncated input?)")
    return na


def no_empty(path: str) -> None:
    """Name the first empty line, if any: the parser needs one sentence a line."""
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                raise Stop(f"{path}:{n}: empty line (the parser needs one sentence per line)")


def check_gzip(path: str) -> None:
    """The whole archive reads (an empty or damaged one is refused by name, before anything is written)."""
    if os.path.getsize(path) == 0:
        raise Stop(f"{path}: not a readable gzip file (empty or damaged)")
    for _ in read_lines(path, gz=True):
        pass


def read_lines(path: str, gz: bool | None = None):
    """The lines of a plain or gzipped file (by its name, unless ``gz`` says), as bytes; a damaged archive is
    named, not a traceback."""
    gz = path.endswith(".gz") if gz is None else gz
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
            yield from fh
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise Stop(f"{path}: not a readable gzip file (empty or damaged: {e})") from None


def head_lines(src: str, dest: str, limit: int, plus: int = 0, gz: bool | None = None) -> None:
    """The first ``limit`` lines of ``src`` (plain or .gz; all with 0), and ``plus`` more, into ``dest``, written
    whole or not at all."""
    keep = limit + plus if limit > 0 else 0
    with atomic_path(dest) as tmp, open(tmp, "wb") as out:
        for n, line in enumerate(read_lines(src, gz), 1):
            out.write(line)
            if keep and n >= keep:
                break


def copy_text(src: str, dest: str) -> None:
    """A plain or gzipped text file, whole, into ``dest``."""
    head_lines(src, dest, 0)


def download(url: str, dest: str) -> bool:
    """``url`` into ``dest`` (whole or not at all); False where it cannot be had."""
    import shutil
    import urllib.error
    import urllib.request

    log(f"download {url}")
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, atomic_path(dest) as tmp, open(tmp, "wb") as fh:
            shutil.copyfileobj(resp, fh)
    except (urllib.error.URLError, OSError) as e:
        log(f"download failed: {url} ({e})")
        return False
    return True
