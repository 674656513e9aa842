"""Multiple-choice reading comprehension on RACE (SG-Net's MRC study): the files to examples
(:mod:`.examples`), data-prep's text and binarizing steps (:mod:`.prep`), per-question evaluation
(:mod:`.evaluate`) and asking a fine-tuned model about raw text (:mod:`.hub`). The task is
``tasks/syntax_sentence_ranking.py``; the models are the ``roberta_*`` encoders with a ranking head."""
