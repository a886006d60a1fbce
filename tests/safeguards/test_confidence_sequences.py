"""Confidence sequences: hand-computed terms, a from-the-definitions reference, and the
seeded peeking checks of issue 32 (fixed-sample intervals fail under continuous monitoring,
the anytime-valid ones do not, with and without a bandit choosing the arms)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.safeguards import (
    BoundedSequences,
    SubGaussianSequences,
    difference_intervals,
    fixed_sample_difference,
    fixed_sample_intervals,
)
from armlab.stats import ArmStats

ONE = np.array([0])


def feed(seq, values, arm=0):
    for v in values:
        seq.observe(ONE, np.array([arm]), np.array([float(v)]))


def prpl_eb_from_definitions(x, alpha):
    """Waudby-Smith & Ramdas (2023), Theorem 2, term by term with plain sums (no running
    state), and the running intersection clipped to [0, 1]."""
    low, high, out = 0.0, 1.0, []
    for t in range(1, len(x) + 1):
        mu = [(0.5 + sum(x[:i])) / (i + 1) for i in range(t + 1)]  # mu_hat_0 .. mu_hat_t
        var = [(0.25 + sum((x[j] - mu[j + 1]) ** 2 for j in range(i))) / (i + 1)
               for i in range(t)]
        lam = [min(math.sqrt(2 * math.log(2 / alpha) / (var[i - 1] * i * math.log(1 + i))), 0.5)
               for i in range(1, t + 1)]
        psi = [(-math.log(1 - lm) - lm) / 4 for lm in lam]
        v = [4 * (x[i] - mu[i]) ** 2 for i in range(t)]
        center = sum(lm * xi for lm, xi in zip(lam, x)) / sum(lam)
        half = (math.log(2 / alpha) + sum(vi * p for vi, p in zip(v, psi))) / sum(lam)
        low, high = max(low, center - half, 0.0), min(high, center + half, 1.0)
        out.append((low, high))
    return out


def test_first_step_by_hand():
    # alpha = 0.05 / 2 arms; t = 1: mu_hat_0 = 1/2, var_hat_0 = 1/4,
    # lambda_1 = min(sqrt(2 ln 80 / (1/4 ln 2)), 1/2) = 1/2
    seq = BoundedSequences(1, 2, 0.05, (0.0, 1.0))
    feed(seq, [1.0])
    assert seq.sum_bet[0, 0] == 0.5
    # v_1 psi(1/2) = 4 (1 - 1/2)^2 (ln 2 - 1/2) / 4 = 0.0482868
    assert seq.sum_penalty[0, 0] == pytest.approx(0.25 * (math.log(2) - 0.5), rel=1e-12)
    # mu_hat_1 = 3/4: sum_sq = (1 - 3/4)^2
    assert seq.sum_sq[0, 0] == pytest.approx(1 / 16)
    # center 1, half (ln 80 + 0.0483) / 0.5 = 8.86: the whole range, clipped
    assert seq.intervals() == [[0.0, 1.0], None]


def test_matches_the_papers_formulas_term_by_term():
    x = np.random.default_rng(3).beta(2, 5, 80).tolist()
    seq = BoundedSequences(1, 3, 0.3, (0.0, 1.0))
    reference = prpl_eb_from_definitions(x, 0.1)
    for t, v in enumerate(x):
        feed(seq, [v], arm=1)
        assert (seq.low[0, 1], seq.high[0, 1]) == pytest.approx(reference[t], abs=1e-12)
    assert seq.high[0, 1] - seq.low[0, 1] < 0.5  # it did narrow


def test_a_declared_range_is_rescaled_and_never_left():
    unit = BoundedSequences(1, 1, 0.05, (0.0, 1.0))
    scaled = BoundedSequences(1, 1, 0.05, (-50.0, 150.0))
    x = np.random.default_rng(4).random(300)
    feed(unit, x)
    feed(scaled, -50 + 200 * x)
    assert scaled.low[0, 0] == pytest.approx(-50 + 200 * unit.low[0, 0])
    assert scaled.high[0, 0] == pytest.approx(-50 + 200 * unit.high[0, 0])
    rare = BoundedSequences(1, 1, 0.05, (0.0, 1.0))
    feed(rare, [0.0] * 400 + [1.0])  # a rare success: the interval hugs 0 but never crosses it
    assert rare.low[0, 0] == 0.0 and 0.0 < rare.high[0, 0] < 0.1


def test_the_running_intersection_only_narrows_and_replay_gives_the_same_bits():
    rewards = (np.random.default_rng(5).random(500) < 0.3).astype(float)
    first, again = BoundedSequences(1, 1, 0.05, (0, 1)), BoundedSequences(1, 1, 0.05, (0, 1))
    widths = []
    for r in rewards:
        feed(first, [r])
        widths.append(first.high[0, 0] - first.low[0, 0])
    feed(again, rewards)
    assert np.all(np.diff(widths) <= 0)
    assert first.intervals() == again.intervals()


def test_sub_gaussian_boundary_by_hand():
    # alpha = 0.05, sigma = 2, m = 100: rho = 4 * 100 / (2 ln 20 + ln(1 + 2 ln 20))
    seq = SubGaussianSequences(1, 1, 0.05, scale=2.0)
    level = 2 * math.log(20)
    assert seq.rho == pytest.approx(400 / (level + math.log(1 + level)))
    feed(seq, [1.0, 3.0])  # t = 2, mean 2, V = 8
    half = math.sqrt((8 + seq.rho) * math.log((8 + seq.rho) / (seq.rho * 0.05**2))) / 2
    assert seq.intervals() == [[pytest.approx(2 - half), pytest.approx(2 + half)]]


def test_differences_and_fixed_sample_intervals_by_hand():
    low, high = np.array([[0.5, 0.1, 0.2]]), np.array([[0.9, 0.4, 0.6]])
    lo, hi = difference_intervals(low, high, 0)
    assert lo[0, 1:].tolist() == pytest.approx([0.1, -0.1]) and hi[0, 1:].tolist() == pytest.approx([0.8, 0.7])
    # the case: 0/1 rewards, 2 successes in 42: 0.0476 +- 1.96 sqrt(0.0465 / 42) = -0.018 .. 0.113
    var = 2 * 40 / 42 / 41
    lo, hi = fixed_sample_intervals(np.array([42]), np.array([2 / 42]), np.array([var]), (0.0, 1.0))
    assert lo[0] == 0.0 and hi[0] == pytest.approx(2 / 42 + 1.959964 * math.sqrt(var / 42))
    lo, hi = fixed_sample_difference(np.array([[1, 10]]), np.array([[0.5, 0.2]]), np.array([[0.1, 0.1]]), 0)
    assert math.isnan(lo[0, 1]) and math.isnan(hi[0, 1])  # one value: no fixed-sample interval


def peeking_rates(runs, n, seed, adaptive):
    """Two equal Bernoulli(1/2) arms, ``runs`` replicas, looked at after every observation
    from the 10th of each arm up to ``n``: the share of runs in which the interval of the
    difference excluded 0 at some look, fixed-sample 95 % and anytime-valid (delta = 0.05).
    ``adaptive``: Thompson sampling chooses the arms; otherwise a fair coin."""
    rng = np.random.default_rng(seed)
    rows = np.arange(runs)
    stats, seq = ArmStats(runs, 2), BoundedSequences(runs, 2, 0.05, (0.0, 1.0))
    fixed_wrong = np.zeros(runs, dtype=bool)
    anytime_wrong = np.zeros(runs, dtype=bool)
    for _ in range(n):
        if adaptive:
            s = stats.counts * stats.means
            arms = np.argmax(rng.beta(1 + s, 1 + stats.counts - s), axis=1)
        else:
            arms = rng.integers(0, 2, runs)
        rewards = (rng.random(runs) < 0.5).astype(float)
        stats.record(rows, arms, rewards)
        seq.observe(rows, arms, rewards)
        looked = stats.counts.min(axis=1) >= 10
        lo, hi = fixed_sample_difference(stats.counts, stats.means, stats.variances(ddof=1), 0, (0.0, 1.0))
        fixed_wrong |= looked & ((lo[:, 1] > 0) | (hi[:, 1] < 0))
        lo, hi = difference_intervals(seq.low, seq.high, 0)
        anytime_wrong |= looked & ((lo[:, 1] > 0) | (hi[:, 1] < 0))
    return fixed_wrong.mean(), anytime_wrong.mean()


#: 3 simulation standard errors of a 5 % rate over 500 runs
SLACK = 3 * math.sqrt(0.05 * 0.95 / 500)


@pytest.mark.parametrize("adaptive", [False, True], ids=["fair-coin", "thompson"])
def test_looking_after_every_observation(adaptive):
    fixed, anytime = peeking_rates(500, 2000, seed=32, adaptive=adaptive)
    assert fixed > 0.20  # far more than 5 %: the fixed-sample interval is misread under peeking
    assert anytime <= 0.05 + SLACK


@pytest.mark.parametrize("make", [lambda: BoundedSequences(1, 4, 0.05, (-1.0, 3.0)),
                                  lambda: SubGaussianSequences(1, 4, 0.05, scale=1.5)], ids=["bounded", "sub-gaussian"])
def test_the_one_value_path_gives_the_array_paths_numbers(make):
    """Bit for bit: the live experiment's anytime intervals are those of the array path (the
    bounded one computes on Python floats; values at both ends of the range included)."""
    rng = np.random.default_rng(6)
    arms, values = rng.integers(0, 4, 2000), rng.uniform(-1.0, 3.0, 2000)
    values[::7], values[::11] = -1.0, 3.0
    by_arrays, one_by_one = make(), make()
    for arm, value in zip(arms, values, strict=True):
        by_arrays.observe(ONE, np.array([arm]), np.array([value]))
        one_by_one.observe_one(int(arm), float(value))
    state = ("low", "high", "counts", "sums", "sum_x", "sum_sq", "sum_bet", "sum_bet_x", "sum_penalty")
    for name in (name for name in state if hasattr(by_arrays, name)):
        assert getattr(one_by_one, name).tolist() == getattr(by_arrays, name).tolist(), name


def test_a_run_of_values_gives_the_one_value_paths_numbers():
    """Bit for bit: folding each arm's values a run at a time (how the live experiment folds
    the results that waited for a reader) equals folding them one by one, in runs of any length."""
    rng = np.random.default_rng(9)
    arms, values = rng.integers(0, 4, 3000), rng.uniform(-1.0, 3.0, 3000)
    values[::7], values[::11] = -1.0, 3.0
    one_by_one, by_runs = BoundedSequences(1, 4, 0.05, (-1.0, 3.0)), BoundedSequences(1, 4, 0.05, (-1.0, 3.0))
    for arm, value in zip(arms, values, strict=True):
        one_by_one.observe_one(int(arm), float(value))
    cuts = np.cumsum(rng.integers(1, 300, 40))
    for run_arms, run_values in zip(np.split(arms, cuts), np.split(values, cuts), strict=True):
        for arm in range(4):
            if (mine := run_values[run_arms == arm]).size:
                by_runs.observe_run(arm, mine)
    for name in ("low", "high", "counts", "sum_x", "sum_sq", "sum_bet", "sum_bet_x", "sum_penalty"):
        assert getattr(by_runs, name).tobytes() == getattr(one_by_one, name).tobytes(), name
