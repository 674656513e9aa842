"""The hub interface for the translation models: raw English in, a translation out.

``TransformerSGNetModel.from_pretrained(checkpoint_dir, data_name_or_path=bin_dir)`` loads the checkpoint and
the data directory, and reads ``bin/preprocessing.json`` (written by data-prep) for the preprocessing to
repeat: the Moses pipeline of data-prep, BPE with the training codes and vocabulary, and the parser of the
training parses (see :mod:`fairseq_syntax.parsing.provenance`). Each batch is parsed where the task runs
inference, so a list of sentences is parsed in batches.
"""
from __future__ import annotations

import logging
import os
from typing import List, Union

import torch
from fairseq import hub_utils, utils
from fairseq.hub_utils import GeneratorHubInterface

from .parsing.provenance import PREPROCESSING_FILE, read_preprocessing
from .text_prep.moses import MosesPipeline

logger = logging.getLogger(__name__)


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "checkpoint_best.pt",
                    data_name_or_path: str = ".", parser: str = "auto", archive_map=None, **kwargs):
    """A :class:`SyntaxGuidedHubInterface` over a checkpoint (``;``-separated files: an ensemble).

    ``parser``: ``auto`` takes the parser recorded with the data, and stops with a message if it is not
    installed; ``spacy`` or ``stanza`` forces one, with a warning when it differs from the record."""
    from . import register

    model_name_or_path, checkpoint_file, data_name_or_path = _check_paths(model_name_or_path, checkpoint_file,
                                                                          data_name_or_path)
    register()  # the tasks too: importing one model module registers only the models
    x = hub_utils.from_pretrained(model_name_or_path, checkpoint_file=checkpoint_file.replace(";", os.pathsep),
                                  data_name_or_path=data_name_or_path, archive_map=archive_map or {},
                                  parser=parser, **kwargs)
    from .checkpoint_compat import refuse_other_trees

    refuse_other_trees(x["args"].task, os.path.join(model_name_or_path, checkpoint_file), "the translation hub")
    return SyntaxGuidedHubInterface(x["args"], x["task"], x["models"])


def _check_paths(model_dir: str, checkpoint_file: str, data: str):
    """The folder, checkpoint files and data folder exist, before fairseq's hub looks them up as archive
    names (which ends in a tarfile or NoneType error). A checkpoint file given as the folder is split."""
    if not isinstance(model_dir, (str, os.PathLike)):
        raise TypeError(f"from_pretrained takes the checkpoint folder as a path, got {type(model_dir).__name__}")
    model_dir = os.fspath(model_dir)
    if os.path.isfile(model_dir):  # from_pretrained("ckpt/checkpoint_best.pt"): the folder and the file
        model_dir, checkpoint_file = os.path.dirname(model_dir) or ".", os.path.basename(model_dir)
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"{model_dir}: no such checkpoint folder (pass the folder that holds "
                                f"{checkpoint_file}, the --save-dir of the training)")
    for name in checkpoint_file.split(";"):
        if not os.path.isfile(os.path.join(model_dir, name)):
            raise FileNotFoundError(f"{os.path.join(model_dir, name)}: no such checkpoint file")
    # as fairseq's hub_utils: a data path starting with '.' is relative to the checkpoint folder
    data_dir = os.path.abspath(os.path.join(model_dir, data)) if data.startswith(".") else data
    if not os.path.isdir(data_dir):
        where = f" (relative to {model_dir})" if data.startswith(".") else ""
        raise FileNotFoundError(f"{data}: no such data folder{where}; pass data_name_or_path=the binarized data "
                                "folder (bin/) of the training")
    return model_dir, checkpoint_file, data_dir


def load_for_raw_text(model_name_or_path: str, checkpoint_file: str, data_name_or_path: str, tasks: tuple,
                      tool: str):
    """(model, cfg, task, data folder) of one checkpoint for a hub that parses raw text: the paths checked, the
    checkpoint's task checked, and its trees the data's own (the readers' ``from_pretrained``)."""
    import fairseq_syntax

    from .checkpoint_compat import load_model_for

    model_dir, checkpoint_file, data = _check_paths(model_name_or_path, checkpoint_file, data_name_or_path)
    fairseq_syntax.register()
    models, cfg, task = load_model_for(os.path.join(model_dir, checkpoint_file), data, tasks, tool, raw_text=True)
    return models[0], cfg, task, data


def subword_folder(data_dir: str, prep: str) -> str:
    """The data folder, holding the model's subword files that data-prep copies beside an encoder's corpus
    (``vocab.txt``; ``sentencepiece.bpe.model``; GPT-2's two files, or a record of fairseq's downloaded ones)."""
    from .data.pretrained_pieces import scheme_files, scheme_of
    from .parsing.provenance import read_preprocessing

    byte_bpe = (read_preprocessing(data_dir) or {}).get("subword_style") == "byte_bpe"
    if scheme_of(data_dir) == "gpt2" and not scheme_files(data_dir) and not byte_bpe:
        raise FileNotFoundError(f"{data_dir}: no subword files beside the data (vocab.txt, sentencepiece.bpe.model, "
                                f"encoder.json and vocab.bpe; prepare it with {prep}, which copies them there)")
    return data_dir


class RawTextHub:
    """What the hubs that read raw text share (the tagger, the sentence classifier, the RACE reader): one checkpoint
    of one of ``tasks``, loaded with its data, the parser recorded with that data, and the model's subword files
    beside it (written by ``prep``)."""

    tasks: tuple = ()
    prep = ""
    checkpoint = "checkpoint_best.pt"

    def __init__(self, model, task, cfg, data_dir: str, parser: str = "auto"):
        from .parsing.provenance import parser_for_raw_input

        self.model, self.task, self.cfg = model.eval(), task, cfg
        self.parser = parser_for_raw_input(parser, data_dir)
        self.subwords = subword_folder(data_dir, self.prep)

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: str | None = None,
                        data_name_or_path: str = ".", parser: str = "auto"):
        """``checkpoint_file``: the class's ``checkpoint`` when not given."""
        model, cfg, task, data = load_for_raw_text(model_name_or_path, checkpoint_file or cls.checkpoint,
                                                   data_name_or_path, cls.tasks, cls.__name__)
        return cls(model, task, cfg, data, parser)


def _check_sentences(sentences, beam) -> list:
    if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
        raise ValueError(f"beam must be a whole number of at least 1, got {beam!r}")
    if isinstance(sentences, str) or torch.is_tensor(sentences):
        sentences = [sentences]
    if not isinstance(sentences, (list, tuple)):
        raise TypeError(f"expected a sentence (str) or a list of them, got {type(sentences).__name__}")
    for i, s in enumerate(sentences):
        if torch.is_tensor(s):
            continue
        if not isinstance(s, str):
            raise TypeError(f"sentence {i}: expected a str, got {type(s).__name__}")
        if not s.strip():
            raise ValueError(f"sentence {i} is empty (or only whitespace): there is nothing to translate")
    return list(sentences)


class SyntaxGuidedHubInterface(GeneratorHubInterface):
    """fairseq's generator hub, with the preprocessing recorded beside the training data."""

    def __init__(self, cfg, task, models):
        super().__init__(cfg, task, models)
        data = utils.split_paths(task.cfg.data)[0]
        rec = read_preprocessing(data)
        src = task.cfg.source_lang
        bpe = (rec or {}).get("bpe") or {"codes": "bpecodes"}
        codes = os.path.join(data, bpe["codes"])
        if not os.path.exists(codes):
            raise FileNotFoundError(f"{codes}: no BPE codes beside the data; prepare it with data-prep (which writes "
                                    f"{PREPROCESSING_FILE} and bpecodes there)")
        if rec is None:
            logger.warning("no %s in %s: tokenizing with data-prep's Moses pipeline and the BPE codes there, "
                           "without the BPE vocabulary filter", PREPROCESSING_FILE, data)
        from subword_nmt.apply_bpe import BPE, read_vocabulary

        vocab = None
        if bpe.get("vocabulary"):
            with open(os.path.join(data, bpe["vocabulary"]), encoding="utf-8") as fh:
                vocab = read_vocabulary(fh, bpe.get("vocabulary_threshold"))
        with open(codes, encoding="utf-8") as fh:
            self._bpe = BPE(fh, vocab=vocab)
        self._moses = MosesPipeline(src)
        from sacremoses import MosesDetokenizer

        self._detok = MosesDetokenizer(lang=task.cfg.target_lang)
        self.preprocessing = rec
        if hasattr(task, "parser"):
            self.parser = task.parser  # a missing parser stops here, not at the first sentence

    def tokenize(self, sentence: str) -> str:
        return self._moses(sentence)

    def detokenize(self, sentence: str) -> str:
        return self._detok.detokenize(sentence.split())

    def apply_bpe(self, sentence: str) -> str:
        return self._bpe.process_line(sentence)

    def remove_bpe(self, sentence: str) -> str:
        return (sentence + " ").replace("@@ ", "").rstrip()

    def sample(self, sentences: Union[str, List[str]], beam: int = 1, verbose: bool = False, **kwargs):
        if isinstance(sentences, str):
            return self.sample([sentences], beam=beam, verbose=verbose, **kwargs)[0]
        sentences = _check_sentences(sentences, beam)
        batched = self.generate(sentences, beam, verbose, **kwargs)
        return [self.decode(hypos[0]["tokens"]) if hypos else None for hypos in batched]

    def generate(self, tokenized_sentences, beam: int = 5, verbose: bool = False, skip_invalid_size_inputs=False,
                 **kwargs):
        """As fairseq's, and also on raw sentences (strings). A sentence longer than the model's source
        positions is an error naming it; with ``skip_invalid_size_inputs`` it gets no hypotheses (``[]``, and
        ``None`` from translate/sample), and the others keep their places."""
        if isinstance(tokenized_sentences, str) or (torch.is_tensor(tokenized_sentences)
                                                    and tokenized_sentences.dim() == 1):
            return self.generate([tokenized_sentences], beam, verbose, skip_invalid_size_inputs, **kwargs)[0]
        tokenized_sentences = _check_sentences(tokenized_sentences, beam)
        items = [self.encode(s) if isinstance(s, str) else s for s in tokenized_sentences]
        limit = self.max_positions[0] if isinstance(self.max_positions, (tuple, list)) else self.max_positions
        too_long = {i for i, t in enumerate(items) if limit is not None and len(t) > limit}
        if too_long and not skip_invalid_size_inputs:
            i = min(too_long)
            raise ValueError(f"sentence {i}: {len(items[i])} tokens after BPE (with </s>), more than the model's "
                             f"{limit} source positions; shorten it, or pass skip_invalid_size_inputs=True")
        keep = [i for i in range(len(items)) if i not in too_long]
        out = super().generate([items[i] for i in keep], beam, verbose, **kwargs) if keep else []
        result = [[] for _ in items]
        for i, hypos in zip(keep, out):
            result[i] = hypos
        return result
