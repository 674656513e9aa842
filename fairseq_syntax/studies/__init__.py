"""What the studies in examples/ share: the stopping rule read from a whole log, the options a run was trained
with, training logs, tests over seeds, the README blocks the summarizers write, and a learned α. Kept in the
package so that the studies' scripts and the tests import each from one place."""
