"""fairseq tasks of the package (imported by ``--user-dir``, which does not import criterions/ itself)."""
from ..versions import check_fairseq

check_fairseq()  # before any fairseq import below: one clear message on an old fairseq
from .. import bf16_on_gpu, checkpoint_compat  # noqa: F401  (bf16 off TPUs; allow-list checkpoint contents)
from ..quick import apply_quick_mode

apply_quick_mode()  # FAIRSEQ_SYNTAX_QUICK: the README's commands as a smoke test (fairseq_syntax/quick.py)
from .. import criterions  # noqa: F401
from ..reader import task as lambada_reader  # noqa: F401,E402  (the LAMBADA reader lives in reader/)
from . import (syntax_guided_translation, syntax_sentence_prediction, syntax_sentence_ranking,  # noqa: F401,E402
               syntax_token_labeling)
