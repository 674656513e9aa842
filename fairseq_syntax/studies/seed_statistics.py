"""Comparing two systems over training seeds, for the summarizers (examples/multi30k/summarize.py, examples/lambada/summarize.py,
summarize_race.py).

A paired test on one test set (bootstrap, McNemar) sees only which test items were drawn; two seeds of one
system can differ by as much as two systems do. Welch's t-test over the per-seed scores counts that training
noise too; it is unpaired because the same seed does not pair two architectures.
"""
from __future__ import annotations

import math
import statistics


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (two systems on the same test items)."""
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def seed_test(system: list[float], baseline: list[float]) -> dict | None:
    """The system's mean minus the baseline's over seeds, and Welch's t-test p (None below 2 seeds a side,
    or when neither side varies)."""
    if len(system) < 2 or len(baseline) < 2:
        return None
    if statistics.variance(system) == statistics.variance(baseline) == 0:
        p = float("nan")  # scipy would divide rounding error by rounding error
    else:
        from scipy.stats import ttest_ind

        p = float(ttest_ind(system, baseline, equal_var=False).pvalue)
    return {"diff": round(statistics.mean(system) - statistics.mean(baseline), 2),
            "welch_p": None if p != p else significant(p), "n": [len(system), len(baseline)]}


def significant(p: float) -> float:
    """p to 3 significant digits: rounding to fixed decimals would store a strong effect as p = 0."""
    return float(f"{p:.3g}")


def format_p(p: float, decimals: int = 4) -> str:
    """Fixed decimals, and below their resolution scientific notation: a strong effect must not read as p = 0."""
    return f"{p:.{decimals}f}" if p >= 10 ** -decimals else f"{p:.1e}"


def format_seed_test(t: dict | None, diff_format: str = "+.2f") -> str:
    """A table cell for seed_test's result: the difference of the means and Welch's p (– when untested)."""
    if t is None:
        return "–"
    return f"{t['diff']:{diff_format}}" + (f" (p = {format_p(t['welch_p'], 3)})" if t["welch_p"] is not None else "")


def keyed(rows, key, where: str) -> dict:
    """``{key(row): row}`` for a paired test between systems; a key seen twice is an error naming ``where``
    and the key, never a row silently dropped from the pairing."""
    out = {}
    for n, row in enumerate(rows, 1):
        k = key(row)
        if k in out:
            raise ValueError(f"{where}: line {n}: the key {k!r} occurs twice; a paired test needs unique items")
        out[k] = row
    return out
