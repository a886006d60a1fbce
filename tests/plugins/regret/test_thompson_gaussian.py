"""The Gaussian-prior variant of the ``thompson`` plugin; Beta stays the default."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.policies.thompson import Thompson
from armlab.random import KeyedRandom


def test_beta_is_the_default_and_refuses_unbounded_rewards(hand):
    assert Thompson().params.prior == "beta"
    with pytest.raises(ConfigError, match=r'needs rewards in \[0, 1\].*prior = "gaussian"'):
        hand(Thompson(), 3)


def test_gaussian_posterior_by_hand(hand):
    h = hand(Thompson({"prior": "gaussian"}), 3)
    for arm, reward in [(0, 1.5), (0, -0.5), (2, 2.0)]:
        h.feed(arm, reward)
    # N(S / (k + 1), 1 / (k + 1)): arm 0 S = 1, k = 2; arm 1 prior N(0, 1); arm 2 S = 2, k = 1
    assert h.policy.posterior_mean(h.stats)[0] == pytest.approx([1 / 3, 0.0, 1.0])
    assert h.policy.posterior_sd(h.stats)[0] == pytest.approx([1 / np.sqrt(3), 1.0, 1 / np.sqrt(2)])


def test_gaussian_draws_are_keyed_by_replica_and_decision(hand):
    h = hand(Thompson({"prior": "gaussian"}), 5, replicas=7)
    for arm in range(5):
        h.feed(arm, np.linspace(-1, 1, 7))
    z = KeyedRandom(0, "policy", replicas=np.arange(7)).normal(5, 5)
    theta = h.policy.posterior_mean(h.stats) + h.policy.posterior_sd(h.stats) * z
    assert np.array_equal(h.select(), np.argmax(theta, axis=1))
    assert np.array_equal(h.select(), h.select())  # repeatable without new data


def test_gaussian_variant_needs_no_forced_pulls(hand):
    h = hand(Thompson({"prior": "gaussian"}), 4, budget=2)
    arms = [int(h.step(lambda a: np.full(a.shape, 3.0))[0]) for _ in range(2)]
    assert arms[1] == arms[0]  # a reward of 3 puts that arm's posterior far above N(0, 1)
