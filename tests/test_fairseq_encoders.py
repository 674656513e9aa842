"""The encoders a fairseq user already has: a RoBERTa folder as fairseq distributes one (model.pt, dict.txt of BPE
ids, GPT-2's encoder.json and vocab.bpe) and an XLM-R folder (sentencepiece.bpe.model), each made here with random
weights and subwords trained on real text (tests/fairseq_folders.py), taken from data-prep through fine-tuning,
evaluation and the hubs."""
import itertools
import json

import numpy as np
import pytest
import torch

from .conftest import BIN, ROOT, SHARED_DATA, fairseq_train, in_process, once_per_run, run
from .fairseq_folders import (save_random_roberta, train_gpt2_bpe, train_xlmr_sentencepiece,
                              write_id_dictionary)

RACE = SHARED_DATA / "race" / "RACE.tar.gz"
CONLL = SHARED_DATA / "conll2003"
# the folders' models: roberta.base's and XLM-R's layout at a size that trains in seconds (that the *_base and *_large
# architectures take fairseq's own roberta_base and roberta_large sizes is checked below, without building them)
SMALL_SIZES = ("--encoder-layers", "2", "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128",
               "--encoder-attention-heads", "4")


def real_texts():
    """300 RACE articles and 2,000 CoNLL-2003 training sentences: what the subwords are trained on."""
    from fairseq_syntax.race.examples import read_race

    texts = [p.article for p in itertools.islice(read_race(str(RACE)), 300)]
    blocks = (CONLL / "train.txt").read_text(encoding="utf-8").split("\n\n")[:2000]
    return texts + [" ".join(line.split()[0] for line in b.splitlines() if line.strip()
                             and not line.startswith("-DOCSTART")) for b in blocks]


@pytest.fixture(scope="session")
def roberta_folder(tmp_path_factory):
    """roberta.base's layout at a small size, random weights, a 2,000-piece GPT-2-format BPE."""
    def build(out):
        texts = real_texts()
        train_gpt2_bpe(texts, out, 2000)
        write_id_dictionary(texts, out)
        (out / "sizes.json").write_text(json.dumps(save_random_roberta(out, SMALL_SIZES)))
    return once_per_run(tmp_path_factory, "roberta-base-random", build)


@pytest.fixture(scope="session")
def xlmr_folder(tmp_path_factory):
    """XLM-R's layout (sentencepiece.bpe.model, dict.txt of its pieces), a small random model."""
    def build(out):
        train_xlmr_sentencepiece(real_texts(), out, 1500)
        save_random_roberta(out, SMALL_SIZES)
    return once_per_run(tmp_path_factory, "xlmr-small-random", build)


def gpt2_encoder(folder):
    from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

    return get_encoder(str(folder / "encoder.json"), str(folder / "vocab.bpe"))


def restored(checkpoint, model_pt, key="layers.0.fc1.weight"):
    """A weight of the fine-tuned model next to the same weight in the folder's model.pt (under its old name)."""
    ours = torch.load(checkpoint, map_location="cpu", weights_only=False)["model"]
    theirs = torch.load(model_pt, map_location="cpu", weights_only=False)["model"]
    return ours[f"encoder.sentence_encoder.{key}"], theirs[f"decoder.sentence_encoder.{key}"]


@pytest.mark.slow
def test_the_folder_is_gpt2s_format_read_by_fairseqs_own_encoder(roberta_folder):
    from fairseq.data.encoders.gpt2_bpe import GPT2BPE, GPT2BPEConfig

    sizes = json.loads((roberta_folder / "sizes.json").read_text())
    assert (sizes["layers"], sizes["dim"], sizes["ffn"], sizes["heads"]) == (2, 64, 128, 4)
    bpe = GPT2BPE(GPT2BPEConfig(gpt2_encoder_json=str(roberta_folder / "encoder.json"),
                                gpt2_vocab_bpe=str(roberta_folder / "vocab.bpe")))
    text = "The students weren't told, so  they asked: 1,500 questions?"
    assert bpe.decode(bpe.encode(text)) == text
    ck = torch.load(roberta_folder / "model.pt", map_location="cpu", weights_only=False)
    assert ck["args"].arch == "roberta_base" and ck["args"].task == "masked_lm"
    assert "decoder.sentence_encoder.emb_layer_norm.weight" in ck["model"]  # roberta.base's names


def test_the_base_and_large_architectures_take_robertas_own_sizes():
    """A roberta.base or roberta.large model.pt restores into *_base or *_large as they are: every option fairseq's
    own roberta_base and roberta_large set, ours set alike."""
    from argparse import Namespace

    import fairseq_syntax
    from fairseq.models import ARCH_CONFIG_REGISTRY

    fairseq_syntax.register()
    for size in ("base", "large"):
        theirs = Namespace()
        ARCH_CONFIG_REGISTRY[f"roberta_{size}"](theirs)
        assert theirs.encoder_layers == {"base": 12, "large": 24}[size]
        for model in ("baseline", "sgnet", "sla"):
            ours = Namespace()
            ARCH_CONFIG_REGISTRY[f"roberta_{model}_{size}"](ours)
            assert {k: getattr(ours, k, None) for k in vars(theirs)} == vars(theirs), (model, size)


@pytest.fixture(scope="module")
def race_on_roberta(tmp_path_factory, roberta_folder):
    """RACE prepared against the RoBERTa folder and roberta_sgnet_base fine-tuned from its model.pt for 2 updates."""
    def build(out):
        run(["bash", ROOT / "data-prep/race.sh", "--race", RACE, "--out", out / "data", "--pretrained",
             roberta_folder, "--parser", "spacy", "--workers", "1", "--max-train", "8", "--max-eval", "4"])
        user_dir = run([BIN / "fairseq-syntax-user-dir"]).stdout.strip()
        train = fairseq_train([out / "data/bin", "--user-dir", user_dir, "--task", "syntax_sentence_ranking",
                               "--criterion", "sentence_ranking", "--num-classes", "4", "--init-token", "0",
                               "--separator-token", "2", "--max-option-length", "64", "--max-positions", "512",
                               "--max-input-length", "128", "--shorten-method", "truncate",
                               "--required-batch-size-multiple", "1", "--arch", "roberta_sgnet_base", *SMALL_SIZES,
                               "--restore-file", roberta_folder / "model.pt", "--reset-optimizer",
                               "--reset-dataloader", "--reset-meters", "--optimizer", "adam", "--lr", "1e-5",
                               "--batch-size", "2", "--max-update", "2", "--disable-validation", "--no-progress-bar",
                               "--log-interval", "1", "--cpu", "--save-dir", out / "ck", "--no-epoch-checkpoints",
                               "--no-save-optimizer-state"], cwd=out)
        (out / "train.log").write_text(train.stdout + train.stderr)
    return once_per_run(tmp_path_factory, "race-on-roberta", build)


@pytest.mark.slow
@pytest.mark.long
def test_race_from_a_roberta_folder_through_fine_tuning_evaluation_and_the_hub(race_on_roberta, roberta_folder,
                                                                               tmp_path):
    from fairseq.data import Dictionary, indexed_dataset

    out = race_on_roberta / "data"
    rec = json.loads((out / "bin/preprocessing.json").read_text())
    assert rec["subword_style"] == "byte_bpe"
    assert (out / "bin/encoder.json").read_bytes() == (roberta_folder / "encoder.json").read_bytes()
    # the article is the ids fairseq's own encoder gives its text (sentences after the first after a space)
    d = Dictionary.load(str(out / "bin/input0/dict.txt"))
    nsent = int((out / "raw/train.article.nsent").read_text().split()[0])
    sentences = (out / "raw/train.article.raw").read_text(encoding="utf-8").splitlines()[:nsent]
    want = [d.index(str(i)) for i in gpt2_encoder(roberta_folder).encode(" ".join(sentences))]
    tokens = indexed_dataset.MMapIndexedDataset(str(out / "bin/input0/train"))[0].tolist()
    assert tokens[:-1] == want and tokens[-1] == d.eos() and d.unk() not in tokens
    heads = indexed_dataset.MMapIndexedDataset(str(out / "bin/input0/train.heads"))[0].numpy()
    assert len(heads) == len(want) and (heads != 0).all()
    # restored from model.pt: two small Adam steps away from its weights, not a fresh initialisation
    log = (race_on_roberta / "train.log").read_text()
    assert "num_updates 2" in log and "loaded checkpoint" in log.lower()
    ours, theirs = restored(race_on_roberta / "ck/checkpoint_last.pt", roberta_folder / "model.pt")
    assert (ours - theirs).abs().max() < 1e-4 and theirs.std() > 1e-2
    from fairseq_syntax.race.evaluate import main as race_eval

    ev = in_process(race_eval, [out / "bin", "--path", race_on_roberta / "ck/checkpoint_last.pt",
                                "--split", "valid", "--cpu", "--json", tmp_path / "e.json"])
    assert json.loads((tmp_path / "e.json").read_text())["RACE"]["n"] == 4, ev.stdout
    from fairseq_syntax.race.hub import RaceReader

    reader = RaceReader.from_pretrained(str(race_on_roberta / "ck"), data_name_or_path=str(out / "bin"))
    got = reader.predict_choice("Tom went to the park.  He met   Ann there!", "Where did Tom go?",
                                ["home", "school", "the park", "the zoo"])
    assert got["choice"] in range(4) and len(got["scores"]) == 4


@pytest.mark.slow
@pytest.mark.long
def test_conll2003_from_a_roberta_folder_through_fine_tuning_evaluation_and_the_tagger(roberta_folder, tmp_path):
    out = tmp_path / "data"
    run(["bash", ROOT / "data-prep/conll2003.sh", "--conll-dir", CONLL, "--out", out, "--pretrained", roberta_folder,
         "--parser", "spacy", "--workers", "1", "--max-train", "8", "--max-eval", "4"])
    enc = gpt2_encoder(roberta_folder)
    words = (out / "raw/train.words").read_text(encoding="utf-8").splitlines()
    pieces = (out / "wp/train.input0").read_text(encoding="utf-8").splitlines()
    assert [p.split() for p in pieces] == [[str(i) for i in enc.encode(w)] for w in words]
    user_dir = run([BIN / "fairseq-syntax-user-dir"]).stdout.strip()
    fairseq_train([out / "bin", "--user-dir", user_dir, "--task", "syntax_token_labeling", "--criterion",
                   "token_labeling", "--arch", "roberta_sgnet_base", *SMALL_SIZES, "--restore-file",
                   roberta_folder / "model.pt", "--reset-optimizer", "--reset-dataloader", "--reset-meters",
                   "--optimizer", "adam", "--lr", "1e-5", "--batch-size", "4", "--max-update", "2", "--save-dir",
                   tmp_path / "ck", "--no-epoch-checkpoints", "--no-save-optimizer-state", "--disable-validation",
                   "--required-batch-size-multiple", "1", "--cpu"], cwd=tmp_path)
    ours, theirs = restored(tmp_path / "ck/checkpoint_last.pt", roberta_folder / "model.pt")
    assert (ours - theirs).abs().max() < 1e-4
    from fairseq_syntax.cli.ner_eval import main as ner_eval

    in_process(ner_eval, [out / "bin", "--path", tmp_path / "ck/checkpoint_last.pt", "--split", "test",
                          "--predictions", tmp_path / "p.jsonl", "--cpu"])
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    from fairseq_syntax.tagger_hub import EntityTagger

    tagger = EntityTagger.from_pretrained(str(tmp_path / "ck"), "checkpoint_last.pt", str(out / "bin"))
    for row in rows[:3]:
        assert tagger.tag_words(row["words"])["labels"] == row["pred"], row["words"]


@pytest.mark.slow
def test_conll2003_from_an_xlmr_folder_encodes_with_its_sentencepiece_and_fine_tunes(xlmr_folder, tmp_path):
    import sentencepiece as spm

    out = tmp_path / "data"
    run(["bash", ROOT / "data-prep/conll2003.sh", "--conll-dir", CONLL, "--out", out, "--pretrained", xlmr_folder,
         "--parser", "spacy", "--workers", "1", "--max-train", "8", "--max-eval", "4"])
    sp = spm.SentencePieceProcessor(model_file=str(xlmr_folder / "sentencepiece.bpe.model"))
    words = (out / "raw/train.words").read_text(encoding="utf-8").splitlines()
    pieces = (out / "wp/train.input0").read_text(encoding="utf-8").splitlines()
    assert [p.split() for p in pieces] == [sp.encode(w, out_type=str) for w in words]
    codes = [list(map(int, x.split())) for x in (out / "wp/train.input0.heads").read_text().splitlines()]
    assert [sum(c > 0 for c in row) for row in codes] == [len(w.split()) for w in words]  # a start per word
    assert json.loads((out / "bin/preprocessing.json").read_text())["subword_style"] == "sentencepiece"
    user_dir = run([BIN / "fairseq-syntax-user-dir"]).stdout.strip()
    fairseq_train([out / "bin", "--user-dir", user_dir, "--task", "syntax_token_labeling", "--criterion",
                   "token_labeling", "--arch", "roberta_sla_base", *SMALL_SIZES, "--restore-file",
                   xlmr_folder / "model.pt", "--reset-optimizer", "--reset-dataloader", "--reset-meters",
                   "--optimizer", "adam", "--lr", "1e-5", "--batch-size", "8", "--max-update", "2", "--save-dir",
                   tmp_path / "ck", "--no-epoch-checkpoints", "--best-checkpoint-metric", "f1",
                   "--maximize-best-checkpoint-metric", "--required-batch-size-multiple", "1", "--cpu"], cwd=tmp_path)
    ours, theirs = restored(tmp_path / "ck/checkpoint_last.pt", xlmr_folder / "model.pt")
    assert (ours - theirs).abs().max() < 1e-4 and np.isfinite(ours.numpy()).all()
