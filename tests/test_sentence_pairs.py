"""Sentence pairs (GLUE's RTE, MRPC, STS-B, QNLI) from GLUE's files as shipped to a scored checkpoint: each text
parsed on its own, the pair read as BERT reads it, STS-B as regression, and the metrics the SLA paper's Table 2
reports."""
import csv
import json
import random

import pytest
import torch

from fairseq_syntax.metrics import pearson, positive_f1, ranks, spearman
from fairseq_syntax.syntax import align_heads_to_subwords, sdoi_mask
from fairseq_syntax.syntax import check_subword_heads

from .conftest import ROOT, SHARED_DATA, fairseq_train, in_process, once_per_run, run

# GLUE's columns (0-based) of each task: the two texts and the label
COLUMNS = {"RTE": (1, 2, 3), "MRPC": (3, 4, 0), "STS-B": (7, 8, 9), "QNLI": (1, 2, 3)}
TRAIN, EVAL = 24, 12


def prepare(tmp_path_factory, minilm_converted, task):
    return once_per_run(tmp_path_factory, f"glue_{task}", lambda out: run(
        ["bash", str(ROOT / "data-prep/glue.sh"), "--task", task, "--glue-dir", str(SHARED_DATA / "glue"),
         "--out", str(out), "--pretrained", str(minilm_converted), "--parser", "spacy", "--workers", "1",
         "--max-train", str(TRAIN), "--max-eval", str(EVAL), "--random-trees", "1"]))


def glue_rows(task, split):
    """The file read as GLUE's own readers read it: csv with QUOTE_NONE, a BOM dropped, the header skipped."""
    with open(SHARED_DATA / "glue" / task / f"{split}.tsv", encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[1:]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["RTE", "MRPC", "STS-B", "QNLI"])
def test_each_pair_task_prepares_from_glues_files_each_text_parsed_on_its_own(tmp_path_factory, minilm_converted,
                                                                              task):
    out = prepare(tmp_path_factory, minilm_converted, task)
    a, b, label = COLUMNS[task]
    splits = {"valid": "dev"} if task == "QNLI" else {"train": "train", "valid": "dev"}
    for split, upstream in splits.items():
        rows = glue_rows(task, upstream)[:TRAIN if split == "train" else EVAL]
        assert (out / f"raw/{split}.input0").read_text(encoding="utf-8").splitlines() == [r[a] for r in rows]
        assert (out / f"raw/{split}.input1").read_text(encoding="utf-8").splitlines() == [r[b] for r in rows]
        for inp in ("input0", "input1"):
            pieces = (out / f"wp/{split}.{inp}").read_text().splitlines()
            codes = (out / f"wp/{split}.{inp}.heads").read_text().splitlines()
            assert len(pieces) == len(codes) == len(rows)
            for n, (p, c) in enumerate(zip(pieces, codes), 1):
                c = [int(x) for x in c.split()]
                assert len(p.split()) == len(c)
                check_subword_heads(c, f"{split}.{inp} line {n}")  # its own tree(s): no head outside the text
            assert (out / f"bin/{inp}/{split}.heads.bin").exists()
            assert (out / f"bin/{inp}/{split}.randheads.bin").exists()
        if task == "STS-B":  # fairseq's GLUE recipe: the score divided by 5, as text
            got = [float(x) for x in (out / f"bin/label/{split}.label").read_text().split()]
            assert got == pytest.approx([float(r[label]) / 5 for r in rows])
        else:
            assert (out / f"raw/{split}.label").read_text().split() == [r[label] for r in rows]
    if task == "QNLI":  # no train.tsv offline: dev alone, to score with
        assert not (out / "bin/input0/train.bin").exists()
    if task == "MRPC":  # the byte-order mark is not part of the header, and the first example is not lost
        assert (SHARED_DATA / "glue/MRPC/dev.tsv").read_bytes()[:3] == b"\xef\xbb\xbf"
        first = (out / "raw/valid.input0").read_text(encoding="utf-8").splitlines()[0]
        assert first == glue_rows("MRPC", "dev")[0][3] and "\ufeff" not in first


def test_a_pair_files_score_column_is_checked(tmp_path):
    """An STS-B score that is no number, or outside 0 to 5, is named with its file and line."""
    from fairseq_syntax.data_prep.glue import regression_labels
    from fairseq_syntax.pipeline.messages import Stop

    (tmp_path / "raw").mkdir()
    (tmp_path / "raw/train.label").write_text("5.000\n2.5\nfive\n")
    with pytest.raises(Stop, match=r"raw/train.label:3: 'five' is not a score"):
        regression_labels(str(tmp_path), ["train"], str(tmp_path / "label"))
    (tmp_path / "raw/train.label").write_text("5.000\n5.5\n")
    with pytest.raises(Stop, match=r"raw/train.label:2: score 5.5 is outside STS-B's 0 to 5"):
        regression_labels(str(tmp_path), ["train"], str(tmp_path / "label"))
    assert not (tmp_path / "label/train.label").exists()


@pytest.mark.slow
def test_sts_b_trains_as_regression_and_scores_pearson_and_spearman(tmp_path_factory, minilm_converted, tmp_path):
    """STS-B through fairseq-train (--regression-target --num-classes 1, SLA) for a few updates: the evaluation's
    Pearson equals fairseq's own validation and scipy's, Spearman equals scipy's, on the written predictions."""
    from scipy.stats import pearsonr, spearmanr

    data = prepare(tmp_path_factory, minilm_converted, "STS-B") / "bin"
    user_dir = run(["fairseq-syntax-user-dir"]).stdout.strip()
    proc = fairseq_train([data, "--user-dir", user_dir, "--task", "syntax_sentence_prediction", "--arch",
                          "roberta_sla_small", "--restore-file", minilm_converted / "model.pt", "--reset-optimizer",
                          "--reset-dataloader", "--reset-meters", "--init-token", "0", "--num-classes", "1",
                          "--regression-target", "--criterion", "sentence_prediction", "--report-pearson-and-spearman",
                          "--best-checkpoint-metric", "pearson", "--maximize-best-checkpoint-metric", "--batch-size",
                          "8", "--required-batch-size-multiple", "1", "--optimizer", "adam", "--lr", "5e-5",
                          "--max-update", "3", "--save-dir", tmp_path / "ck", "--no-epoch-checkpoints",
                          "--log-format", "simple", "--no-save-optimizer-state"], cwd=tmp_path)
    logged = [line for line in (proc.stdout + proc.stderr).splitlines() if "valid on 'valid' subset" in line][-1]
    fairseq_pearson = float(logged.split("| pearson ")[1].split()[0])
    pred = tmp_path / "pred.jsonl"
    from fairseq_syntax.cli.sentence_eval import main as sentence_eval

    out = in_process(sentence_eval, [data, "--path", tmp_path / "ck/checkpoint_best.pt", "--split", "valid",
                                     "--json", tmp_path / "eval.json", "--predictions", pred]).stdout
    result = json.loads((tmp_path / "eval.json").read_text())
    rows = [json.loads(line) for line in pred.read_text().splitlines()]
    assert len(rows) == result["sentences"] == EVAL and "pearson=" in out
    gold, got = [r["gold"] for r in rows], [r["pred"] for r in rows]
    assert result["pearson"] == pytest.approx(100 * pearsonr(got, gold)[0], abs=1e-6)
    assert result["spearman"] == pytest.approx(100 * spearmanr(got, gold)[0], abs=1e-6)
    assert result["pearson"] == pytest.approx(fairseq_pearson, abs=0.051)  # fairseq logs it to one decimal
    # the hub, from the raw texts as GLUE ships them, scores each dev pair as the evaluation did
    assert_hub_predicts_as_the_evaluation(tmp_path / "ck", data, rows)


def assert_hub_predicts_as_the_evaluation(checkpoints, data, rows):
    """SentenceClassifier on the dev pairs' raw texts (parsed, encoded and assembled again from the text) gives
    each pair the evaluation's prediction: the label, or the score within float32 rounding."""
    from fairseq_syntax.classifier_hub import SentenceClassifier

    hub = SentenceClassifier.from_pretrained(str(checkpoints), data_name_or_path=str(data))
    raw = data.parent / "raw"
    firsts, seconds = ((raw / f"valid.input{k}").read_text(encoding="utf-8").splitlines() for k in (0, 1))
    for row in rows:
        got = hub.predict(firsts[row["sentence"]], seconds[row["sentence"]])
        if isinstance(row["pred"], float):
            assert got["score"] == pytest.approx(row["pred"], abs=1e-5), row
        else:
            assert got["label"] == row["pred"] and max(got["probabilities"].values()) > 0.5, row
    with pytest.raises(ValueError, match="classifies sentence pairs"):
        hub.predict(firsts[0])
    with pytest.raises(ValueError, match="the second text has no words"):
        hub.predict(firsts[0], " \t ")


def test_pearson_spearman_and_the_positive_f1_equal_scipy_and_scikit_learn():
    from scipy.stats import pearsonr, rankdata, spearmanr
    from sklearn.metrics import f1_score

    rng = random.Random(0)
    for n in (2, 3, 17, 400):
        x = [rng.choice([0.0, 0.2, 0.4, 1.0, 2.5]) for _ in range(n)]  # many ties
        y = [v + rng.gauss(0, 1) for v in x]
        if len(set(x)) > 1:
            assert pearson(x, y) == pytest.approx(100 * pearsonr(x, y)[0], abs=1e-9)
            assert spearman(x, y) == pytest.approx(100 * spearmanr(x, y)[0], abs=1e-9)
        assert ranks(x).tolist() == rankdata(x).tolist()
        gold = [rng.randint(0, 1) for _ in range(n)]
        pred = [rng.randint(0, 1) for _ in range(n)]
        assert positive_f1(gold, pred, 1) == pytest.approx(100 * f1_score(gold, pred, pos_label=1, zero_division=0))
    assert pearson([1, 1, 1], [1, 2, 3]) == 0.0  # a constant side: 0, as scikit-learn's MCC does
    # hand-worked: gold 1 1 0 0, predicted 1 0 1 0: one true positive of 2 predicted and 2 gold, F1 = 50
    assert positive_f1([1, 1, 0, 0], [1, 0, 1, 0], 1) == 50.0


def test_in_a_pair_sgnets_sdoi_stays_inside_each_sentence():
    """[CLS] the dog runs [SEP] cats sleep [SEP], each sentence parsed on its own: a word's SDOI is itself and its
    ancestors in its own tree (the SG-Net paper's NLI setting, docs/methods.md), so no row reaches the other
    sentence; the specials see only themselves."""
    a = align_heads_to_subwords([2, 0, 2], "the dog runs".split())
    c = align_heads_to_subwords([2, 0], "cats sleep".split())
    codes = torch.tensor([[0] + [v + 1 for v in a] + [0] + [v + 5 for v in c] + [0]])
    got = sdoi_mask(codes)[0].int().tolist()
    assert got[1] == [0, 1, 1, 0, 0, 0, 0, 0]  # the -> the, dog
    assert got[3] == [0, 0, 1, 1, 0, 0, 0, 0]  # runs -> dog, runs
    assert got[2] == [0, 0, 1, 0, 0, 0, 0, 0]  # dog (a root) -> itself
    assert got[5] == [0, 0, 0, 0, 0, 1, 1, 0]  # cats -> cats, sleep
    assert got[6] == [0, 0, 0, 0, 0, 0, 1, 0]
    for special in (0, 4, 7):
        assert got[special] == [int(j == special) for j in range(8)]


@pytest.mark.slow
@pytest.mark.parametrize("mask", ["tree", "window"])
def test_on_real_pairs_the_models_local_scope_is_each_texts_own(tmp_path_factory, minilm_converted, monkeypatch,
                                                                mask):
    """MRPC's prepared dev pairs through the task's own batches and the model's own path (the texts' codes assembled
    by the dataset, the sentence ids read off the tokens): SLA's (or WLA's) local mask over each text equals the mask
    of that text alone, and no local link joins a word of one text to a word of the other."""
    from fairseq import options, tasks
    from fairseq.data import data_utils

    import fairseq_syntax
    from fairseq_syntax.data.sentence_codes import AssembledCodesDataset
    from fairseq_syntax.models import roberta_syntax
    from fairseq_syntax.syntax import sla_mask, window_mask

    fairseq_syntax.register()
    data = prepare(tmp_path_factory, minilm_converted, "MRPC") / "bin"
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--user-dir", fairseq_syntax.USER_DIR, "--task", "syntax_sentence_prediction", "--init-token", "0",
        "--criterion", "sentence_prediction", "--num-classes", "2", "--arch", "roberta_sla_small", "--sla-mask", mask])
    task = tasks.setup_task(args)
    model = task.build_model(args).eval()
    built = []
    own = roberta_syntax.local_allowed
    monkeypatch.setattr(roberta_syntax, "local_allowed",
                        lambda codes, a, segments=None: built.append(own(codes, a, segments)) or built[-1])
    alone = {"tree": lambda codes: sla_mask(codes, args.sla_distance),
             "window": lambda codes: window_mask(codes, args.sla_window)}[mask]
    heads = [data_utils.load_indexed_dataset(str(data / f"input{k}/valid.heads"), None) for k in (0, 1)]
    texts_alone = [AssembledCodesDataset(h) for h in heads]  # each text as a single sentence: <s> text </s>
    task.load_dataset("valid")
    eos, checked = task.source_dictionary.eos(), 0
    with torch.no_grad():
        for batch in task.get_batch_iterator(task.dataset("valid"), max_sentences=5).next_epoch_itr(shuffle=False):
            built.clear()
            model(**batch["net_input"], features_only=True)
            tokens = batch["net_input"]["src_tokens"]
            for r, idx in enumerate(batch["id"].tolist()):
                n = [len(h[idx]) for h in heads]
                starts = [1, 1 + n[0] + 1]  # [CLS] a [SEP] b [SEP]
                assert tokens[r, starts[1] - 1] == eos and tokens[r, starts[1] + n[1]] == eos
                got = built[0][r]
                for k in (0, 1):
                    own_text = alone(texts_alone[k].collater([idx]))[0][1:1 + n[k], 1:1 + n[k]]
                    block = slice(starts[k], starts[k] + n[k])
                    assert torch.equal(got[block, block], own_text), (idx, k)
                a, b = slice(starts[0], starts[0] + n[0]), slice(starts[1], starts[1] + n[1])
                assert not got[a, b].any() and not got[b, a].any(), idx
                checked += 1
    assert checked == EVAL


@pytest.mark.slow
def test_table_2_trains_scores_summarizes_and_refuses_a_trial(tmp_path_factory, minilm_converted, tmp_path):
    """reproduce_sla_table.sh --table 2 on MRPC and STS-B slices: the baseline and SLA on random trees, seed 1,
    2 updates: every run scored on dev with its record and predictions (MRPC's F1, STS-B's Spearman), summarized
    into Table 2's block with McNemar on MRPC and a paired bootstrap of Pearson on STS-B; a trial of another budget is
    refused before it trains, and a run of another budget copied into the folder is named and left out; a run on
    data other than the finished runs' is refused before it trains."""
    import gzip
    import shutil

    root = tmp_path / "data"
    (root / "glue").mkdir(parents=True)
    for task in ("MRPC", "STS-B"):
        (root / "glue" / task).symlink_to(prepare(tmp_path_factory, minilm_converted, task), target_is_directory=True)
    res, readme = tmp_path / "res", tmp_path / "README.md"
    readme.write_text("<!-- begin sla-table2-summary -->\n<!-- end sla-table2-summary -->\n")
    cmd = ["bash", str(ROOT / "examples/encoders/reproduce_sla_table.sh"), "--table", "2", "--tasks", "MRPC STS-B",
           "--systems", "baseline sla_random_trees", "--seeds", "1", "--updates-MRPC", "2", "--updates-STS-B", "2",
           "--validations", "1", "--jobs", "2", "--data-root", str(root), "--pretrained", str(minilm_converted),
           "--out", str(res), "--checkpoints", str(tmp_path / "ck"), "--readme", str(readme)]
    first = run(cmd, timeout=1800)
    assert first.stderr.count("2 updates of 32, validation every 2") == 4, first.stderr[-3000:]
    prot = json.loads((res / "protocol.json").read_text())
    assert set(prot["tasks"]) == {"RTE", "MRPC", "STS-B"} and prot["seeds"] == [1, 2, 3, 4, 5]
    record = json.loads((res / "STS-B_sla_random_trees_seed1.record.json").read_text())
    assert record["study"] == "sla_table2" and record["split"] == "valid" and record["scored"] == EVAL
    e = json.loads((res / "MRPC_baseline_seed1.eval.json").read_text())
    assert e["metric"] == "accuracy" and "f1" in e
    with gzip.open(res / "MRPC_baseline_seed1.pred.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    assert_hub_predicts_as_the_evaluation(tmp_path / "ck/MRPC_baseline_seed1", root / "glue/MRPC/bin", rows)
    e = json.loads((res / "STS-B_baseline_seed1.eval.json").read_text())
    assert e["metric"] == "pearson" and "spearman" in e
    with gzip.open(res / "STS-B_baseline_seed1.pred.jsonl.gz", "rt") as fh:
        assert len(fh.readlines()) == EVAL
    s = json.loads((res / "summary.json").read_text())
    assert set(s["table"]) == {"MRPC", "STS-B"}
    assert {t["test"] for t in s["table"]["MRPC"]["sla_random_trees"]["vs_baseline"]["per_seed"].values()} == {
        "mcnemar"}
    assert {t["test"] for t in s["table"]["STS-B"]["sla_random_trees"]["vs_baseline"]["per_seed"].values()} == {
        "paired bootstrap"}
    assert "f1" in s["table"]["MRPC"]["baseline"] and "spearman" in s["table"]["STS-B"]["baseline"]
    text = readme.read_text()
    assert "| system | RTE acc. | MRPC acc. / F1 | STS-B Pearson / Spearman |" in text
    assert "Finished: 4 of the 4 planned runs." in text and "91.7 / 68.6 / 87.3 / 89.5" in text
    other = run(cmd[:cmd.index("--updates-MRPC") + 1] + ["4"] + cmd[cmd.index("--updates-MRPC") + 2:], check=False)
    assert other.returncode != 0 and "--updates-MRPC 4: the table's runs train 2 updates" in other.stderr
    # a run of another budget, copied in under a table name, is named and left out
    for f in res.glob("MRPC_baseline_seed1.*"):
        shutil.copy(f, res / f.name.replace("MRPC_baseline_seed1", "MRPC_baseline_seed3"))
    e = json.loads((res / "MRPC_baseline_seed3.eval.json").read_text())
    e.update(seed=3, max_update=4)
    (res / "MRPC_baseline_seed3.eval.json").write_text(json.dumps(e))
    summary = run(cmd + ["--summary-only"])
    assert "refused MRPC_baseline_seed3" in summary.stderr and "its max_update is 4, the table's 2" in summary.stderr
    assert json.loads((res / "summary.json").read_text())["table"]["MRPC"]["baseline"]["seeds"] == [1]
    # runs that trained on other data (their records' fingerprint): a new run of that task is refused before it
    # trains, naming both fingerprints and the code the records name; STS-B's data still agrees with its runs
    ours = json.loads((res / "MRPC_baseline_seed1.record.json").read_text())["data"]
    for path in res.glob("MRPC_*.record.json"):
        r = json.loads(path.read_text())
        path.write_text(json.dumps(dict(r, data="0123456789ab" + "0" * 28, code="abc1234")))
    seed2 = cmd[:cmd.index("--seeds") + 1] + ["2"] + cmd[cmd.index("--seeds") + 2:]
    refused = run(seed2, check=False)
    assert refused.returncode != 0 and "STS-B: the data" not in refused.stderr, refused.stderr[-2000:]
    assert (f"MRPC: the data in {root}/glue/MRPC/bin (fingerprint " in refused.stderr
            and "is not the data the table's 3 finished runs of MRPC in" in refused.stderr
            and "trained on (0123456789ab; their records name the code abc1234)" in refused.stderr), refused.stderr
    assert not (tmp_path / "ck/MRPC_baseline_seed2").exists() and not (tmp_path / "ck/STS-B_baseline_seed2").exists()
    # the data of one finished run of three is not the table's: the summary holds a run to what most hold
    seed3 = res / "MRPC_baseline_seed3.record.json"
    seed3.write_text(json.dumps(dict(json.loads(seed3.read_text()), data=ours)))
    refused = run(seed2, check=False)
    assert refused.returncode != 0 and "the table's 2 finished runs of MRPC in" in refused.stderr, refused.stderr
    assert not (tmp_path / "ck/MRPC_baseline_seed2").exists()


@pytest.mark.slow
@pytest.mark.parametrize("part", ["input1/valid", "label/valid"])
def test_a_cut_text_idx_is_named_as_a_cut_heads_idx_is(tmp_path_factory, minilm_converted, tmp_path, part):
    """A text or label .idx cut short (a copy interrupted): loading the split names the file, where fairseq's own
    loader stopped on numpy's "buffer is smaller than requested size", naming none."""
    import shutil

    from fairseq import options, tasks

    import fairseq_syntax

    fairseq_syntax.register()
    data = tmp_path / "bin"
    shutil.copytree(prepare(tmp_path_factory, minilm_converted, "MRPC") / "bin", data)
    idx = data / f"{part}.idx"
    idx.write_bytes(idx.read_bytes()[:40])
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--user-dir", fairseq_syntax.USER_DIR, "--task", "syntax_sentence_prediction", "--arch",
        "roberta_baseline_small", "--num-classes", "2", "--init-token", "0", "--criterion", "sentence_prediction"])
    task = tasks.setup_task(args)
    with pytest.raises(ValueError, match=rf"{part}.idx: not a whole fairseq index .*binarize the split again"):
        task.load_dataset("valid")
