"""EUCBV against its definition (docs/algorithms/regret.md): schedule vectors, widths, eliminations, options."""

from __future__ import annotations

import math

import numpy as np
import pytest
import structlog

from armlab.errors import ConfigError
from armlab.plugins.regret.eucbv import EUCBV, EUCBVParams, EUCBVSchedule

# (K, T, psi, M, n_m for m = 0..M+1) computed by hand from the schedule
SCHEDULES = [
    (20, 60_000, 150.0, 7, [9, 15, 27, 48, 84, 146, 247, 404, 631]),
    (100, 300_000, 30.0, 8, [9, 15, 27, 48, 84, 146, 247, 404, 631, 906]),
    (100, 1_100_000, 110.0, 9, [10, 18, 32, 58, 105, 187, 330, 571, 963, 1571, 2432]),
    (20, 108_000, 270.0, 7, [9, 16, 29, 53, 94, 165, 284, 479, 781]),
]
EXP1_LOGS = [16.013, 15.320, 14.626, 13.933, 13.240, 12.547, 11.854, 11.161, 10.468]
EXP1_ROUND_ENDS = [180, 480, 1020, 1980, 3660, 6580, 11520, 19600, 32220]
EXP2_ROUND_ENDS = [900, 2400, 5100, 9900, 18300, 32900, 57600, 98000, 161100, 251700]
EXP3_ROUND_ENDS = [1000, 2800, 6000, 11800, 22300, 41000, 74000, 131100, 227400, 384500, 627700]


@pytest.mark.parametrize(("k", "horizon", "psi", "last", "lengths"), SCHEDULES)
def test_schedule_matches_the_sheet(k, horizon, psi, last, lengths):
    schedule = EUCBVSchedule(k, horizon, EUCBVParams())
    assert schedule.psi == pytest.approx(psi)
    assert schedule.last == last
    assert schedule.n.tolist() == lengths
    assert not schedule.clamped


def test_schedule_logs_match_the_sheet():
    exp1 = EUCBVSchedule(20, 60_000, EUCBVParams())
    assert exp1.log_term == pytest.approx(EXP1_LOGS, abs=1e-3)
    exp2 = EUCBVSchedule(100, 300_000, EUCBVParams())
    assert exp2.log_term[-1] == pytest.approx(9.774, abs=1e-3)
    assert min(math.log(30 * 300_000 * e**2) for e in exp2.eps) == pytest.approx(3.536, abs=1e-3)
    author = EUCBVSchedule(20, 60_000, EUCBVParams(log_uses="M"))
    assert author.log_term[0] == pytest.approx(math.log(150 * 7), abs=1e-12)  # 6.96: M in place of T
    assert author.n.tolist() == exp1.n.tolist()  # n_m keeps the seed's log(psi T eps^2)


def run_equal_arms(hand, k, horizon, real_steps):
    """EUCBV on K arms that all pay exactly 0.5: nothing is ever eliminated.

    The first ``real_steps`` decisions are real; after that, time is fast-forwarded to each
    round end (the schedule only reads the trial count and the number of active arms).
    Returns the policy and the round ends N_0, N_1, ...: the reset times, then the end of
    the last round (frozen).
    """
    h = hand(EUCBV(), k, budget=horizon)
    policy = h.policy
    ends, m = [], 0
    for _ in range(real_steps):
        arms = h.select()
        if policy.round[0] != m:  # the reset at t = N_m happens before decision N_m + 1
            ends.append(int(h.stats.dispatched[0]))
            m = int(policy.round[0])
        h.feed(arms, 0.5)
    assert h.stats.active.all()
    while policy.round[0] <= policy.schedule.last:
        h.stats.dispatched[:] = policy.round_end
        ends.append(int(h.stats.dispatched[0]))
        h.select()
    ends.append(int(policy.round_end[0]))
    h.stats.dispatched[:] = policy.round_end
    h.select()
    assert policy.round[0] == policy.schedule.last + 1  # frozen: no reset after m = M + 1
    assert policy.round_end[0] == ends[-1]
    return policy, ends


def test_round_ends_of_experiment_1(hand):
    policy, ends = run_equal_arms(hand, 20, 60_000, real_steps=2_000)
    assert ends == EXP1_ROUND_ENDS
    assert policy.round[0] == 8  # m stops at M + 1


@pytest.mark.parametrize(("horizon", "expected"), [(300_000, EXP2_ROUND_ENDS), (1_100_000, EXP3_ROUND_ENDS)])
def test_round_ends_of_experiments_2_to_4(hand, horizon, expected):
    _, ends = run_equal_arms(hand, 100, horizon, real_steps=1_000)
    assert ends == expected


def widths(policy: EUCBV, stats, rows: np.ndarray) -> np.ndarray:
    """The elimination widths of every arm of replicas ``rows``, from the policy's definition."""
    counts, m = stats.counts[rows], policy.round[rows][:, None]
    spread = policy.spread(counts, stats.m2[rows])
    return policy.width(spread, m, policy.bonus(spread, counts, m))


def test_width_unit_check(hand):
    """var = 0, rho = 1/2, L = 16.013: width 2.0008 with one pull, 0.6670 with n_0 = 9."""
    for elim_count, width in (("pulls", 2.0008), ("round", 0.6670)):
        h = hand(EUCBV({"elim_count": elim_count}), 20, budget=60_000)
        for arm in range(20):
            h.feed(arm, 0.5)
        assert widths(h.policy, h.stats, np.array([0])) == pytest.approx(np.full((1, 20), width), abs=1e-4)


def test_first_pulls_index_and_one_elimination_by_hand(hand):
    """K = 3, T = 100: psi = 100/9, L_0 = log(T^2 / 9) = 7.013; one pull each gives width
    sqrt(0.5 * 2 * L_0 / 4) = 1.324."""
    h = hand(EUCBV(), 3, budget=100)
    rewards = {0: 5.0, 1: 0.0, 2: 4.0}
    assert [int(h.step(lambda a: np.array([rewards[int(a[0])]]))[0]) for _ in range(3)] == [0, 1, 2]
    assert h.stats.active.all()  # no elimination before decision K + 1
    log0 = math.log(100 * 100 / 9)
    assert h.policy.index(h.stats)[0] == pytest.approx(np.array([5.0, 0.0, 4.0]) + math.sqrt(log0 / 4))
    assert int(h.step(lambda a: np.array([rewards[int(a[0])]]))[0]) == 0
    # arm 0: N = 2, v = 0, width sqrt(0.25 * L_0 / 2) = 0.936 -> best lower bound 4.064
    # arm 1: 0 + 1.324 < 4.064 is eliminated; arm 2: 4 + 1.324 >= 4.064 stays
    assert h.stats.active[0].tolist() == [True, False, True]


def test_elimination_is_order_free_and_keeps_the_best_lower_bound(hand):
    rng = np.random.default_rng(5)
    h = hand(EUCBV(), 12, budget=20_000, replicas=50)
    for arm in range(12):
        h.feed(arm, rng.normal(0.5, 1.0, 50))
    for _ in range(60):
        h.feed(rng.integers(0, 12, 50), rng.normal(0.5, 1.0, 50))
    width = widths(h.policy, h.stats, np.arange(50))
    means = h.stats.means
    before = h.stats.active.copy()
    lower = np.where(before, means - width, -np.inf)
    # arm by arm, each against the maximum over the arms still in B
    sequential = before.copy()
    for r in range(50):
        for i in rng.permutation(12):
            if sequential[r, i] and means[r, i] + width[r, i] < np.where(sequential[r], lower[r], -np.inf).max():
                sequential[r, i] = False
    h.policy._eliminate(h.stats, np.arange(50))
    assert np.array_equal(h.stats.active, sequential)
    assert h.stats.active[np.arange(50), lower.argmax(axis=1)].all()
    assert (h.stats.active.sum(axis=1) >= 1).all()


def test_eliminated_arms_are_never_pulled_and_the_last_arm_is_kept(hand):
    """Deterministic rewards 3, 0, 0, 0 (raw, outside [0, 1]); T = 5000 gives width 1.888 for
    one pull, 1.335 for two and 1.090 for three, so decision 6 (N = 3, 1, 1, 1) removes every
    other arm (1.888 < 3 - 1.090) and decision 5 does not (1.888 > 3 - 1.335)."""
    h = hand(EUCBV(), 4, budget=5_000)
    means = np.array([3.0, 0.0, 0.0, 0.0])
    for _ in range(5):
        h.step(lambda a: means[a])
    assert h.stats.active.all()
    h.step(lambda a: means[a])
    assert h.stats.active[0].tolist() == [True, False, False, False]
    counts = h.stats.counts.copy()
    for _ in range(50):
        assert int(h.step(lambda a: means[a])[0]) == 0
    assert (h.stats.counts[0, 1:] == counts[0, 1:]).all()


def test_warnings_for_short_horizons_and_clamped_logs(hand):
    with structlog.testing.capture_logs() as logs:
        hand(EUCBV(), 20, budget=60_000)
    assert logs == []
    with structlog.testing.capture_logs() as logs:
        hand(EUCBV({"psi": 1e-9}), 20, budget=1_000)
    events = {entry["event"] for entry in logs}
    assert events == {"eucbv_log_clamped", "eucbv_short_horizon"}


def test_clamped_logs_give_zero_widths_and_unit_rounds():
    schedule = EUCBVSchedule(20, 1_000, EUCBVParams(psi=1e-9))
    assert schedule.clamped
    assert (schedule.log_term == 0).all() and (schedule.n == 1).all()


def test_budget_below_k_is_a_config_error(hand):
    with pytest.raises(ConfigError, match="budget 5 is smaller than the number of arms 8"):
        hand(EUCBV(), 8, budget=5)


def test_params_are_validated():
    with pytest.raises(ValueError, match="rho"):
        EUCBV({"rho": 0})
    with pytest.raises(ValueError, match="elim_count"):
        EUCBV({"elim_count": "n"})
