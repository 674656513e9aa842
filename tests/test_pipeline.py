"""fairseq_syntax.pipeline in-process: stage records, locks, ownership and option checks, on hand-made folders.
(The recipes that use them run end to end in test_stage_records.py and test_no_input_lost.py.)"""
import os
import subprocess
import sys

import pytest

from fairseq_syntax.pipeline import options
from fairseq_syntax.pipeline.atomic import atomic_path, command_output
from fairseq_syntax.pipeline.locks import FileLock, Held, holder_now
from fairseq_syntax.pipeline.messages import Stop, run_main
from fairseq_syntax.pipeline.ownership import OWNED, fresh_dir, install_dir, owned_or_absent
from fairseq_syntax.pipeline.records import fingerprint
from fairseq_syntax.pipeline.stages import Preparation


def said(capsys):
    return capsys.readouterr().err


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_stage_is_redone_for_what_shaped_it_and_says_why(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a\n")
    out = tmp_path / "out"
    calls = []

    def upper():
        calls.append("upper")
        (out / "up.txt").write_text(src.read_text().upper())

    def count():
        calls.append("count")
        (out / "n.txt").write_text(str(len((out / "up.txt").read_text())))

    def chain(key="x=1"):
        prep = Preparation(str(out), "test")
        prep.stage("upper", upper, key=key, inputs=[str(src)])
        prep.stage("count", count)
        prep.lock.release()

    chain()
    assert calls == ["upper", "count"] and "start upper" in said(capsys)
    chain()
    assert calls == ["upper", "count"] and said(capsys).count("(done)") == 2
    chain("x=2")
    err = said(capsys)
    assert "redo upper: its options changed (were 'x=1', now 'x=2')" in err
    assert "redo count: a stage before it was redone" in err
    src.write_text("b\n")
    chain("x=2")
    assert f"redo upper: its inputs changed ({src})" in said(capsys) and (out / "up.txt").read_text() == "B\n"
    (out / "n.txt").unlink()
    chain("x=2")
    err = said(capsys)
    assert "skip upper (done)" in err and f"redo count: {out}/n.txt is missing" in err
    (out / "up.txt").write_text("changed by hand\n")
    chain("x=2")
    assert f"redo upper: {out}/up.txt changed since it was written" in said(capsys)
    record = out / ".stamps/upper"  # an older version's record: no outputs listed
    record.write_text("".join(x for x in record.read_text().splitlines(True) if not x.startswith("output: ")))
    chain("x=2")
    assert "redo upper: its record lists no outputs (written by an older version)" in said(capsys)
    assert calls.count("upper") == 5 and "output: " in record.read_text()


def test_a_stage_that_writes_nothing_is_a_bug_and_is_not_marked_done(tmp_path):
    prep = Preparation(str(tmp_path / "out"), "test")
    with pytest.raises(Stop, match="stage idle wrote no file under"):
        prep.stage("idle", lambda: None)
    assert not (tmp_path / "out/.stamps/idle").exists()


def test_a_declared_folder_makes_a_command_that_finds_its_work_done_whole(tmp_path, capsys):
    out = tmp_path / "out"
    write(out / "parse/a.conllu", "done before\n")
    (out / ".corpus").write_text("test\n")
    prep = Preparation(str(out), "test")
    prep.stage("parse", lambda: None, outputs=["parse"])
    assert "output: " in (out / ".stamps/parse").read_text() and "parse/a.conllu" in (out / ".stamps/parse").read_text()


def test_inputs_are_fingerprinted_as_read(tmp_path):
    real = tmp_path / "real"
    write(real / "a.txt", "1\n")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    first = fingerprint([str(link)])
    write(real / ".hidden", "h\n")  # a hidden file counts
    second = fingerprint([str(link)])
    assert second != first
    assert fingerprint([str(tmp_path / "nothing")]) != fingerprint([str(tmp_path / "other")])  # absent counts
    os.mkfifo(real / "pipe")
    with pytest.raises(Stop, match="pipe: not a regular file"):
        fingerprint([str(link)])
    (real / "pipe").unlink()
    (real / "dangling").symlink_to(tmp_path / "gone")
    with pytest.raises(Stop, match="dangling: not a regular file"):
        fingerprint([str(real)])


def test_an_input_is_the_file_it_names_and_the_preparations_own_out_is_never_one(tmp_path, monkeypatch):
    """``dir/``, ``./dir`` and its absolute path are one input; an --out inside an input folder (a GLUE task's) adds
    the preparation's own outputs, which must not make every unchanged re-run redo everything."""
    write(tmp_path / "glue/RTE/train.tsv", "a\n")
    monkeypatch.chdir(tmp_path)
    same = {fingerprint(["glue/RTE/"]), fingerprint(["./glue/RTE"]), fingerprint([str(tmp_path / "glue/RTE")])}
    assert len(same) == 1
    out = tmp_path / "glue/RTE/prepared"
    before = fingerprint(["glue/RTE"], exclude=str(out))
    write(out / "bin/train.bin", "written by the preparation\n")
    assert fingerprint(["glue/RTE"], exclude="glue/RTE/prepared/") == before
    assert fingerprint(["glue/RTE"]) != before  # (without its --out named, it is one more file)


def test_the_fingerprint_is_the_one_sha1sum_gave(tmp_path):
    """Folders prepared by the shell version keep their finished stages: the same lines, the same digest."""
    folder = tmp_path / "f"
    write(folder / "b.txt", "b\n")
    write(folder / "sub/a b.txt", "a\n")
    (tmp_path / "one.txt").write_text("x\n")
    script = ('{ find -L "$1" -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha1sum; '
              'printf "%s  %s\\n" "$(sha1sum < "$2" | cut -d" " -f1)" "$2"; echo "absent $3"; } '
              '| sha1sum | cut -d" " -f1')
    want = subprocess.run(["bash", "-c", script, "_", str(folder), str(tmp_path / "one.txt"), str(tmp_path / "no")],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert fingerprint([str(folder), str(tmp_path / "one.txt"), str(tmp_path / "no")]) == want


def test_one_preparation_at_a_time_and_a_waiting_one_names_the_first(tmp_path, capsys):
    out = tmp_path / "out"
    first = Preparation(str(out), "test")
    with pytest.raises(Stop, match=r"another preparation \(pid \d+, .*\) is writing there; .*--wait"):
        Preparation(str(out), "test")
    code = ("import sys; from fairseq_syntax.pipeline.stages import Preparation\n"
            "Preparation(sys.argv[1], 'test', wait=True); print('in')")
    waiting = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        waiting.wait(timeout=3)
    first.lock.release()
    stdout, stderr = waiting.communicate(timeout=60)
    assert stdout == "in\n" and f"{out}: waiting for pid {os.getpid()}" in stderr


def test_a_folder_is_one_corpus_and_the_users_files_stay(tmp_path):
    out = tmp_path / "out"
    Preparation(str(out), "glue.sh --task CoLA").lock.release()
    with pytest.raises(Stop, match="was prepared by glue.sh --task CoLA, not glue.sh --task SST-2"):
        Preparation(str(out), "glue.sh --task SST-2")
    home = tmp_path / "home"
    write(home / "thesis.tex", "years of work\n")
    with pytest.raises(Stop, match="thesis.tex exists and was not written by data-prep"):
        Preparation(str(home), "test")
    assert (home / "thesis.tex").read_text() == "years of work\n" and not (home / ".corpus").exists()
    assert sorted(p.name for p in home.iterdir()) == ["thesis.tex"]  # not even the lock file the refused run made
    older = tmp_path / "older"
    (older / ".stamps").mkdir(parents=True)
    with pytest.raises(Stop, match="holds stage records that do not name their corpus"):
        Preparation(str(older), "test")


def test_a_stopped_runs_temporaries_are_removed_and_a_live_ones_kept(tmp_path, capsys):
    out = tmp_path / "out"
    Preparation(str(out), "test").lock.release()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = out / "bpe" / f"train.en.tmp{dead.stdout.strip()}"  # a killed BPE's
    write(stale, "half\n")
    live = out / f"raw.txt.tmp{os.getpid()}"
    write(live, "being written\n")
    Preparation(str(out), "test").lock.release()
    assert not stale.exists() and live.exists() and f"removed {stale}" in capsys.readouterr().err


def test_only_folders_data_prep_made_are_replaced(tmp_path):
    out = tmp_path / "out"
    write(out / "bin/mine.txt", "the user's\n")
    with pytest.raises(Stop, match="bin exists and was not written by data-prep"):
        owned_or_absent(str(out / "bin"), str(out))
    tmp = fresh_dir(str(out / "bin.tmp"), str(out))
    assert os.listdir(tmp) == [OWNED]
    with pytest.raises(Stop):
        install_dir(tmp, str(out / "bin"), str(out))
    assert (out / "bin/mine.txt").exists()
    (out / "bin/mine.txt").unlink()
    (out / "bin" / OWNED).write_text("")
    install_dir(tmp, str(out / "bin"), str(out))
    assert os.listdir(out / "bin") == [OWNED] and not (out / "bin.tmp").exists()


def test_nothing_half_written_is_left(tmp_path):
    dest = tmp_path / "x.txt"
    with pytest.raises(RuntimeError):
        with atomic_path(str(dest)) as tmp:
            open(tmp, "w").write("half")
            raise RuntimeError
    with pytest.raises(subprocess.CalledProcessError):
        command_output(str(dest), ["bash", "-c", "echo partial; exit 3"])
    assert os.listdir(tmp_path) == []


def test_a_lock_is_shared_or_exclusive_and_names_its_holder(tmp_path):
    path = str(tmp_path / "f.lock")
    with FileLock(path) as held:
        held.claim("first")
        with pytest.raises(Held, match="first"):
            FileLock(path)
    with FileLock(path, shared=True), FileLock(path, shared=True):
        with pytest.raises(Held):
            FileLock(path)


def test_who_holds_a_lock_is_read_without_taking_it(tmp_path):
    """holder_now: what --status says of a run's folder. A lock file outlives its lock (a killed run, a restarted
    machine), so the file's text alone is not an answer; reading never takes the lock a trainer may want."""
    path = str(tmp_path / ".lock")
    assert holder_now(path) is None  # no file
    with FileLock(path) as held:
        held.claim("reproduce_sla_table.sh")
        text = holder_now(path)
        assert text.startswith(f"pid {os.getpid()}, reproduce_sla_table.sh, started ")
        with pytest.raises(Held):  # it is still this process's alone
            FileLock(path)
    assert holder_now(path) is None and open(path).read().startswith(f"pid {os.getpid()},")  # released, file kept
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / ".lock").write_text(f"pid {dead.stdout.strip()}, reproduce_sla_table.sh, started 2026-01-01\n")
    assert holder_now(path) is None  # a file naming a process that is gone
    with FileLock(path):  # held, but by a process other than the one the file names
        assert holder_now(path) is None
    with FileLock(str(tmp_path / "other.lock")) as other:
        other.claim("x")
        (tmp_path / ".lock").write_text(f"pid {os.getpid()}, x, started 2026-01-01\n")
        assert holder_now(path) is None  # this process holds a lock, but on another file


def test_where_the_kernel_lists_no_locks_the_named_process_must_be_alive(tmp_path, monkeypatch):
    """holder_now off Linux (no /proc/locks): the process the lock file names, alive or gone."""
    import builtins

    from fairseq_syntax.pipeline import locks

    def no_table(path, *a, **k):
        if path == "/proc/locks":
            raise FileNotFoundError(path)
        return builtins.open(path, *a, **k)

    monkeypatch.setattr(locks, "open", no_table, raising=False)
    path = tmp_path / ".lock"
    path.write_text(f"pid {os.getpid()}, reproduce.sh, started 2026-01-01\n")
    assert locks.holder_now(str(path)) == f"pid {os.getpid()}, reproduce.sh, started 2026-01-01"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path.write_text(f"pid {dead.stdout.strip()}, reproduce.sh, started 2026-01-01\n")
    assert locks.holder_now(str(path)) is None


def test_options_are_read_as_the_entry_points_always_read_them(capsys):
    spec = {"--max-train": "0", "--out": "work/x"}
    assert options.parse(["--max-train", "5", "--wait"], spec, ("--wait",)) == {
        "max_train": "5", "out": "work/x", "wait": True}
    for argv, message in ((["--out"], "--out needs a value; --help lists the options"),
                          (["--out", "--max-train", "1"], "--out needs a value"),
                          (["--out", ""], "--out needs a value"),
                          (["--bogus"], r"unknown option --bogus \(see --help\)"),
                          (["--out", "a", "--out", "b"], "--out is given twice; give it once"),  # not the last wins
                          (["--wait", "--wait"], "--wait is given twice")):
        with pytest.raises(Stop, match=message):
            options.parse(argv, spec, ("--wait",))
    for value, message in (("01", "takes a whole number, got '01'"), ("1e3", "takes a whole number"),
                           ("9" * 19, "at most 18"), ("0", "must be at least 1, got 0")):
        with pytest.raises(Stop, match=message):
            options.need_int("--workers", value, 1)
    assert options.need_ints("--seeds", "1 2 3") == [1, 2, 3]
    with pytest.raises(Stop, match="--seeds gives 1 twice"):
        options.need_ints("--seeds", "1 2 1")
    with pytest.raises(Stop, match="takes a name of letters"):
        options.need_name("--tag", "a/b")

    def main(argv):
        raise Stop("what went wrong")
    assert run_main(main, []) == 1 and capsys.readouterr().err == "error: what went wrong\n"


def test_quick_mode_slices_only_the_sizes_left_at_all(monkeypatch, capsys):
    monkeypatch.setenv("FAIRSEQ_SYNTAX_QUICK", "1")
    assert options.quick_slice({"max_train": 0, "max_eval": 7}, {"max_train": 300, "max_eval": 30}) == {
        "max_train": 300, "max_eval": 7}
    assert "FAIRSEQ_SYNTAX_QUICK: MAX_TRAIN=300" in capsys.readouterr().err
    monkeypatch.setenv("FAIRSEQ_SYNTAX_QUICK", "0")
    assert options.quick_slice({"max_train": 0}, {"max_train": 300}) == {"max_train": 0}


def test_a_claim_cut_short_is_the_projects_own_and_a_users_folder_stays_refused(tmp_path):
    """A full disk at the very start left an empty .corpus (and a .lock): the same command was then refused for
    good ("was prepared by , not conll2003.sh"). Now that half-written claim, alone, is recognised and made again;
    beside a user's file it is still refused, naming the file."""
    from fairseq_syntax.pipeline.ownership import CORPUS_MARK, claim_out

    out = tmp_path / "out"
    out.mkdir()
    (out / CORPUS_MARK).write_text("")
    (out / ".lock").write_text("")
    (out / f"{CORPUS_MARK}.tmp4711").write_text("conll")
    claim_out(str(out), "conll2003.sh")
    assert (out / CORPUS_MARK).read_text() == "conll2003.sh\n"
    assert sorted(p.name for p in out.iterdir()) == [CORPUS_MARK, ".lock"]
    claim_out(str(out), "conll2003.sh")  # and it is this corpus's from now on
    with pytest.raises(Stop, match="was prepared by conll2003.sh, not glue.sh"):
        claim_out(str(out), "glue.sh")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / CORPUS_MARK).write_text("")
    (mine / "notes.txt").write_text("mine\n")
    with pytest.raises(Stop, match="an empty .corpus beside files data-prep did not write"):
        claim_out(str(mine), "conll2003.sh")
    assert (mine / "notes.txt").read_text() == "mine\n"
