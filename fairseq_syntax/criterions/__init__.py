"""fairseq criterions of the package (imported by ``--user-dir``)."""
from . import token_labeling  # noqa: F401
