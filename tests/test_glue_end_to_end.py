"""Real CoLA sentences through data-prep/glue.sh, then fine-tuning from the lifted MiniLM and evaluation."""
import json
import re
import sys

import numpy as np
import pytest
import torch

import fairseq_syntax
from fairseq_syntax.data.sentence_codes import AssembledCodesDataset
from fairseq_syntax.syntax import check_subword_heads

from .conftest import ROOT, SHARED_DATA, fairseq_train, in_process, once_per_run, run

fairseq_syntax.register()


@pytest.fixture(scope="module")
def cola(tmp_path_factory, minilm_converted):
    return once_per_run(tmp_path_factory, "cola", lambda out: run(
        ["bash", str(ROOT / "data-prep/glue.sh"), "--task", "CoLA", "--glue-dir", str(SHARED_DATA / "glue"),
         "--out", str(out), "--pretrained", str(minilm_converted), "--parser", "spacy", "--workers", "1",
         "--max-train", "160", "--max-eval", "48"]))


@pytest.mark.slow
def test_prepared_data_keeps_berts_pieces_and_valid_heads(cola, minilm_converted):
    dev = [line.rstrip("\n").split("\t") for line in open(SHARED_DATA / "glue/CoLA/dev.tsv", encoding="utf-8")][:48]
    assert (cola / "raw/valid.input0").read_text().splitlines() == [r[3] for r in dev]
    assert (cola / "raw/valid.label").read_text().split() == [r[1] for r in dev]
    pieces = (cola / "wp/valid.input0").read_text().splitlines()
    codes = (cola / "wp/valid.input0.heads").read_text().splitlines()
    assert len(pieces) == len(codes) == 48
    for n, (p, c) in enumerate(zip(pieces, codes), 1):
        assert len(p.split()) == len(c.split())
        check_subword_heads([int(x) for x in c.split()], f"line {n}")
    for f in ("input0/train.bin", "input0/train.heads.bin", "input0/valid.heads.idx", "label/valid.bin",
              "input0/dict.txt", "label/dict.txt"):
        assert (cola / "bin" / f).exists(), f
    # a re-run with the same options skips every stage
    proc = run(["bash", str(ROOT / "data-prep/glue.sh"), "--task", "CoLA", "--glue-dir", str(SHARED_DATA / "glue"),
                "--out", str(cola), "--pretrained", str(minilm_converted), "--parser", "spacy",
                "--max-train", "160", "--max-eval", "48"])
    assert proc.stderr.count("skip") == 5, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["roberta_baseline_small", "roberta_sgnet_small", "roberta_sla_small"])
def test_fine_tune_from_lifted_minilm_and_evaluate(cola, minilm_converted, tmp_path, arch):
    user_dir = run(["fairseq-syntax-user-dir"]).stdout.strip()
    common = ["--user-dir", user_dir, "--task", "syntax_sentence_prediction", "--init-token", "0",
              "--num-classes", "2", "--max-positions", "512", "--criterion", "sentence_prediction", "--report-mcc"]
    save = tmp_path / "ck"
    proc = fairseq_train([cola / "bin", *common, "--arch", arch, "--restore-file", minilm_converted / "model.pt",
                          "--reset-optimizer", "--reset-dataloader", "--reset-meters", "--optimizer", "adam", "--lr",
                          "2e-5", "--batch-size", "16", "--max-update", "6", "--save-dir", save,
                          "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "1",
                          "--best-checkpoint-metric", "mcc", "--maximize-best-checkpoint-metric"], cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert "num_updates=6" in log or "num_updates 6" in log
    if arch != "roberta_baseline_small":
        assert "freshly initialised" in log  # the new parameters, not a silent partial load
    from fairseq_cli.validate import cli_main as fairseq_validate

    proc = in_process(fairseq_validate, [cola / "bin", *common, "--path", save / "checkpoint_best.pt", "--batch-size",
                                         "16", "--valid-subset", "valid"], cwd=tmp_path, program="fairseq-validate")
    m = re.search(r"valid on 'valid' subset \| loss ([\d.]+) .*accuracy ([\d.]+) .*mcc (-?[\d.]+)",
                  proc.stdout + proc.stderr)
    assert m, proc.stderr[-2000:]
    assert 0 <= float(m.group(2)) <= 100 and -100 <= float(m.group(3)) <= 100
    # the per-sentence evaluation: fairseq-validate's accuracy and MCC (it logs one decimal), from its predictions
    from fairseq_syntax.cli.sentence_eval import main as sentence_eval

    ev = in_process(sentence_eval, [cola / "bin", "--path", save / "checkpoint_best.pt", "--split", "valid", "--cpu",
                                    "--json", tmp_path / "e.json", "--predictions", tmp_path / "p.jsonl"])
    e = json.loads((tmp_path / "e.json").read_text())
    assert round(e["accuracy"], 2) == pytest.approx(float(m.group(2)), abs=0.051), ev.stdout
    assert round(e["mcc"], 2) == pytest.approx(float(m.group(3)), abs=0.051), ev.stdout
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [r["gold"] for r in rows] == (cola / "raw/valid.label").read_text().split()
    assert sum(r["correct"] for r in rows) == e["correct"]
    if arch == "roberta_sla_small":  # the gate figure (the SLA paper's Figure 2) from this checkpoint
        png = tmp_path / "gates.png"
        run([sys.executable, str(ROOT / "examples/encoders/plot_sla_gates.py"), "--checkpoint",
             f"sla={save / 'checkpoint_best.pt'}", "--data", str(cola / "bin"), "--out", str(png)], cwd=tmp_path)
        gates = json.loads(png.with_suffix(".json").read_text())["mean_gate"]["sla"]
        assert len(gates) == 6 and all(0 < g < 1 for g in gates) and png.stat().st_size > 1000
    if arch == "roberta_baseline_small":  # no gates to draw: one line naming the checkpoint, nothing written
        png = tmp_path / "gates.png"
        proc = run([sys.executable, str(ROOT / "examples/encoders/plot_sla_gates.py"), "--checkpoint",
                    str(save / "checkpoint_best.pt"), "--data", str(cola / "bin"), "--out", str(png)], cwd=tmp_path,
                   check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert proc.stderr.strip().splitlines()[-1] == (f"plot_sla_gates.py: error: {save / 'checkpoint_best.pt'}: "
                                                        "no SLA gates (not a roberta_sla / transformer_sla model)")
        assert not png.exists() and not png.with_suffix(".json").exists()


class _Heads(list):
    @property
    def sizes(self):
        return np.array([len(x) for x in self])


def test_pair_codes_line_up_with_berts_pair_layout():
    """<s> a </s> b </s> (BERT's [CLS] a [SEP] b [SEP]): the second sentence's codes move past the first."""
    a = _Heads([torch.tensor([2, 2, -2])])  # 3 pieces: w1 -> w2 (root), w2 continued
    b = _Heads([torch.tensor([1, 1])])  # 2 pieces: root, then a child of it
    codes = AssembledCodesDataset(a, b, lead=1, separator=0).collater([0])[0]
    assert codes.tolist() == [0, 3, 3, -3, 0, 6, 6, 0]
    assert codes.numel() == AssembledCodesDataset(a, b).sizes[0]
    sep = AssembledCodesDataset(a, b, lead=1, separator=1).collater([0])[0]
    assert sep.tolist() == [0, 3, 3, -3, 0, 0, 7, 7, 0]  # </s> </s> between the sentences, as RoBERTa pairs
    cut = AssembledCodesDataset(a, b, lead=1, max_positions=6).collater([0])[0]
    assert cut.tolist() == [0, 3, 3, -3, 0, 6]  # the cut keeps a valid tree
    cut = AssembledCodesDataset(a, b, lead=1, max_positions=2).collater([0])[0]
    assert cut.tolist() == [0, 2]  # the first word's head (column 2) is cut off: it becomes a root


@pytest.mark.slow
@pytest.mark.parametrize("pair,extra", [(False, []), (True, ["--separator-token", "2", "--shorten-method", "truncate",
                                                             "--max-positions", "12"])])
def test_batches_equal_fairseqs_own_pipeline(cola, tmp_path, pair, extra):
    """The numpy-built net_input, ntokens and target equal those of fairseq's dataset stack, on real CoLA."""
    import shutil

    from fairseq import options, tasks
    from fairseq.data import (ConcatSentencesDataset, NumelDataset, OffsetTokensDataset, PrependTokenDataset,
                              RightPadDataset, StripTokenDataset, TruncateDataset, data_utils)

    data = tmp_path / "bin"
    shutil.copytree(cola / "bin", data)
    if pair:  # a pair task from real sentences: input1 is a copy of input0
        shutil.copytree(data / "input0", data / "input1")
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), "--user-dir", fairseq_syntax.USER_DIR, "--task",
                                                "syntax_sentence_prediction", "--arch", "roberta_sgnet_small",
                                                "--num-classes", "2", "--init-token", "0", "--criterion",
                                                "sentence_prediction", *extra])
    task = tasks.setup_task(args)
    task.load_dataset("train")
    ours = task.dataset("train")
    d = task.source_dictionary
    toks = PrependTokenDataset(data_utils.load_indexed_dataset(str(data / "input0" / "train"), d), 0)
    if pair:
        second = PrependTokenDataset(data_utils.load_indexed_dataset(str(data / "input1" / "train"), d), 2)
        toks = TruncateDataset(ConcatSentencesDataset(toks, second), 12)
    labels = OffsetTokensDataset(StripTokenDataset(data_utils.load_indexed_dataset(
        str(data / "label" / "train"), task.label_dictionary), task.label_dictionary.eos()),
        offset=-task.label_dictionary.nspecial)
    rng = np.random.default_rng(0)
    for _ in range(5):
        ids = rng.choice(len(ours), size=17, replace=False)
        got = ours.collater([ours[i] for i in ids])
        order = got["id"].tolist()  # SortDataset maps positions to rows: compare by the rows it returns
        want_tokens = RightPadDataset(toks, pad_idx=d.pad()).collater([toks[i] for i in order])
        assert torch.equal(got["net_input"]["src_tokens"], want_tokens), \
            (got["net_input"]["src_tokens"][:3], want_tokens[:3])
        numel = NumelDataset(toks, reduce=False)
        assert torch.equal(got["net_input"]["src_lengths"], numel.collater([numel[i] for i in order]))
        assert got["ntokens"] == sum(len(toks[i]) for i in order)
        assert torch.equal(got["target"], torch.stack([labels[i] for i in order]))
        assert got["net_input"]["src_heads"].shape == want_tokens.shape
