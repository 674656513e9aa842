"""fairseq criterions of the package (imported by ``--user-dir``)."""
from . import pointer_sum, token_labeling  # noqa: F401
