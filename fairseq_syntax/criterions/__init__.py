"""fairseq criterions of the package (imported by ``--user-dir``)."""
from ..versions import check_fairseq

check_fairseq()  # before any fairseq import below: one clear message on an old fairseq
from ..reader import criterion as pointer_sum  # noqa: F401,E402  (the LAMBADA reader lives in reader/)
from . import token_labeling  # noqa: F401,E402
