"""fairseq models of the package (imported by ``--user-dir``)."""
from .. import checkpoint_compat  # noqa: F401  (allow-list fairseq checkpoint contents for torch.load)
from . import bidaf_sa, roberta_syntax, transformer_sgnet  # noqa: F401
