"""The thresholding output rule shared by all the thresholding policies."""

from __future__ import annotations

import pytest

from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.thresholding import APT, CSAR, UCBE, UCBEV, AugUCB
from armlab.testing import start_policy


@pytest.mark.parametrize("policy", [AugUCB(), APT(), UCBE({"a": 1.0}), UCBEV({"a": 1.0}),
                                    Uniform({"order": "random"})], ids=lambda p: p.name)
def test_rule_is_n_at_least_one_and_mean_at_least_tau_over_all_arms(threshold_problem, policy):
    stats = start_policy(policy, threshold_problem([0.4] * 6, 100))
    stats.counts[0] = [3, 0, 2, 5, 1, 4]
    stats.means[0] = [0.5, 0.0, 0.49, 0.9, 0.51, 0.7]
    stats.active[0, 3] = False  # eliminated
    answer = policy.recommend(stats)
    assert answer.dtype == bool and answer.shape == (1, 6)
    # >= (not >); unpulled arm 1 never qualifies; the eliminated arm 3 keeps its estimate
    assert answer[0].tolist() == [True, False, False, True, True, True]


def test_csar_is_the_same_rule_plus_its_decisions(threshold_problem):
    policy = CSAR()
    stats = start_policy(policy, threshold_problem([0.4] * 4, 100))
    stats.counts[0] = [3, 0, 2, 5]
    stats.means[0] = [0.5, 0.0, 0.49, 0.9]
    assert policy.recommend(stats)[0].tolist() == [True, False, False, True]
    stats.active[0, 3] = False  # decided without an acceptance: rejected
    assert policy.recommend(stats)[0].tolist() == [True, False, False, False]
