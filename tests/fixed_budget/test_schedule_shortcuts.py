"""The budget-phase policies' per-step shortcuts agree with what they skip, at every step and
under delays: the cached next stage closing (SH family) and phase end (Successive Rejects),
the STOPPED check, Uniform's unmasked round robin, and RoundRobin's int32 pulls."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.fixed_budget.sh_variance import SHAdaVar, SHVar
from armlab.plugins.fixed_budget.successive_rejects import SuccessiveRejects
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.round_robin import RoundRobin
from armlab.plugins.policies.sh import SequentialHalving
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.sources.simulated import Gaussian
from armlab.problem import Objective, Problem
from armlab.stats import ArmStats

R, K, BUDGET = 12, 7, 251  # 3 SH stages of 83 (2 pulls left over); 6 SR phases
MEANS = [0.2, 0.5, 0.5, 0.35, 0.6, 0.1, 0.55]
FEEDBACK = [
    FeedbackConfig(),
    FeedbackConfig(delay=0, delay_model="uniform", delay_max=5),
    FeedbackConfig(delay=4, delay_model="batch"),
]
FEEDBACK_IDS = ["immediate", "uniform-delay", "batch"]


def run(cls, feedback):
    """Run ``cls`` to the end on Gaussian arms; return the policy (it counts its checks)."""
    source = Gaussian({"means": MEANS, "variances": np.linspace(0.1, 0.7, K).tolist()})
    ids = np.arange(R)
    source.reset(ids, 0)
    problem = Problem(objective=Objective.BEST_ARM, budget=BUDGET, n_arms=K, truth=source.truth,
                      source=source.name, reward_range=source.reward_range)
    policies = []

    def factory():
        policies.append(cls())
        return policies[-1]

    sim = Simulation(policy_factory=factory, sources=[source], problems=[problem], allocator=Single(),
                     feedback=feedback, seed=3, replicas=ids, checkpoints=[BUDGET])
    while not sim.finished:
        sim.step()
    return policies[0]


def checking_sh(cls):
    """``cls`` asserting, before each select, that its cached next stage closing equals a
    recomputation and that below it (and below the schedule's end) nothing is skipped."""

    class Checking(cls):
        checked = 0

        def select(self, stats):
            due = np.minimum(stats.dispatched // self.stage_budget, self.n_stages - 1)
            open_stages = self.stage < self.n_stages - 1
            ends = (self.stage[open_stages] + 1) * self.stage_budget
            assert self._next_close == (ends.min() if ends.size else np.inf)
            if stats.dispatched.max() < self._next_close:
                assert not (due > self.stage).any()
            arms = super().select(stats)
            stopped = stats.dispatched >= self.n_stages * self.stage_budget
            np.testing.assert_array_equal(arms == STOPPED, stopped)
            self.checked += 1
            return arms

    return Checking


@pytest.mark.parametrize("feedback", FEEDBACK, ids=FEEDBACK_IDS)
@pytest.mark.parametrize("cls", [SequentialHalving, SHVar, SHAdaVar], ids=["sh", "shvar", "shadavar"])
def test_sh_next_stage_closing_is_never_stale(cls, feedback):
    policy = run(checking_sh(cls), feedback)
    assert policy.checked > policy.n_stages * policy.stage_budget  # up to a STOPPED


class CheckingSR(SuccessiveRejects):
    """Successive Rejects asserting, before each select, that its cached next phase end equals
    a recomputation and that below it nothing is skipped."""

    checked = 0

    def select(self, stats):
        k = stats.n_arms
        due = np.minimum(np.searchsorted(self.phase_ends, stats.dispatched, side="right"), k - 2)
        ends = self.phase_ends[self.rejections[self.rejections < k - 2]]
        assert self._next_end == (ends.min() if ends.size else np.inf)
        if stats.dispatched.max() < self._next_end:
            assert not (due > self.rejections).any()
        arms = super().select(stats)
        np.testing.assert_array_equal(arms == STOPPED, stats.dispatched >= self.total_pulls)
        self.checked += 1
        return arms


@pytest.mark.parametrize("feedback", FEEDBACK, ids=FEEDBACK_IDS)
def test_sr_next_phase_end_is_never_stale(feedback):
    policy = run(CheckingSR, feedback)
    assert policy.checked > policy.total_pulls  # up to a STOPPED


class CheckingUniform(Uniform):
    """Uniform asserting that each round-robin choice is the masked argmin of the pulls."""

    checked = 0

    def select(self, stats):
        arms = super().select(stats)
        masked = np.where(stats.active, stats.counts + stats.pending, np.iinfo(np.int64).max)
        np.testing.assert_array_equal(arms, np.argmin(masked, axis=1))
        self.checked += 1
        return arms


@pytest.mark.parametrize("feedback", FEEDBACK, ids=FEEDBACK_IDS)
def test_uniform_round_robin_is_the_masked_argmin_of_the_pulls(feedback):
    assert run(CheckingUniform, feedback).checked == BUDGET


def test_round_robin_pulls_are_int32_only_below_2_to_the_30():
    assert RoundRobin(2, 3, max_pulls=2**30 - 1).kept.dtype == np.int32
    assert RoundRobin(2, 3, max_pulls=2**30).kept.dtype == np.int64
    assert RoundRobin(2, 3).kept.dtype == np.int64


@pytest.mark.parametrize("max_pulls", [2**30 - 1, None], ids=["int32", "int64"])
def test_round_robin_never_picks_an_eliminated_arm_up_to_the_bound(max_pulls):
    # active arms with up to 2**30 - 1 pulls, eliminated ones with anything from 0 to the bound
    top = 2**30 - 1
    stats = ArmStats(4, 3)
    stats.counts[:] = [[top, top - 1, 0], [top, 0, top], [0, top, top], [top, top, top]]
    stats.active[:] = [[True, True, False], [True, False, True], [False, True, True], [False, True, False]]
    robin = RoundRobin(4, 3, max_pulls=max_pulls)
    robin.restart(stats, np.arange(4), 0)
    np.testing.assert_array_equal(robin.select(stats), [1, 0, 1, 1])
    flat = np.arange(12)
    np.testing.assert_array_equal(robin.refresh(stats, flat), robin.kept.reshape(-1))
    assert (robin.kept[~stats.active] > robin.kept[stats.active].max()).all()
