"""CSAR for thresholding: phase schedule, accept/reject decisions, stop after phase K."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.thresholding.csar import CSAR, csar_phase_lengths
from armlab.testing import pull_once, start_policy


def test_schedule_at_t_10000_k_100():
    lengths = csar_phase_lengths(10_000, 100)
    assert sum(1.0 / i for i in range(1, 101)) == pytest.approx(5.18738, abs=1e-5)
    assert lengths[:5].tolist() == [20] * 5
    assert lengths[-3:].tolist() == [637, 955, 1909]
    assert lengths.sum() == 9951


# K = 4, T = 29: log~ = 1 + 1/2 + 1/3 + 1/4 = 2.08333; n~_p = ceil(25 / (2.08333 (5 - p)))
# = 3, 4, 6, 12, i.e. 3, 1, 2, 6 new pulls per undecided arm: 12 + 3 + 4 + 6 = 25 pulls.
REWARDS = [0.1, 0.45, 0.8, 0.58]  # gaps 0.4, 0.05, 0.3, 0.08


def test_small_schedule():
    assert csar_phase_lengths(29, 4).tolist() == [3, 4, 6, 12]


def test_phases_decisions_and_stop(threshold_problem):
    policy = CSAR()
    stats = start_policy(policy, threshold_problem(REWARDS, 29))
    arms = [pull_once(policy, stats, REWARDS.__getitem__) for _ in range(26)]
    # phase 1: round robin x3, reject arm 0 (farthest, below tau)
    # phase 2: arms 1-3 once, accept arm 2; phase 3: arms 1, 3 twice, accept arm 3;
    # phase 4: arm 1 six times, reject it; then stop with 4 of the 29 pulls unused
    assert arms == [0, 1, 2, 3] * 3 + [1, 2, 3] + [1, 3, 1, 3] + [1] * 6 + [STOPPED]
    assert policy.accepted[0].tolist() == [False, False, True, True]
    assert not stats.active.any()
    assert policy.recommend(stats)[0].tolist() == [False, False, True, True]
    assert stats.dispatched[0] == 25


def test_anytime_output_keeps_decisions(threshold_problem):
    policy = CSAR()
    stats = start_policy(policy, threshold_problem(REWARDS, 29))
    for _ in range(13):
        pull_once(policy, stats, REWARDS.__getitem__)
    assert not stats.active[0, 0]  # rejected after phase 1
    stats.means[0, 0] = 0.7  # a decided arm's estimate no longer matters
    stats.means[0, 1] = 0.5  # an undecided one at tau counts as above (>=)
    assert policy.recommend(stats)[0].tolist() == [False, True, True, True]


def test_empty_phases_decide_several_arms_at_once(threshold_problem):
    # K = 100, T = 10000: phases 2-5 add no pulls, so arms 2-5 are decided at t = 2000 too
    policy = CSAR()
    stats = start_policy(policy, threshold_problem([0.4] * 100, 10_000))
    stats.counts[0] = 20
    stats.means[0] = np.linspace(0.0, 0.99, 100)
    stats.observed[0] = stats.dispatched[0] = 1999
    policy.select(stats)
    assert stats.active[0].all()
    stats.observed[0] = stats.dispatched[0] = 2000
    policy.select(stats)
    assert policy.phase[0] == 5
    # farthest from tau first: 0.0, 0.01, 0.02 (below: reject), 0.99, 0.98 (above: accept)
    assert np.flatnonzero(~stats.active[0]).tolist() == [0, 1, 2, 98, 99]
    assert np.flatnonzero(policy.accepted[0]).tolist() == [98, 99]


def test_budget_must_exceed_k(threshold_problem):
    with pytest.raises(ConfigError, match="must exceed 4"):
        start_policy(CSAR(), threshold_problem(REWARDS, 4))


def test_delayed_results_do_not_revise_decisions(simulate_gaussian):
    sim = simulate_gaussian(CSAR, REWARDS, 29, variances=0.01, replicas=3, delay=3)
    assert (sim.stopped_at == 25).all()
    assert (sim.stats[0].pending == 0).all() and (sim.stats[0].counts.sum(axis=1) == 25).all()
    assert sim.policies[0].recommend(sim.stats[0]).tolist() == [[False, False, True, True]] * 3
