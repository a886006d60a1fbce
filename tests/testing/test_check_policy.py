"""``armlab.testing.check_policy`` catches each kind of contract violation it claims to."""

from __future__ import annotations

import numpy as np
import pytest

from armlab import Policy
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform
from armlab.problem import Objective
from armlab.testing import _check_replay, _Recorder, check_policy, run_policy


class RoundRobin(Policy):
    """The arm with the fewest pulls (a correct baseline the broken variants below start from)."""

    name = "test-round-robin"

    def select(self, stats):
        return np.argmin(stats.pulls, axis=1)


class WritesStats(RoundRobin):
    name = "test-writes-stats"

    def update(self, stats, rows, arms, rewards):
        stats.means[rows, arms] = 0.0


class GlobalRandom(RoundRobin):
    name = "test-global-random"

    def select(self, stats):
        return np.random.default_rng().integers(0, stats.n_arms, stats.replicas)


class CountsCalls(RoundRobin):
    name = "test-counts-calls"

    def select(self, stats):
        self.calls = getattr(self, "calls", 0) + 1
        return np.full(stats.replicas, self.calls % stats.n_arms)


class CoupledUnderDelay(RoundRobin):
    """Looks at the pending pulls of *all* replicas: harmless without delay, wrong with it."""

    name = "test-coupled"

    def select(self, stats):
        crowded = stats.pending.sum() > 6
        return np.where(crowded, 0, np.argmin(stats.pulls, axis=1))


def test_a_correct_policy_passes():
    check_policy(RoundRobin)


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (WritesStats, r"test-writes-stats.update changed stats.means"),
        (GlobalRandom, r"the same seed gave different results|not repeatable"),
        (CountsCalls, r"select is not repeatable without new data"),
        (CoupledUnderDelay, r"with delayed feedback, replica 3 of a batch differs"),
    ],
)
def test_violations_are_reported(cls, message):
    with pytest.raises(AssertionError, match=message):
        check_policy(cls)


def _recorded_run(policy: Policy, objective: Objective = Objective.BEST_ARM):
    recorder = _Recorder(policy)
    sim = run_policy(recorder, objective=objective, delay=3, budget=120, check=False)
    recorder.close(sim.stats[0])
    return recorder, sim


def test_replay_reproduces_selections_statistics_and_recommendation():
    recorder, sim = _recorded_run(UCB1())
    kinds = [event[0] for event in recorder.events]
    assert kinds.count("select") == 120 and kinds.count("observe") == 120  # one per step, one per result
    assert sum(event[2].size for event in recorder.events if event[0] == "select") == 6 * 120
    _check_replay(UCB1(), recorder, sim.stats[0])


def test_replay_detects_a_history_that_does_not_match():
    recorder, sim = _recorded_run(UCB1())
    first_result = next(i for i, event in enumerate(recorder.events) if event[0] == "observe")
    _, rows, arms, rewards = recorder.events[first_result]
    recorder.events[first_result] = ("observe", rows, arms, rewards + 5.0)  # a different reward
    with pytest.raises(AssertionError, match="replaying the history into a fresh instance selected"):
        _check_replay(UCB1(), recorder, sim.stats[0])


def test_replay_detects_state_that_is_not_rebuilt():
    recorder, sim = _recorded_run(Uniform())
    with pytest.raises(AssertionError, match="replaying the history into a fresh instance selected"):
        _check_replay(CountsCalls(), recorder, sim.stats[0])
