"""data-prep's recipes, one module a corpus, on the stage machinery of ``fairseq_syntax.pipeline``.

Each recipe reads its options as ``data-prep/CORPUS.sh`` always took them, and calls the project's console tools
(``fairseq-syntax-parse``, ``fairseq-preprocess`` ...) as stages. ``fairseq-syntax-prep CORPUS --help`` and
``bash data-prep/CORPUS.sh --help`` print the same text.
"""
CORPORA = ("multi30k", "wmt14", "glue", "conll2003", "race", "lambada")
