"""The vectorized Monte Carlo engine: one policy, R replicas, B bandits, simulated time.

A :class:`Simulation` is the shared engine core (:class:`~armlab.orchestrator.core.DecisionCore`)
driven by simulated sources.  Each call to :meth:`Simulation.step` is one step of simulated
time: every replica that may dispatch (budget left, not stopped, fewer than ``in_flight``
trials pending) gets a bandit and an arm from the core; the sources return the rewards at
once; the delay model decides when they become visible; results due by the end of the step
are applied to the core; then the checkpoints the replicas have passed are recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from armlab.config import FeedbackConfig
from armlab.orchestrator.core import DecisionCore
from armlab.orchestrator.montecarlo.delays import DelayModel, PendingLedger
from armlab.orchestrator.montecarlo.metrics import recommendation_errors
from armlab.plugins.interfaces import Allocator, Policy, RewardSource, StepObserver
from armlab.problem import Objective, Problem
from armlab.stats import ArmStats

__all__ = ["Simulation", "StepObserver"]


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint every replica has passed: its index and trial count."""

    index: int
    trials: int


class Simulation:
    """Run one policy (an instance per bandit) on simulated sources for a block of replicas.

    ``sources`` must already be reset for ``replicas`` (global replica ids); ``problems``
    are the matching per-bandit problems with truth.
    """

    def __init__(
        self,
        *,
        policy_factory: Callable[[], Policy],
        sources: list[RewardSource],
        problems: list[Problem],
        allocator: Allocator,
        feedback: FeedbackConfig,
        seed: int,
        replicas: np.ndarray,
        checkpoints: list[int],
        observers: Sequence[StepObserver] = (),
    ) -> None:
        self.core = DecisionCore(
            policy_factory=policy_factory, problems=problems, allocator=allocator, seed=seed,
            replicas=replicas, checkpoints=checkpoints,
        )
        self.observers = list(observers)
        self.sources = sources
        self.objective = problems[0].objective
        n = self.core.replica_ids.size
        self._flat_gaps = [p.truth.gaps().reshape(-1) for p in problems]  # type: ignore[union-attr]
        self.delay = DelayModel(feedback, seed, self.core.replica_ids)
        self.in_flight_limit = feedback.effective_in_flight
        self.ledger = None if self.delay.immediate else PendingLedger(n, self.in_flight_limit)
        self.step_index = 0
        self.regret = np.zeros(n)
        self.cp_regret = np.zeros((n, self.core.checkpoints.size))
        self.cp_error = np.zeros((n, self.core.checkpoints.size))
        self._all_rows = np.arange(n)
        self._none_in_flight = np.zeros_like(self.core.dispatched)
        self._none_in_flight.flags.writeable = False
        self._completed_cp = 0

    def __repr__(self) -> str:
        return (
            f"Simulation(replicas={self.replica_ids.size}, bandits={len(self.problems)}, "
            f"step={self.step_index}, trials={int(self.dispatched.sum())})"
        )

    # -- state (the core's, named as step observers and summaries read it) ----------------
    @property
    def replica_ids(self) -> np.ndarray:
        return self.core.replica_ids

    @property
    def problems(self) -> list[Problem]:
        return self.core.problems

    @property
    def budget(self) -> int:
        return self.core.budget

    @property
    def stats(self) -> list[ArmStats]:
        return self.core.stats

    @property
    def policies(self) -> list[Policy]:
        return self.core.policies

    @property
    def allocator(self) -> Allocator:
        return self.core.allocator

    @property
    def dispatched(self) -> np.ndarray:
        return self.core.dispatched

    @property
    def stopped_at(self) -> np.ndarray:
        return self.core.stopped_at

    @property
    def checkpoints(self) -> np.ndarray:
        return self.core.checkpoints

    @property
    def in_flight(self) -> np.ndarray:
        """Trials in flight per replica (read-only: without a delay model, one array of zeros)."""
        if self.ledger is None:
            return self._none_in_flight
        return self.ledger.in_flight

    @property
    def done(self) -> np.ndarray:
        """Replicas with nothing left to dispatch and nothing pending."""
        return self.core.done(self.in_flight)

    @property
    def finished(self) -> bool:
        return self.core.finished

    # -- one step ----------------------------------------------------------------------
    def step(self) -> list[Checkpoint]:
        """Advance simulated time by one step; return checkpoints every replica has passed."""
        core = self.core
        may = core.may_dispatch()
        if self.ledger is not None:
            may &= self.ledger.in_flight < self.in_flight_limit
        rows = self._all_rows if may.all() else np.flatnonzero(may)
        if rows.size:
            choice = core.choose(rows)
            core.stop(choice.stopped)
            for bandit, closed_rows in choice.closing:
                core.close(bandit, closed_rows)
            for bandit, picked, arms in choice.chosen:
                self._dispatch(bandit, picked, arms)
        if self.ledger is not None:
            for bandit, r, arms, rewards in self.ledger.release(self.step_index):
                core.observe(bandit, r, arms, rewards)
        waves = core.due_checkpoints(self.in_flight)
        for wave_rows, index in waves:
            self._record(wave_rows, index)
        for observer in self.observers:
            observer.after_step(self)
        self.step_index += 1
        return self._newly_completed() if waves else []  # no wave: no replica passed one

    def _dispatch(self, bandit: int, rows: np.ndarray, arms: np.ndarray) -> None:
        """Start one trial on ``bandit`` for each of ``rows``: sample now, show now or later."""
        core = self.core
        st = core.stats[bandit]
        flat = st.flat_index(rows, arms)
        rewards = self.sources[bandit].sample(rows, arms, st.pulls_at(flat))
        self.regret[rows] += self._flat_gaps[bandit][flat]
        if self.ledger is None:
            core.record(bandit, rows, arms, rewards)
        else:
            core.dispatch(bandit, rows, arms)
            due = self.delay.due(self.step_index, rows, core.dispatched[rows] - 1)
            self.ledger.push(rows, bandit, arms, rewards, due)

    # -- checkpoints -------------------------------------------------------------------
    def _record(self, rows: np.ndarray, index: np.ndarray) -> None:
        self.cp_regret[rows, index] = self.regret[rows]
        if self.objective is Objective.REGRET:
            return
        wrong = np.zeros(rows.size)
        for bandit, problem in enumerate(self.problems):
            answer = self.core.recommend(bandit)[rows]
            wrong += recommendation_errors(problem, rows, answer)
        self.cp_error[rows, index] = wrong / len(self.problems)

    def _newly_completed(self) -> list[Checkpoint]:
        lowest = int(self.core.next_checkpoint.min())
        fresh = [Checkpoint(i, int(self.checkpoints[i])) for i in range(self._completed_cp, lowest)]
        self._completed_cp = lowest
        return fresh
