"""The greedy-confidence-pursuit paper's eq. (3) bound, the Beta posterior inputs and completion times (sheet vectors)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from armlab.plugins.gcp.confidence import (
    CompletionClock,
    beta_posterior,
    completion_time,
    confidence_lower_bound,
    threshold_confidence_lower_bound,
)


def test_sheet_vector_eq3():
    # r = (0.6, 0.5, 0.4), t = 100 each, m = 1: gap location 0.55, z = (1.02062, 1.0, 3.06186)
    rho = confidence_lower_bound([0.6, 0.5, 0.4], [100, 100, 100], top_m=1)
    assert rho == pytest.approx(0.686528, abs=1e-6)
    z = np.array([1.02062, 1.0, 3.06186])
    assert rho == pytest.approx(1 - sps.norm.sf(z).sum(), abs=1e-5)


def test_vectorized_over_leading_axes_and_top_m():
    means = np.array([[[0.6, 0.5, 0.4], [0.9, 0.2, 0.1]], [[0.3, 0.35, 0.8], [0.5, 0.5, 0.5]]])
    trials = np.full(means.shape, 50)
    rho = confidence_lower_bound(means, trials, top_m=2)
    assert rho.shape == (2, 2)
    for idx in np.ndindex(2, 2):
        assert rho[idx] == confidence_lower_bound(means[idx], trials[idx], top_m=2)
    # top-2 of (0.6, 0.5, 0.4): location 0.45, gaps (0.15, 0.05, 0.05)
    sds = np.sqrt(means[0, 0] * (1 - means[0, 0]))
    expected = 1 - sps.norm.sf(np.sqrt(50) * np.array([0.15, 0.05, 0.05]) / sds).sum()
    assert rho[0, 0] == pytest.approx(max(expected, 0.0))


def test_bound_is_clipped_at_zero_and_explicit_sds_are_used():
    assert confidence_lower_bound([0.5, 0.5, 0.5, 0.5], [10] * 4, top_m=1) == 0.0
    rho = confidence_lower_bound([0.6, 0.5, 0.4], [100] * 3, top_m=1, posterior_sds=[0.1, 0.1, 0.1])
    assert rho == pytest.approx(1 - sps.norm.sf([5.0, 5.0, 15.0]).sum())


def test_zero_sd_arms_are_certain_only_with_data_and_a_gap():
    # no trials: z = 0 -> tail 1/2 each, never NaN
    rho = confidence_lower_bound([0.0, 1.0, 1.0], [0, 0, 0], top_m=1)
    assert rho == 0.0 and np.isfinite(rho)
    # r in {0, 1} with trials: sd 0 and non-zero gaps -> tails 0; the tied pair at the
    # boundary (gap 0) keeps tail 1/2 each
    assert confidence_lower_bound([1.0, 0.0], [5, 5], top_m=1) == 1.0
    assert confidence_lower_bound([1.0, 1.0, 0.0], [5, 5, 5], top_m=1) == 0.0


def test_invalid_top_m():
    with pytest.raises(ValueError, match="m = 3"):
        confidence_lower_bound([0.6, 0.5, 0.4], [1, 1, 1], top_m=3)


def test_threshold_variant():
    rho = threshold_confidence_lower_bound([0.7, 0.4], [25, 25], threshold=0.5)
    sds = np.sqrt(np.array([0.21, 0.24]))
    assert rho == pytest.approx(1 - sps.norm.sf(5 * np.array([0.2, 0.1]) / sds).sum())


def test_beta_posterior_counts_real_trials():
    means, trials = beta_posterior([3, 0, 2.5], [1, 0, 0.5])
    assert means == pytest.approx([4 / 6, 0.5, 3.5 / 5])
    assert trials.tolist() == [4, 0, 3]
    means, _ = beta_posterior(3, 1, prior=2.0)
    assert means == pytest.approx(5 / 8)


def test_completion_time_hold_and_never():
    hi, lo = 0.99, 0.5
    path = np.array(
        [
            [hi] * 10,  # held from the first trial: t = hold + 1
            [lo, hi, hi, hi, lo, hi, hi, hi, hi, hi],  # restart after the dip at trial 5
            [lo] * 10,  # never: the horizon
            [hi, hi, hi, lo, hi, hi, hi, hi, lo, lo],
        ]
    )
    assert completion_time(path, level=0.98, hold=3).tolist() == [4, 9, 10, 8]
    assert completion_time(path, level=0.98, hold=0).tolist() == [1, 2, 10, 1]
    # level is inclusive (>=)
    assert completion_time(np.full((1, 5), 0.98), level=0.98, hold=2).tolist() == [3]


def test_clock_tells_never_apart_from_the_horizon():
    clock = CompletionClock(3, level=0.9, hold=1)
    for t, rho in enumerate([[1, 0, 1], [1, 1, 0], [0, 1, 0]], start=1):
        clock.record(np.array(rho, dtype=float), t)
    assert clock.completed.tolist() == [True, True, False]
    assert clock.times(3).tolist() == [2, 3, 3]
    # recording a subset of rows leaves the others untouched
    clock.record(np.array([1.0]), 4, rows=np.array([2]))
    assert clock.run.tolist() == [0, 2, 1]
