"""Tag raw English with a fine-tuned token-labeling model (CoNLL-2003 NER).

    from fairseq_syntax.tagger_hub import EntityTagger
    tagger = EntityTagger.from_pretrained("checkpoints/ner_sgnet", data_name_or_path="work/conll2003/bin")
    tagger.tag("EU rejects German call to boycott British lamb.")
    # {'words': ['EU', 'rejects', ...], 'labels': ['B-ORG', 'O', 'B-MISC', ...],
    #  'entities': [{'type': 'ORG', 'start': 0, 'end': 1, 'text': 'EU'}, ...]}

The text goes through data-prep's steps: BERT's basic words (cased, as the parser got the corpus tokens), cut
into sentences, each parsed by the parser recorded in the data's ``preprocessing.json`` (stopping with what to
install if it is missing, as the translation hub does), the model's own subwords with the data's files
(data/pretrained_pieces.py), the heads aligned to them, and each word's label read at its first piece, as in
training. ``tag_words`` takes words
already split (the corpus tokens of CoNLL-2003). Entities are read from the labels as conlleval reads them.
"""
from __future__ import annotations

import torch

from .data.pretrained_pieces import PretrainedPieces
from .hub_interface import RawTextHub
from .text_prep.sentences import split_sentences
from .metrics import spans
from .text_prep.wordpiece import basic_words


class EntityTagger(RawTextHub):
    tasks, prep = ("syntax_token_labeling",), "data-prep/conll2003.sh"

    def __init__(self, model, task, cfg, data_dir: str, parser: str = "auto"):
        super().__init__(model, task, cfg, data_dir, parser)
        self.pieces = PretrainedPieces(self.subwords)
        self.names = task.label_names()

    def tag(self, text: str) -> dict:
        """Every word of ``text`` with its label, and the entities (word offsets, end exclusive)."""
        if not isinstance(text, str):
            raise TypeError(f"the text must be a str, got {type(text).__name__}")
        words = basic_words(text)
        if not words:
            raise ValueError("the text has no words")
        return self.tag_words(words, sentences=split_sentences(words))

    @torch.no_grad()
    def tag_words(self, words: list[str], sentences: "list[list[str]] | None" = None) -> dict:
        """``words`` already split (one sentence unless ``sentences`` cuts them), labelled."""
        if not isinstance(words, (list, tuple)) or not words or not all(isinstance(w, str) and w for w in words):
            raise ValueError("words must be a non-empty list of non-empty str")
        for k, w in enumerate(words):  # no word of the prepared data holds one: it would be labelled as a single word
            if any(ch.isspace() for ch in w):
                raise ValueError(f"word {k} ({w!r}) holds whitespace: tag_words takes words split already; "
                                 "tag() splits raw text")
        sentences = sentences or [list(words)]
        if [w for sent in sentences for w in sent] != list(words):
            raise ValueError("sentences must cut words into consecutive pieces, every word once, in order")
        labels = []
        for k, (sent, tree) in enumerate(zip(sentences, self.parser.parse(sentences))):
            labels += self._label(sent, tree.heads, f"sentence {k + 1}")
        entities = [{"type": kind, "start": s, "end": e, "text": " ".join(words[s:e])}
                    for kind, s, e in sorted(spans(labels), key=lambda x: x[1])]
        return {"words": list(words), "labels": labels, "entities": entities}

    def _label(self, words: list[str], heads: list[int], what: str) -> list[str]:
        from .data.sentence_codes import AssembledCodesDataset

        d = self.task.source_dictionary
        # the words joined by spaces, as data-prep encodes CoNLL-2003's tokens: every word starts a piece
        flat, codes = self.pieces.encode(words, heads, what)
        starts = [i for i, c in enumerate(codes) if c > 0]
        if len(starts) != len(words):
            raise ValueError(f"{what}: {len(words)} words but {len(starts)} start a piece of their own")
        lead = int(self.task.cfg.init_token is not None)
        ids = ([self.task.cfg.init_token] if lead else []) + [d.index(p) for p in flat] + [d.eos()]
        if len(ids) > self.task.max_positions():
            raise ValueError(f"{what}: {len(ids)} pieces, more than the model's {self.task.max_positions()}")
        device = next(self.model.parameters()).device
        src_heads = AssembledCodesDataset([codes], None, lead).collater([0])  # rows in memory (PackedRows)
        logits, _ = self.model(src_tokens=torch.tensor([ids], device=device),
                               src_lengths=torch.tensor([len(ids)], device=device), src_heads=src_heads.to(device),
                               features_only=True, classification_head_name=self.task.cfg.classification_head_name)
        best = logits[0].argmax(-1).tolist()
        return [self.names[best[lead + s]] for s in starts]
