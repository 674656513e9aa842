"""What the studies in examples/ share: the runs' checks and locks, the stopping rule read from a whole log, the
options a run was trained with, training logs, tests over seeds, each table's protocol and each run's record, the
README blocks the summarizers write, and a learned α. Not part of the installed package: a study imports it with the
checkout on its path."""
