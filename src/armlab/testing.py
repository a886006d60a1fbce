"""Conformance checks for policy plugins, for armlab's own tests and for plugin authors.

``check_policy(MyPolicy)`` runs a policy on a small simulated Gaussian bandit and asserts
the contract every built-in policy meets: valid arms of the right shape, bit-identical
results for the same seed, replica independence (replica r of a batch equals r run alone),
correct behaviour under delayed feedback (pending pulls), and well-formed recommendations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.interfaces import STOPPED, PluginParams, Policy, RewardSource
from armlab.plugins.scalar import ScalarPolicy, vectorize
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["check_policy", "run_policy"]

_PREFERENCE = (Objective.BEST_ARM, Objective.TOP_M, Objective.THRESHOLD, Objective.REGRET)


class _Checked(Policy):
    """Delegates to a policy and asserts the shape and range of every answer."""

    name = "_checked"

    def __init__(self, inner: Policy) -> None:
        super().__init__()
        self.inner = inner

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.inner.reset(problem, replicas, rng)

    def select(self, stats: ArmStats) -> np.ndarray:
        arms = np.asarray(self.inner.select(stats))
        name = self.inner.name
        assert arms.shape == (stats.replicas,), f"{name}.select returned shape {arms.shape}, expected ({stats.replicas},)"
        assert np.issubdtype(arms.dtype, np.integer), f"{name}.select returned dtype {arms.dtype}, expected integers"
        bad = (arms != STOPPED) & ((arms < 0) | (arms >= stats.n_arms))
        assert not bad.any(), f"{name}.select returned arms outside 0..{stats.n_arms - 1}: {arms[bad][:5]}"
        again = np.asarray(self.inner.select(stats))
        assert np.array_equal(arms, again), f"{name}.select is not repeatable without new data"
        return arms

    def update(self, stats, rows, arms, rewards) -> None:
        self.inner.update(stats, rows, arms, rewards)

    def recommend(self, stats: ArmStats) -> np.ndarray:
        answer = np.asarray(self.inner.recommend(stats))
        name, r, k = self.inner.name, stats.replicas, stats.n_arms
        if self.problem.objective in (Objective.TOP_M, Objective.THRESHOLD):
            assert answer.shape == (r, k) and answer.dtype == bool, (
                f"{name}.recommend must return a boolean (R, K) mask for set objectives, got {answer.shape} {answer.dtype}"
            )
        elif self.problem.objective is Objective.BEST_ARM:
            assert answer.shape == (r,), f"{name}.recommend must return (R,) arms, got {answer.shape}"
            assert ((answer >= 0) & (answer < k)).all(), f"{name}.recommend returned arms outside 0..{k - 1}"
        return answer


def _source(n_arms: int, kind: str) -> RewardSource:
    means = np.linspace(0.9, 0.1, n_arms)[np.random.default_rng(n_arms).permutation(n_arms)]
    if kind == "bernoulli":
        return Bernoulli({"means": means.tolist()})
    variances = np.linspace(0.05, 0.5, n_arms)
    return Gaussian({"means": means.tolist(), "variances": variances.tolist()})


def run_policy(
    policy: Policy,
    *,
    objective: Objective,
    n_arms: int = 8,
    budget: int = 400,
    replicas: np.ndarray | None = None,
    seed: int = 0,
    delay: int = 0,
    source: str = "gaussian",
    check: bool = True,
) -> Simulation:
    """Run ``policy`` to the end on the check's bandit (``source``: gaussian or bernoulli,
    arm means spread over [0.1, 0.9]); return the finished engine."""
    replicas = np.arange(6) if replicas is None else np.asarray(replicas)
    source = _source(n_arms, source)
    source.reset(replicas, seed)
    problem = Problem(
        objective=objective,
        budget=budget,
        n_arms=n_arms,
        top_m=2,
        threshold=0.5,
        delta=0.1,
        truth=source.truth,
        source=source.name,
        reward_range=source.reward_range,
    )
    sim = Simulation(
        policy_factory=(lambda: _Checked(policy)) if check else (lambda: policy),
        sources=[source],
        problems=[problem],
        allocator=Single(),
        feedback=FeedbackConfig(delay=delay),
        seed=seed,
        replicas=replicas,
        checkpoints=[budget // 2, budget],
    )
    while not sim.finished:
        sim.step()
    return sim


def check_policy(
    policy_cls: type[Policy] | type[ScalarPolicy],
    params: dict[str, Any] | None = None,
    *,
    objective: Objective | str | None = None,
    n_arms: int = 8,
    budget: int = 400,
    source: str = "gaussian",
) -> None:
    """Assert that ``policy_cls`` meets armlab's policy contract (raises AssertionError).

    ``params`` are the plugin parameters to test with; ``objective`` defaults to the first
    the policy serves among best-arm, top-m, threshold, regret; ``source`` is "gaussian"
    or "bernoulli" (for policies that need rewards in [0, 1]).  Oracle policies get the
    bandit's truth.  Top-m problems use m = 2, thresholding tau = 0.5, delta = 0.1.
    """
    if issubclass(policy_cls, ScalarPolicy):
        policy_cls = vectorize(policy_cls)
    name = getattr(policy_cls, "name", None)
    assert isinstance(name, str) and name, f"{policy_cls.__qualname__} needs a non-empty class attribute 'name'"
    assert issubclass(policy_cls.Params, PluginParams), f"{name}.Params must subclass armlab.PluginParams"
    config = policy_cls.Params.model_config
    assert config.get("frozen") and config.get("extra") == "forbid", f"{name}.Params must be frozen and forbid extra fields"
    if objective is None:
        objective = next(o for o in _PREFERENCE if o in policy_cls.objectives)
    objective = Objective(objective)

    def make() -> Policy:
        return policy_cls(policy_cls.Params.model_validate(params or {}))

    def fingerprint(sim: Simulation) -> list[np.ndarray]:
        st = sim.stats[0]
        return [st.counts, st.means, sim.regret, sim.cp_error, sim.stopped_at]

    kwargs = {"objective": objective, "n_arms": n_arms, "budget": budget, "source": source}
    first, second = run_policy(make(), **kwargs), run_policy(make(), **kwargs)
    for a, b in zip(fingerprint(first), fingerprint(second), strict=True):
        assert np.array_equal(a, b), f"{name}: the same seed gave different results"
    assert (first.dispatched <= budget).all(), f"{name}: used more than the budget"

    alone = run_policy(make(), replicas=np.array([3]), **kwargs)
    for a, b in zip(fingerprint(first), fingerprint(alone), strict=True):
        assert np.array_equal(a[3], b[0]), f"{name}: replica 3 of a batch differs from replica 3 run alone"

    delayed = run_policy(make(), delay=5, **kwargs)
    assert (delayed.stats[0].pending == 0).all(), f"{name}: results still pending at the end"
    assert (delayed.dispatched <= budget).all(), f"{name}: used more than the budget with delayed feedback"
