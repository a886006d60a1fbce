"""The engine core: the decision state that Monte Carlo and live runs share.

A :class:`DecisionCore` holds, for ``R`` replicas of an experiment over ``B`` bandits, each
bandit's statistics (:class:`~armlab.stats.ArmStats`) and policy, the budget allocator, the
trials each replica has dispatched, the replicas that stopped, and which checkpoints each
replica has passed.  It knows nothing of where rewards come from or when they arrive:

* :meth:`choose` asks the allocator for a bandit and that bandit's policy for an arm;
* :meth:`dispatch`, :meth:`observe`, :meth:`record` and :meth:`release` apply what became of
  a trial (started; result arrived; started and observed at once; ended without a result);
* :meth:`due_checkpoints` says which checkpoints the replicas have just passed.

The Monte Carlo engine (:class:`~armlab.orchestrator.montecarlo.engine.Simulation`) drives it with
vectors of replicas, simulated rewards and a delay model; the live ask/tell state machine
(:class:`~armlab.orchestrator.live.experiment.LiveExperiment`) drives it with one replica whose results
come from the outside world.  So allocators, multi-bandit experiments, stopping rules and
checkpoints behave the same in both.

A **checkpoint** is a count of dispatched trials at which curves are recorded.  Checkpoint
``t`` of a replica is taken by the first call of :meth:`due_checkpoints` once the replica
has dispatched ``t`` trials; the last checkpoint (and any the replica can no longer reach
because it stopped) once the replica is done, i.e. dispatches nothing more and has no
result pending.  The Monte Carlo engine calls it at the end of every step, the live state
machine before each dispatch and when the run finishes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from armlab.plugins.interfaces import STOPPED, Allocator, Policy
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["Choice", "DecisionCore"]


@dataclass(slots=True)
class Choice:
    """What :meth:`DecisionCore.choose` decided for a set of replicas.

    ``chosen``: ``(bandit, rows, arms)`` groups to dispatch; ``stopped``: rows whose
    allocator answered :data:`STOPPED`; ``closing``: ``(bandit, rows)`` whose bandit's
    stopping rule answered :data:`STOPPED` (those rows dispatch nothing this time; with one
    bandit, closing it stops the replica).
    """

    chosen: list[tuple[int, np.ndarray, np.ndarray]]
    stopped: np.ndarray
    closing: list[tuple[int, np.ndarray]]


class DecisionCore:
    """Statistics, policies (one per bandit) and allocator of ``replicas`` (global ids).

    The budget counts a replica's trials over all its bandits.  ``policy_factory()`` makes
    one policy per bandit; each gets randomness keyed by (seed, bandit, replica, step) and the
    allocator by (seed, replica, step), so replica ``r`` behaves the same in any batch.
    """

    def __init__(
        self,
        *,
        policy_factory: Callable[[], Policy],
        problems: Sequence[Problem],
        allocator: Allocator,
        seed: int,
        replicas: np.ndarray,
        checkpoints: Sequence[int],
    ) -> None:
        self.replica_ids = np.asarray(replicas, dtype=np.int64)
        n = self.replica_ids.size
        self.problems = list(problems)
        self.budget = self.problems[0].budget
        self.stats = [ArmStats(n, p.n_arms) for p in self.problems]
        self.policies: list[Policy] = []
        for b, problem in enumerate(self.problems):
            policy = policy_factory()
            policy.reset(problem, n, KeyedRandom(seed, "policy", b, replicas=self.replica_ids))
            self.policies.append(policy)
        self.allocator = allocator
        allocator.reset(self.problems, n, KeyedRandom(seed, "allocator", replicas=self.replica_ids))
        self.dispatched = np.zeros(n, dtype=np.int64)
        self.stopped_at = np.full(n, -1, dtype=np.int64)  # trials dispatched when it stopped
        self.open = np.ones((n, len(self.problems)), dtype=bool)  # bandits still taking trials
        self.checkpoints = np.asarray(checkpoints, dtype=np.int64)
        self.next_checkpoint = np.zeros(n, dtype=np.int64)  # index of each replica's next one
        self._targets = np.append(self.checkpoints, np.iinfo(np.int64).max)
        self._lowest_target = int(self._targets[0])
        self._any_stopped = False
        self._no_rows = np.empty(0, dtype=np.int64)  # no rows stopped: shared, never written

    @property
    def multi_bandit(self) -> bool:
        return len(self.problems) > 1

    def may_dispatch(self) -> np.ndarray:
        """Replicas with budget left that have not stopped (in-flight limits are the driver's)."""
        return (self.stopped_at < 0) & (self.dispatched < self.budget)

    def done(self, in_flight: np.ndarray | int) -> np.ndarray:
        """Replicas that will dispatch nothing more and have no result pending."""
        return ((self.stopped_at >= 0) | (self.dispatched >= self.budget)) & (np.asarray(in_flight) == 0)

    # -- choosing ------------------------------------------------------------------------
    def choose(self, rows: np.ndarray) -> Choice:
        """The next trial of each of ``rows`` (see :class:`Choice`); nothing changes here.

        One bandit: its policy picks.  Several: the allocator picks each replica's bandit
        (and, for joint rules, the arm), the bandit's policy the arm.  A bandit whose
        stopping rule has stopped (:meth:`close`) takes no more trials: a replica the
        allocator sends there gets the open bandit with the fewest trials instead.  The
        caller applies what the choice says once it is recorded: :meth:`close` for
        ``closing``, :meth:`stop` for ``stopped``.
        """
        if not self.multi_bandit:
            chosen, stopped = self._policy_arms(0, rows, None)
            return Choice(chosen, self._no_rows, [(0, stopped)] if stopped.size else [])
        choice = self.allocator.select(self.stats)
        joint_arms = self.allocator.select_arms(self.stats, choice)
        choice = choice[rows]
        moved = np.zeros(rows.size, dtype=bool)
        if not self.open.all():
            choice, moved = self._avoid_closed(rows, choice)
        result = Choice([], rows[choice < 0], [])
        for b in np.unique(choice[choice >= 0]):
            in_b = choice == b
            for group, arms in ((in_b & ~moved, joint_arms), (in_b & moved, None)):  # moved: the policy picks
                if not group.any():
                    continue
                mine = rows[group]
                chosen, stopped = self._policy_arms(int(b), mine, None if arms is None else arms[mine])
                result.chosen += chosen
                result.closing += [(int(b), stopped)] if stopped.size else []
        return result

    def _avoid_closed(self, rows: np.ndarray, choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Send replicas whose chosen bandit is closed to their open bandit with the fewest
        trials (ties: the lowest index); returns the choice and which rows moved."""
        open_ = self.open[rows]
        moved = (choice >= 0) & ~open_[np.arange(rows.size), np.maximum(choice, 0)]
        if not moved.any():
            return choice, moved
        trials = np.stack([st.dispatched[rows] for st in self.stats], axis=1).astype(np.float64)
        trials[~open_] = np.inf
        choice = choice.copy()
        choice[moved] = np.argmin(trials[moved], axis=1)
        return choice, moved

    def _policy_arms(
        self, bandit: int, rows: np.ndarray, arms: np.ndarray | None
    ) -> tuple[list[tuple[int, np.ndarray, np.ndarray]], np.ndarray]:
        """``rows``' arms on ``bandit`` (the policy's where ``arms`` is None): the
        ``(bandit, rows, arms)`` groups to dispatch and the rows whose answer is STOPPED."""
        if arms is None:
            arms = self.policies[bandit].select(self.stats[bandit])
            if rows.size != arms.size:
                arms = arms[rows]
        stop = arms == STOPPED
        if not stop.any():
            return [(bandit, rows, arms)], self._no_rows
        go = ~stop
        return [(bandit, rows[go], arms[go])] if go.any() else [], rows[stop]

    def close(self, bandit: int, rows: np.ndarray) -> None:
        """Bandit ``bandit``'s stopping rule stopped for ``rows``: it takes no more of their
        trials; a replica whose every bandit is closed stops."""
        self.open[rows, bandit] = False
        self.stop(rows[~self.open[rows].any(axis=1)])

    def stop(self, rows: np.ndarray) -> None:
        """Stop ``rows`` for good (a stopping rule is confident, or the allocator is done)."""
        if rows.size:
            self.stopped_at[rows] = self.dispatched[rows]
            self._any_stopped = True

    # -- applying outcomes ---------------------------------------------------------------
    def dispatch(self, bandit: int, rows: np.ndarray, arms: np.ndarray) -> None:
        """Trials started (their results are pending); one row's (the live experiment's) by
        scalar indexing, the same count."""
        self.stats[bandit].dispatch(rows, arms)
        if len(rows) == 1:
            self.dispatched[rows[0]] += 1
        else:
            self.dispatched[rows] += 1

    def observe(self, bandit: int, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Results of pending trials arrived: statistics first, then policy and allocator."""
        self.stats[bandit].observe(rows, arms, rewards)
        self._updated(bandit, rows, arms, rewards)

    def record(self, bandit: int, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Trials started and observed at once (no delay): :meth:`dispatch` + :meth:`observe`."""
        self.stats[bandit].record(rows, arms, rewards)
        self.dispatched[rows] += 1
        self._updated(bandit, rows, arms, rewards)

    def release(self, bandit: int, rows: np.ndarray, arms: np.ndarray) -> None:
        """Pending trials ended without a result (failed, timed out, abandoned)."""
        self.stats[bandit].release(rows, arms)

    def _updated(self, bandit: int, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        self.policies[bandit].update(self.stats[bandit], rows, arms, rewards)
        self.allocator.update(bandit, self.stats, rows, arms, rewards)

    # -- answers and checkpoints ---------------------------------------------------------
    def recommend(self, bandit: int) -> np.ndarray:
        """Bandit ``bandit``'s current answer per replica (best arm ``(R,)`` or set ``(R, K)``)."""
        return self.policies[bandit].recommend(self.stats[bandit])

    @property
    def finished(self) -> bool:
        """Every replica has taken its last checkpoint."""
        return bool(self.next_checkpoint.min() >= self.checkpoints.size)

    def due_checkpoints(self, in_flight: np.ndarray | int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Take the checkpoints the replicas have passed: ``(rows, checkpoint indices)`` waves.

        A replica passes checkpoint ``t < budget`` once it has dispatched ``t`` trials; the
        remaining ones once it is done (see the module docstring).  Each wave holds at most
        one checkpoint per replica, in order, so the caller records them in order.
        """
        most = self.dispatched[0] if self.dispatched.size == 1 else self.dispatched.max()  # one replica: no reduction
        if not self._any_stopped and most < self._lowest_target:
            return []  # nobody reached a checkpoint or stopped: the common case, kept cheap
        waves = []
        done = self.done(in_flight)
        while True:
            target = self._targets[self.next_checkpoint]
            reached = (self.dispatched >= target) & ((target < self.budget) | done)
            hit = (reached | done) & (self.next_checkpoint < self.checkpoints.size)
            if not hit.any():
                return waves
            rows = np.flatnonzero(hit)
            waves.append((rows, self.next_checkpoint[rows].copy()))
            self.next_checkpoint[rows] += 1
            self._lowest_target = int(self._targets[self.next_checkpoint].min())
