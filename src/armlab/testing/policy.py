"""The conformance check of policy plugins, for armlab's own tests and for plugin authors.

``check_policy(MyPolicy)`` runs a policy on a small simulated Gaussian bandit and asserts
the contract every built-in policy meets: valid arms of the right shape, ``select`` repeatable
without new data, statistics left alone (policies may only clear ``stats.active``),
bit-identical results for the same seed, replica independence (replica r of a batch equals
r run alone), correct behaviour under delayed feedback (pending pulls; results arrive five
steps late), well-formed recommendations, and the state round trip armlab relies on to
resume: replaying a run's history (each ``select`` with the replicas then dispatched, each
result) into a fresh instance gives the same selections, statistics and recommendation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.interfaces import STOPPED, Policy, RewardSource
from armlab.plugins.scalar import ScalarPolicy, vectorize
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats
from armlab.testing._plugin import check_declaration
from armlab.testing.helpers import simulate_policy

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
        before = _snapshot(stats)
        arms = np.asarray(self.inner.select(stats))
        name = self.inner.name
        assert arms.shape == (stats.replicas,), f"{name}.select returned shape {arms.shape}, expected ({stats.replicas},)"
        assert np.issubdtype(arms.dtype, np.integer), f"{name}.select returned dtype {arms.dtype}, expected integers"
        bad = (arms != STOPPED) & ((arms < 0) | (arms >= stats.n_arms))
        assert not bad.any(), f"{name}.select returned arms outside 0..{stats.n_arms - 1}: {arms[bad][:5]}"
        again = np.asarray(self.inner.select(stats))
        assert np.array_equal(arms, again), f"{name}.select is not repeatable without new data"
        _assert_unchanged(before, stats, f"{name}.select")
        return arms

    def update(self, stats, rows, arms, rewards) -> None:
        before = _snapshot(stats)
        self.inner.update(stats, rows, arms, rewards)
        _assert_unchanged(before, stats, f"{self.inner.name}.update")

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


#: ArmStats fields owned by the framework: a policy may read them, never write them.
_FRAMEWORK_FIELDS = ("counts", "means", "m2", "pending", "dispatched", "observed")


def _snapshot(stats: ArmStats) -> list[np.ndarray]:
    return [getattr(stats, f).copy() for f in _FRAMEWORK_FIELDS]


def _assert_unchanged(before: list[np.ndarray], stats: ArmStats, where: str) -> None:
    for field, old in zip(_FRAMEWORK_FIELDS, before, strict=True):
        assert np.array_equal(old, getattr(stats, field)), (
            f"{where} changed stats.{field}; policies may only clear stats.active"
        )


class _Recorder(Policy):
    """Delegates to a policy and keeps the history a journal holds: every ``select`` (its
    arms, and the replicas dispatched before the next call) and every result."""

    name = "_recorder"

    def __init__(self, inner: Policy) -> None:
        super().__init__()
        self.inner = inner
        self.name = inner.name  # messages about the wrapped policy name it
        self.events: list[tuple[str, ...]] = []
        self._open: tuple[np.ndarray, np.ndarray] | None = None

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.inner.reset(problem, replicas, rng)

    def close(self, stats: ArmStats) -> None:
        """Record which replicas were dispatched after the last ``select``."""
        if self._open is not None:
            dispatched_before, arms = self._open
            self.events.append(("select", arms, np.flatnonzero(stats.dispatched > dispatched_before)))
            self._open = None

    def select(self, stats: ArmStats) -> np.ndarray:
        self.close(stats)
        arms = np.asarray(self.inner.select(stats))
        self._open = (stats.dispatched.copy(), arms.copy())
        return arms

    def update(self, stats, rows, arms, rewards) -> None:
        self.close(stats)
        self.events.append(("observe", rows.copy(), arms.copy(), rewards.copy()))
        self.inner.update(stats, rows, arms, rewards)

    def recommend(self, stats: ArmStats) -> np.ndarray:
        return self.inner.recommend(stats)


def _check_replay(fresh: Policy, recorder: _Recorder, final: ArmStats) -> None:
    """Replay ``recorder``'s history into ``fresh`` and assert it reproduces the run.

    This is how armlab resumes (policies have no state_dict): the same problem and keyed
    randomness, then each recorded ``select`` (whose answer must equal the recorded arms for
    every replica) followed by the recorded dispatches, and each result in arrival order.
    """
    name = recorder.name
    stats = ArmStats(recorder.replicas, recorder.problem.n_arms)
    fresh.reset(recorder.problem, recorder.replicas, recorder.rng)
    for step, event in enumerate(recorder.events):
        if event[0] == "select":
            _, arms, rows = event
            again = np.asarray(fresh.select(stats))
            assert np.array_equal(again, arms), (
                f"{name}: replaying the history into a fresh instance selected {again.tolist()} "
                f"at event {step}, the original run {arms.tolist()}"
            )
            stats.dispatch(rows, arms[rows])
        else:
            _, rows, arms, rewards = event
            stats.observe(rows, arms, rewards)
            fresh.update(stats, rows, arms, rewards)
    for field in (*_FRAMEWORK_FIELDS, "active"):
        assert np.array_equal(getattr(stats, field), getattr(final, field)), (
            f"{name}: replaying the history into a fresh instance gave a different stats.{field}"
        )
    if recorder.problem.objective is not Objective.REGRET:
        assert np.array_equal(fresh.recommend(stats), recorder.recommend(final)), (
            f"{name}: replaying the history into a fresh instance gave a different recommendation"
        )


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
    return simulate_policy(
        (lambda: _Checked(policy)) if check else (lambda: policy),
        _source(n_arms, source),
        budget=budget,
        objective=objective,
        replicas=np.arange(6) if replicas is None else replicas,
        seed=seed,
        delay=delay,
        checkpoints=[budget // 2, budget],
        top_m=2,
        threshold=0.5,
        delta=0.1,
    )


def check_policy(
    policy_cls: type[Policy | ScalarPolicy],
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
    name = check_declaration(policy_cls, Policy)
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

    recorder = _Recorder(make())
    delayed = run_policy(recorder, delay=5, **kwargs)
    recorder.close(delayed.stats[0])
    assert (delayed.stats[0].pending == 0).all(), f"{name}: results still pending at the end"
    assert (delayed.dispatched <= budget).all(), f"{name}: used more than the budget with delayed feedback"
    delayed_alone = run_policy(make(), replicas=np.array([3]), delay=5, **kwargs)
    for a, b in zip(fingerprint(delayed), fingerprint(delayed_alone), strict=True):
        assert np.array_equal(a[3], b[0]), (
            f"{name}: with delayed feedback, replica 3 of a batch differs from replica 3 run alone"
        )
    _check_replay(make(), recorder, delayed.stats[0])
