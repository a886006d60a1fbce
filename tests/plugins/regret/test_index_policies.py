"""UCB-V, MOSS, OCUCB, KL-UCB and Bayes-UCB indices against hand-computed values (docs/algorithms/regret.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from armlab.errors import ConfigError
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.regret import KLUCB, MOSS, OCUCB, UCBV, BayesUCB
from armlab.plugins.regret.bounds import kl_bernoulli

UNIT = (0.0, 1.0)


def feed_all(h, history):
    """Feed ``(arm, reward)`` pairs to replica 0 in order."""
    for arm, reward in history:
        h.feed(arm, reward)


HISTORY = [(0, 0.2), (1, 0.9), (2, 0.5), (0, 0.6), (1, 0.7), (0, 1.0)]  # N = 3, 2, 1; t = 7
MEANS = np.array([0.6, 0.8, 0.5])
VARS = np.array([((0.2 - 0.6) ** 2 + 0 + 0.4**2) / 3, 0.01, 0.0])  # biased: 0.10667, 0.01, 0
COUNTS = np.array([3.0, 2.0, 1.0])


def test_ucbv_index_by_hand(hand):
    h = hand(UCBV(), 3)
    feed_all(h, HISTORY)
    explore = 1.2 * math.log(7)  # E_t = zeta log t at decision t = 7
    expected = MEANS + np.sqrt(2 * VARS * explore / COUNTS) + 3 * explore / COUNTS
    assert h.policy.index(h.stats)[0] == pytest.approx(expected)
    h2 = hand(UCBV({"zeta": 1.0, "b": 2.0, "c": 0.5}), 3)
    feed_all(h2, HISTORY)
    explore = math.log(7)
    assert h2.policy.index(h2.stats)[0] == pytest.approx(MEANS + np.sqrt(2 * VARS * explore / COUNTS) + 3 * explore / COUNTS)


def test_moss_index_by_hand_and_zero_bonus_beyond_t_over_k(hand):
    h = hand(MOSS(), 3, budget=12)  # T / K = 4
    feed_all(h, HISTORY)
    bonus = np.sqrt(np.maximum(np.log(12 / (3 * COUNTS)), 0) / COUNTS)
    assert h.policy.index(h.stats)[0] == pytest.approx(MEANS + bonus)
    feed_all(h, [(0, 0.6)])  # N_0 = 4 = T / K: bonus exactly 0
    assert h.policy.index(h.stats)[0, 0] == 0.6
    anytime = hand(MOSS({"horizon": "t"}), 3, budget=12)
    feed_all(anytime, HISTORY)
    expected = MEANS + np.sqrt(np.maximum(np.log(7 / (3 * COUNTS)), 0) / COUNTS)  # t = 7 in place of T
    assert anytime.policy.index(anytime.stats)[0] == pytest.approx(expected)


def test_ocucb_index_by_hand_and_log_argument_at_least_psi(hand):
    h = hand(OCUCB(), 3, budget=50)
    feed_all(h, HISTORY)
    expected = MEANS + np.sqrt(3.0 / COUNTS * math.log(2 * 50 / 7))
    assert h.policy.index(h.stats)[0] == pytest.approx(expected)
    h.stats.dispatched[:] = 49  # decision t = T: log(psi T / t) = log psi
    assert h.policy.index(h.stats)[0] == pytest.approx(MEANS + np.sqrt(3.0 / COUNTS * math.log(2)))
    author = hand(OCUCB({"alpha": 2.0}), 3, budget=50)
    feed_all(author, HISTORY)
    assert author.policy.index(author.stats)[0] == pytest.approx(MEANS + np.sqrt(2.0 / COUNTS * math.log(100 / 7)))


def test_klucb_gaussian_is_ucb1(hand):
    kl, ucb1 = hand(KLUCB({"divergence": "gaussian"}), 3), hand(UCB1(), 3)
    feed_all(kl, HISTORY)
    feed_all(ucb1, HISTORY)
    assert np.allclose(kl.policy.index(kl.stats), ucb1.policy.index(ucb1.stats), rtol=0, atol=1e-14)
    sigma = hand(KLUCB({"divergence": "gaussian", "variance": 0.25, "c": 3.0}), 3)
    feed_all(sigma, HISTORY)
    f = math.log(6) + 3.0 * math.log(math.log(6))  # n = 6 observed rewards
    assert sigma.policy.index(sigma.stats)[0] == pytest.approx(MEANS + np.sqrt(2 * 0.25 * f / COUNTS))


def test_klucb_bernoulli_index_solves_the_divergence_equation(hand):
    h = hand(KLUCB(), 3, reward_range=UNIT)
    feed_all(h, [(0, 1.0), (1, 0.0), (2, 1.0), (0, 0.0), (1, 0.0), (0, 1.0)])  # means 2/3, 0, 1
    index = h.policy.index(h.stats)[0]
    delta = math.log(6) / np.array([3.0, 2.0, 1.0])
    assert kl_bernoulli(2 / 3, index[0]) == pytest.approx(delta[0], rel=1e-9)
    assert index[1] == pytest.approx(1 - math.exp(-delta[1]), abs=1e-15)  # p = 0: closed form
    assert index[2] == 1.0  # p = 1
    bisection = hand(KLUCB({"solver": "bisection"}), 3, reward_range=UNIT)
    feed_all(bisection, [(0, 1.0), (1, 0.0), (2, 1.0), (0, 0.0), (1, 0.0), (0, 1.0)])
    assert np.abs(bisection.policy.index(bisection.stats)[0] - index).max() < 1e-6


def test_bayes_ucb_indices_by_hand(hand):
    beta = hand(BayesUCB(), 3, reward_range=UNIT)
    feed_all(beta, [(0, 1.0), (1, 0.0), (2, 1.0), (0, 0.0), (1, 1.0), (0, 1.0)])
    expected = scipy_stats.beta.isf(1 / 7, [1 + 2, 1 + 1, 1 + 1], [1 + 1, 1 + 1, 1 + 0])
    assert beta.policy.index(beta.stats)[0] == pytest.approx(expected, rel=1e-10)
    gauss = hand(BayesUCB({"posterior": "gaussian", "variance": 0.5, "c": 1.0}), 3, budget=100)
    feed_all(gauss, HISTORY)
    z = scipy_stats.norm.isf(1 / (7 * math.log(100)))
    assert gauss.policy.index(gauss.stats)[0] == pytest.approx(MEANS + math.sqrt(0.5) / np.sqrt(COUNTS) * z)


def test_beta_bayes_ucb_needs_no_forced_pulls(hand):
    h = hand(BayesUCB(), 5, budget=3, reward_range=UNIT)  # T < K is fine without forced pulls
    arms = [int(h.step(lambda a: np.ones_like(a, dtype=float))[0]) for _ in range(3)]
    assert arms == [arms[0]] * 3  # after a success, that arm's posterior quantile is the largest


@pytest.mark.parametrize(
    ("policy", "fix"),
    [(KLUCB(), 'divergence = "gaussian"'), (BayesUCB(), 'posterior = "gaussian"')],
)
def test_bounded_variants_refuse_unbounded_sources(hand, policy, fix):
    with pytest.raises(ConfigError, match=r"needs rewards in \[0, 1\].*" + fix):
        hand(policy, 3)


def test_ties_go_to_the_lowest_arm_by_default_and_spread_when_random(hand):
    h = hand(MOSS(), 4, budget=400)
    feed_all(h, [(arm, 0.5) for arm in range(4)])
    assert int(h.select()[0]) == 0
    r = hand(MOSS({"tie_break": "random"}), 4, budget=400, replicas=64)
    for arm in range(4):
        r.feed(arm, 0.5)
    assert len(set(r.select().tolist())) == 4  # exact ties spread over all arms across replicas
