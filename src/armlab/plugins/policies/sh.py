"""Sequential Halving (Karnin, Koren & Somekh 2013) as the heterogeneous-variance paper's meta-algorithm (Alg. 1-2)."""

from __future__ import annotations

import math

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED, Policy
from armlab.plugins.round_robin import RoundRobin
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class SequentialHalving(Policy):
    """Sequential Halving: ``S = ceil(log2 K)`` stages of ``floor(n / S)`` pulls each.

    In stage s the active arms are pulled by the stage's *base rule* (round robin for SH,
    the heterogeneous-variance paper Alg. 2); at the end the ``ceil(|A|/2)`` arms with the largest **stage** means
    survive (ties: lower index).  The leftover ``n mod S`` pulls are unused (the policy then
    returns STOPPED).  Requires ``floor(n / S) >= K`` so every arm gets a stage-1 sample.

    Pending pulls count toward the stage schedule but not toward the statistics; a result
    that arrives after its stage ended is folded into the arm's current-stage statistics
    (another i.i.d. sample of the same arm).  The final elimination waits for all results.
    Subclasses (SHVar, SHAdaVar) override :meth:`base_rule`.

    Speed: the per-arm values a base rule reads (here the stage pulls) are *kept* between
    steps: :meth:`_refresh` recomputes them all, or only the arms whose results just came
    in, so a step without results in flight costs one argmin or argmax over ``(R, K)``
    (:meth:`select` says when the kept values are current).  The stage pulls are int32 (a
    faster argmin) whenever the budget allows (:class:`RoundRobin`).  A step where no
    replica's stage closes and none has used the schedule's pulls skips those checks
    (:meth:`select`).
    """

    name = "sh"
    objectives = frozenset({Objective.BEST_ARM})
    #: Whether the base rule reads the stage's sum of squared deviations :attr:`stage_m2`
    #: (kept only then: it costs a gather and a scatter per step).
    stage_variances = False

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        self.n_stages = max(1, math.ceil(math.log2(k)))
        self.stage_budget = problem.budget // self.n_stages
        if self.stage_budget < k:
            raise ConfigError(
                f"{self.name}: budget {problem.budget} is too small for {k} arms: each of the "
                f"{self.n_stages} stages gets floor(n / ceil(log2 K)) = {self.stage_budget} pulls, "
                f"fewer than K = {k}. Use a budget of at least {self.n_stages * k}."
            )
        self.stage = np.zeros(replicas, dtype=np.int64)
        self.stage_start = np.zeros((replicas, k), dtype=np.int64)  # pulls at stage start
        self.stage_n = np.zeros((replicas, k), dtype=np.int64)
        self.stage_mean = np.zeros((replicas, k))
        self.stage_m2 = np.zeros((replicas, k)) if self.stage_variances else None
        self._flat_n, self._flat_mean = self.stage_n.reshape(-1), self.stage_mean.reshape(-1)  # views
        self._flat_m2 = self.stage_m2.reshape(-1) if self.stage_variances else None
        self.round_robin = RoundRobin(replicas, k, max_pulls=problem.budget)
        self._kept = False  # kept values current but for results since (see select)
        self._updated = False  # results folded in since the last select
        self._stop_at = self.n_stages * self.stage_budget  # dispatches of the whole schedule
        self._next_close = self._first_close()

    # -- schedule ---------------------------------------------------------------------
    def _first_close(self) -> float:
        """The fewest dispatches at which some replica's current stage closes (a replica in
        the last stage never closes it; ``inf`` once all are there).  A function of
        :attr:`stage` only, so recomputed whenever a stage closes: while every replica has
        fewer dispatches, :meth:`_advance` has nothing to do."""
        open_stages = self.stage[self.stage < self.n_stages - 1]
        return (int(open_stages.min()) + 1) * self.stage_budget if open_stages.size else math.inf

    def _advance(self, stats: ArmStats) -> None:
        """Close the stages whose pulls are all dispatched (never the last one)."""
        due = np.minimum(stats.dispatched // self.stage_budget, self.n_stages - 1)
        rows = np.flatnonzero(due > self.stage)
        if rows.size == 0:
            return
        self._eliminate(stats, rows)
        self.stage[rows] += 1
        self._next_close = self._first_close()
        self.stage_start[rows] = stats.pulls[rows]
        self.round_robin.restart(stats, rows, self.stage_start[rows])
        for arr in (self.stage_n, self.stage_m2, self.stage_mean):
            if arr is not None:
                arr[rows] = 0
        self._kept = False  # a stage change moves every arm's values

    def _eliminate(self, stats: ArmStats, rows: np.ndarray) -> None:
        active = stats.active[rows]
        keep = np.ceil(active.sum(axis=1) / 2).astype(np.int64)
        score = np.where(active, self.stage_mean[rows], -np.inf)
        order = np.argsort(-score, axis=1, kind="stable")  # stable: lower index wins ties
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(order.shape[1])[None, :], axis=1)
        stats.active[rows] = active & (rank < keep[:, None])

    def _refresh(self, stats: ArmStats, rows: np.ndarray | None, flat: np.ndarray | slice) -> np.ndarray:
        """Recompute the kept per-arm values from the current statistics: of every arm
        (``rows`` None, ``flat`` ``slice(None)``), or of one arm of each of the replicas
        ``rows`` at flat positions ``flat`` (:meth:`ArmStats.flat_index`).  Subclasses that
        keep more values extend it.  Returns the stage pulls at ``flat`` (flat, int64)."""
        return self.round_robin.refresh(stats, flat)

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        """Round robin within the stage: the active arm with the fewest stage pulls.

        Reads the kept values (current when :meth:`select` calls it)."""
        return np.argmin(self.round_robin.kept, axis=1)

    def select(self, stats: ArmStats) -> np.ndarray:
        """Advance the stages, bring the kept values up to date, apply :meth:`base_rule`.

        The kept values are recomputed whole unless they are known to be current.  After a
        recomputation, :meth:`update` recomputes the arm of every result folded in.  An arm's
        values change when it is dispatched, observed or released, or when its stage changes
        (which clears ``_kept``).  If every replica has ``dispatched == observed`` no trial
        was ever released and none is in flight, so every dispatch since the recomputation
        has been observed since, and the last change of each arm was an observation, after
        which :meth:`update` recomputed it: the kept values equal a recomputation.  A select
        with no result since the previous one also recomputes (nothing is lost, and state
        set by hand in between is read).

        The stage closings (:meth:`_advance`) and the STOPPED answers are looked for only
        once the replica with the most dispatches reaches the next closing
        (:meth:`_first_close`) or the end of the schedule.
        """
        most = stats.dispatched.max()
        if most >= self._next_close:
            self._advance(stats)
        if not (self._kept and self._updated and stats.all_observed()):
            self._refresh(stats, None, slice(None))
            self._kept = True
        self._updated = False
        arms = self.base_rule(stats)
        return np.where(stats.dispatched >= self._stop_at, STOPPED, arms) if most >= self._stop_at else arms

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        flat = stats.flat_index(rows, arms)
        n = self._flat_n[flat] + 1
        self._flat_n[flat] = n
        mean = self._flat_mean[flat]  # a copy
        delta = rewards - mean
        mean += delta / n
        self._flat_mean[flat] = mean
        if self.stage_variances:
            self._flat_m2[flat] += delta * (rewards - mean)
        if self._kept:
            self._refresh(stats, rows, flat)
        self._updated = True

    def recommend(self, stats: ArmStats) -> np.ndarray:
        """Last stage finished and drained: its stage-mean winner; else the active arm with
        the largest cumulative mean (the heterogeneous-variance paper's anytime rule)."""
        finished = (stats.dispatched >= self._stop_at) & (
            stats.pending.sum(axis=1) == 0
        )
        usable = stats.active & (stats.counts > 0)
        cumulative = np.argmax(np.where(usable, stats.means, -np.inf), axis=1)
        final = np.argmax(np.where(stats.active, self.stage_mean, -np.inf), axis=1)
        return np.where(finished & (self.stage == self.n_stages - 1), final, cumulative)
