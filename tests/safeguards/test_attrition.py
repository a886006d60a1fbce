"""The attrition check: its e-value by hand, its power against a 20 % drop of one arm's
reports, and its false alarms under continuous monitoring against a fixed-level chi-square."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from armlab.safeguards import ABANDONED, FAILED, REPORTED, AttritionMonitor

ONE = np.array([0])


def close(monitor, arm, outcome, times=1):
    for _ in range(times):
        monitor.dispatch(ONE, np.array([arm]))
        monitor.close(ONE, np.array([arm]), np.array([outcome]))


def test_e_value_by_hand():
    # arm 0: 3 back, 1 lost; arm 1: 1 back, 3 lost.  B(7/2, 3/2) = B(3/2, 7/2) = 5 pi / 128,
    # B(1/2, 1/2) = pi; pooled 4 of 8: log E = 2 log(5/128) - 8 log(1/2) = 2 log(0.625)
    monitor = AttritionMonitor(1, 2)
    close(monitor, 0, REPORTED, 3)
    close(monitor, 0, FAILED)
    close(monitor, 1, REPORTED)
    close(monitor, 1, ABANDONED, 2)
    close(monitor, 1, FAILED)
    assert monitor.log_e()[0] == pytest.approx(2 * math.log(0.625))
    summary = monitor.summary()
    assert summary == {
        "p_value": pytest.approx(min(1.0, math.exp(-monitor.max_log_e[0]))),
        "threshold": 0.001,
        "flagged": False,
        "dispatched": [4, 4],
        "reported": [3, 1],
        "failed": [1, 1],
        "abandoned": [0, 2],
    }


def test_a_clear_difference_is_flagged_and_stays_flagged():
    monitor = AttritionMonitor(1, 2)
    close(monitor, 0, REPORTED, 60)
    close(monitor, 1, FAILED, 60)
    assert monitor.flagged[0] and monitor.summary()["p_value"] < 0.001
    close(monitor, 1, REPORTED, 500)  # arm 1 recovers: the alarm that was raised stays raised
    assert monitor.flagged[0]


def test_closing_one_trial_by_ints_gives_the_array_paths_numbers():
    rng = np.random.default_rng(7)
    by_arrays, one_by_one = AttritionMonitor(1, 3), AttritionMonitor(1, 3)
    for arm, outcome in zip(rng.integers(0, 3, 300), rng.choice([REPORTED, FAILED, ABANDONED], 300, p=[0.8, 0.1, 0.1])):
        by_arrays.dispatch(ONE, np.array([arm]))
        by_arrays.close(ONE, np.array([arm]), np.array([outcome]))
        one_by_one.dispatch(0, int(arm))
        one_by_one.close(0, int(arm), int(outcome))
    assert one_by_one.summary() == by_arrays.summary()
    assert one_by_one.max_log_e == pytest.approx(by_arrays.max_log_e, rel=1e-12)


def test_bad_alpha_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="alpha = 0 must lie strictly between 0 and 1"):
        AttritionMonitor(1, 2, alpha=0)


def simulate(return_rates, runs, trials, seed, alpha):
    """Fair-coin assignment; each trial comes back with its arm's rate, else times out
    (closes as failed) before the next trial.  Returns the e-process's "ever flagged" and a
    chi-square test of homogeneity at level ``alpha`` checked after every trial (two arms)."""
    rates = np.asarray(return_rates)
    rng = np.random.default_rng(seed)
    rows = np.arange(runs)
    monitor = AttritionMonitor(runs, rates.size, alpha=alpha)
    chi_square_flag = np.zeros(runs, dtype=bool)
    for _ in range(trials):
        arms = rng.integers(0, rates.size, runs)
        monitor.dispatch(rows, arms)
        back = rng.random(runs) < rates[arms]
        monitor.close(rows, arms, np.where(back, REPORTED, FAILED))
        if rates.size == 2:
            chi_square_flag |= chi_square_p(monitor.closed) < alpha
    return monitor.flagged, chi_square_flag


def chi_square_p(closed):
    """Pearson's chi-square p-value (no continuity correction) of 2 arms x (back, lost)."""
    a, b = closed[:, 0, REPORTED], closed[:, 0, FAILED]
    c, d = closed[:, 1, REPORTED], closed[:, 1, FAILED]
    n = a + b + c + d
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    with np.errstate(divide="ignore", invalid="ignore"):
        x2 = np.where(margins > 0, n * (a * d - b * c) ** 2 / margins, 0.0)
    return scipy_stats.chi2.sf(x2, 1)


def test_the_vectorized_chi_square_is_scipys():
    closed = np.zeros((1, 2, 3), dtype=np.int64)
    closed[0, :, :2] = [[40, 10], [30, 20]]
    expected = scipy_stats.chi2_contingency([[40, 10], [30, 20]], correction=False).pvalue
    assert chi_square_p(closed)[0] == pytest.approx(expected)


@pytest.mark.parametrize("rates", [[0.9, 0.72], [0.9, 0.9, 0.9, 0.72]], ids=["two-arms", "four-arms"])
def test_dropping_a_fifth_of_one_arms_reports_is_flagged_within_2000_trials(rates):
    flagged, _ = simulate(rates, runs=500, trials=2000, seed=32, alpha=0.001)
    assert flagged.mean() >= 0.90


def test_false_alarms_at_the_stated_level():
    # at the default 0.001, 500 runs can only show "not far above": at most 2 alarms
    flagged, _ = simulate([0.9, 0.9], runs=500, trials=2000, seed=33, alpha=0.001)
    assert flagged.sum() <= 2
    # at 0.05 the simulation resolves the level: the e-process keeps it however often one
    # looks, a chi-square at 0.05 checked after every trial does not
    flagged, chi_square = simulate([0.9, 0.9], runs=500, trials=2000, seed=34, alpha=0.05)
    assert flagged.mean() <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 500)
    assert chi_square.mean() > 0.20


def test_a_report_before_any_loss_leaves_the_maximum_exactly_where_recomputing_it_would():
    """Reports closed by ints before any trial is lost skip the e-value (it is <= 0 then);
    the running maximum equals, bit for bit, the one recomputed after every trial."""
    rng = np.random.default_rng(3)
    monitor, expected = AttritionMonitor(1, 4), np.float64(0.0)
    arms = rng.integers(0, 4, 600)
    lost = rng.choice([FAILED, ABANDONED], 600)  # arm 3 loses half its trials after the first 200
    outcomes = np.where((np.arange(600) >= 200) & (arms == 3) & (rng.random(600) < 0.5), lost, REPORTED)
    for arm, outcome in zip(arms, outcomes, strict=True):
        monitor.dispatch(0, int(arm))
        monitor.close(0, int(arm), int(outcome))
        expected = np.maximum(expected, monitor.log_e(0))
        assert monitor.max_log_e[0] == expected and monitor.log_e(0) <= expected
    assert monitor.max_log_e[0] > 0  # the losses did move it


def test_arm_terms_left_for_the_next_reader_equal_the_ones_computed_at_each_closing():
    """Reports closed by ints before any loss leave their arm's term to whoever reads
    ``arm_terms``; read then, before and after the first loss, the terms are bit for bit the
    ones the array path computes at every closing, and so is the running maximum."""
    rng = np.random.default_rng(11)
    deferred, eager = AttritionMonitor(1, 3), AttritionMonitor(1, 3)
    arms = rng.integers(0, 3, 400)
    outcomes = np.where((np.arange(400) >= 150) & (arms == 2) & (rng.random(400) < 0.4), FAILED, REPORTED)
    for step, (arm, outcome) in enumerate(zip(arms, outcomes, strict=True)):
        deferred.dispatch(0, int(arm))
        deferred.close(0, int(arm), int(outcome))
        eager.dispatch(ONE, np.array([arm]))
        eager.close(ONE, np.array([arm]), np.array([outcome]))
        if step % 37 == 0 or outcome != REPORTED:
            assert deferred.arm_terms.tobytes() == eager.arm_terms.tobytes()
            assert deferred.max_log_e.tobytes() == eager.max_log_e.tobytes()
    assert deferred.arm_terms.tobytes() == eager.arm_terms.tobytes()
    assert deferred.summary() == eager.summary() and deferred.max_log_e[0] > 0


def test_reports_by_ints_read_no_counts_until_a_loss_and_then_stay_exact_per_replica():
    """Before any loss a report closed by ints reads no count; after replica 0's first loss,
    replica 1's reports still skip its e-value (it lost nothing) and replica 0's do not: the
    numbers are bit for bit the array path's, replica by replica."""
    rng = np.random.default_rng(4)
    by_ints, by_arrays = AttritionMonitor(2, 3), AttritionMonitor(2, 3)
    for step in range(400):
        row, arm = int(rng.integers(0, 2)), int(rng.integers(0, 3))
        outcome = FAILED if row == 0 and arm == 2 and step >= 100 and rng.random() < 0.6 else REPORTED
        by_ints.dispatch(row, arm)
        by_ints.close(row, arm, outcome)
        by_arrays.dispatch(np.array([row]), np.array([arm]))
        by_arrays.close(np.array([row]), np.array([arm]), np.array([outcome]))
        assert by_ints.max_log_e.tobytes() == by_arrays.max_log_e.tobytes(), step
    assert by_ints.arm_terms.tobytes() == by_arrays.arm_terms.tobytes()
    assert by_ints.max_log_e[0] > 0 and by_ints.max_log_e[1] == 0
