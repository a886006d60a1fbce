"""The regret policies' cached per-arm state equals its definition at every step: UCB-V, OCUCB,
MOSS and EUCBV indices bit for bit, EUCBV's eliminations complete, DMED's lists and waiting
mask, Median Elimination's round counters; with delays and replicas out of step."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from armlab.plugins.regret import DMED, EUCBV, MOSS, OCUCB, UCBV, MedianElimination
from armlab.plugins.regret.bounds import kl_bernoulli

UNIT = (0.0, 1.0)
#: Bernoulli means with repeats and extremes: exact ties and means of 0 or 1 happen.
MEANS = np.array([0.2, 0.5, 0.5, 0.7, 0.9, 0.1, 0.0, 1.0])
#: For DMED: with an arm paying 1 every other arm is far from its list; here arms cross often.
CLOSE_MEANS = np.array([0.2, 0.5, 0.5, 0.7, 0.75, 0.1, 0.0, 0.8])


def drive(hand, policy, check, *, steps: int, delay: int, budget: int = 5_000, replicas: int = 24, means=MEANS):
    """Run ``policy`` on Bernoulli arms, dispatching a random half of the replicas at some steps
    (so they drift out of step), results ``delay`` steps later; ``check(h, rows)`` after every
    select (``rows`` None) and every update (the replicas updated)."""
    h = hand(policy, means.size, budget=budget, replicas=replicas, reward_range=UNIT)
    coins = np.random.default_rng(4)
    in_flight: deque = deque()
    for step in range(steps):
        arms = h.select()
        check(h, None)
        rows = h.rows if step % 3 else np.flatnonzero(coins.random(replicas) < 0.5)
        h.stats.dispatch(rows, arms[rows])
        in_flight.append((rows, arms[rows], (coins.random(rows.size) < means[arms[rows]]).astype(float)))
        if len(in_flight) > delay:
            rows, done, rewards = in_flight.popleft()
            h.stats.observe(rows, done, rewards)
            policy.update(h.stats, rows, done, rewards)
            check(h, rows)


def per_arm(stats):
    """``1 / N``, ``1 / sqrt(N)`` and the biased variance, 0 where nothing was observed."""
    with np.errstate(divide="ignore"):
        inv = np.where(stats.counts > 0, 1.0 / stats.counts, 0.0)
    return inv, np.sqrt(inv), np.maximum(stats.m2 * inv, 0.0)


def assert_index(h, expected):
    seen = h.stats.counts > 0
    np.testing.assert_array_equal(h.policy.index(h.stats)[seen], expected[seen])


def check_ucbv(h, rows):
    inv, inv_sqrt, var = per_arm(h.stats)
    explore = 1.2 * np.log(h.stats.dispatched + 1.0)
    sd = np.sqrt(var) * inv_sqrt
    assert_index(h, h.stats.means + np.sqrt(2.0 * explore)[:, None] * sd + (3.0 * explore)[:, None] * inv)


def check_ocucb(h, rows):
    _, inv_sqrt, _ = per_arm(h.stats)
    confidence = 3.0 * np.maximum(np.log(2.0 * 5_000 / (h.stats.dispatched + 1.0)), 0.0)
    assert_index(h, h.stats.means + np.sqrt(confidence)[:, None] * inv_sqrt)


def check_moss_anytime(h, rows):
    inv, _, _ = per_arm(h.stats)
    log_kn = np.log(MEANS.size * np.maximum(h.stats.counts, 1).astype(np.float64))
    bonus = np.maximum(np.log(h.stats.dispatched + 1.0)[:, None] - log_kn, 0.0) * inv
    assert_index(h, h.stats.means + np.sqrt(bonus))


@pytest.mark.parametrize("delay", [0, 3])
@pytest.mark.parametrize(
    ("policy", "check"),
    [(UCBV(), check_ucbv), (OCUCB(), check_ocucb), (MOSS({"horizon": "t"}), check_moss_anytime)],
    ids=["ucbv", "ocucb", "moss-t"],
)
def test_index_is_the_formula_bit_for_bit(hand, policy, check, delay):
    drive(hand, policy, check, steps=300, delay=delay)


def check_eucbv(h, rows):
    policy, stats = h.policy, h.stats
    seen_active = (stats.counts > 0) & stats.active
    _, inv_sqrt, var = per_arm(stats)
    spread = policy.params.rho * (var + 2.0) / 4.0
    log_term = policy.schedule.log_term[policy.round][:, None]
    bonus = np.sqrt(spread) * inv_sqrt * np.sqrt(log_term)
    if policy.params.elim_count == "pulls":
        width = bonus
    else:
        width = np.sqrt(spread * (log_term / policy.schedule.n[policy.round][:, None]))
    index = np.where(seen_active, stats.means + bonus, -np.inf)
    np.testing.assert_array_equal(policy.index(stats), index)
    if rows is not None:  # the replicas just updated have made every elimination due
        rows = rows[stats.observed[rows] > MEANS.size]
        lower = np.where(seen_active, stats.means - width, -np.inf).max(axis=1)[rows, None]
        assert not (np.where(seen_active, stats.means + width, np.inf)[rows] < lower).any()


@pytest.mark.parametrize("delay", [0, 3])
@pytest.mark.parametrize("params", [{}, {"elim_count": "round", "log_uses": "M"}], ids=["pulls", "round"])
def test_eucbv_cache_and_eliminations(hand, params, delay):
    drive(hand, EUCBV(params), check_eucbv, steps=600, delay=delay, budget=2_000)


class CheckedDMED(DMED):
    """DMED whose every rebuilt list is compared with the test as written."""

    def _rebuild(self, stats, rows):
        super()._rebuild(stats, rows)
        counts, seen = stats.counts[rows], stats.counts[rows] > 0
        means = np.where(seen, stats.means[rows], -np.inf)
        best = means.max(axis=1, keepdims=True)
        n = stats.observed[rows, None] + 1.0
        with np.errstate(divide="ignore"):
            budget = np.log(n / counts) if self.params.genuine else np.log(n)
        listed = seen & (counts * kl_bernoulli(stats.means[rows], best) < budget)
        empty = ~listed.any(axis=1)
        listed[empty, np.argmax(means[empty], axis=1)] = True
        np.testing.assert_array_equal(self.listed[rows], listed)


def check_dmed_waiting(h, rows):
    """Without delays the mask kept by update is the definition after every event."""
    np.testing.assert_array_equal(h.policy._waiting, h.policy.waiting(h.stats))


@pytest.mark.parametrize("delay", [0, 3])
@pytest.mark.parametrize("genuine", [True, False])
def test_dmed_lists_and_waiting_mask(hand, genuine, delay):
    check = check_dmed_waiting if delay == 0 else lambda h, rows: None
    drive(hand, CheckedDMED({"genuine": genuine}), check, steps=400, delay=delay, means=CLOSE_MEANS)


def check_median_elimination(h, rows):
    policy = h.policy
    size = policy.round_sizes[np.minimum(policy.round, policy.round_sizes.size - 1)]
    short = ((policy.round_n < size[:, None]) & h.stats.active).sum(axis=1)
    np.testing.assert_array_equal(policy._short, short)
    np.testing.assert_array_equal(policy._survivors, h.stats.active.sum(axis=1))


@pytest.mark.parametrize("delay", [0, 3])
def test_median_elimination_round_counters(hand, delay):
    drive(hand, MedianElimination({"square": False, "epsilon": 0.9}), check_median_elimination, steps=600,
          delay=delay)
