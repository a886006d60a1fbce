"""UCB-Improved, Median Elimination and DMED: schedules, eliminations and lists."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins._fast import reference_paths
from armlab.plugins.regret import DMED, MedianElimination, UCBImproved
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective
from armlab.testing import simulate_policy

UNIT = (0.0, 1.0)
EXP2_MEANS = [0.7] * 33 + [0.8] * 66 + [0.9]
EXP2_VARIANCES = [0.7] * 33 + [0.1] * 66 + [0.7]


def deterministic(values):
    values = np.asarray(values, dtype=np.float64)
    return lambda arms: values[arms]


# -- UCB-Improved ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("horizon", "expected"),
    [(300_000, [26, 90, 315, 1082, 3618, 11633]), (60_000, [23, 77, 264, 876, 2794])],
)
def test_ucb_improved_round_targets(hand, horizon, expected):
    policy = hand(UCBImproved(), 100, budget=horizon).policy
    assert policy.targets[: len(expected)].tolist() == expected
    assert policy.last == math.floor(0.5 * math.log2(horizon / math.e))


def test_ucb_improved_round_robin_and_round_ends_without_eliminations(hand):
    h = hand(UCBImproved(), 100, budget=300_000)
    ends, m = [], 0
    first = []
    for _ in range(2_700):
        arms = h.select()
        if h.policy.round[0] != m:
            ends.append(int(h.stats.dispatched[0]))
            m = int(h.policy.round[0])
        first.append(int(arms[0]))
        h.feed(arms, 0.5)
    assert ends == [2_600]  # K n_0
    assert first[:250] == list(range(100)) * 2 + list(range(50))
    assert first[2_600:] == list(range(100))  # round 1 tops the arms up in the same order
    for target, end in zip(h.policy.targets[1:5], [9_000, 31_500, 108_200, 361_800], strict=True):
        assert 100 * target == end  # no-elimination round ends K n_m
        h.stats.counts[:] = target  # fast-forward: every arm reached n_m (results the policy is not told of)
        with reference_paths():  # so the round's end is read from the counts
            h.select()
    assert h.policy.round[0] == 5 and h.stats.active.all()


def test_ucb_improved_eliminations_by_hand(hand):
    """K = 3, T = 100: n_0 = ceil(2 log 100) = 10, w_0 = sqrt(log 100 / 20) = 0.480 removes the
    arm paying 0 (0.48 < 1 - 0.48); n_1 = ceil(8 log 25) = 26, w_1 = sqrt(log 25 / 52) = 0.2487
    removes the arm paying 0.5 (0.7487 < 0.7513) at t = 30 + 2 * 16 = 62."""
    h = hand(UCBImproved(), 3, budget=100)
    rewards = deterministic([1.0, 0.5, 0.0])
    for _ in range(30):
        h.step(rewards)
    h.select()
    assert h.stats.active[0].tolist() == [True, True, False]
    for _ in range(32):
        h.step(rewards)
    h.select()
    assert h.stats.active[0].tolist() == [True, False, False]
    assert h.stats.counts[0].tolist() == [26, 26, 10]
    assert {int(h.step(rewards)[0]) for _ in range(20)} == {0}


def test_ucb_improved_pulls_the_empirical_best_after_the_last_round(hand):
    """K = 2, T = 43: M = 1, n_0 = 8, n_1 = 19; both rounds end at t = 38 without eliminating
    (gap 0.1 < 2 w_1 = 0.5), then the empirical best is pulled."""
    h = hand(UCBImproved(), 2, budget=43)
    rewards = deterministic([0.6, 0.5])
    arms = [int(h.step(rewards)[0]) for _ in range(43)]
    assert h.policy.targets.tolist() == [8, 19]
    assert h.stats.active.all()
    assert arms[38:] == [0] * 5 and h.stats.counts[0].tolist() == [24, 19]


# -- Median Elimination ---------------------------------------------------------------------
def test_median_elimination_round_sizes(hand):
    assert hand(MedianElimination(), 100).policy.round_sizes[:3].tolist() == [26_204, 54_472, 110_858]
    author = hand(MedianElimination({"square": False}), 100).policy
    assert author.round_sizes[:4].tolist() == [328, 511, 780, 1171]
    assert author.round_sizes.size == 7  # ceil(log2 100) halvings leave one arm


def test_median_elimination_halves_and_then_keeps_the_survivor(hand):
    h = hand(MedianElimination({"square": False}), 4)
    rewards = deterministic([0.1, 0.9, 0.5, 0.7])
    first = [int(h.step(rewards)[0]) for _ in range(8)]
    assert first == [0, 1, 2, 3] * 2  # round robin
    for _ in range(4 * 328 - 8):
        h.step(rewards)
    h.select()
    assert h.stats.active[0].tolist() == [False, True, False, True]
    for _ in range(2 * 511):
        h.step(rewards)
    assert {int(h.step(rewards)[0]) for _ in range(30)} == {1}
    assert h.stats.active[0].tolist() == [False, True, False, False]


@pytest.mark.parametrize(("estimates", "survivor"), [("fresh", 1), ("cumulative", 0)])
def test_median_elimination_fresh_or_cumulative_estimates(hand, estimates, survivor):
    """Round 1 pays 1.0 / 0.8 / 0 / 0; round 2 pays 0.0 / 0.1 to the survivors 0 and 1.
    Fresh round-2 means prefer arm 1; cumulative means (328 + 0) / 839 = 0.39 against
    (0.8 * 328 + 0.1 * 511) / 839 = 0.37 prefer arm 0."""
    h = hand(MedianElimination({"square": False, "estimates": estimates}), 4)
    for _ in range(4 * 328):
        h.step(deterministic([1.0, 0.8, 0.0, 0.0]))
    for _ in range(2 * 511):
        h.step(deterministic([0.0, 0.1, 0.0, 0.0]))
    h.select()
    assert np.flatnonzero(h.stats.active[0]).tolist() == [survivor]


def test_median_elimination_ties_are_broken_at_random(hand):
    h = hand(MedianElimination({"square": False}), 4, replicas=40)
    for _ in range(4 * 328):
        h.step(deterministic([0.5, 0.5, 0.5, 0.5]))
    h.select()
    active = h.stats.active
    assert (active.sum(axis=1) == 2).all()
    assert len({tuple(row) for row in active.tolist()}) > 3


def test_median_elimination_never_leaves_round_one_in_experiment_2():
    """Round 1 needs 26204 pulls per arm: at any T below that, round robin over the 100 arms
    gives regret T * mean gap = T * 0.132 exactly (39,600 at T = 3e5)."""
    sim = simulate_policy(MedianElimination, Gaussian({"means": EXP2_MEANS, "variances": EXP2_VARIANCES}), budget=2_000,
                          objective=Objective.REGRET, replicas=3)
    assert sim.regret == pytest.approx(np.full(3, 2_000 * 0.132), abs=1e-9)


# -- DMED ------------------------------------------------------------------------------------
def test_dmed_first_list_by_hand(hand):
    """After one pull each (rewards 1, 0, 1), n = 4: arms with N kl(mean, 1) < log 4 are 0 and 2."""
    h = hand(DMED(), 3, reward_range=UNIT)
    rewards = deterministic([1.0, 0.0, 1.0])
    assert [int(h.step(rewards)[0]) for _ in range(3)] == [0, 1, 2]
    assert int(h.select()[0]) == 0
    assert h.policy.waiting(h.stats)[0].tolist() == [True, False, True]
    assert int(h.select()[0]) == 0  # repeatable
    h.feed(0, 1.0)
    assert h.policy.waiting(h.stats)[0].tolist() == [False, False, True]
    assert int(h.step(rewards)[0]) == 2


class RecordingDMED(DMED):
    """DMED that checks every rebuilt list holds the empirical best arm."""

    rebuilds = 0

    def new_lists(self, stats, rows):
        listed = super().new_lists(stats, rows)
        best = np.argmax(np.where(stats.counts[rows] > 0, stats.means[rows], -np.inf), axis=1)
        assert listed[np.arange(rows.size), best].all()
        RecordingDMED.rebuilds += rows.size
        return listed


@pytest.mark.parametrize("genuine", [True, False])
def test_dmed_lists_always_hold_the_empirical_best(genuine):
    RecordingDMED.rebuilds = 0
    sim = simulate_policy(lambda: RecordingDMED({"genuine": genuine}), Bernoulli({"means": [0.1] + [0.07] * 9}),
                          budget=1_500, objective=Objective.REGRET, replicas=8)
    assert RecordingDMED.rebuilds > 100
    assert sim.stats[0].counts.sum() == 8 * 1_500


def test_dmed_refuses_unbounded_rewards(hand):
    with pytest.raises(ConfigError, match="dmed"):
        hand(DMED(), 3)
