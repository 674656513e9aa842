"""fairseq models of the package (imported by ``--user-dir``)."""
from ..versions import check_fairseq

check_fairseq()  # before any fairseq import below: one clear message on an old fairseq
from .. import bf16_on_gpu, checkpoint_compat  # noqa: F401  (bf16 off TPUs; allow-list checkpoint contents)
from ..reader import model as bidaf_sa  # noqa: F401,E402  (the LAMBADA reader lives in reader/)
from . import roberta_syntax, transformer_sgnet  # noqa: F401,E402
