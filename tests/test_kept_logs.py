"""The training logs the studies keep (data-prep/common.sh: keep_log): no machine paths, a folder name never code."""
import gzip

from .conftest import ROOT, run


def test_kept_logs_hold_no_machine_paths(tmp_path):
    """keep_log writes a checkpoints folder outside the checkout as the name given, the checkout as '.', and the
    home directory as '~'; a folder inside the checkout stays relative to it."""
    ck = tmp_path / "ckg"
    (ck / "run").mkdir(parents=True)
    log = tmp_path / "train.log"
    log.write_text(f"save_dir='{ck}/run' restore='{ROOT}/work/minilm/model.pt' at {ck}\n"
                   f"File \"/home/someone/.venv/x.py\"\n")
    out = tmp_path / "kept.log.gz"
    run(["bash", "-c", f'source "{ROOT}/data-prep/common.sh"; keep_log "$1" "$2" "$3" "<checkpoints>" "$4" inside',
         "_", str(log), str(out), str(ck), str(ROOT / "scripts")], env={"HOME": "/home/someone"})
    assert gzip.decompress(out.read_bytes()).decode() == (
        "save_dir='<checkpoints>/run' restore='./work/minilm/model.pt' at <checkpoints>\n"
        'File "~/.venv/x.py"\n')


def test_kept_logs_read_a_folder_name_as_a_path_never_as_sed_code(tmp_path):
    """A --checkpoints folder named with sed's own characters ('#', '&', '.', '*', '\\') is replaced as written, a
    folder the unescaped '.' would match is left alone, and nothing in the name runs (sed's 'e' command)."""
    ck, near = tmp_path / "c#k&1.x*\\b#;e touch PWNED;#", tmp_path / "c#k&1ax*\\b#;e touch PWNED;#"
    ck.mkdir()
    near.mkdir()
    log = tmp_path / "train.log"
    log.write_text(f"save_dir={ck}/run\nnear={near}/run\n")
    out = tmp_path / "kept.log.gz"
    run(["bash", "-c", f'source "{ROOT}/data-prep/common.sh"; keep_log "$1" "$2" "$3" "<ck&#>"', "_", str(log),
         str(out), str(ck)], cwd=tmp_path)
    assert gzip.decompress(out.read_bytes()).decode() == f"save_dir=<ck&#>/run\nnear={near}/run\n"
    assert not list(tmp_path.rglob("PWNED*"))
