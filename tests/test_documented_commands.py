"""Every command the documentation writes takes the options it is written with: a fairseq command line (train,
generate, interactive, validate) parses with fairseq's own parser, the plugin registered, its task and architecture
among the choices; an entry point of the project (a console script, a script, a shell entry point) lists each
option in its --help. A renamed or removed option would otherwise live on in the docs a user copies from."""
import contextlib
import io
import os
import re
import runpy
import shlex
import subprocess
import sys
from importlib.metadata import entry_points

from fairseq_syntax import USER_DIR

from .conftest import ROOT, in_process

DOCS = sorted(p for pattern in ("*.md", "docs/*.md", "examples/*/*.md", "benchmarks/*.md", "tests/*.md")
              for p in ROOT.glob(pattern))
FAIRSEQ = ("fairseq-train", "fairseq-generate", "fairseq-interactive", "fairseq-validate")
SUBSTITUTE = {'"$(fairseq-syntax-user-dir)"': USER_DIR, '"$U"': USER_DIR}


def documented_commands():
    """(markdown file, line, argv) of every command in the files' bash blocks, continuation lines joined, the
    environment assignments before it dropped, split at ``&&``, ``||``, ``;`` and ``|``."""
    found = []
    for md in DOCS:
        text = md.read_text(encoding="utf-8")
        for block in re.finditer(r"```bash\n(.*?)```", text, re.S):
            first = text.count("\n", 0, block.start()) + 2
            body = block.group(1)
            for m in re.finditer(r"(?:[^\n]*\\\n)*[^\n]*", body):
                line = m.group(0).replace("\\\n", " ")
                for old, new in SUBSTITUTE.items():
                    line = line.replace(old, new)
                lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
                lexer.whitespace_split, lexer.commenters = True, "#"
                argv = []
                for tok in list(lexer) + [";"]:
                    if tok in (";", "&&", "||", "|", "&"):
                        while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):
                            argv.pop(0)
                        if argv:
                            found.append((md.relative_to(ROOT), first + body.count("\n", 0, m.start()), argv))
                        argv = []
                    else:
                        argv.append(tok)
    return found


COMMANDS = documented_commands()


def test_the_docs_hold_commands_of_every_kind():
    programs = {argv[0] for _, _, argv in COMMANDS}
    assert {"fairseq-train", "fairseq-generate", "fairseq-interactive", "bash"} <= programs, programs
    assert any(p.startswith("fairseq-syntax-") for p in programs), programs


def test_every_fairseq_command_parses_with_the_plugin():
    from fairseq import options

    import fairseq_syntax

    fairseq_syntax.register()
    parsers = {"fairseq-train": options.get_training_parser, "fairseq-generate": options.get_generation_parser,
               "fairseq-interactive": options.get_interactive_generation_parser,
               "fairseq-validate": options.get_validation_parser}
    wrong, checked = [], 0
    for md, line, argv in COMMANDS:
        if argv[0] not in FAIRSEQ:
            continue
        checked += 1
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                _, extra = options.parse_args_and_arch(parsers[argv[0]](), argv[1:], parse_known=True)
        except SystemExit:
            wrong.append(f"{md}:{line}: {argv[0]}: {err.getvalue().strip().splitlines()[-1][:300]}")
            continue
        unknown = [a for a in extra if a.startswith("-")]
        if unknown:
            wrong.append(f"{md}:{line}: {argv[0]} does not take {' '.join(unknown)}")
    assert checked >= 10 and not wrong, "\n".join(wrong)


def subcommand(args):
    """The subcommand a command line names first (``gpu_matrix.py prepare``), whose own --help lists its options."""
    return [a for a in args[:1] if re.fullmatch(r"[a-z][a-z-]*", a)]


def console_help(name, argv):
    """What ``name --help`` prints, the entry point called in this process (a subcommand's own help where the
    command names one)."""
    scripts = {e.name: e for e in entry_points(group="console_scripts")}
    assert name in scripts, f"{name}: no such console script"
    return in_process(scripts[name].load(), [*subcommand(argv[1:]), "--help"]).stdout


def script_help(argv):
    """What ``bash X.sh --help`` or ``python X.py --help`` prints: a shell entry point in its own process (it is a
    shell script), a Python script run in this one."""
    if argv[0] == "bash":
        return subprocess.run(["bash", argv[1], *subcommand(argv[2:]), "--help"], cwd=ROOT, capture_output=True,
                              text=True).stdout
    saved = sys.path[:], dict(os.environ)
    try:  # (a script may set up its environment before it reads its options: it is put back)
        return in_process(lambda: runpy.run_path(str(ROOT / argv[1]), run_name="__main__"),
                          [*subcommand(argv[2:]), "--help"], program=argv[1]).stdout
    finally:
        sys.path[:] = saved[0]
        os.environ.clear()
        os.environ.update(saved[1])


def test_every_entry_point_lists_the_options_the_docs_give_it():
    wrong, checked = [], 0
    for md, line, argv in COMMANDS:
        if argv[0].startswith("fairseq-syntax-") and argv[0] != "fairseq-syntax-user-dir":
            text, args = console_help(argv[0], argv), argv[1:]
        elif argv[0] in ("bash", "python", ".venv/bin/python") and len(argv) > 1 and not argv[1].startswith("-"):
            assert (ROOT / argv[1]).is_file(), f"{md}:{line}: {argv[1]}: no such script"
            text, args = script_help(argv), argv[2:]
        else:
            continue
        checked += 1
        given = {a.split("=", 1)[0] for a in args if a.startswith("--")}
        missing = sorted(o for o in given if o != "--help" and not re.search(rf"{re.escape(o)}(?![\w-])", text))
        if missing:
            wrong.append(f"{md}:{line}: {' '.join(argv[:2])}: --help does not list {' '.join(missing)}")
    assert checked >= 30 and not wrong, "\n".join(wrong)
