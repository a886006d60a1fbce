"""The vectorized engine: determinism, replica independence, common random numbers,
delayed feedback, in-flight limits, stopping and checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.config import FeedbackConfig
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.interfaces import STOPPED, Policy
from armlab.plugins.policies.thompson import Thompson
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective, Problem

MEANS = [0.6, 0.5, 0.45, 0.3, 0.2]


class Recorder(Policy):
    """Round robin that records what it saw at every choice and every result it got."""

    name = "recorder"

    def __init__(self, stop_after: int | None = None):
        super().__init__()
        self.stop_after = stop_after
        self.seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.results: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def select(self, stats):
        self.seen.append((stats.dispatched.copy(), stats.observed.copy(), stats.pending.sum(axis=1)))
        arms = np.argmin(stats.pulls, axis=1)
        if self.stop_after is not None:
            arms = np.where(stats.dispatched >= self.stop_after, STOPPED, arms)
        return arms

    def update(self, stats, rows, arms, rewards):
        self.results.append((rows.copy(), arms.copy(), rewards.copy()))


def simulate(policy_factory, *, replicas=np.arange(6), budget=60, feedback=None, source=None,
             objective=Objective.BEST_ARM, seed=11, checkpoints=None):
    source = source or Gaussian({"means": MEANS, "variances": 0.5})
    source.reset(replicas, seed)
    problem = Problem(objective=objective, budget=budget, n_arms=source.n_arms, truth=source.truth,
                      reward_range=source.reward_range)
    sim = Simulation(policy_factory=policy_factory, sources=[source], problems=[problem], allocator=Single(),
                     feedback=feedback or FeedbackConfig(), seed=seed, replicas=replicas,
                     checkpoints=checkpoints or [budget // 2, budget])
    while not sim.finished:
        sim.step()
    return sim


def fingerprint(sim):
    st = sim.stats[0]
    return st.counts, st.means, st.m2, sim.regret, sim.cp_error, sim.cp_regret


@pytest.mark.parametrize("factory", [UCB1, Uniform, lambda: UCB1({"tie_break": "random"})])
def test_same_seed_is_bit_identical_and_other_seed_differs(factory):
    a, b = simulate(factory), simulate(factory)
    for x, y in zip(fingerprint(a), fingerprint(b), strict=True):
        assert np.array_equal(x, y)
    c = simulate(factory, seed=12)
    assert not np.array_equal(a.stats[0].means, c.stats[0].means)


@pytest.mark.parametrize("delay", [0, 3])
def test_replica_alone_equals_replica_in_batch(delay):
    fb = FeedbackConfig(delay=delay)
    source = lambda: Bernoulli({"means": MEANS})  # noqa: E731
    batch = simulate(Thompson, source=source(), feedback=fb, objective=Objective.REGRET)
    for r in (0, 4):
        alone = simulate(Thompson, replicas=np.array([r]), source=source(), feedback=fb, objective=Objective.REGRET)
        for x, y in zip(fingerprint(batch), fingerprint(alone), strict=True):
            assert np.array_equal(x[r], y[0])


def test_two_policies_see_the_same_kth_reward_of_an_arm():
    streams = []
    for factory in (Recorder, lambda: _Greedy()):
        policy = factory()
        simulate(lambda p=policy: p, replicas=np.arange(4))
        per_arm: dict[tuple[int, int], list[float]] = {}
        for rows, arms, rewards in policy.results:
            for r, a, x in zip(rows, arms, rewards, strict=True):
                per_arm.setdefault((int(r), int(a)), []).append(float(x))
        streams.append(per_arm)
    common = 0
    for key in streams[0].keys() & streams[1].keys():
        n = min(len(streams[0][key]), len(streams[1][key]))
        assert streams[0][key][:n] == streams[1][key][:n]
        common += n
    assert common > 50


class _Greedy(Recorder):
    def select(self, stats):
        super().select(stats)
        return np.where(stats.pulls.min(axis=1) < 2, np.argmin(stats.pulls, axis=1), np.argmax(stats.means, axis=1))


@pytest.mark.parametrize("delay", [1, 4, 10])
def test_fixed_delay_shows_exactly_the_results_older_than_d(delay):
    instant, late = Recorder(), Recorder()
    simulate(lambda: instant, budget=40)
    simulate(lambda: late, budget=40, feedback=FeedbackConfig(delay=delay))
    for dispatched, observed, pending in late.seen:
        assert np.array_equal(observed, np.maximum(dispatched - delay, 0))
        assert np.array_equal(pending, dispatched - observed)
    # same results, same order: only later
    assert [r.tolist() for _, _, r in instant.results] == [r.tolist() for _, _, r in late.results]


@pytest.mark.parametrize("in_flight", [1, 2, 5])
def test_in_flight_limit_is_respected(in_flight):
    rec = Recorder()
    sim = simulate(lambda: rec, budget=30, feedback=FeedbackConfig(delay=6, in_flight=in_flight))
    assert max(p.max() for _, _, p in rec.seen) <= in_flight - 1
    assert (sim.dispatched == 30).all()
    assert (sim.stats[0].counts.sum(axis=1) == 30).all()
    # with one trial in flight a delay only costs time, never information
    if in_flight == 1:
        assert all(np.array_equal(o, d) for d, o, _ in rec.seen)


def test_uniform_delay_is_seeded_and_bounded():
    fb = FeedbackConfig(delay=2, delay_model="uniform", delay_max=7)
    a, b = Recorder(), Recorder()
    simulate(lambda: a, feedback=fb)
    simulate(lambda: b, feedback=fb)
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a.seen, b.seen, strict=True))
    lags = np.concatenate([d - o for d, o, _ in a.seen])
    assert lags.min() >= 0 and lags.max() <= 8 and len(set(lags.tolist())) > 3


def test_batch_delay_releases_results_every_d_trials():
    rec = Recorder()
    simulate(lambda: rec, budget=30, feedback=FeedbackConfig(delay=5, delay_model="batch"))
    for dispatched, observed, _ in rec.seen:
        assert np.array_equal(observed, (dispatched // 5) * 5)


def test_stopped_replicas_freeze_and_fill_later_checkpoints():
    rec = Recorder(stop_after=10)
    sim = simulate(lambda: rec, budget=40, checkpoints=[5, 20, 40])
    assert (sim.dispatched == 10).all() and (sim.stopped_at == 10).all()
    assert sim.finished
    assert np.array_equal(sim.cp_regret[:, 1], sim.cp_regret[:, 2])


def test_regret_is_the_sum_of_gaps_of_pulled_arms():
    sim = simulate(UCB1, objective=Objective.REGRET, budget=80)
    gaps = max(MEANS) - np.asarray(MEANS)
    assert np.allclose(sim.regret, (sim.stats[0].counts * gaps).sum(axis=1))
    assert np.all(np.diff(sim.cp_regret, axis=1) >= 0)


def test_checkpoint_errors_match_the_recommendation():
    sim = simulate(Uniform, budget=50, checkpoints=[50])
    best = int(np.argmax(MEANS))
    wrong = np.argmax(sim.stats[0].means, axis=1) != best
    assert np.array_equal(sim.cp_error[:, 0], wrong.astype(float))



@pytest.mark.parametrize("feedback", [FeedbackConfig(), FeedbackConfig(delay=3)])
@pytest.mark.parametrize("stop_after", [None, 7])
def test_step_reports_each_checkpoint_once_at_the_step_the_last_replica_passes_it(feedback, stop_after):
    """``step`` skips the checkpoint scan on steps that take none: every checkpoint is still
    reported exactly once, in order, at the step after which every replica has passed it."""
    source = Gaussian({"means": MEANS, "variances": 0.5})
    replicas = np.arange(4)
    source.reset(replicas, 3)
    problem = Problem(objective=Objective.BEST_ARM, budget=20, n_arms=source.n_arms, truth=source.truth,
                      reward_range=source.reward_range)
    sim = Simulation(policy_factory=lambda: Recorder(stop_after), sources=[source], problems=[problem],
                     allocator=Single(), feedback=feedback, seed=3, replicas=replicas, checkpoints=[4, 10, 20])
    reported = []
    while not sim.finished:
        passed_before = int(sim.core.next_checkpoint.min())
        fresh = sim.step()
        passed_after = int(sim.core.next_checkpoint.min())
        assert [cp.index for cp in fresh] == list(range(passed_before, passed_after))
        reported += [(cp.index, cp.trials) for cp in fresh]
    assert reported == [(0, 4), (1, 10), (2, 20)]
