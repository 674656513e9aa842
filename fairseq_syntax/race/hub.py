"""Ask a fine-tuned RACE model about raw text.

    from fairseq_syntax.race.hub import RaceReader
    reader = RaceReader.from_pretrained("checkpoints/race_sgnet", data_name_or_path="work/race/bin")
    reader.predict_choice(article, "Where did Tom go?", ["home", "school", "the park", "the zoo"])
    # {'choice': 2, 'letter': 'C', 'scores': [...]}

The text goes through data-prep's steps: BERT basic words, the article cut into sentences, each parsed by the parser
recorded in the data's ``preprocessing.json`` (stopping with what to install if it is missing, as the translation
hub does), the model's own subwords with the data's files (data/pretrained_pieces.py), and the choices built and cut
exactly as in training (:class:`~fairseq_syntax.data.ranking_inputs.RankingChoiceDataset`).
"""
from __future__ import annotations

import numpy as np
import torch

from ..data.pretrained_pieces import one_line, word_runs_text
from ..hub_interface import RawTextHub
from ..text_prep.sentences import split_sentences
from ..text_prep.wordpiece import basic_words
from .examples import ANSWERS, question_with_option
from .prep import MAX_SENTENCE_WORDS, _Pieces, join_sentences


class RaceReader(RawTextHub):
    """The recipe trains without validation (dev never chooses), so the last checkpoint is the model."""

    tasks, prep, checkpoint = ("syntax_sentence_ranking",), "data-prep/race.sh", "checkpoint_last.pt"

    def __init__(self, model, task, cfg, data_dir: str, parser: str = "auto"):
        super().__init__(model, task, cfg, data_dir, parser)
        self.pieces = _Pieces(self.subwords, task.source_dictionary)

    def _encode(self, text: str, sentences: list[list[str]], what: str):
        """Each sentence's ids and codes; a sentence after the first is encoded after a space, as data-prep does."""
        parsed = self.parser.parse(sentences)
        texts = word_runs_text(one_line(text), sentences, what)
        return [self.pieces.encode(s, p.heads, f"{what}, sentence {k + 1}", " " + t if k else t)
                for k, (s, p, t) in enumerate(zip(sentences, parsed, texts))]

    @torch.no_grad()
    def predict_choice(self, article: str, question: str, options: list[str]) -> dict:
        """The index of the best option (0-based), its letter, and every option's score."""
        args = self.task.args
        if not isinstance(article, str) or not basic_words(article):
            raise ValueError("the article is empty")
        if not isinstance(question, str):
            raise TypeError(f"the question must be a str, got {type(question).__name__}")
        if not isinstance(options, (list, tuple)) or len(options) != args.num_classes:
            raise ValueError(f"the model ranks {args.num_classes} options, got "
                             f"{len(options) if isinstance(options, (list, tuple)) else type(options).__name__}")
        for k, option in enumerate(options):  # checked as the question is: str(None) is no option
            if not isinstance(option, str):
                raise TypeError(f"option {ANSWERS[k] if k < 4 else k}: expected a str, got {type(option).__name__}")
        words = basic_words(article)
        ctx_ids, ctx_codes = join_sentences(self._encode(article, split_sentences(words, MAX_SENTENCE_WORDS),
                                                         "the article"))
        eos = self.task.source_dictionary.eos()
        choices = []
        for k, option in enumerate(options):
            text = question_with_option(question, option)
            w = basic_words(text)
            if not w:
                raise ValueError(f"option {ANSWERS[k] if k < 4 else k}: the question with it has no words")
            choices.append(self._encode(text, [w], f"option {k}")[0])
        from ..data.ranking_inputs import RankingChoiceDataset

        device = next(self.model.parameters()).device
        head = getattr(self.cfg.model, "ranking_head_name", "sentence_classification_head")
        shorten = args.shorten_method == "truncate"
        limit = getattr(args, "max_input_length", None) or args.max_positions  # as the task cuts the choices
        scores = []
        for ids, codes in choices:
            ds = RankingChoiceDataset([np.append(ctx_ids, eos)], [ctx_codes], [np.append(ids, eos)], [codes],
                                      self.task.source_dictionary.pad(), eos, args.init_token, args.separator_token,
                                      limit if shorten else None, args.max_option_length)
            batch = {k: v.to(device) for k, v in ds.collater([0]).items()}
            scores.append(float(self.model(**batch, classification_head_name=head)[0].float().view(-1)[0]))
        best = int(np.argmax(scores))
        return {"choice": best, "letter": ANSWERS[best] if best < 4 else str(best), "scores": scores}
