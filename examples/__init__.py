"""The studies of fairseq_syntax, beside the package and not installed with it (as fairseq keeps ``examples/`` apart
from ``fairseq/``): one folder a study, and ``studies/``, the machinery their runners and summaries share."""
