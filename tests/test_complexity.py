"""Complexity measures against hand-computed test vectors."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.complexity import (
    best_arm_gaps,
    gape_complexity,
    h1,
    h2,
    h_apt,
    h_epsilon,
    h_sigma2,
    midpoint_gaps,
    mth_largest,
    tbp_gaps,
    top_m_gaps,
    variance_complexity,
)

REL = 1e-2
TAU = 0.5
T = 10_000
K = 100

# The thresholding-bandits paper instances: arms 1-10 as listed, arms 11-100 at mean 0.4 and at the midpoint of
# their variance interval.
THRESHOLDING_EXPERIMENTS = {
    1: ([0.20, 0.25, 0.30, 0.35, 0.45, 0.55, 0.65, 0.70, 0.75, 0.80], 0.5, 0.6, 0.40),
    2: ([0.2, 0.36, 0.392, 0.3984, 0.45, 0.55, 0.6016, 0.608, 0.64, 0.8], 0.5, 0.6, 0.40),
    3: ([0.1, 0.1, 0.1, 0.35, 0.45, 0.55, 0.65, 0.9, 0.9, 0.9], 0.5, 0.6, 0.40),
    4: ([0.45] * 5 + [0.55] * 5, 0.5, 0.6, 0.40),
    5: ([0.45] * 5 + [0.55] * 5, 0.3, 0.8, 0.25),
}
# exp: H1, H2, H_APT, H_sigma1 unsquared, H_sigma1 squared, H_sigma2, (T-K)/H1,
#      (T-2K)/H_sigma1 unsquared, (T-2K)/H_sigma1 squared
TABLE = {
    1: (9993.11, 9200.00, 4320.55, 16088.61, 25939.59, 14706.64, 0.991, 0.609, 0.378),
    2: (10289.48, 9200.00, 4438.87, 16597.92, 26808.24, 15141.29, 0.962, 0.590, 0.366),
    3: (9926.39, 9200.00, 4279.63, 15960.55, 25698.04, 14706.64, 0.997, 0.614, 0.381),
    4: (13000.00, 10000.00, 5000.00, 20963.42, 33825.85, 15985.47, 0.762, 0.467, 0.290),
    5: (13000.00, 10000.00, 5000.00, 18920.99, 28076.50, 13850.61, 0.762, 0.518, 0.349),
}


def thresholding_instance(exp: int) -> tuple[np.ndarray, np.ndarray]:
    first, var_low, var_high, var_rest = THRESHOLDING_EXPERIMENTS[exp]
    means = np.array(first + [0.4] * 90)
    variances = np.array([var_low] * 5 + [var_high] * 5 + [var_rest] * 90)
    return means, variances


@pytest.mark.parametrize("exp", sorted(TABLE))
def test_thresholding_table_row(exp):
    means, variances = thresholding_instance(exp)
    gaps = tbp_gaps(means, TAU)
    hs1_plain = variance_complexity(gaps, variances, squared=False)
    hs1_squared = variance_complexity(gaps, variances)
    got = (
        h1(gaps),
        h2(gaps),
        h_apt(means, TAU, 0.05),
        hs1_plain,
        hs1_squared,
        h_sigma2(gaps, variances),
        (T - K) / h1(gaps),
        (T - 2 * K) / hs1_plain,
        (T - 2 * K) / hs1_squared,
    )
    # the ratios are printed with 3 decimals: compare them at that precision
    np.testing.assert_allclose(got[:6], TABLE[exp][:6], rtol=REL)
    np.testing.assert_allclose(got[6:], TABLE[exp][6:], rtol=REL, atol=5e-4)


def test_h2_is_the_max_form_not_the_printed_min():
    gaps = tbp_gaps(thresholding_instance(1)[0], TAU)
    sorted_gaps = np.sort(gaps)
    assert h2(gaps) == pytest.approx(np.max(np.arange(1, K + 1) / sorted_gaps**2))
    assert h2(gaps) > np.min(np.arange(1, K + 1) / sorted_gaps**2)


def test_ugape_vector():
    means = [0.9, 0.8, 0.7, 0.5]
    np.testing.assert_allclose(top_m_gaps(means, 2), [0.2, 0.1, 0.1, 0.3])
    h = h_epsilon(means, 2, 0.05)
    assert h == pytest.approx(452.2086, rel=REL)
    assert (2000 - 4) / (4 * h) == pytest.approx(1.10347, rel=REL)


def heterogeneous_variance_base(k: int = 64) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(1, k + 1)
    means = 1.0 - np.sqrt((i - 1) / k)
    variances = np.where(i % 2 == 0, 0.9 * means**2 + 0.1, 0.1)
    return means, variances


def test_heterogeneous_variance_vectors():
    means, variances = heterogeneous_variance_base()
    np.testing.assert_allclose(means[:4], [1, 0.875, 0.82322, 0.78349], rtol=1e-4)
    np.testing.assert_allclose(variances[:4], [0.1, 0.78906, 0.1, 0.65247], rtol=1e-4)
    gaps = best_arm_gaps(means)
    assert h2(gaps) == pytest.approx(128.0, rel=REL)
    b = np.max(means + np.sqrt(variances * np.log(5000)))
    assert b == pytest.approx(3.4674, rel=REL)
    assert gape_complexity(gaps, b) == pytest.approx(4407.7, rel=REL)
    assert variance_complexity(gaps, variances, b=b) == pytest.approx(3370.8, rel=REL)


def test_gcp_cost_uses_midpoint_gaps():
    returns = np.array([0.6, 0.5, 0.4])
    gaps = midpoint_gaps(returns, 1)
    np.testing.assert_allclose(gaps, [0.05, 0.05, 0.15])
    assert variance_complexity(gaps, returns * (1 - returns)) == pytest.approx(1273.12, rel=REL)


def test_gap_definitions_by_hand():
    means = np.array([0.3, 0.9, 0.5, 0.7])
    np.testing.assert_allclose(best_arm_gaps(means), [0.6, 0.2, 0.4, 0.2])
    np.testing.assert_allclose(top_m_gaps(means, 2), [0.4, 0.4, 0.2, 0.2])
    np.testing.assert_allclose(midpoint_gaps(means, 2), [0.3, 0.3, 0.1, 0.1])
    # midpoint gap = top-m gap minus half the boundary gap, for every arm
    np.testing.assert_allclose(midpoint_gaps(means, 2), top_m_gaps(means, 2) - 0.1)
    np.testing.assert_allclose(tbp_gaps(means, 0.5), [0.2, 0.4, 0.0, 0.2])


def test_vectorized_over_leading_axes():
    rows = [thresholding_instance(e) for e in (1, 4, 5)]
    means = np.stack([m for m, _ in rows]).reshape(3, 1, K)
    variances = np.stack([v for _, v in rows]).reshape(3, 1, K)
    gaps = tbp_gaps(means, TAU)
    assert h1(gaps).shape == (3, 1)
    np.testing.assert_allclose(h1(gaps)[:, 0], [TABLE[e][0] for e in (1, 4, 5)], rtol=REL)
    np.testing.assert_allclose(
        variance_complexity(gaps, variances)[:, 0], [TABLE[e][4] for e in (1, 4, 5)], rtol=REL
    )
    np.testing.assert_allclose(h_sigma2(gaps, variances)[:, 0], [TABLE[e][5] for e in (1, 4, 5)], rtol=REL)
    np.testing.assert_allclose(h2(gaps)[:, 0], [TABLE[e][1] for e in (1, 4, 5)], rtol=REL)
    np.testing.assert_allclose(best_arm_gaps(np.array([[0.1, 0.5], [0.7, 0.2]])), [[0.4, 0.4], [0.5, 0.5]])
    assert h_epsilon(np.tile([0.9, 0.8, 0.7, 0.5], (2, 1)), 2, 0.05).shape == (2,)


@pytest.mark.parametrize(
    "compute",
    [
        lambda: h1(tbp_gaps([0.4, 0.5, 0.6], 0.5)),
        lambda: h2(tbp_gaps([0.4, 0.5, 0.6], 0.5)),
        lambda: h_apt([0.4, 0.5, 0.6], 0.5, 0.0),
        lambda: variance_complexity([0.1, 0.0], [1.0, 1.0]),
        lambda: variance_complexity([0.1, 0.0], [1.0, 1.0], squared=False),
        lambda: h_sigma2([0.1, 0.0], [1.0, 1.0]),
        lambda: gape_complexity(best_arm_gaps([0.5, 0.5, 0.1])),
        lambda: h_epsilon([0.9, 0.7, 0.7, 0.1], 2, 0.0),
    ],
)
def test_zero_gap_raises(compute):
    with pytest.raises(ValueError, match="zero gap"):
        compute()


def test_epsilon_removes_the_zero_gap_problem():
    assert h_apt([0.4, 0.5, 0.6], 0.5, 0.05) == pytest.approx(2 / 0.15**2 + 1 / 0.05**2)
    assert h_epsilon([0.9, 0.7, 0.7, 0.1], 2, 0.1) == pytest.approx(1 / 0.15**2 + 2 / 0.1**2 + 1 / 0.35**2)


@pytest.mark.parametrize("m", [0, 4])
def test_top_m_needs_m_between_1_and_k_minus_1(m):
    with pytest.raises(ValueError, match="1 <= m < K"):
        top_m_gaps([0.1, 0.2, 0.3, 0.4], m)


@pytest.mark.parametrize("m", [1, 2, 6])
def test_mth_largest_are_the_order_statistics(m):
    rng = np.random.default_rng(m)
    values = np.round(rng.normal(size=(300, 7)), 1)  # rounding makes ties, also at the boundary
    mth, next_one = mth_largest(values, m)
    descending = -np.sort(-values, axis=1)
    np.testing.assert_array_equal(mth[:, 0], descending[:, m - 1])
    np.testing.assert_array_equal(next_one[:, 0], descending[:, m])
    assert mth.shape == next_one.shape == (300, 1)


@pytest.mark.parametrize("m", [0, 7])
def test_mth_largest_needs_m_between_1_and_k_minus_1(m):
    with pytest.raises(ValueError, match="1 <= m < K = 7"):
        mth_largest(np.zeros((2, 7)), m)
