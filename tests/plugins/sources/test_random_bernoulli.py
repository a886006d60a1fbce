"""The greedy-confidence-pursuit paper's random Bernoulli bandit generator."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from armlab.errors import ConfigError
from armlab.plugins.sources import random_bernoulli
from armlab.plugins.sources.random_bernoulli import RandomBernoulli

REPLICAS = np.arange(40)


def truth(params, replicas=REPLICAS, seed=7):
    source = RandomBernoulli(params)
    source.reset(replicas, seed)
    return source, source.truth.means


@pytest.mark.parametrize("m", [1, 3])
def test_instances_follow_the_paper(m):
    _, means = truth({"n_arms": 10, "m": m})
    assert means.shape == (40, 10)
    assert ((means >= 0.1) & (means <= 0.9)).all()
    assert (np.diff(means, axis=1) <= 0).all()  # descending: arm 1 best
    gaps = means[:, m - 1] - means[:, m]
    assert ((gaps >= 0.05) & (gaps <= 0.15)).all()
    assert len({tuple(row) for row in means.round(12)}) == 40  # one instance per replica


def test_pre_scale_check_reproduces_the_code():
    _, means = truth({"n_arms": 8, "gap_check": "pre_scale"})
    gaps = means[:, 0] - means[:, 1]
    assert ((gaps >= 0.8 * 0.05 - 1e-12) & (gaps <= 0.8 * 0.15 + 1e-12)).all()
    assert gaps.min() < 0.05  # some realised gaps fall below the paper's window


def test_deterministic_and_replica_independent():
    _, batch = truth({"n_arms": 6})
    _, again = truth({"n_arms": 6})
    _, alone = truth({"n_arms": 6}, replicas=np.array([3]))
    assert np.array_equal(batch, again)
    assert np.array_equal(batch[3], alone[0])
    _, other_seed = truth({"n_arms": 6}, seed=8)
    assert not np.array_equal(batch, other_seed)


def test_shuffled_order_permutes_each_instance():
    _, sorted_means = truth({"n_arms": 6})
    _, shuffled = truth({"n_arms": 6, "order": "shuffled"})
    assert np.allclose(np.sort(shuffled, axis=1), np.sort(sorted_means, axis=1))
    assert (np.argmax(shuffled, axis=1) != 0).any()


def test_rewards_are_bernoulli_with_the_instance_means():
    source, means = truth({"n_arms": 4}, replicas=np.arange(2))
    rows = np.repeat([0, 1], 4000)
    arms = np.zeros(rows.size, dtype=np.int64)
    pulls = np.tile(np.arange(4000), 2)
    rewards = source.sample(rows, arms, pulls)
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    for r in (0, 1):
        assert rewards[rows == r].mean() == pytest.approx(means[r, 0], abs=4 * 0.5 / np.sqrt(4000))
    assert source.truth.variances == pytest.approx(means * (1 - means))


def test_parameter_errors(monkeypatch):
    with pytest.raises(ValidationError, match="m = 4 must be smaller than n_arms = 4"):
        RandomBernoulli({"n_arms": 4, "m": 4})
    with pytest.raises(ValidationError, match="gap_max = 0.01 is below gap_min"):
        RandomBernoulli({"n_arms": 4, "gap_max": 0.01})
    with pytest.raises(ValidationError, match="high = 0.1 must exceed low"):
        RandomBernoulli({"n_arms": 4, "high": 0.1})
    monkeypatch.setattr(random_bernoulli, "MAX_ATTEMPTS", 20)
    with pytest.raises(ConfigError, match="within 20 attempts; widen the gap window"):
        truth({"n_arms": 50, "gap_min": 0.7, "gap_max": 0.8})
