"""The heterogeneous-variance paper's synthetic Gaussian bandit: the base instance (its reference vector), per-run perturbation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.complexity import best_arm_gaps, gape_complexity, h2, variance_complexity
from armlab.plugins.fixed_budget.gape_index import gaussian_range_bound
from armlab.plugins.sources.heterogeneous_gaussian import HeterogeneousVarianceGaussian, heterogeneous_variance_base


def truth(replicas=np.arange(4), seed=0, **params):
    source = HeterogeneousVarianceGaussian({"n_arms": 64, **params})
    source.reset(np.asarray(replicas), seed)
    return source, source.truth


def test_base_instance_matches_hand_computed_values():
    means, variances = heterogeneous_variance_base(64)
    np.testing.assert_allclose(means[:4], [1, 0.875, 0.82322, 0.78349], atol=1e-5)
    np.testing.assert_allclose(variances[:4], [0.1, 0.78906, 0.1, 0.65247], atol=1e-5)
    assert variances.sum() == pytest.approx(11.182, abs=1e-3)
    gaps = best_arm_gaps(means)
    assert h2(gaps) == pytest.approx(128)  # = 2K
    b = gaussian_range_bound(means, variances, 5000)
    assert b == pytest.approx(3.4674, rel=1e-4)
    assert gape_complexity(gaps, b) == pytest.approx(4407.7, rel=1e-4)
    assert variance_complexity(gaps, variances, squared=True, b=b) == pytest.approx(3370.8, rel=1e-4)


def test_odd_parity_gives_the_best_arm_the_high_variance():
    _, variances = heterogeneous_variance_base(6, "odd")
    means, _ = heterogeneous_variance_base(6)
    np.testing.assert_allclose(variances, np.where(np.arange(6) % 2 == 0, 0.9 * means**2 + 0.1, 0.1))
    assert variances[0] == pytest.approx(1.0)


def test_perturbation_is_redrawn_per_run_and_keyed_by_replica():
    _, batch = truth(np.arange(6), seed=5)
    _, alone = truth([3], seed=5)
    np.testing.assert_array_equal(batch.means[3], alone.means[0])
    np.testing.assert_array_equal(batch.variances[3], alone.variances[0])
    assert not np.allclose(batch.means[0], batch.means[1])
    _, other_seed = truth([3], seed=6)
    assert not np.allclose(other_seed.means[0], alone.means[0])


def test_perturbation_has_the_papers_distribution():
    replicas = 2000
    _, t = truth(np.arange(replicas), seed=1)
    means, variances = heterogeneous_variance_base(64)
    noise = (t.means - means).ravel()
    factor = (t.variances / variances).ravel()
    n = noise.size
    assert abs(noise.mean()) < 4 * 0.05 / math.sqrt(n)
    assert noise.std() == pytest.approx(0.05, rel=4 * math.sqrt(0.5 / n) + 1e-3)
    assert factor.min() >= 0.5 and factor.max() <= 1.5
    assert factor.mean() == pytest.approx(1.0, abs=4 * math.sqrt(1 / 12 / n))
    # each replica's best arm is the argmax of its perturbed means: mostly arm 1, not always
    best = t.means.argmax(axis=1)
    assert 0.85 < (best == 0).mean() < 1.0


def test_once_shares_one_instance_and_none_is_the_base():
    _, once = truth(np.arange(3), perturbation="once")
    np.testing.assert_array_equal(once.means[0], once.means[2])
    assert not np.allclose(once.means[0], heterogeneous_variance_base(64)[0])
    _, none = truth(np.arange(3), perturbation="none")
    np.testing.assert_array_equal(none.variances[1], heterogeneous_variance_base(64)[1])


def test_rewards_are_gaussian_with_the_true_moments():
    source, t = truth([0, 1])
    pulls = np.arange(20000)
    for row, arm in [(0, 0), (1, 1)]:
        x = source.sample(np.full(pulls.size, row), np.full(pulls.size, arm), pulls)
        sd = math.sqrt(t.variances[row, arm])
        assert x.mean() == pytest.approx(t.means[row, arm], abs=4 * sd / math.sqrt(pulls.size))
        assert x.var() == pytest.approx(t.variances[row, arm], rel=4 * math.sqrt(2 / pulls.size))


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="variance_factor"):
        HeterogeneousVarianceGaussian({"n_arms": 8, "variance_factor": [1.5, 0.5]})
    with pytest.raises(ValueError, match="n_arms"):
        HeterogeneousVarianceGaussian({"n_arms": 1})
