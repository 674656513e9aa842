"""No code runs from a checkpoint: a stored configuration string that fairseq would pass to eval() stops the
load, naming the file and the field, through every loading path."""
import argparse
import shutil

import pytest
import torch

from fairseq_syntax import checkpoint_safety
from fairseq_syntax.checkpoint_safety import EVAL_FIELDS, UnsafeCheckpointError

from .conftest import BIN, run


def payload(marker) -> str:
    return f"(__import__('os').system('touch {marker}'), None)[1]"


def crafted_state(field: str, value: str) -> dict:
    """A checkpoint as fairseq 0.12 writes it (config as plain containers, model options as a Namespace)."""
    return {"args": None, "cfg": {"model": argparse.Namespace(_name="transformer_sgnet", **{field: value}),
                                  "common": {"seed": 1}},
            "model": {"w": torch.zeros(1)}, "last_optimizer_state": {},
            "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam",
                                   "lr_scheduler_state": {"best": None}, "num_updates": 0}],
            "extra_state": {"train_iterator": {"epoch": 1}}}


@pytest.mark.parametrize("field", sorted(EVAL_FIELDS))
def test_every_evaluated_field_is_refused_when_not_a_literal(field, tmp_path):
    from fairseq import checkpoint_utils

    marker = tmp_path / "ran"
    path = tmp_path / "crafted.pt"
    torch.save(crafted_state(field, payload(marker)), path)
    with pytest.raises(UnsafeCheckpointError) as e:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert str(path) in str(e.value) and f"cfg.model.{field}" in str(e.value)
    assert not marker.exists()


def test_literals_and_none_load(tmp_path):
    state = crafted_state("adaptive_softmax_cutoff", "[1000, 5000]")
    state["cfg"]["model"].encoder_xformers_att_config = None
    state["cfg"]["optimizer"] = {"adam_betas": "(0.9, 0.98)"}
    checkpoint_safety.check_config(state, "x.pt")  # no error
    state["args"] = argparse.Namespace(adam_betas="__import__('os')")  # old-style args are checked too
    with pytest.raises(UnsafeCheckpointError, match=r"args\.adam_betas"):
        checkpoint_safety.check_config(state, "x.pt")


# ---- through the real loading paths, on a trained SG-Net checkpoint --------------------------------------------

TRAIN = ["--task", "syntax_guided_translation", "-s", "en", "-t", "de", "--arch", "transformer_sgnet_small",
         "--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-4", "--criterion", "cross_entropy",
         "--max-tokens", "1500", "--seed", "1", "--no-progress-bar", "--no-epoch-checkpoints"]


@pytest.fixture(scope="module")
def trained(translation_checkpoint):
    return translation_checkpoint


def craft(trained, folder, field, marker):
    """The trained checkpoint with one configuration field set to code that creates ``marker``."""
    state = torch.load(trained, weights_only=False)
    setattr(state["cfg"]["model"], field, payload(marker)) if isinstance(state["cfg"]["model"], argparse.Namespace) \
        else state["cfg"]["model"].__setitem__(field, payload(marker))
    folder.mkdir(exist_ok=True)
    path = folder / "checkpoint_best.pt"
    torch.save(state, path)
    return path


@pytest.mark.slow
def test_the_payload_runs_without_the_check(prepared, trained, tmp_path):
    """The control: the crafted checkpoint really would run code when fairseq builds the model."""
    from fairseq import checkpoint_utils, tasks

    import fairseq_syntax

    fairseq_syntax.register()
    marker = tmp_path / "ran"
    path = craft(trained, tmp_path / "c", "encoder_xformers_att_config", marker)
    state = checkpoint_utils.load_checkpoint_to_cpu.__wrapped__(str(path), {"data": str(prepared / "bin")})
    task = tasks.setup_task(state["cfg"].task)
    try:
        task.build_model(state["cfg"].model)
    except Exception:
        pass  # what the payload leaves behind may not build; the code has run by then
    assert marker.exists()


LOADERS = {
    "generate": lambda d, ck, ud: [BIN / "fairseq-generate", d, "--user-dir", ud, "--task", "syntax_guided_translation",
                                   "-s", "en", "-t", "de", "--path", ck, "--batch-size", "8"],
    "validate": lambda d, ck, ud: [BIN / "fairseq-validate", d, "--user-dir", ud, "--task", "syntax_guided_translation",
                                   "-s", "en", "-t", "de", "--path", ck, "--max-tokens", "1000"],
    "interactive": lambda d, ck, ud: [BIN / "fairseq-interactive", d, "--user-dir", ud, "--task",
                                      "syntax_guided_translation", "-s", "en", "-t", "de", "--path", ck,
                                      "--bpe", "subword_nmt", "--bpe-codes", f"{d}/bpecodes"],
    "restore-file": lambda d, ck, ud: [BIN / "fairseq-train", d, "--user-dir", ud, *TRAIN, "--max-update", "3",
                                       "--restore-file", ck, "--save-dir", f"{ck}.save", "--reset-optimizer"],
    "finetune-from-model": lambda d, ck, ud: [BIN / "fairseq-train", d, "--user-dir", ud, *TRAIN, "--max-update",
                                              "3", "--finetune-from-model", ck, "--save-dir", f"{ck}.ft"],
    "lambada-eval": lambda d, ck, ud: [BIN / "fairseq-syntax-lambada-eval", d, "--path", ck],
    "average": lambda d, ck, ud: [BIN / "fairseq-syntax-average", "--inputs", ck, "--output", f"{ck}.avg.pt"],
}


@pytest.mark.slow
@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("field", ["encoder_xformers_att_config", "adaptive_softmax_cutoff"])
def test_no_loading_path_runs_code_from_a_crafted_configuration(loader, field, prepared, trained, user_dir, tmp_path):
    marker = tmp_path / "ran"
    path = craft(trained, tmp_path / "c", field, marker)
    proc = run(LOADERS[loader](str(prepared / "bin"), str(path), user_dir), cwd=str(tmp_path), check=False,
               input="A man rides a horse .\n")
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert not marker.exists()
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]  # the refusal alone, as one line
    assert "refused to load" in proc.stderr and str(path) in proc.stderr and f"model.{field}" in proc.stderr, \
        proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("field", ["encoder_xformers_att_config", "decoder_xformers_att_config",
                                   "adaptive_softmax_cutoff"])
def test_from_pretrained_runs_no_code(field, prepared, trained, tmp_path):
    from fairseq_syntax.models.transformer_sgnet import TransformerSGNetModel

    marker = tmp_path / "ran"
    path = craft(trained, tmp_path / "c", field, marker)
    shutil.copy(prepared / "bin" / "dict.en.txt", tmp_path / "c")
    with pytest.raises(UnsafeCheckpointError, match=field):
        TransformerSGNetModel.from_pretrained(str(path.parent), data_name_or_path=str(prepared / "bin"))
    assert not marker.exists()


@pytest.mark.slow
def test_an_unreadable_checkpoint_is_one_line_naming_it(prepared, trained, user_dir, tmp_path):
    """Empty, truncated and random-byte checkpoints: the path and what to do, with neither a traceback nor torch's
    advice to retry with weights_only=False (which would unpickle whatever the file holds)."""
    import numpy as np

    from fairseq_syntax.checkpoint_safety import UnreadableCheckpointError
    from fairseq_syntax.models.transformer_sgnet import TransformerSGNetModel

    good = trained.read_bytes()
    cases = {"empty": b"", "truncated": good[: len(good) // 2], "random": np.random.default_rng(0).bytes(5000)}
    for name, body in cases.items():
        path = tmp_path / name / "checkpoint_best.pt"
        path.parent.mkdir()
        path.write_bytes(body)
        expected = "an empty file, not a checkpoint" if not body else "not a readable checkpoint"
        proc = run(LOADERS["generate"](str(prepared / "bin"), str(path), user_dir), cwd=str(tmp_path), check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert f"fairseq-generate: error: {path}: {expected}" in proc.stderr, proc.stderr[-3000:]
        assert "weights_only" not in proc.stderr
        with pytest.raises(UnreadableCheckpointError, match=f"{path}: {expected}"):
            TransformerSGNetModel.from_pretrained(str(path.parent), data_name_or_path=str(prepared / "bin"))


@pytest.mark.slow
def test_the_translation_hub_refuses_a_model_trained_on_random_trees(prepared, trained, tmp_path):
    """The hub parses raw text for real; a model trained with --heads-suffix randheads never saw such trees."""
    from fairseq_syntax.models.transformer_sgnet import TransformerSGNetModel

    state = torch.load(trained, weights_only=False)
    state["cfg"]["task"]["heads_suffix"] = "randheads"
    folder = tmp_path / "random-trees"
    folder.mkdir()
    torch.save(state, folder / "checkpoint_best.pt")
    with pytest.raises(ValueError, match=r"trained with --heads-suffix randheads .* the translation hub parses raw "
                                         r"text"):
        TransformerSGNetModel.from_pretrained(str(folder), data_name_or_path=str(prepared / "bin"))


@pytest.mark.slow
def test_data_binarized_with_another_dictionary_is_refused_by_generate_and_the_hub(prepared, trained, user_dir,
                                                                                   tmp_path):
    """Two entries of the joined dictionary swapped, as a vocabulary rebuilt at the same size may list them: the
    model would read and write other tokens through every index. fairseq-generate stops with one line naming the
    data and the checkpoint before translating anything; the hub raises the same."""
    from fairseq_syntax.checkpoint_compat import OtherDictionariesError
    from fairseq_syntax.models.transformer_sgnet import TransformerSGNetModel

    data = tmp_path / "bin"
    shutil.copytree(prepared / "bin", data)
    for lang in ("en", "de"):
        lines = (data / f"dict.{lang}.txt").read_text().splitlines(keepends=True)
        (data / f"dict.{lang}.txt").write_text("".join([lines[1], lines[0], *lines[2:]]))
    proc = run(LOADERS["generate"](str(data), str(trained), user_dir), cwd=str(tmp_path), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (f"fairseq-generate: error: {data}: its source and target dictionaries are not the ones {trained} was "
            f"trained with") in proc.stderr, proc.stderr[-3000:]
    assert "H-" not in proc.stdout
    with pytest.raises(OtherDictionariesError, match="its source and target dictionaries are not the ones"):
        TransformerSGNetModel.from_pretrained(str(trained.parent), data_name_or_path=str(data))
