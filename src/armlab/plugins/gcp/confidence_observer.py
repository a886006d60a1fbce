"""Greedy confidence pursuit's confidence bound along every simulated run (``[metrics] confidence``).

:class:`ConfidenceObserver` is an engine step observer (this package's ``armlab_step_observers``
gives it to the runs of plans that ask for it).  After every step it recomputes, for each
replica whose statistics changed, the eq. (3) lower bound on the confidence that the answer
is right (:mod:`armlab.plugins.gcp.confidence`) from the run's own statistics, so the metric
is the same for every policy:

* rewards in [0, 1] (the source's declared range): a Beta(1, 1) posterior per arm with
  successes = sum of rewards, posterior means as ``r``, real trial counts as ``t`` and the
  Bernoulli standard deviation ``sqrt(r (1 - r))`` (the paper's model);
* other rewards: the normal approximation with empirical means, unbiased sample standard
  deviations and observed counts; an arm with fewer than 2 rewards contributes the
  no-information tail 1/2.

The gap location is the midpoint of the m-th and (m+1)-th largest means (m = 1 for best-arm
and regret problems); for thresholding problems it is the threshold.  ``rho(t)``, the bound
after trial ``t`` of a replica, uses the results visible at the end of that step (with
delayed feedback, the stale statistics).  A replica *completes* at the first trial ``t`` with
``rho >= level`` at trials ``t - hold .. t``.  With several bandits every
(replica, bandit) pair is one unit; time is the replica's total trial count.

Summary keys added to each policy's entry:

``confidence_level``, ``confidence_hold``
    the completion rule's parameters;
``confidence_mean``, ``confidence_stderr``
    per checkpoint (the experiment's ``checkpoints``), the mean over units of ``rho`` after
    that many trials and its standard error; the last checkpoint, and checkpoints a replica
    never reaches because its policy stopped, use the bound once all results are in;
``completion_time_median``, ``completion_time_mean``, ``completion_time_stderr``
    completion trial over units, units that never complete counting as the budget;
``not_completed_fraction``
    the fraction of units that never completed (censored at the budget).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from armlab.plugins.gcp.confidence import CompletionClock, confidence_of
from armlab.plugins.interfaces import SimulatedRun
from armlab.replica_means import mean_and_stderr

__all__ = ["ConfidenceObserver", "confidence_of"]


class ConfidenceObserver:
    """Tracks eq. (3) per replica and step; reports checkpoint means and completion times."""

    def __init__(self, level: float = 0.98, hold: int = 100) -> None:
        self.level = level
        self.hold = hold
        self._sim: SimulatedRun | None = None

    def __repr__(self) -> str:
        return f"ConfidenceObserver(level={self.level}, hold={self.hold})"

    def _start(self, sim: SimulatedRun) -> None:
        replicas, bandits = sim.replica_ids.size, len(sim.problems)
        self._sim = sim
        self.clock = CompletionClock((replicas, bandits), self.level, self.hold)
        self.rho = np.zeros((replicas, bandits))
        checkpoints = np.asarray(sim.checkpoints)
        self.at_checkpoint = np.zeros((replicas, bandits, checkpoints.size))
        self.recorded = np.zeros((replicas, checkpoints.size), dtype=bool)
        # checkpoint index of each trial count below the budget (-1: none); the budget's own
        # checkpoint is taken once all results are in, at the summary
        self.checkpoint_of_trial = np.full(sim.budget + 1, -1, dtype=np.int64)
        early = checkpoints < sim.budget
        self.checkpoint_of_trial[checkpoints[early]] = np.flatnonzero(early)
        self.trials = np.zeros(replicas, dtype=np.int64)
        self.observed = np.zeros(replicas, dtype=np.int64)

    def after_step(self, sim: SimulatedRun) -> None:
        if self._sim is not sim:
            self._start(sim)
        trials = sim.dispatched
        observed = sum(st.observed for st in sim.stats)
        new_trial = trials > self.trials
        rows = np.flatnonzero(new_trial | (observed != self.observed))
        if rows.size:
            for b, (problem, stats) in enumerate(zip(sim.problems, sim.stats, strict=True)):
                self.rho[rows, b] = confidence_of(problem, stats, rows)
        fresh = np.flatnonzero(new_trial)
        if fresh.size:
            t = trials[fresh]
            self.clock.record(self.rho[fresh], t[:, None], rows=fresh)
            index = self.checkpoint_of_trial[t]
            hit = index >= 0
            self.at_checkpoint[fresh[hit], :, index[hit]] = self.rho[fresh[hit]]
            self.recorded[fresh[hit], index[hit]] = True
        self.trials = trials.copy()
        self.observed = observed.copy()

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"confidence_level": self.level, "confidence_hold": self.hold}
        if self._sim is None:
            return out
        values = np.where(self.recorded[:, None, :], self.at_checkpoint, self.rho[:, :, None])
        units = values.reshape(-1, values.shape[2])
        out["confidence_mean"], out["confidence_stderr"] = mean_and_stderr(units)
        times = self.clock.times(self._sim.budget).reshape(-1).astype(np.float64)
        (mean,), (stderr,) = mean_and_stderr(times[:, None])
        out["completion_time_median"] = float(np.median(times))
        out["completion_time_mean"], out["completion_time_stderr"] = mean, stderr
        out["not_completed_fraction"] = float((~self.clock.completed).mean())
        return out
