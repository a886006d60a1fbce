"""The greedy-confidence-pursuit paper's multi-bandit instances (source ``gap-bernoulli``)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from armlab.plugins.gcp.gap_source import GapBernoulli


def instance(replicas=200, bandit=0, seed=1, **params):
    source = GapBernoulli(params)
    source.reset(np.arange(replicas), seed, bandit)
    return source.truth.means


def test_best_arm_leads_a_runner_up_at_one_half():
    means = instance(gap=0.07, best_arm=3)
    assert means.shape == (200, 10)
    assert np.allclose(means[:, 3], 0.57)
    others = np.delete(means, 3, axis=1)
    assert np.allclose(others.max(axis=1), 0.5) and (others >= 0).all()
    # the other returns are uniform on [0, 0.5] shifted up by 0.5 - max: spread over [0, 0.5]
    assert others.min() < 0.1


def test_gap_drawn_per_replica_when_not_fixed():
    means = instance(gap_min=0.01, gap_max=0.1, replicas=2000)
    gaps = means[:, 0] - 0.5
    assert gaps.min() >= 0.01 and gaps.max() <= 0.1
    assert gaps.mean() == pytest.approx(0.055, abs=0.003)


def test_instances_are_keyed_by_replica_bandit_and_seed():
    base = instance(gap=0.05, replicas=5)
    assert np.array_equal(base, instance(gap=0.05, replicas=5))
    assert np.array_equal(base[3], instance(gap=0.05, replicas=5)[3])
    assert not np.array_equal(base, instance(gap=0.05, replicas=5, bandit=1))
    assert not np.array_equal(base, instance(gap=0.05, replicas=5, seed=2))
    source = GapBernoulli({"gap": 0.05})
    source.reset(np.arange(5), 1, 0)
    rewards = source.sample(np.arange(5), np.zeros(5, dtype=np.int64), np.zeros(5, dtype=np.int64))
    assert set(rewards.tolist()) <= {0.0, 1.0}


@pytest.mark.parametrize(("params", "message"), [
    ({"best_arm": 10}, "best_arm = 10 must be below n_arms = 10"),
    ({"gap_min": 0.2, "gap_max": 0.1}, "gap_max = 0.1 is below gap_min = 0.2"),
    ({"gap": 0.6}, "less than or equal to 0.5"),
])
def test_bad_parameters_are_refused(params, message):
    with pytest.raises(ValidationError, match=message):
        GapBernoulli(params)
