"""bidaf_sa and lambada_reader: model pieces, then real LAMBADA passages through prep -> train -> evaluate."""
import gzip
import json
import re
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
import torch

import fairseq_syntax
from fairseq.data import Dictionary
from fairseq_syntax.reader.model import BidafSAModel, base_architecture, sa_both, sa_early
from fairseq_syntax.reader.layers import BiGRU, ExponentialMovingAverage
from fairseq_syntax.reader.annotate import read_instances

from .conftest import ROOT, SHARED_DATA, fairseq_train, in_process, once_per_run, run

fairseq_syntax.register()


def tiny_model(arch=sa_early, **kw):
    d = Dictionary()
    for w in "john saw mary . he gave her a book then she thanked".split():
        d.add_symbol(w, 3)
    args = Namespace(hidden=8, word_dim=6, char_filters=4, sa_heads=2, sa_ffn=16, **kw)
    arch(args)
    torch.manual_seed(0)
    return BidafSAModel(args, d), d


def test_supervised_head_sees_only_its_sentence_when_asked():
    model, d = tiny_model(sup_layer=2)
    model.eval()
    ctx = torch.tensor([[d.index(w) for w in "john saw mary . he gave her a book .".split()]])
    qry = torch.tensor([[d.index(w) for w in "then she thanked".split()]])
    sent = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1, 1]])
    _, free = model(ctx, qry, sent)
    model.restrict_to_sentence = True  # what the task sets when DepParse is among the signals
    _, restricted = model(ctx, qry, sent)
    a = restricted["sup_attn"][0]
    assert a.shape == (10, 10)
    assert a[:4, 4:].abs().max() < 1e-6 and a[4:, :4].abs().max() < 1e-6
    assert torch.allclose(a.sum(-1), torch.ones(10))
    assert free["sup_attn"][0][:4, 4:].sum() > 0.01


def test_architectures_and_supervision_choices():
    model, _ = tiny_model(sa_both)
    assert model.supervisable and len(model.contextual.layers) == 4 and len(model.late.layers) == 1
    with pytest.raises(ValueError, match="--sup-layer 5"):
        tiny_model(sup_layer=5)
    baseline, _ = tiny_model(base_architecture)
    assert not baseline.supervisable


def test_char_cnn_once_per_word_type_equals_once_per_token():
    model, d = tiny_model()
    model.eval()
    tokens = torch.tensor([[d.index(w) for w in "john saw mary . he saw her .".split()], [d.pad()] * 8])
    per_token = model.chars(model.spelling[tokens].view(-1, model.spelling.size(1))).view(2, 8, -1)
    expected = model.highway(torch.cat([model.word(model.word_map[tokens]), per_token], -1))
    assert torch.allclose(model.embed(tokens), expected, atol=1e-6)


@pytest.mark.parametrize("layers", [1, 2])
def test_bigru_equals_a_packed_bidirectional_gru(layers):
    """Same outputs and gradients as nn.GRU over a packed batch, zeros at padding, which never leaks in."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    torch.manual_seed(0)
    gru = BiGRU(6, 5, layers=layers, dropout=0.3).eval()  # eval: no dropout between the layers
    lengths = torch.tensor([7, 1, 4, 7])
    x = torch.randn(4, 7, 6)
    x[2, 4:] = 1e3  # padding that would show if it leaked into a state
    ours_in, ref_in = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours = gru(ours_in, lengths)
    packed = pack_padded_sequence(ref_in, lengths, batch_first=True, enforce_sorted=False)
    ref, _ = pad_packed_sequence(gru.rnn(packed)[0], batch_first=True, total_length=7)
    assert torch.allclose(ours, ref, atol=1e-6) and ours[1, 1:].abs().max() == 0 and ours[2, 4:].abs().max() == 0
    weights = torch.randn_like(ref)
    ours_grads = torch.autograd.grad((ours * weights).sum(), [ours_in, *gru.parameters()])
    ref_grads = torch.autograd.grad((ref * weights).sum(), [ref_in, *gru.parameters()])
    for a, b in zip(ours_grads, ref_grads):
        assert torch.allclose(a, b, atol=1e-5)
    assert ours_grads[0][2, 4:].abs().max() == 0


def test_moving_average_is_used_inside_the_block_only():
    p = torch.nn.Parameter(torch.zeros(3))
    ema = ExponentialMovingAverage([p], decay=0.9999)
    with torch.no_grad():
        p.fill_(1.0)
    ema.update()  # first update: decay min(0.9999, 1/10) = 0.1
    assert torch.allclose(ema.shadow_0, torch.full((3,), 0.9))
    with ema.swapped():
        assert torch.allclose(p, torch.full((3,), 0.9))
    assert torch.allclose(p, torch.ones(3))
    assert "shadow_0" in ema.state_dict()


def prep_command(out):
    return ["bash", str(ROOT / "data-prep/lambada.sh"), "--lambada-dir", str(SHARED_DATA / "lambada"),
            "--novels", str(SHARED_DATA / "eltec-eng/txt"), "--novel-passages", "20", "--train-sample", "150",
            "--max-eval", "40", "--parser", "spacy", "--workers", "1", "--coref-env", str(ROOT / "work/coref-env"),
            "--out", str(out)]


@pytest.fixture(scope="module")
def lambada(tmp_path_factory, coref_env):
    return once_per_run(tmp_path_factory, "lambada", lambda out: run(prep_command(out), timeout=1800))


@pytest.fixture(scope="module")
def train_reader(lambada):
    """fairseq-train of the reader on the prepared passages, with the flags every run here shares."""
    user_dir = run(["fairseq-syntax-user-dir"]).stdout.strip()

    def train(cwd, arch, signals, *flags, check=True, process=True):
        """process=False: in this process (conftest.fairseq_train), for a test of what the run trains."""
        args = [str(lambada / "bin"), "--user-dir", user_dir, "--task", "lambada_reader", "--arch", arch, "--signals",
                signals, "--criterion", "pointer_sum", "--optimizer", "adam", *flags]
        return run(["fairseq-train", *args], cwd=cwd, check=check) if process else fairseq_train(args, cwd=cwd)
    return train


@pytest.mark.slow
def test_prepared_lambada_has_instances_chains_and_signals(lambada):
    raw, bin_ = lambada / "raw", lambada / "bin"
    test = [json.loads(line) for line in open(raw / "test.inst.jsonl")]
    dev = open(SHARED_DATA / "lambada/lambada_development_plain_text.txt").read().splitlines()[:40]
    assert len(test) == 40
    for inst, line in zip(test, dev):
        assert " ".join(inst["context"] + inst["query"] + [inst["answer"]]) == line
    train = [json.loads(line) for line in open(raw / "train.inst.jsonl")]
    stop = set(open(SHARED_DATA / "lambada/stopwords.txt").read().split())
    assert train and all(i["answer"] in i["context"] and i["answer"] not in stop for i in train)
    chains = [json.loads(line) for line in open(raw / "train.coref.jsonl")]
    assert len(chains) == len(train) and sum(len(c["clusters"]) for c in chains) > len(train)
    for s in ("train", "valid", "test"):
        for part in ("context", "query", "ctypes", "answer", "sent", "sup.CorefAll", "sup.Narrative", "sup.DepParse"):
            assert (bin_ / f"{s}.{part}.bin").exists(), (s, part)
    proc = run(prep_command(lambada))
    assert proc.stderr.count("skip") >= 4 and "nothing to do" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_chains_are_found_again_when_the_backend_or_the_chains_given_change(lambada, tmp_path):
    """A rerun with another --coref, or with other chains given, must not keep the chains of the run before."""
    import shutil

    mine = tmp_path / "mine"  # chains a user brings: the prepared ones with every chain dropped from train
    mine.mkdir()
    for split in ("train", "valid", "test"):
        records = [json.loads(line) for line in open(lambada / "raw" / f"{split}.coref.jsonl")]
        for r in records if split == "train" else []:
            r["clusters"] = []
        (mine / f"{split}.coref.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = shutil.copytree(lambada, tmp_path / "out", symlinks=True)
    proc = run(prep_command(out) + ["--coref", "jsonl", "--chains-dir", str(mine)])
    assert "train.coref.jsonl: it holds neuralcoref's chains, not jsonl's; finding the chains again" in proc.stderr
    assert (out / "raw/train.coref.jsonl").read_bytes() == (mine / "train.coref.jsonl").read_bytes()
    from fairseq_syntax.data.packed import open_indexed

    sup = {d: open_indexed(str(d / "bin/train.sup.CorefAll")) for d in (lambada, out)}
    pairs = {d: np.array(ds.sizes) for d, ds in sup.items()}  # a copy while its dataset (the mmap) is alive
    assert pairs[lambada].any() and not pairs[out].any()  # CorefAll comes from the chains alone
    # a signal with no pair in the whole split (a 0-byte .bin) still trains
    proc = run(["fairseq-train", str(out / "bin"), "--user-dir", run(["fairseq-syntax-user-dir"]).stdout.strip(),
                "--task", "lambada_reader", "--arch", "bidaf_sa_early", "--signals", "CorefAll", "--criterion",
                "pointer_sum", "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "16", "--max-update", "2",
                "--no-save", "--disable-validation", "--log-format", "simple", "--log-interval", "1"], cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert "num_updates=2" in log and re.search(r"sup_CorefAll=0(,|\s|$)", log) and "nan" not in log, log[-3000:]

    from fairseq_syntax.reader.lambada_prep import main

    coref = ["coref", "--dir", str(out / "raw"), "--split", "train", "--backend", "jsonl",
             "--chains", str(mine / "train.coref.jsonl")]
    assert main(coref) == 0
    assert (out / "raw/train.coref.jsonl").read_bytes() == (mine / "train.coref.jsonl").read_bytes()
    shutil.copyfile(lambada / "raw/train.coref.jsonl", mine / "train.coref.jsonl")  # the user mends the file
    assert main(coref) == 0
    assert (out / "raw/train.coref.jsonl").read_bytes() == (lambada / "raw/train.coref.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("arch,signals", [("bidaf", "none"), ("bidaf_sa_early", "CorefAll"),
                                          ("bidaf_sa_late", "DepParse Narrative")])
def test_train_a_few_updates_and_evaluate(lambada, train_reader, tmp_path, arch, signals):
    save = tmp_path / "ck"
    proc = train_reader(tmp_path, arch, signals, "--lr", "1e-3", "--batch-size", "16", "--max-update", "6",
                        "--save-dir", str(save), "--no-epoch-checkpoints", "--log-format", "simple",
                        "--log-interval", "1", "--best-checkpoint-metric", "accuracy",
                        "--maximize-best-checkpoint-metric", process=False)
    log = proc.stdout + proc.stderr
    assert "num_updates=6" in log or "num_updates 6" in log
    for sig in signals.split():
        if sig != "none":
            assert f"sup_{sig}=" in log, log[-3000:]
    assert "answer_loss=" in log
    from fairseq_syntax.reader.lambada_eval import main as lambada_eval

    out = in_process(lambada_eval, [lambada / "bin", "--path", save / "checkpoint_best.pt", "--split", "test",
                                    "--json", tmp_path / "r.json", "--predictions", tmp_path / "p.jsonl"],
                     cwd=tmp_path).stdout
    rows = dict(re.findall(r"test\t(\w+)\tn=(\d+)", out))
    assert rows["all"] == "40" and 0 < int(rows["answer_in_context"]) <= 40
    r = json.loads((tmp_path / "r.json").read_text())
    assert 0 <= r["all"]["accuracy"] <= 100
    preds = [json.loads(line) for line in open(tmp_path / "p.jsonl")]
    instances = [inst for _, inst in read_instances(str(lambada / "raw/test.inst.jsonl"))]
    assert [p["id"] for p in preds] == list(range(40))
    assert sum(p["answer_in_context"] for p in preds) == int(rows["answer_in_context"])
    assert round(100 * sum(p["correct"] for p in preds) / 40, 2) == r["all"]["accuracy"]
    for p, inst in zip(preds, instances):
        assert p["predicted"] in inst.context  # a context word, by its surface form
        assert p["correct"] == (p["predicted"] == inst.answer)


@pytest.mark.slow
@pytest.mark.long  # minutes: started first (tests/conftest.py)
def test_reproduce_script_converges_summarizes_and_writes_the_readme_table(lambada, tmp_path):
    """examples/lambada/reproduce.sh --converge: every run trains until the rule or the cap stops it, is evaluated, and
    the summary groups the seeds, pairs CorefAll with its unsupervised twin and fills the README block; a second
    call trains nothing."""
    readme = tmp_path / "README.md"
    readme.write_text("# t\n\n<!-- begin lambada-summary (generated) -->\nSTALE BLOCK\n"
                      "<!-- end lambada-summary -->\nafter\n")
    cmd = ["bash", str(ROOT / "examples/lambada/reproduce.sh"), "--data", str(lambada / "bin"), "--converge",
           "--valid-interval", "3", "--patience", "1", "--max-update", "6", "--seeds", "1 2", "--batch-size", "16",
           "--jobs", "2", "--tag", "converged", "--out", str(tmp_path / "res"), "--readme", str(readme),
           "--checkpoints", str(tmp_path / "ck")]
    proc = run(cmd, cwd=tmp_path, timeout=1800)
    s = json.loads((tmp_path / "res/summary.json").read_text())
    assert set(s["systems"]) == {"converged_sa_early", "converged_sa_early_corefall"}
    assert s["trained"] == "fp32 on CPU"
    record = json.loads((tmp_path / "res/converged_sa_early_corefall_seed2.record.json").read_text())
    assert (record["system"], record["seed"], record["split"], record["scored"]) == (
        "converged_sa_early_corefall", 2, "test", 40)
    assert record["recipe"]["validate_interval_updates"] == 3 and "max_update" not in record["recipe"]
    assert json.loads((tmp_path / "res/converged.protocol.json").read_text())["recipe"] == record["recipe"]
    for system, row in s["systems"].items():
        assert row["seeds"] == 2 and row["std"] is not None
        for r in row["runs"].values():
            assert r["trained"]["stopped"] in ("patience", "max_update") and r["trained"]["last_update"] in (3, 6)
    sup = s["systems"]["converged_sa_early_corefall"]
    assert sup["compared_with"] == "converged_sa_early"
    assert set(sup["runs"]["1"]["mcnemar_p_vs"]) == {"converged_sa_early_seed1"}
    base = s["systems"]["converged_sa_early"]
    assert sup["vs_twin"]["n"] == [2, 2] and sup["vs_twin"]["diff"] == round(sup["vs_twin"]["diff"], 2)
    assert abs(sup["vs_twin"]["diff"] - (sup["mean"] - base["mean"])) <= 0.011 and "vs_twin" not in base
    text = readme.read_text()
    assert "STALE BLOCK" not in text and text.endswith("<!-- end lambada-summary -->\nafter\n")
    assert "| converged_sa_early_corefall | 2 |" in text and "(vs converged_sa_early)" in text
    assert "Trained in fp32 on CPU." in text
    assert proc.stderr.count("training to update") >= 4
    # the checkpoints and data were outside the checkout: what goes into results names them, not this machine's paths
    kept = tmp_path / "res/converged_sa_early_seed1"
    log = gzip.decompress(Path(f"{kept}.train.log.gz").read_bytes()).decode()
    for text in (log, Path(f"{kept}.eval.json").read_text()):
        assert str(tmp_path) not in text and str(lambada) not in text
    assert json.loads(Path(f"{kept}.eval.json").read_text())["checkpoint"] == \
        "<checkpoints>/converged_sa_early_seed1/checkpoint_best.pt"
    again = run(cmd, cwd=tmp_path)
    assert "training to update" not in again.stderr and again.stderr.count("skip") == 4


@pytest.mark.slow
def test_reproduce_script_runs_where_nothing_is_installed(lambada, tmp_path):
    """As on a machine with fairseq only on PYTHONPATH (fairseq on PYTHONPATH, no console scripts, no `python`):
    --converge trains with the wrappers of examples/studies/runs.py, evaluates and summarizes."""
    from .test_packaging import without_install

    root, env = without_install(tmp_path)
    cmd = ["/bin/bash", str(root / "examples/lambada/reproduce.sh"), "--data", str(lambada / "bin"), "--converge",
           "--valid-interval", "2", "--patience", "1", "--max-update", "4", "--runs", "sa_early_corefall",
           "--batch-size", "16", "--jobs", "1", "--out", str(tmp_path / "res"), "--checkpoints", str(tmp_path / "ck")]
    proc = run(cmd, cwd=tmp_path, env=env, timeout=1800)
    assert (root / "work/console-scripts/fairseq-train").exists()
    row = json.loads((tmp_path / "res/summary.json").read_text())["systems"]["sa_early_corefall"]
    assert row["runs"]["1"]["trained"]["last_update"] in (2, 4)
    assert 0 <= json.loads((tmp_path / "res/sa_early_corefall_seed1.eval.json").read_text())["all"]["accuracy"] <= 100
    assert "training to update 2" in proc.stderr
    # --snapshot, as after a call's time limit: under a longer rule the run is unfinished; its best checkpoint so
    # far is scored beside the results, not as a result, and an earlier snapshot's runs are not kept
    stale = tmp_path / "res2/snapshot/sa_early_seed1.eval.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    (stale.parent / "notes.txt").write_text("the user's")  # not the snapshot's: it stays
    # (the same batch size: the script refuses to score a run under options it was not trained with)
    snap = cmd[:cmd.index("--patience")] + ["--patience", "3", "--max-update", "10", "--runs", "sa_early_corefall",
                                            "--batch-size", "16", "--jobs", "1", "--out", str(tmp_path / "res2"),
                                            "--checkpoints", str(tmp_path / "ck"), "--snapshot"]
    proc = run(snap, cwd=tmp_path, env=env, timeout=1800)
    assert "snapshot of sa_early_corefall_seed1" in proc.stderr and "training to update" not in proc.stderr
    assert not stale.exists() and not list((tmp_path / "res2").glob("*.eval.json"))
    assert (stale.parent / "notes.txt").read_text() == "the user's"
    s = json.loads((tmp_path / "res2/snapshot/summary.json").read_text())
    assert set(s["runs"]) == {"sa_early_corefall_seed1"}
    trained = s["systems"]["sa_early_corefall"]["runs"]["1"]["trained"]
    assert trained["stopped"] is None and trained["last_update"] == row["runs"]["1"]["trained"]["last_update"]
    assert "fixed budget, not converged" in (tmp_path / "res2/snapshot/summary.md").read_text()
    assert s["runs"]["sa_early_corefall_seed1"]["all"] == json.loads(
        (tmp_path / "res/sa_early_corefall_seed1.eval.json").read_text())["all"]


@pytest.mark.slow
def test_coref_chains_with_numpy_products_equal_thincs_own(lambada, tmp_path):
    """The worker routes thinc's products through numpy (12x faster here); on real passages the chains and
    entities must be those of thinc's own blis products."""
    from fairseq_syntax.reader.coref import WORKER, neuralcoref_model_dir

    env = ROOT / "work/coref-env"
    records = [json.loads(line) for line in open(lambada / "raw/train.coref.jsonl")][:25]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"tokens": r["tokens"]}) + "\n" for r in records))
    run([str(env / "bin/python"), WORKER, "--model", neuralcoref_model_dir(str(env)), "--thinc-gemm",
         str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl")])
    thinc = [json.loads(line) for line in open(tmp_path / "out.jsonl")]
    assert sum(len(r["clusters"]) for r in records) > 25
    assert thinc == records


@pytest.mark.slow
def test_signals_need_a_self_attention_layer(train_reader, tmp_path):
    proc = train_reader(tmp_path, "bidaf", "CorefAll", "--batch-size", "4", "--max-update", "1",
                        "--save-dir", str(tmp_path), check=False)
    assert proc.returncode != 0 and "needs a self-attention layer" in proc.stderr


@pytest.mark.slow
def test_signals_gathered_on_the_device_equal_the_side_files(lambada):
    """signal_targets (tables on the model's device, a batch sends only ids) against each instance's pairs read
    straight from the .sup files, moved to the kept end of a context cut to max_context."""
    from fairseq.data import indexed_dataset

    from fairseq_syntax.reader.dataset import ReaderDataset
    from fairseq_syntax.reader.losses import supervision_targets
    from fairseq_syntax.reader.supervision import SIGNALS

    d = Dictionary.load(str(lambada / "bin" / "dict.txt"))
    for max_context in (400, 40):  # 40 cuts most contexts: pairs move or go
        ds = ReaderDataset(str(lambada / "bin"), "train", d, SIGNALS, max_context=max_context)
        raw = {s: indexed_dataset.MMapIndexedDataset(str(lambada / "bin" / f"train.sup.{s}")) for s in SIGNALS}
        context = indexed_dataset.MMapIndexedDataset(str(lambada / "bin" / "train.context"))
        sizes = np.array(context.sizes)  # a copy: .sizes is a view of the mmap, closed with its dataset
        rng = np.random.default_rng(0)
        for _ in range(3):
            ids = rng.choice(len(ds), size=min(12, len(ds)), replace=False)
            batch = ds.collater(list(ids))
            width = batch["net_input"]["context"].size(1)
            got = ds.signal_targets(batch["id"], width)
            for s in SIGNALS:
                dense = supervision_targets(got[s], len(ids), width)
                want = torch.zeros_like(dense)
                for k, i in enumerate(batch["id"].tolist()):
                    cut = max(int(sizes[i]) - max_context, 0)
                    for r, c in raw[s][i].numpy().reshape(-1, 2).tolist():
                        if r >= cut and c >= cut:
                            want[k, r - cut, c - cut] = True
                assert torch.equal(dense, want), (s, max_context)
                assert want.any() or s != "DepParse"


def _updates(log: str) -> dict:
    """{num_updates: (epoch, losses and words per batch)} from a --log-interval 1 training log."""
    rows = {}
    for line in log.splitlines():
        if "| train_inner |" in line:
            epoch = int(re.search(r"epoch (\d+):", line).group(1))
            fields = dict(re.findall(r"(\w+)=([^,\s]+)", line))
            rows[int(fields["num_updates"])] = (epoch, *(fields[k] for k in ("loss", "sup_CorefAll", "wpb", "gnorm")))
    return rows


@pytest.mark.slow
def test_a_run_resumed_mid_epoch_trains_the_same_batches_as_one_uninterrupted(train_reader, tmp_path):
    """examples/lambada/reproduce.sh --converge resumes from a --valid-interval checkpoint, mostly mid-epoch: the
    resumed process must take up the same batches the uninterrupted run trains, also in an epoch it did not start
    in."""
    def train(save, max_update, *extra):
        proc = train_reader(tmp_path, "bidaf_sa_early", "CorefAll", "--lr", "1e-3", "--batch-size", "16",
                            "--dropout", "0.1", "--max-update", str(max_update), "--save-dir", str(save),
                            "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "1",
                            "--best-checkpoint-metric", "accuracy", "--maximize-best-checkpoint-metric", *extra)
        return _updates(proc.stdout + proc.stderr)

    whole = train(tmp_path / "whole", 12)  # 71 training instances in batches of 16: epoch 2 begins at update 6
    second = [u for u, row in whole.items() if row[0] == 2]
    assert second and whole[min(second) - 1][0] == 1 and min(second) + 6 <= 12
    cut = min(second) + 2  # two updates into epoch 2, which the first process crossed into
    first = train(tmp_path / "split", cut, "--save-interval-updates", str(cut))
    resumed = train(tmp_path / "split", min(second) + 6)
    assert all(first[u] == whole[u] for u in first)
    assert sorted(resumed) == list(range(cut + 1, min(second) + 7))
    assert all(resumed[u] == whole[u] for u in resumed), (resumed, whole)


WORKERS_PROBE = """
import multiprocessing, sys
import fairseq_cli.train as train
validate = train.validate
def counted(*args, **kwargs):
    out = validate(*args, **kwargs)
    print("workers alive after validation:", len(multiprocessing.active_children()), flush=True)
    return out
train.validate = counted
sys.argv[0] = "fairseq-train"
train.cli_main()
"""


@pytest.mark.slow
def test_data_loader_workers_do_not_accumulate_over_validations_and_epochs(lambada, tmp_path):
    """fairseq keeps a loader's workers alive by default, and builds a new loader for every validation and epoch:
    on the real training set each worker held 2.4 GB, and a converging run grew until the kernel killed it. The
    reader's task lets each worker end with its pass, so at most the training epoch's worker is alive."""
    user_dir = run(["fairseq-syntax-user-dir"]).stdout.strip()

    def alive_after_validations(*flags):
        proc = run([sys.executable, "-c", WORKERS_PROBE, str(lambada / "bin"), "--user-dir", user_dir, "--task",
                    "lambada_reader", "--arch", "bidaf_sa_early", "--criterion", "pointer_sum", "--optimizer",
                    "adam", "--lr", "1e-3", "--batch-size", "16", "--max-update", "8", "--validate-interval-updates",
                    "2", "--num-workers", "1", "--no-save", "--save-dir", str(tmp_path / "ck"), *flags], cwd=tmp_path)
        log = proc.stdout + proc.stderr
        assert "begin training epoch 2" in log, log[-3000:]
        return [int(n) for n in re.findall(r"workers alive after validation: (\d+)", log)]

    alive = alive_after_validations()
    assert len(alive) >= 4 and max(alive) <= 1, alive  # (71 training instances: epoch 2 begins at update 6)
    kept = alive_after_validations("--persistent-workers")  # fairseq's default, which the task turns off
    assert len(kept) == len(alive) and kept[-1] >= 4, kept
