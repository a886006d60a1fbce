"""The vectorized Monte Carlo engine: one policy, R replicas, B bandits, simulated time.

Each call to :meth:`Simulation.step` is one step of simulated time: every replica that may
dispatch (budget left, not stopped, fewer than ``in_flight`` trials pending) gets a bandit
from the allocator and an arm from that bandit's policy (or from the allocator itself when
it chooses (bandit, arm) pairs jointly, :meth:`Allocator.select_arms`); the source returns
the rewards at once; the delay model decides when they become visible; results due by the
end of the step are folded into the statistics and shown to the policy and the allocator.
The budget counts a replica's trials over all its bandits.  Checkpoints are taken per
replica when its trial count reaches them (the last one once all its results are in).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from armlab.config import FeedbackConfig
from armlab.orchestrator.heap import reserve_heap_headroom
from armlab.orchestrator.ledger import DelayModel, PendingLedger
from armlab.orchestrator.metrics import recommendation_errors
from armlab.plugins.interfaces import Allocator, Policy, RewardSource
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["Simulation", "StepObserver"]


class StepObserver(Protocol):
    """Extra metrics computed along a run (e.g. a confidence bound tracked every step)."""

    def after_step(self, sim: Simulation) -> None:
        """Called at the end of every simulated step (after results were observed)."""

    def summary(self) -> dict[str, Any]:
        """JSON-ready entries merged into the policy's summary."""


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
        reserve_heap_headroom()
        self.observers = list(observers)
        self.replica_ids = np.asarray(replicas, dtype=np.int64)
        n = self.replica_ids.size
        self.sources = sources
        self.problems = problems
        self.budget = problems[0].budget
        self.objective = problems[0].objective
        self.stats = [ArmStats(n, p.n_arms) for p in problems]
        self.policies = []
        for b, problem in enumerate(problems):
            policy = policy_factory()
            policy.reset(problem, n, KeyedRandom(seed, "policy", b, replicas=self.replica_ids))
            self.policies.append(policy)
        self.allocator = allocator
        allocator.reset(problems, n, KeyedRandom(seed, "allocator", replicas=self.replica_ids))
        self._flat_gaps = [p.truth.gaps().reshape(-1) for p in problems]  # type: ignore[union-attr]
        self.delay = DelayModel(feedback, seed, self.replica_ids)
        self.in_flight_limit = feedback.effective_in_flight
        self.ledger = None if self.delay.immediate else PendingLedger(n, self.in_flight_limit)
        self.step_index = 0
        self.dispatched = np.zeros(n, dtype=np.int64)
        self.regret = np.zeros(n)
        self.stopped_at = np.full(n, -1, dtype=np.int64)
        self.checkpoints = np.asarray(checkpoints, dtype=np.int64)
        self._next_cp = np.zeros(n, dtype=np.int64)
        self._cp_with_sentinel = np.append(self.checkpoints, np.iinfo(np.int64).max)
        self.cp_regret = np.zeros((n, self.checkpoints.size))
        self.cp_error = np.zeros((n, self.checkpoints.size))
        self._all_rows = np.arange(n)
        self._completed_cp = 0
        self._any_stopped = False
        self._min_target = int(self.checkpoints[0])

    def __repr__(self) -> str:
        return (
            f"Simulation(replicas={self.replica_ids.size}, bandits={len(self.problems)}, "
            f"step={self.step_index}, trials={int(self.dispatched.sum())})"
        )

    # -- state -------------------------------------------------------------------------
    @property
    def in_flight(self) -> np.ndarray:
        if self.ledger is None:
            return np.zeros_like(self.dispatched)
        return self.ledger.in_flight

    @property
    def done(self) -> np.ndarray:
        """Replicas with nothing left to dispatch and nothing pending."""
        return ((self.stopped_at >= 0) | (self.dispatched >= self.budget)) & (self.in_flight == 0)

    @property
    def finished(self) -> bool:
        return bool(self._next_cp.min() >= self.checkpoints.size)

    # -- one step ----------------------------------------------------------------------
    def step(self) -> list[Checkpoint]:
        """Advance simulated time by one step; return checkpoints every replica has passed."""
        may = (self.stopped_at < 0) & (self.dispatched < self.budget)
        if self.ledger is not None:
            may &= self.ledger.in_flight < self.in_flight_limit
        rows = self._all_rows if may.all() else np.flatnonzero(may)
        if rows.size:
            if len(self.problems) == 1:
                self._dispatch(0, rows)
            else:
                self._dispatch_bandits(rows)
        if self.ledger is not None:
            for bandit, r, arms, rewards in self.ledger.release(self.step_index):
                self._observe(bandit, r, arms, rewards)
        self._take_checkpoints()
        for observer in self.observers:
            observer.after_step(self)
        self.step_index += 1
        return self._newly_completed()

    def _dispatch_bandits(self, rows: np.ndarray) -> None:
        """The allocator picks each replica's bandit (and, for joint rules, its arm)."""
        choice = self.allocator.select(self.stats)
        joint_arms = self.allocator.select_arms(self.stats, choice)
        choice = choice[rows]
        self._stop(rows[choice < 0])
        for b in np.unique(choice[choice >= 0]):
            mine = rows[choice == b]
            self._dispatch(int(b), mine, None if joint_arms is None else joint_arms[mine])

    def _stop(self, rows: np.ndarray) -> None:
        self.stopped_at[rows] = self.dispatched[rows]
        self._any_stopped = True

    def _dispatch(self, bandit: int, rows: np.ndarray, arms: np.ndarray | None = None) -> None:
        """Start one trial on ``bandit`` for each of ``rows``; ``arms`` default to the policy's."""
        if rows.size == 0:
            return
        st = self.stats[bandit]
        if arms is None:
            arms = self.policies[bandit].select(st)
            if rows.size != arms.size:
                arms = arms[rows]
        stop = arms < 0
        if stop.any():
            self._stop(rows[stop])
            rows, arms = rows[~stop], arms[~stop]
        flat = st.flat_index(rows, arms)
        rewards = self.sources[bandit].sample(rows, arms, st.pulls_at(flat))
        self.regret[rows] += self._flat_gaps[bandit][flat]
        self.dispatched[rows] += 1
        if self.ledger is None:
            st.record(rows, arms, rewards)
            self._after_observation(bandit, rows, arms, rewards)
        else:
            st.dispatch(rows, arms)
            due = self.delay.due(self.step_index, rows, self.dispatched[rows] - 1)
            self.ledger.push(rows, bandit, arms, rewards, due)

    def _observe(self, bandit: int, rows, arms, rewards) -> None:
        self.stats[bandit].observe(rows, arms, rewards)
        self._after_observation(bandit, rows, arms, rewards)

    def _after_observation(self, bandit: int, rows, arms, rewards) -> None:
        self.policies[bandit].update(self.stats[bandit], rows, arms, rewards)
        self.allocator.update(bandit, self.stats, rows, arms, rewards)

    # -- checkpoints -------------------------------------------------------------------
    def _take_checkpoints(self) -> None:
        if not self._any_stopped and self.dispatched.max() < self._min_target:
            return  # nobody reached a checkpoint or finished: the common case, kept cheap
        while True:
            target = self._cp_with_sentinel[self._next_cp]
            done = self.done
            reached = (self.dispatched >= target) & ((target < self.budget) | done)
            hit = (reached | done) & (self._next_cp < self.checkpoints.size)
            if not hit.any():
                return
            rows = np.flatnonzero(hit)
            self._record(rows, self._next_cp[rows])
            self._next_cp[rows] += 1
            self._min_target = int(self._cp_with_sentinel[self._next_cp].min())

    def _record(self, rows: np.ndarray, index: np.ndarray) -> None:
        self.cp_regret[rows, index] = self.regret[rows]
        if self.objective is Objective.REGRET:
            return
        wrong = np.zeros(rows.size)
        for bandit, problem in enumerate(self.problems):
            answer = self.policies[bandit].recommend(self.stats[bandit])[rows]
            wrong += recommendation_errors(problem, rows, answer)
        self.cp_error[rows, index] = wrong / len(self.problems)

    def _newly_completed(self) -> list[Checkpoint]:
        lowest = int(self._next_cp.min())
        fresh = [Checkpoint(i, int(self.checkpoints[i])) for i in range(self._completed_cp, lowest)]
        self._completed_cp = lowest
        return fresh
