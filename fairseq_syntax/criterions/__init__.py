"""fairseq criterions of the package (imported by ``--user-dir``)."""
from ..versions import check_fairseq

check_fairseq()  # before any fairseq import below: one clear message on an old fairseq
from . import pointer_sum, token_labeling  # noqa: F401,E402
