"""SHVar's and SHAdaVar's choices are their rules as docs/algorithms/fixed-budget.md states them,
written out again here from the stage statistics alone and checked at every step, with and
without results in flight: an arm not pulled in the stage first (also with a zero variance),
SHAdaVar's forced phase counted in stage pulls, unsure arms first."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.fixed_budget.sh_variance import SHAdaVar, SHVar, variance_inflation
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.testing import problem_with_truth, simulate_policy, start_policy

R, K, BUDGET = 20, 9, 360
MEANS = [0.1, 0.3, 0.3, 0.45, 0.5, 0.55, 0.6, 0.7, 0.72]
VARIANCES = np.linspace(0.05, 0.6, K).tolist()


def ratios(weights: np.ndarray, stage_pulls: np.ndarray, active: np.ndarray) -> np.ndarray:
    """``weights / N`` of the active arms, ``+inf`` at ``N = 0``, ``-inf`` for eliminated arms."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(stage_pulls > 0, weights / stage_pulls, np.inf)
    return np.where(active, ratio, -np.inf)


def shvar_rule(policy: SHVar, stats, stage_pulls: np.ndarray) -> np.ndarray:
    return np.argmax(ratios(policy.variances, stage_pulls, stats.active), axis=1)


def shadavar_rule(policy: SHAdaVar, stats, stage_pulls: np.ndarray) -> np.ndarray:
    """The heterogeneous-variance paper Alg. 4 with armlab's readings (docs/algorithms/fixed-budget.md), from the stage statistics alone."""
    n = policy.stage_n
    factor = variance_inflation(n, policy.params.delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = np.where(np.isfinite(factor), policy.stage_m2 / (n - 1), np.inf) * factor
    arms = np.argmax(ratios(bounds, stage_pulls, stats.active), axis=1)
    largest = np.iinfo(np.int64).max
    unsure = stats.active & np.isinf(bounds)
    some = unsure.any(axis=1)
    arms[some] = np.argmin(np.where(unsure, stage_pulls, largest), axis=1)[some]
    forced = np.where(stats.active, stage_pulls - policy.forced_pulls, 0).sum(axis=1) < 0
    arms[forced] = np.argmin(np.where(stats.active, stage_pulls, largest), axis=1)[forced]
    return arms


def checked(cls, rule):
    """``cls`` asserting at every selection that it picks what ``rule`` picks."""

    class Checked(cls):
        def select(self, stats):
            arms = super().select(stats)
            expected = rule(self, stats, stats.pulls - self.stage_start)
            live = arms >= 0  # STOPPED at the end of the schedule
            np.testing.assert_array_equal(arms[live], expected[live])
            self.checked_steps = getattr(self, "checked_steps", 0) + 1
            return arms

    return Checked


@pytest.mark.parametrize("delay", [0, 1, 3], ids=["immediate", "delay-1", "delay-3"])
@pytest.mark.parametrize(("cls", "rule", "params", "source"), [
    (SHVar, shvar_rule, {}, lambda: Gaussian({"means": MEANS, "variances": VARIANCES})),
    # a zero variance after other arms: 0 / 0 must rank as +inf, not as NaN (argmax's first pick)
    (SHVar, shvar_rule, {}, lambda: Bernoulli({"means": MEANS[:4] + [0.0] + MEANS[5:]})),
    (SHAdaVar, shadavar_rule, {}, lambda: Gaussian({"means": MEANS, "variances": VARIANCES})),
    (SHAdaVar, shadavar_rule, {"delta": 0.5}, lambda: Bernoulli({"means": MEANS})),
], ids=["shvar", "shvar-zero-variance", "shadavar", "shadavar-bernoulli"])
def test_choices_follow_the_rule_recomputed_from_scratch(cls, rule, params, source, delay):
    policy_cls = checked(cls, rule)
    sim = simulate_policy(lambda: policy_cls(cls.Params.model_validate(params)), source(), budget=BUDGET,
                         replicas=R, delay=delay, seed=3)
    assert sim.policies[0].checked_steps >= BUDGET


def test_an_unpulled_arm_with_a_valid_bound_is_not_unsure():
    # past the forced phase (17 + 0 - 13 >= 0), arm 2 has no stage pull but 13 stage results
    # (as if they came late): its ratio is +inf, its bound valid, so it wins the argmax and
    # is not overridden by the unsure-arm rule (there is no unsure arm)
    policy = SHAdaVar()
    stats = start_policy(policy, problem_with_truth([0.5, 0.4, 0.3], budget=120))
    stats.counts[0] = [30, 13, 0]
    stats.dispatched[0] = stats.observed[0] = 43
    policy.stage_n[0] = [30, 13, 13]
    policy.stage_m2[0] = [3.0, 1.2, 0.5]
    expected = shadavar_rule(policy, stats, stats.pulls - policy.stage_start)
    assert expected[0] == 2
    assert policy.select(stats)[0] == 2
