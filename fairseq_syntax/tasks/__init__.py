"""fairseq tasks of the package (imported by ``--user-dir``)."""
from .. import checkpoint_compat  # noqa: F401  (allow-list fairseq checkpoint contents for torch.load)
from . import syntax_guided_translation, syntax_sentence_prediction  # noqa: F401
