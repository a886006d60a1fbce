"""The conformance check of budget allocators (:class:`~armlab.Allocator` plugins).

An allocator decides, when several bandits share one budget, which bandit each replica
pulls next (and, for joint rules, which arm).  Both engines call it through the same core:
the Monte Carlo :class:`~armlab.orchestrator.montecarlo.engine.Simulation` for R replicas at once, the
live ask/tell :class:`~armlab.orchestrator.live.experiment.LiveExperiment` for one.  :func:`check_allocator`
runs it in both on small Bernoulli bandits and checks every answer it gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from armlab.config import FeedbackConfig
from armlab.multibandit import BanditProblem
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.types import NoTrialAvailable
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.interfaces import STOPPED, Allocator, Policy, RewardSource
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.sources.simulated import Bernoulli
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats
from armlab.testing._plugin import check_declaration

__all__ = ["check_allocator"]

#: Arms of the checked bandits, by bandit number (cycled): unequal, so a mix-up shows.
_ARMS = (4, 3, 5)
_FIELDS = ("counts", "means", "m2", "pending", "dispatched", "observed", "active")


class _Checked(Allocator):
    """Delegates to an allocator and asserts the shape and range of every answer, that it
    repeats itself without new data, and that it leaves the statistics alone."""

    name = "_checked"

    def __init__(self, inner: Allocator) -> None:
        super().__init__()
        self.inner = inner

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        super().reset(problems, replicas, rng)
        self.inner.reset(problems, replicas, rng)

    def select(self, stats: list[ArmStats]) -> np.ndarray:
        name, b = self.inner.name, len(stats)
        before = _snapshot(stats)
        bandits = np.asarray(self.inner.select(stats))
        assert bandits.shape == (self.replicas,), (
            f"{name}.select returned shape {bandits.shape}, expected one bandit per replica ({self.replicas},)"
        )
        assert np.issubdtype(bandits.dtype, np.integer), f"{name}.select returned dtype {bandits.dtype}, expected int64"
        bad = (bandits != STOPPED) & ((bandits < 0) | (bandits >= b))
        assert not bad.any(), (
            f"{name}.select returned bandits {bandits[bad][:5].tolist()}: the experiment has {b} bandits, "
            f"numbered 0..{b - 1} (STOPPED = {STOPPED} stops a replica)"
        )
        again = np.asarray(self.inner.select(stats))
        assert np.array_equal(bandits, again), (
            f"{name}.select is not repeatable: called again without new data it gave other bandits; keep state "
            "changes in update() and key random draws by the replica's trial count"
        )
        _assert_unchanged(before, stats, f"{name}.select")
        return bandits

    def select_arms(self, stats: list[ArmStats], bandits: np.ndarray) -> np.ndarray | None:
        name = self.inner.name
        arms = self.inner.select_arms(stats, bandits)
        if arms is None:
            return None
        arms = np.asarray(arms)
        assert arms.shape == bandits.shape and np.issubdtype(arms.dtype, np.integer), (
            f"{name}.select_arms returned {arms.shape} {arms.dtype}, expected None or int64 arms {bandits.shape}"
        )
        rows = np.flatnonzero(bandits >= 0)
        n_arms = np.array([st.n_arms for st in stats])[bandits[rows]]
        bad = (arms[rows] < 0) | (arms[rows] >= n_arms)
        assert not bad.any(), (
            f"{name}.select_arms returned arm {arms[rows][bad][0]} for a bandit with {n_arms[bad][0]} arms "
            "(arms count from 0 within the chosen bandit)"
        )
        again = self.inner.select_arms(stats, bandits)
        assert again is not None and np.array_equal(arms, again), f"{name}.select_arms is not repeatable"
        return arms

    def update(self, bandit, stats, rows, arms, rewards) -> None:
        before = _snapshot(stats)
        self.inner.update(bandit, stats, rows, arms, rewards)
        _assert_unchanged(before, stats, f"{self.inner.name}.update")


def _snapshot(stats: list[ArmStats]) -> list[list[np.ndarray]]:
    return [[getattr(st, f).copy() for f in _FIELDS] for st in stats]


def _assert_unchanged(before: list[list[np.ndarray]], stats: list[ArmStats], where: str) -> None:
    for b, (old, st) in enumerate(zip(before, stats, strict=True)):
        for field, value in zip(_FIELDS, old, strict=True):
            assert np.array_equal(value, getattr(st, field)), (
                f"{where} changed stats[{b}].{field}; the statistics belong to armlab, an allocator only reads them"
            )


class _Recording:
    """A simulated source that remembers each (bandit, arm, reward) it hands out, in order."""

    def __init__(self, source: RewardSource, bandit: int, log: list[tuple[int, int, float]]) -> None:
        self.source, self.bandit, self.log = source, bandit, log

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)

    def sample(self, rows: np.ndarray, arms: np.ndarray, pulls: np.ndarray) -> np.ndarray:
        rewards = self.source.sample(rows, arms, pulls)
        self.log += [(self.bandit, int(a), float(x)) for a, x in zip(arms, rewards, strict=True)]
        return rewards


def _bandits(n_bandits: int, replicas: np.ndarray, seed: int, objective: Objective, budget: int):
    """Bernoulli bandits (arms 4, 3, 5, ...; arm 0 best, each bandit a little harder) reset for
    ``replicas``, and their problems (target arm 0, top-m with m = 2, threshold 0.5)."""
    sources, problems = [], []
    for b in range(n_bandits):
        k = _ARMS[b % len(_ARMS)]
        source = Bernoulli({"means": np.round(np.linspace(0.8 - 0.05 * b, 0.2, k), 4).tolist()})
        source.reset(replicas, seed, b)
        sources.append(source)
        problems.append(BanditProblem(
            objective=objective, budget=budget, n_arms=k, top_m=2 if objective is Objective.TOP_M else 1,
            threshold=0.5, delta=0.1, truth=source.truth, source=source.name,
            reward_range=source.reward_range, target_arm=0,
        ))
    return sources, problems


def check_allocator(
    allocator_cls: type[Allocator],
    params: Mapping[str, Any] | None = None,
    *,
    n_bandits: int = 3,
    policy: Callable[[], Policy] = Uniform,
    objective: Objective | str = Objective.BEST_ARM,
    budget: int = 150,
    seed: int = 7,
) -> None:
    """Assert that ``allocator_cls`` meets armlab's allocator contract (raises AssertionError).

    ``params`` are the plugin parameters to test with; the bandits are ``n_bandits`` small
    Bernoulli bandits (4, 3, 5, ... arms, arm 0 best and each bandit's target arm) sharing
    ``budget`` trials, each run by ``policy()`` (default: the built-in ``uniform``).
    Checked, on every call of a Monte Carlo run: ``select`` returns an int64 array of one
    bandit per replica in ``0 .. B-1`` or ``STOPPED``, the same again without new data;
    ``select_arms`` returns ``None`` or valid arms of the chosen bandits; the statistics are
    left alone.  Then: the same seed gives the same run; replica 3 of a batch equals replica
    3 run alone, with and without delayed feedback; and a live ask/tell run of one replica
    given the simulated rewards makes the Monte Carlo engine's choices at R = 1.
    """
    name = check_declaration(allocator_cls, Allocator)
    objective = Objective(objective)

    def make() -> Allocator:
        return allocator_cls(allocator_cls.Params.model_validate(dict(params or {})))

    def simulate(replicas: np.ndarray, delay: int = 0, log: list | None = None) -> Simulation:
        sources, problems = _bandits(n_bandits, replicas, seed, objective, budget)
        if log is not None:
            sources = [_Recording(s, b, log) for b, s in enumerate(sources)]
        sim = Simulation(policy_factory=policy, sources=sources, problems=problems, allocator=_Checked(make()),
                         feedback=FeedbackConfig(delay=delay), seed=seed, replicas=replicas,
                         checkpoints=[budget // 2, budget])
        while not sim.finished:
            sim.step()
        return sim

    def fingerprint(sim: Simulation) -> list[np.ndarray]:
        return [*(st.counts for st in sim.stats), *(st.means for st in sim.stats), sim.stopped_at, sim.dispatched]

    batch = np.arange(6)
    first, second = simulate(batch), simulate(batch)
    for a, b in zip(fingerprint(first), fingerprint(second), strict=True):
        assert np.array_equal(a, b), (
            f"{name}: the same seed gave different runs; draw random numbers only from the rng given to reset()"
        )
    assert (first.dispatched <= budget).all(), f"{name}: the replicas used more than the budget"
    for delay in (0, 3):
        together = first if delay == 0 else simulate(batch, delay)
        alone = simulate(np.array([3]), delay)
        for a, b in zip(fingerprint(together), fingerprint(alone), strict=True):
            assert np.array_equal(a[3], b[0]), (
                f"{name}: replica 3 of a batch differs from replica 3 run alone (delay {delay}); decide each "
                "replica from its own row of the statistics, and key random draws by replica and trial count"
            )
    _check_live_run(name, make, policy, n_bandits, seed, objective, budget, simulate)


def _check_live_run(name, make, policy, n_bandits, seed, objective, budget, simulate) -> None:
    """A live run of replica 0, given the rewards the simulation drew, makes its choices."""
    one = np.zeros(1, dtype=np.int64)
    simulated: list[tuple[int, int, float]] = []
    sim = simulate(one, log=simulated)
    sources, problems = _bandits(n_bandits, one, seed, objective, budget)
    live = LiveExperiment(policy, problems, seed, allocator=_Checked(make()), checkpoints=[budget // 2, budget])
    asked = []
    while live.state.value == "running":
        try:
            trial = live.ask()
        except NoTrialAvailable:  # a stopping rule or the allocator stopped: the state says so
            break
        reward = float(sources[trial.bandit].sample(one, np.array([trial.arm]), np.array([trial.pull]))[0])
        asked.append((trial.bandit, trial.arm, reward))
        live.tell(trial.id, reward)
    assert asked, f"{name}: the live run dispatched no trial"
    assert asked == simulated, (
        f"{name}: a live run given the same rewards chose differently from the Monte Carlo engine at R = 1 "
        f"(first difference at trial {next((i for i, (a, s) in enumerate(zip(asked, simulated)) if a != s), len(asked))}); "
        "the allocator must depend only on its rng, the problems and the statistics it is given"
    )
    for b in range(n_bandits):
        assert np.array_equal(live.core.stats[b].counts, sim.stats[b].counts), (
            f"{name}: the live run ended with other counts of bandit {b} than the Monte Carlo engine"
        )
