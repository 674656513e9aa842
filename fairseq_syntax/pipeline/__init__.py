"""The machinery around the models: stage records, locks, ownership, atomic writes and the job pool.

data-prep's recipes (``fairseq_syntax/data_prep``) and the parser's shards build on it, so that each guarantee
(a stage redone when what shaped it changed, one writer per folder, nothing deleted that the project did not
write, nothing half-written left) lives in one place and is tested once (``tests/test_pipeline.py``). It imports
neither fairseq nor torch.
"""
