"""UGapE under delayed feedback gives exactly the sorted definitions.

With delays the replicas observe different numbers of results (UGapEc's widths then differ
per replica, not only per count) and only some replicas are evaluated at a step, so the
buffers and kept sets are exercised on subsets of the replicas.
"""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.fixed_confidence.ugape import UGapEb, UGapEc, gap_indices, select_arm
from armlab.plugins.interfaces import STOPPED
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

R, K = 30, 9
CHANCE = np.linspace(0.05, 0.95, K)  # of reward 1, per arm
EPSILON = 0.3


def widths(policy, stats, rows):
    """beta of replicas ``rows`` (every arm observed), from the definitions."""
    if isinstance(policy, UGapEb):
        return policy.span * np.sqrt(policy.a[rows, None] / stats.counts[rows])
    log_term = np.log(4.0 * K * stats.observed[rows].astype(np.float64) ** 3 / policy.delta)
    return policy.span * np.sqrt(policy.params.c * log_term[:, None] / stats.counts[rows])


def expected_arms(policy, stats, rows):
    """The arms (or STOPPED) of replicas ``rows`` by the sorted definitions."""
    beta = widths(policy, stats, rows)
    upper, lower, _, chosen, b_set = gap_indices(stats.means[rows], beta, policy.top_m)
    arms = select_arm(upper, lower, beta, chosen)
    return np.where(b_set < EPSILON, STOPPED, arms) if isinstance(policy, UGapEc) else arms


@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("cls", [UGapEb, UGapEc])
def test_choices_under_delays_equal_the_sorted_definition(cls, m):
    rng = np.random.default_rng(10 + m)
    policy = cls({"a": 0.5} if cls is UGapEb else {"c": 0.05})
    problem = Problem(objective=Objective.TOP_M, budget=5000, n_arms=K, top_m=m, epsilon=EPSILON,
                      delta=0.1, source="test", reward_range=(0.0, 1.0))
    policy.reset(problem, R, KeyedRandom(0, "policy", replicas=np.arange(R)))
    stats = ArmStats(R, K)
    in_flight = []  # (due step, rows, arms, rewards), rows unique within an entry
    out_of_step = 0
    for step in range(400):
        stopped = getattr(policy, "confident", np.zeros(R, dtype=bool)).copy()
        ready = np.flatnonzero(~stopped & (stats.counts > 0).all(axis=1))
        out_of_step += np.unique(stats.observed[ready]).size > 1
        arms = policy.select(stats)
        if ready.size:
            assert np.array_equal(arms[ready], expected_arms(policy, stats, ready))
        rows = np.flatnonzero(arms != STOPPED)
        stats.dispatch(rows, arms[rows])
        rewards = (rng.random(rows.size) < CHANCE[arms[rows]]).astype(float)
        due = step + rng.integers(0, 4, rows.size)
        in_flight += [(d, rows[due == d], arms[rows][due == d], rewards[due == d]) for d in np.unique(due)]
        for entry in [e for e in in_flight if e[0] == step]:
            _, got_rows, got_arms, got_rewards = entry
            stats.observe(got_rows, got_arms, got_rewards)
            policy.update(stats, got_rows, got_arms, got_rewards)
        in_flight = [e for e in in_flight if e[0] > step]
    assert out_of_step > 50  # the evaluated replicas were often out of step
