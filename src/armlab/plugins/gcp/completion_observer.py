"""Multi-bandit metrics of greedy confidence pursuit (the paper's Figs. 4-5): bandits completed.

:class:`BanditCompletionObserver` is the engine step observer every multi-bandit run gets
(from this package's ``armlab_step_observers``).  After every trial of a replica it records,
for each of its bandits, the eq. (3) confidence bound ``rho``
(:class:`armlab.plugins.gcp.tracking.ConfidenceTracker`, refreshed where results arrived; with
delayed feedback, the stale statistics).  A bandit is *completed* at the first trial ``t``
(the replica's trial count over all its bandits) with ``rho >= level`` at each of the trials
``t - hold .. t`` (paper: 0.98 held for 100 trials; ``hold = 0`` is the authors' code's
first crossing; ``[metrics] confidence_level`` / ``confidence_hold`` set both).

Summary keys added to each policy's entry:

``completion_level``, ``completion_hold``
    the completion rule;
``bandit_labels``
    the bandits, in the order of the per-bandit lists below;
``bandits_completed_mean``, ``bandits_completed_stderr``
    per checkpoint, the number of bandits completed by that trial count: mean over replicas
    and its standard error (the paper plots the sum over its 100 tests, i.e. 100 x the mean);
``target_best_completed_mean``, ``target_best_completed_stderr``, ``target_best_bandits_mean``
    only when some bandit has a ``target_arm``: the same count restricted to the bandits whose
    target arm is truly best (Fig. 5a; Fig. 5b is ``bandits_completed_*``), and how many such
    bandits a replica has on average;
``bandit_completed_fraction``, ``bandit_completion_time_median``
    per bandit: the fraction of replicas that completed it, and the median completion trial
    (replicas that never complete it count as the budget);
``bandit_confidence_mean``, ``bandit_trials_mean``
    per bandit, over replicas: the bound once all results are in, and the trials spent on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from armlab.multibandit import target_arms, target_is_best
from armlab.plugins.gcp.confidence import CompletionClock
from armlab.plugins.gcp.tracking import ConfidenceTracker
from armlab.plugins.interfaces import SimulatedRun
from armlab.replica_means import mean_and_stderr

__all__ = ["BanditCompletionObserver"]


class BanditCompletionObserver:
    """Tracks eq. (3) per (replica, bandit) and trial; reports bandits completed vs trials."""

    def __init__(self, level: float = 0.98, hold: int = 100, labels: list[str] | None = None) -> None:
        self.level = level
        self.hold = hold
        self.labels = labels
        self._sim: SimulatedRun | None = None

    def __repr__(self) -> str:
        return f"BanditCompletionObserver(level={self.level}, hold={self.hold})"

    def _start(self, sim: SimulatedRun) -> None:
        replicas, bandits = sim.replica_ids.size, len(sim.problems)
        self._sim = sim
        self.tracker = ConfidenceTracker(sim.problems, replicas)
        self.clock = CompletionClock((replicas, bandits), self.level, self.hold)
        self.trials = np.zeros(replicas, dtype=np.int64)

    def after_step(self, sim: SimulatedRun) -> None:
        if self._sim is not sim:
            self._start(sim)
        rho = self.tracker.refresh(sim.stats)
        fresh = np.flatnonzero(sim.dispatched > self.trials)
        if fresh.size:
            self.clock.record(rho[fresh], sim.dispatched[fresh][:, None], rows=fresh)
            self.trials[fresh] = sim.dispatched[fresh]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"completion_level": self.level, "completion_hold": self.hold}
        sim = self._sim
        if sim is None:
            return out
        bandits = len(sim.problems)
        out["bandit_labels"] = self.labels or [f"bandit{b}" for b in range(bandits)]
        at = self.clock.completed_at[:, :, None]
        done_by = (at >= 0) & (at <= sim.checkpoints[None, None, :])  # (R, B, checkpoints)
        out["bandits_completed_mean"], out["bandits_completed_stderr"] = mean_and_stderr(
            done_by.sum(axis=1).astype(np.float64)
        )
        if any(t is not None for t in target_arms(sim.problems)):
            target_best = target_is_best(sim.problems)
            out["target_best_completed_mean"], out["target_best_completed_stderr"] = mean_and_stderr(
                (done_by & target_best[:, :, None]).sum(axis=1).astype(np.float64)
            )
            out["target_best_bandits_mean"] = float(target_best.sum(axis=1).mean())
        out["bandit_completed_fraction"] = self.clock.completed.mean(axis=0).tolist()
        out["bandit_completion_time_median"] = np.median(self.clock.times(sim.budget), axis=0).tolist()
        out["bandit_confidence_mean"] = self.tracker.refresh(sim.stats).mean(axis=0).tolist()
        out["bandit_trials_mean"] = np.stack([st.dispatched for st in sim.stats], axis=1).mean(axis=0).tolist()
        return out
