"""The plugin contracts: policies, reward sources, budget allocators and result sinks.

Every plugin class declares its name once (``name``) and carries its own frozen pydantic
parameter model (``Params``) that rejects unknown fields.  Policies and allocators are
vectorized over replicas: they read :class:`~armlab.stats.ArmStats` arrays of shape ``(R, K)``
and return one decision per replica.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from armlab.plugins.propensity import Propensities, generic_propensities
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom, counter_uniforms, replica_keys, subkeys
from armlab.stats import ArmStats

__all__ = [
    "STOPPED",
    "Allocator",
    "PluginParams",
    "Policy",
    "ResultSink",
    "RewardSource",
    "SimulatedRun",
    "StepObserver",
]

#: Returned by ``Policy.select`` for a replica that has nothing left to pull.
STOPPED = -1

ALL_OBJECTIVES = frozenset(Objective)


class PluginParams(BaseModel):
    """Base of every plugin's parameter model: immutable, unknown fields rejected, and only
    finite numbers (TOML's ``nan`` and ``inf`` would run and report meaningless results)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Plugin:
    """What all plugin kinds share: a name and a parameter model."""

    name: ClassVar[str]
    Params: ClassVar[type[PluginParams]] = PluginParams

    def __init__(self, params: PluginParams | Mapping[str, Any] | None = None) -> None:
        if params is None or isinstance(params, Mapping):
            params = self.Params.model_validate(dict(params or {}))
        self.params = params

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.params.model_dump().items())
        return f"{type(self).__name__}({fields})"


class Policy(Plugin, ABC):
    """A bandit algorithm vectorized over ``R`` replicas.

    The framework calls :meth:`reset` once per run, then repeatedly :meth:`select` (one arm
    per replica), and :meth:`update` whenever results arrive (after the statistics already
    include them).  ``select`` must depend only on the policy's state and ``stats``: it may
    be called for replicas that are not dispatched (several bandits), and must return the
    same arms when called twice without new observations or dispatches.
    """

    #: Objectives this policy can serve; the config validator checks it.
    objectives: ClassVar[frozenset[Objective]] = ALL_OBJECTIVES
    #: True for fixed-confidence rules: STOPPED then means "confident", and summaries
    #: report stopping times (the budget is only a cap).
    stopping_rule: ClassVar[bool] = False
    #: True when :meth:`select` never picks an arm whose ``stats.active`` entry is False, so
    #: a live run may retire arms (``POST /retire``); a conformance test checks the claim.
    honours_inactive_arms: ClassVar[bool] = False

    problem: Problem
    replicas: int
    rng: KeyedRandom

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        """Prepare state for ``replicas`` independent runs of ``problem``."""
        self.problem = problem
        self.replicas = replicas
        self.rng = rng

    @abstractmethod
    def select(self, stats: ArmStats) -> np.ndarray:
        """Return an ``int64`` array ``(R,)`` of arms, or :data:`STOPPED` where done."""

    def update(
        self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray
    ) -> None:
        """React to results for replicas ``rows`` (unique) that ``stats`` already holds."""

    def choice_holds(self, stats: ArmStats) -> bool:
        """Whether :meth:`select` returns the same arms after any number of dispatches with
        nothing else changed in between (no result, no retirement): it reads neither the
        pending pulls nor per-call randomness at ``stats``.  A live batch of asks then selects
        once for all of them.  False (select at every ask) unless a policy knows it is true;
        a contract test checks every policy that says so."""
        return False

    def propensities(self, stats: ArmStats, chosen: np.ndarray | None = None) -> Propensities:
        """The probability ``(R, K)`` that the next :meth:`select` returns each arm, given
        ``stats``, and ``None`` if exact or the number of draws that estimated it
        (:mod:`armlab.plugins.propensity`).  Live runs record it at each dispatch.
        ``chosen``, when given, is what :meth:`select` just returned for these ``stats``: a
        policy that needs its own choice takes it from there instead of selecting again.

        The default is exact for a deterministic ``select``, estimated from draws of the
        policy's keyed randomness otherwise, and unknown (``(None, None)``) for a policy that
        keeps a generator besides ``rng``.  A policy with a closed form overrides it.
        """
        return generic_propensities(self, stats)

    def recommend(self, stats: ArmStats) -> np.ndarray:
        """Current answer per replica: best arm ``(R,)`` or a set as a boolean ``(R, K)``.

        The default ranks arms by empirical mean (unpulled arms rank last, and count as
        below the threshold).  Policies with their own output rule override this.
        """
        return empirical_recommendation(self.problem, stats)


def empirical_recommendation(problem: Problem, stats: ArmStats) -> np.ndarray:
    """Answer of the plug-in rule: rank observed means; unobserved arms never qualify."""
    seen = stats.counts > 0
    if problem.objective is Objective.THRESHOLD:
        assert problem.threshold is not None
        return seen & (stats.means >= problem.threshold)
    ranked = np.where(seen, stats.means, -np.inf)
    if problem.objective is Objective.TOP_M:
        order = np.argsort(-ranked, axis=1, kind="stable")[:, : problem.top_m]
        chosen = np.zeros(ranked.shape, dtype=bool)
        np.put_along_axis(chosen, order, True, axis=1)
        return chosen
    return np.argmax(ranked, axis=1)


class RewardSource(Plugin, ABC):
    """A simulated bandit: rewards are a pure function of (seed, replica, bandit, arm, pull).

    Subclasses implement :meth:`truth_for` (true means and variances per replica) and
    :meth:`rewards_from_uniforms`; the base class turns the key into uniforms.
    """

    #: Support of the rewards; policies with a bounded-reward model check it.
    reward_range: ClassVar[tuple[float, float]] = (-float("inf"), float("inf"))
    #: Whether rewards come from the outside world (:class:`armlab.adapters.LiveSource` says
    #: ``True``); the registry and the config rules ask the class, not its ancestry.
    live: ClassVar[bool] = False

    @property
    @abstractmethod
    def n_arms(self) -> int:
        """Number of arms."""

    def reset(self, replicas: np.ndarray, seed: int, bandit: int = 0) -> None:
        """Prepare ``replicas`` (global replica ids) of bandit number ``bandit``."""
        self.replica_ids = np.asarray(replicas, dtype=np.int64)
        self._flat_keys = subkeys(replica_keys(self.replica_ids, seed, "reward", bandit), self.n_arms).reshape(-1)
        self._truth = self.truth_for(KeyedRandom(seed, "truth", bandit, replicas=self.replica_ids))

    @abstractmethod
    def truth_for(self, rng: KeyedRandom) -> Truth:
        """True means and variances ``(R, K)``; ``rng`` draws per-replica instances."""

    @property
    def truth(self) -> Truth:
        """True means and variances of the replicas prepared by :meth:`reset`."""
        return self._truth

    def uniforms(self, rows: np.ndarray, arms: np.ndarray, pulls: np.ndarray) -> np.ndarray:
        """The uniform in (0, 1) behind pull number ``pulls`` (0-based) of each arm."""
        return counter_uniforms(self._flat_keys[rows * self.n_arms + arms], pulls)

    def sample(self, rows: np.ndarray, arms: np.ndarray, pulls: np.ndarray) -> np.ndarray:
        """Rewards of the ``pulls``-th pull of ``arms`` for replicas ``rows``."""
        return self.rewards_from_uniforms(rows, arms, self.uniforms(rows, arms, pulls))

    @abstractmethod
    def rewards_from_uniforms(
        self, rows: np.ndarray, arms: np.ndarray, u: np.ndarray
    ) -> np.ndarray:
        """Map uniforms to rewards (inverse CDF or comparison), vectorized."""


class Allocator(Plugin, ABC):
    """Chooses which bandit each replica pulls next when several bandits share a budget."""

    problems: list[Problem]

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        """Prepare state for ``replicas`` runs over the bandits described by ``problems``."""
        self.problems = problems
        self.replicas = replicas
        self.rng = rng

    @abstractmethod
    def select(self, stats: list[ArmStats]) -> np.ndarray:
        """Return the bandit index ``(R,)`` per replica, or :data:`STOPPED` where done."""

    def select_arms(self, stats: list[ArmStats], bandits: np.ndarray) -> np.ndarray | None:
        """Joint rules only: the arm ``(R,)`` to pull in each replica's chosen bandit.

        The engine calls this right after :meth:`select`, with its result ``bandits``.  The
        default returns ``None``: each bandit's policy then picks the arm (the usual split
        of the greedy-confidence-pursuit paper: the allocator picks the bandit, the policy the arm).  An allocator that
        ranks (bandit, arm) pairs jointly, like GapE-V over all arms of all bandits, returns
        the arms of the pairs it chose (entries of :data:`STOPPED` replicas are ignored).
        The bandits' policies still answer ``recommend`` and receive ``update``.
        """
        return None

    def update(
        self,
        bandit: int,
        stats: list[ArmStats],
        rows: np.ndarray,
        arms: np.ndarray,
        rewards: np.ndarray,
    ) -> None:
        """React to results of bandit ``bandit`` (statistics already updated)."""


class ResultSink(Plugin, ABC):
    """Writes a finished experiment's summary somewhere (a file format, a database...)."""

    @abstractmethod
    def write(self, summary: Mapping[str, Any], out_dir: Path) -> Path:
        """Persist ``summary`` under ``out_dir``; return the path written."""


class SimulatedRun(Protocol):
    """What a step observer reads of a simulated run after each step (the Monte Carlo
    engine's ``Simulation`` is one): the replicas, the bandits and their statistics."""

    @property
    def replica_ids(self) -> np.ndarray:
        """Global replica ids ``(R,)`` of this block of replicas."""

    @property
    def problems(self) -> list[Problem]:
        """One problem (with truth) per bandit."""

    @property
    def budget(self) -> int:
        """Trials per replica."""

    @property
    def stats(self) -> list[ArmStats]:
        """One ``(R, K)`` statistics object per bandit."""

    @property
    def dispatched(self) -> np.ndarray:
        """Trials dispatched ``(R,)`` per replica, over every bandit."""

    @property
    def checkpoints(self) -> np.ndarray:
        """The trial counts at which curves are recorded."""


class StepObserver(Protocol):
    """Extra metrics computed along a run (e.g. a confidence bound tracked every step),
    returned by the ``armlab_step_observers`` hook."""

    def after_step(self, sim: SimulatedRun) -> None:
        """Called at the end of every simulated step (after results were observed)."""

    def summary(self) -> dict[str, Any]:
        """JSON-ready entries merged into the policy's summary."""
