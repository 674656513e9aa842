"""The statistics of the summaries (examples/studies/seed_statistics.py), each worked by hand or against scipy."""
import math

import pytest

from examples.studies.seed_statistics import detectable_difference, format_p, holm, pooled_sd, seed_test, welch_interval


def test_holm_steps_down_and_never_lets_a_larger_p_fall_below_a_smaller_ones():
    """Sorted 0.01, 0.03, 0.04 of three: 3 x 0.01, 2 x 0.03, then 1 x 0.04 raised to the 0.06 before it."""
    assert holm({"a": 0.04, "b": 0.01, "c": 0.03}) == {"b": 0.03, "c": 0.06, "a": 0.06}
    assert holm({"a": 0.5, "b": 0.6}) == {"a": 1.0, "b": 1.0} and holm({}) == {}
    assert holm({"a": 0.02}) == {"a": 0.02}


def test_detectable_difference_matches_the_power_tables():
    """Cohen's d found with 80% power at two-sided 0.05 (G*Power, two-sample t): 2.024 at 5 a side, 0.909 at 20;
    it scales with the spread. The pooled spread weighs each system by its seeds less one."""
    assert detectable_difference(1.0, 5) == pytest.approx(2.0244, abs=1e-3)
    assert detectable_difference(1.0, 20) == pytest.approx(0.9091, abs=1e-3)
    assert detectable_difference(0.25, 5) == pytest.approx(0.25 * 2.0244, abs=1e-3)
    assert pooled_sd([[1, 2, 3], [4, 6], [7]]) == (pytest.approx(math.sqrt(4 / 3)), 3)
    assert pooled_sd([[1], [2]]) is None


def test_seed_test_is_welchs_t_test_worked_by_hand():
    # means 2 and 5, variances 1 and 1: t = -3 / sqrt(1/3 + 1/3) = -3.674 on 4 degrees of freedom, where the
    # two-sided p is 1 - 1.5 u + 0.5 u^3 with u = |t| / sqrt(t^2 + 4)
    u = 3 / (2 / 3) ** 0.5 / (9 / (2 / 3) + 4) ** 0.5
    assert seed_test([1, 2, 3], [4, 5, 6]) == {"diff": -3.0, "welch_p": float(f"{1 - 1.5 * u + 0.5 * u ** 3:.3g}"),
                                               "n": [3, 3]}
    assert seed_test([1, 2, 3], [4, 5, 6])["welch_p"] == 0.0213
    # a strong effect: 1 - 1.5 u + 0.5 u^3 = (1 - u)^2 (u + 2) / 2, and 1 - u = 4 / (s (s + t)) with s = sqrt(t^2 + 4)
    # keeps the cancellation out; t = 40 / sqrt(2 * 0.01 / 3) = 489.9 gives p = 1.04e-10, which 4 decimals stored as 0
    t = 40 / (2 * 0.01 / 3) ** 0.5
    s = (t * t + 4) ** 0.5
    one_minus_u = 4 / (s * (s + t))
    strong = seed_test([50.0, 50.1, 50.2], [10.0, 10.1, 10.2])
    assert strong["welch_p"] == float(f"{one_minus_u ** 2 * (3 - one_minus_u) / 2:.3g}") == 1.04e-10
    assert format_p(strong["welch_p"], 3) == "1.0e-10" and format_p(0.0213, 3) == "0.021"
    assert seed_test([38.0], [37.0, 38.0]) is None  # one seed has no spread to test against
    assert seed_test([38.0, 38.0], [37.0, 37.0]) == {"diff": 1.0, "welch_p": None, "n": [2, 2]}  # no variance at all
    # the interval: -3 -+ t(0.975, 4 df) sqrt(2/3) = -3 -+ 2.7764 * 0.8165, the t quantile from the tables
    assert welch_interval([1, 2, 3], [4, 5, 6]) == [-5.27, -0.73]
    assert welch_interval([38.0], [37.0, 38.0]) is None and welch_interval([38.0, 38.0], [37.0, 37.0]) is None


def test_mcnemar_p_is_exact_and_never_printed_as_zero():
    """Hand-worked: 0 against 5 discordant pairs is 2 * (1/2)^5; 418 against 243 (the converged seed-1 pair) is
    about 1e-11, which four decimals would print as 0.0000."""
    from examples.studies.seed_statistics import mcnemar_exact

    assert mcnemar_exact(0, 5) == 2 / 32 and mcnemar_exact(5, 0) == 2 / 32
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(1, 3) == 2 * (1 + 4) / 16
    p = mcnemar_exact(418, 243)
    assert 0 < p < 1e-10
    assert format_p(0.0007) == "0.0007" and format_p(0.0625) == "0.0625"
    assert format_p(p) == "1.0e-11"


def test_matthews_and_the_paired_bootstrap():
    """MCC as scikit-learn computes it (binary and 3 classes); the paired bootstrap finds a system right on 30
    more of 200 items apart from one right on the same items, and two identical systems not."""
    import numpy as np
    from sklearn.metrics import matthews_corrcoef

    from fairseq_syntax.metrics import matthews
    from examples.studies.seed_statistics import paired_bootstrap

    rng = np.random.default_rng(0)
    for k in (2, 3):
        gold, pred = rng.integers(0, k, 300), rng.integers(0, k, 300)
        pred[:150] = gold[:150]
        assert matthews(gold, pred) == pytest.approx(100 * matthews_corrcoef(gold, pred))
    assert matthews([1, 1, 1], [1, 1, 1]) == 0.0
    gold = rng.integers(0, 2, 200)
    a, b = gold.copy(), gold.copy()
    b[:60] = 1 - b[:60]  # b wrong on 60 items, a on none
    a[60:90] = 1 - a[60:90]  # a wrong on 30 others
    acc = lambda rows, idx: float((rows[idx] == gold[idx]).mean())  # noqa: E731
    t = paired_bootstrap(acc, a, b, n_boot=500)
    assert t["diff"] == pytest.approx(0.15) and t["p"] < 0.01
    assert paired_bootstrap(acc, a, a.copy(), n_boot=200)["p"] == 1.0
