"""The LAMBADA reader (docs/lambada-reader.md): attention heads supervised with coreference and syntax.

fairseq-free (torch and the standard library only): ``instances`` (passages, Chu et al.'s filter, passages cut
from novels), ``ptb`` (LAMBADA's tokenization), ``annotate`` (parses and chains joined per passage), ``chains``
and ``coref`` (coreference records and backends; ``neuralcoref_worker`` runs in its side environment),
``supervision`` (the five signals as index pairs), ``losses`` (pointer-sum and attention supervision) and
``layers`` (BiDAF, self-attention, the weight average).

fairseq glue: ``binarize`` and ``dataset`` (indexed side data, batches), ``model`` (``bidaf_sa``), ``task``
(``lambada_reader``), ``criterion`` (``pointer_sum``), ``lambada_prep`` and ``lambada_eval`` (``fairseq-syntax-lambada``
and ``fairseq-syntax-lambada-eval``). The registries in ``tasks/``, ``models/`` and ``criterions/`` import them.
"""
