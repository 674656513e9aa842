"""Comparing two systems over training seeds and on one test set, for the summarizers in examples/.

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


def welch_interval(system: list[float], baseline: list[float], level: float = 0.95) -> list[float] | None:
    """The interval of the difference of means that Welch's test does not reject at 1 - ``level``: a null result
    still says how large a difference the seeds leave possible, and whether a paper's lies inside."""
    if len(system) < 2 or len(baseline) < 2:
        return None
    va, vb = statistics.variance(system) / len(system), statistics.variance(baseline) / len(baseline)
    if va + vb == 0:
        return None
    from scipy.stats import t

    df = (va + vb) ** 2 / (va ** 2 / (len(system) - 1) + vb ** 2 / (len(baseline) - 1))  # Welch-Satterthwaite
    half = t.ppf((1 + level) / 2, df) * math.sqrt(va + vb)
    diff = statistics.mean(system) - statistics.mean(baseline)
    return [round(diff - half, 2), round(diff + half, 2)]


def holm(pvalues: dict) -> dict:
    """Holm's step-down adjustment of ``{key: p}`` over all of them: among many tests some p fall below 0.05 by
    chance, and the adjusted p says which differences would stand for the family as a whole."""
    order = sorted(pvalues, key=pvalues.get)
    out, running = {}, 0.0
    for i, key in enumerate(order):
        running = max(running, min(1.0, (len(order) - i) * pvalues[key]))
        out[key] = significant(running)
    return out


def pooled_sd(groups: list[list[float]]) -> tuple[float, int] | None:
    """The seed-to-seed spread pooled over systems (each around its own mean) and its degrees of freedom; None
    without a system of 2 seeds. One system's 3 seeds estimate a spread poorly; several together less so."""
    df = sum(len(g) - 1 for g in groups if len(g) > 1)
    if not df:
        return None
    return math.sqrt(sum(statistics.variance(g) * (len(g) - 1) for g in groups if len(g) > 1) / df), df


def detectable_difference(sd: float, seeds: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference of means a two-sided t-test at ``alpha`` finds with probability ``power`` from
    ``seeds`` seeds a side of spread ``sd`` (equal spreads, the noncentral t): what a budget of seeds can decide."""
    from scipy.optimize import brentq
    from scipy.stats import nct, t

    df, se = 2 * seeds - 2, sd * math.sqrt(2 / seeds)
    crit = t.ppf(1 - alpha / 2, df)

    def short(nc: float) -> float:  # how far the power at noncentrality nc falls short of `power`
        return nct.sf(crit, df, nc) + (nct.cdf(-crit, df, nc) if nc < 5 else 0.0) - power  # far tail: NaN, ~0

    hi = 1.0
    while short(hi) < 0:
        hi *= 2
    return brentq(short, 0.0, hi) * se


def significant(p: float) -> float:
    """p to 3 significant digits: rounding to fixed decimals would store a strong effect as p = 0."""
    return float(f"{p:.3g}")


def format_p(p: float, decimals: int = 4) -> str:
    """Fixed decimals, and below their resolution scientific notation: a strong effect must not read as p = 0."""
    return f"{p:.{decimals}f}" if p >= 10 ** -decimals else f"{p:.1e}"


def signed(x: float, spec: str = "+.2f") -> str:
    """A difference with its sign, but one that rounds to zero without it: -0.004 must not read as a loss."""
    text = f"{x:{spec}}"
    return text[1:] if text[0] in "+-" and not any(c in "123456789" for c in text) else text


def format_seed_test(t: dict | None, diff_format: str = "+.2f") -> str:
    """A table cell for seed_test's result: the difference of the means and Welch's p (– when untested)."""
    if t is None:
        return "–"
    return signed(t["diff"], diff_format) + (f" (p = {format_p(t['welch_p'], 3)})" if t["welch_p"] is not None else "")


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


def paired_bootstrap(metric, a, b, n_boot: int = 1000, seed: int = 12345) -> dict:
    """Two-sided paired bootstrap of ``metric(a) - metric(b)`` over test items (Koehn 2004; Berg-Kirkpatrick et
    al. 2012): both systems are scored on the same resamples of the items, and p is the share of resampled
    differences at least as far from their mean as the observed one is from 0. ``metric(rows, idx)`` scores the
    items ``idx`` (an index array, repeats allowed) of one system's rows."""
    import numpy as np

    n = len(a)
    if n != len(b):
        raise ValueError(f"a paired test needs the same items: {n} against {len(b)}")
    everything = np.arange(n)
    observed = metric(a, everything) - metric(b, everything)
    rng = np.random.default_rng(seed)
    diffs = np.array([metric(a, idx) - metric(b, idx) for idx in rng.integers(0, n, size=(n_boot, n))])
    far = np.abs(diffs - diffs.mean()) >= abs(observed) - 1e-12
    return {"diff": float(observed), "p": float((far.sum() + 1) / (n_boot + 1)), "resamples": n_boot}
