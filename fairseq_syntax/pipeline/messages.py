"""What a pipeline says: timestamped progress lines, and one-line errors instead of tracebacks."""
from __future__ import annotations

import subprocess
import sys
import time


class Stop(Exception):
    """An error the user can act on: printed as ``error: ...`` and exit status 1, never a traceback."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_tool(argv, fail: str | None = None, **kwargs) -> None:
    """A program that reports its own errors: its failure stops this one, as the line ``fail`` where given, else
    with the program's exit status."""
    rc = subprocess.run([str(a) for a in argv], **kwargs).returncode
    if rc and fail:
        raise Stop(fail)
    if rc:
        raise SystemExit(rc)


def run_main(main, argv=None) -> int:
    """``main(argv)`` with a :class:`Stop` (or a tool's failure, already reported) turned into exit status 1."""
    try:
        main(sys.argv[1:] if argv is None else argv)
    except Stop as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 1
    except OSError as e:  # no space, read-only, not a folder: one line naming the file, never a traceback
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"error: {where}{e.strerror or e}; nothing was recorded as done there, so the same command resumes "
              "once that is mended", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader stopped early (| head): nothing more to say
        sys.stderr.close()
        return 0
    return 0
