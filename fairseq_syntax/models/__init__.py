"""fairseq models of the package (imported by ``--user-dir``)."""
from ..versions import check_fairseq

check_fairseq()  # before any fairseq import below: one clear message on an old fairseq
from .. import checkpoint_compat  # noqa: F401  (allow-list fairseq checkpoint contents for torch.load)
from . import bidaf_sa, roberta_syntax, transformer_sgnet  # noqa: F401
