"""Classify raw English sentences, or sentence pairs, with a fine-tuned ``syntax_sentence_prediction`` model (GLUE).

    from fairseq_syntax.classifier_hub import SentenceClassifier
    rte = SentenceClassifier.from_pretrained("checkpoints/rte_sla", data_name_or_path="work/glue/RTE/bin")
    rte.predict("A man is playing a guitar on stage.", "A man plays an instrument.")
    # {'label': 'entailment', 'probabilities': {'entailment': 0.81, 'not_entailment': 0.19}}
    sts = SentenceClassifier.from_pretrained("checkpoints/stsb_sla", data_name_or_path="work/glue/STS-B/bin")
    sts.predict("A man is playing a guitar.", "A man plays the guitar.")  # {'score': 0.86}

Each text goes through data-prep's steps (``data-prep/glue.sh``): BERT's basic words, parsed on its own by the
parser recorded in the data's ``preprocessing.json`` (stopping with what to install if it is missing, as the
translation hub does), the model's own subwords with the data's files (data/pretrained_pieces.py), the heads
aligned to them, and the two texts assembled as in training (``<s> a </s> [sep] b </s>``, cut where the task
cuts). A regression model's score is on the scale of its training labels: data-prep writes STS-B's 0–5 as
score / 5, as fairseq's GLUE recipe does.
"""
from __future__ import annotations

import os

import torch

from .data.pretrained_pieces import PretrainedPieces, one_line
from .hub_interface import RawTextHub
from .text_prep.wordpiece import basic_words


class SentenceClassifier(RawTextHub):
    tasks, prep = ("syntax_sentence_prediction",), "data-prep/glue.sh"

    def __init__(self, model, task, cfg, data_dir: str, parser: str = "auto"):
        super().__init__(model, task, cfg, data_dir, parser)
        self.pieces = PretrainedPieces(self.subwords)
        self.pairs = os.path.isdir(os.path.join(data_dir, "input1"))  # as the task reads the data
        self.names = task.label_names()

    def _encode(self, text, what: str) -> tuple[list[int], list[int]]:
        """A text's ids (with the closing ``</s>``, as fairseq-preprocess writes a line) and its pieces' codes."""
        if not isinstance(text, str):
            raise TypeError(f"{what}: expected a str, got {type(text).__name__}")
        words = basic_words(text)
        if not words:
            raise ValueError(f"{what} has no words")
        tree = self.parser.parse([words])[0]
        symbols, codes = self.pieces.encode(words, tree.heads, what, one_line(text))
        d = self.task.source_dictionary
        return [d.index(s) for s in symbols] + [d.eos()], codes

    @torch.no_grad()
    def predict(self, text: str, pair: str | None = None) -> dict:
        """The label and each class's probability, or, for a regression model, the score. ``pair``: the second
        text, which a model trained on pairs (RTE, MRPC, STS-B, QNLI) needs and one trained on single sentences
        (CoLA, SST-2) refuses."""
        from .data.sentence_codes import AssembledCodesDataset, AssembledInputDataset

        if self.pairs and pair is None:
            raise ValueError("this model classifies sentence pairs (its data has input1/): give the second text")
        if not self.pairs and pair is not None:
            raise ValueError("this model classifies single sentences (its data has no input1/): give one text")
        first = self._encode(text, "the first text" if self.pairs else "the text")
        second = self._encode(pair, "the second text") if self.pairs else None
        cfg = self.task.cfg
        separator = cfg.separator_token if second is not None else None
        limit = self.task.max_positions()
        cut = limit if cfg.shorten_method == "truncate" else None
        codes = AssembledCodesDataset([first[1]], None if second is None else [second[1]],
                                      int(cfg.init_token is not None), int(separator is not None), cut)
        inputs = AssembledInputDataset([first[0]], None if second is None else [second[0]], codes,
                                       self.task.source_dictionary.pad(), cfg.init_token, separator, cut)
        if inputs.sizes[0] > limit:  # (cut to the limit where the task cuts)
            raise ValueError(f"the input is {inputs.sizes[0]} pieces, more than the model's {limit} (it was trained "
                             "without --shorten-method truncate)")
        device = next(self.model.parameters()).device
        batch = {k: v.to(device) for k, v in inputs.collater([0]).items()}
        head = getattr(cfg, "classification_head_name", "sentence_classification_head")
        logits, _ = self.model(**batch, features_only=True, classification_head_name=head)
        out = logits[0].float()
        if self.names is None:
            return {"score": float(out.view(-1)[0])}
        probs = out.softmax(-1).tolist()
        return {"label": self.names[int(out.argmax())], "probabilities": dict(zip(self.names, probs))}
