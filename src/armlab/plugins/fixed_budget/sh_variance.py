"""SHVar and SHAdaVar: variance-adaptive sequential halving (Lalitha et al. 2023).

Both keep Sequential Halving's schedule (``ceil(log2 K)`` stages of ``floor(n / S)`` pulls,
the better half by *stage* means survives; :class:`~armlab.plugins.policies.sh.SequentialHalving`)
and change only the rule that picks the arm inside a stage (``base_rule``): the arm whose
stage mean is the most uncertain, ``sigma_i^2 / N_{s,i}``, with the variance known (SHVar) or
replaced by a high-probability upper bound (SHAdaVar).  Within a stage this allocates pulls
roughly in proportion to the variances (the heterogeneous-variance paper, Lemma 1), a G-optimal design.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from armlab.plugins.interfaces import PluginParams
from armlab.plugins.policies.sh import SequentialHalving
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["SHAdaVar", "SHVar", "forced_stage_pulls", "variance_inflation"]


def _all(mask: np.ndarray) -> bool:
    """Whether every entry is nonzero (``count_nonzero`` skips the ufunc reduction of ``all``)."""
    return np.count_nonzero(mask) == mask.size


def _uncertainty(weights: np.ndarray, pulls: np.ndarray, active: np.ndarray) -> np.ndarray:
    """``weights / pulls`` of active arms, ``+inf`` for an active arm not pulled, ``-inf`` for an
    eliminated one: the row's argmax (lowest index on ties) is the most uncertain active arm.

    The common case, every arm active and pulled, is one division (the same one)."""
    if _all(pulls) and _all(active):
        return weights / pulls
    ratio = np.full(np.shape(weights), np.inf)
    np.divide(weights, pulls, out=ratio, where=pulls > 0)
    return np.where(active, ratio, -np.inf)


class SHVar(SequentialHalving):
    """SHVar: sequential halving whose stage pulls go to ``argmax_{i in A_s} sigma_i^2 / N_{s,i}``.

    Source: Lalitha, Kalantari, Ma, Deoras & Kveton, "Fixed-budget best-arm identification
    with heterogeneous reward variances" (the heterogeneous-variance paper), Algorithms 1 and 3; docs/algorithms/fixed-budget.md.
    ``sigma_i^2`` are the **known** reward variances, read from the source's truth (per
    replica): an oracle, refused on live sources.  ``N_{s,i}`` counts the pulls of arm i
    earlier in stage s; an arm not yet pulled in the stage comes first (also when its variance
    is 0); ties go to the lowest index, so with equal variances SHVar is exactly SH.
    Sub-Gaussian rewards with variance proxy ``sigma_i^2`` (analysed for Gaussian noise).

    Pending pulls count in ``N_{s,i}``, so the allocation is the same as without delays; stage
    means and eliminations are Sequential Halving's (observed results only).  The ratios are
    kept between steps (see :class:`~armlab.plugins.policies.sh.SequentialHalving`).
    """

    name = "shvar"

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        variances = problem.require_truth(self.name, "variances").variances
        shape = (replicas, problem.n_arms)
        self.variances = np.ascontiguousarray(np.broadcast_to(variances, shape), dtype=np.float64)
        self._ratio = np.empty(shape)
        self._flat_variances, self._flat_ratio = self.variances.reshape(-1), self._ratio.reshape(-1)  # views

    def _refresh(self, stats: ArmStats, rows: np.ndarray | None, flat: np.ndarray | slice) -> np.ndarray:
        pulls = super()._refresh(stats, rows, flat)
        self._flat_ratio[flat] = _uncertainty(self._flat_variances[flat], pulls, stats.active.reshape(-1)[flat])
        return pulls

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        return np.argmax(self._ratio, axis=1)


def variance_inflation(observations: np.ndarray, delta: float) -> np.ndarray:
    """``1 / (1 - 2 sqrt(ln(1/delta) / (N - 1)))``: SHAdaVar's upper bound on a Gaussian arm's
    variance is its sample variance times this factor (the heterogeneous-variance paper, eq. 7; from the chi-square
    tail of Laurent & Massart).  ``+inf`` where the bound is invalid (``N - 1 <= 4 ln(1/delta)``)."""
    n = np.asarray(observations, dtype=np.float64)
    denominator = np.full(n.shape, -1.0)
    np.subtract(1.0, 2.0 * np.sqrt(math.log(1.0 / delta) / np.maximum(n - 1.0, 1.0)), out=denominator, where=n > 1)
    factor = np.full(n.shape, np.inf)
    np.divide(1.0, denominator, out=factor, where=denominator > 0)
    return factor


def forced_stage_pulls(delta: float) -> int:
    """``L = floor(4 ln(1/delta) + 1) + 1``: the smallest number of pulls with a valid bound
    (13 for delta = 0.05)."""
    return math.floor(4.0 * math.log(1.0 / delta) + 1.0) + 1


class SHAdaVarParams(PluginParams):
    delta: float = Field(
        0.05, gt=0, lt=1, description="failure probability of each variance upper bound (the heterogeneous-variance paper runs: 0.05)"
    )


class SHAdaVar(SequentialHalving):
    """SHAdaVar: sequential halving with ``argmax_{i in A_s} U_{s,i} / N_{s,i}``, ``U`` an upper
    confidence bound on the unknown variance from the stage's own samples.

    Source: the heterogeneous-variance paper, Algorithms 1 and 4, eq. (7); docs/algorithms/fixed-budget.md.  In each stage, round robin over
    the surviving arms while ``t <= |A_s| L``, then
    ``U_{s,i} = s^2_{s,i} / (1 - 2 sqrt(ln(1/delta) / (N_{s,i} - 1)))`` with the unbiased sample
    variance of the stage's observations.  ``delta = 0.05`` as in the paper's experiments.
    Gaussian noise assumed (the bound is a chi-square tail bound); runs on any rewards.

    Deviation (docs/algorithms/fixed-budget.md): the paper's forced phase ``t <= |A_s| (4 ln(1/delta) + 1)``
    leaves some arms with ``N - 1 < 4 ln(1/delta)`` (12 pulls for delta = 0.05), where the
    bound's denominator is negative; we use ``L = floor(4 ln(1/delta) + 1) + 1`` (13) pulls per
    arm, and treat any invalid bound as ``+inf``.  If ``n_s <= |A_s| L`` the stage is all round
    robin (stage 1 of n = 5000, K = 64).

    Pending pulls: the forced phase and ``N_{s,i}`` count pulls (observed + pending), ``U``
    uses observed stage results; an arm whose bound is still invalid because its results are
    in flight comes first (fewest pulls among such arms, then lowest index).
    """

    name = "shadavar"
    Params = SHAdaVarParams
    stage_variances = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.forced_pulls = forced_stage_pulls(self.params.delta)
        shape = (replicas, problem.n_arms)
        self._forced_end = np.zeros(replicas, dtype=np.int64)  # dispatches that end the forced phase
        # U / N of the active arms (SHVar's rule with U); not kept while every replica is in
        # its forced round robin, which does not read it
        self._ratio = np.empty(shape)
        self._ratios_kept = False
        self._flat_ratio = self._ratio.reshape(-1)  # a view
        self._row_starts = np.arange(replicas) * problem.n_arms  # flat position of each row's arm 0
        self._flat_pulls = self.round_robin.kept.reshape(-1)
        self._inflation = variance_inflation(np.arange(4 * self.forced_pulls), self.params.delta)

    def variance_bounds(self) -> np.ndarray:
        """``U_{s,i}`` ``(R, K)`` from the current stage's observations (``+inf`` if invalid)."""
        return self._bounds(self.stage_n, self.stage_m2)

    def _bounds(self, stage_n: np.ndarray, stage_m2: np.ndarray) -> np.ndarray:
        """:meth:`variance_bounds` from the stage counts and ``M2`` of some arms.

        The common case, every bound valid, skips the masked division (same values)."""
        try:
            factor = self._inflation[stage_n]
        except IndexError:  # factors by count, grown on demand
            self._inflation = variance_inflation(np.arange(2 * stage_n.max() + 1), self.params.delta)
            factor = self._inflation[stage_n]
        valid = np.isfinite(factor)  # implies N > 1
        if _all(valid):
            bounds = stage_m2 / (stage_n - 1)  # the unbiased sample variance
        else:
            bounds = np.full(factor.shape, np.inf)
            np.divide(stage_m2, stage_n - 1, out=bounds, where=valid)
        np.multiply(bounds, factor, out=bounds)  # invalid: inf x inf = inf
        return bounds

    def _refresh(self, stats: ArmStats, rows: np.ndarray | None, flat: np.ndarray | slice) -> np.ndarray:
        """Also keeps :attr:`_forced_end`, the replica's dispatches at which its active arms
        have ``|A_s| L`` stage pulls: the forced phase lasts while ``dispatched`` is below it.

        It is set by a whole recomputation only: the kept values are read (:meth:`select`) only
        while no trial was ever released, and a policy dispatches active arms only, so each
        dispatch since adds one stage pull of an active arm."""
        pulls = super()._refresh(stats, rows, flat)
        if rows is None:
            past_forced = np.where(stats.active, self.round_robin.kept - self.forced_pulls, 0).sum(axis=1)
            np.subtract(stats.dispatched, past_forced, out=self._forced_end)
            self._ratios_kept = False  # recomputed when first read
        elif self._ratios_kept:
            self._refresh_ratios(flat, pulls, stats.active.reshape(-1)[flat])
        return pulls

    def _refresh_ratios(self, flat: np.ndarray | slice, pulls: np.ndarray, active: np.ndarray) -> None:
        """Recompute :attr:`_ratio` at flat positions ``flat``, whose stage pulls and activity
        are ``pulls`` and ``active``."""
        bounds = self._bounds(self._flat_n[flat], self._flat_m2[flat])
        self._flat_ratio[flat] = _uncertainty(bounds, pulls, active)

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        pulls = self.round_robin.kept  # stage pulls; eliminated arms have more than 2**30
        forced = stats.dispatched < self._forced_end
        if _all(forced):
            return np.argmin(pulls, axis=1)
        if not self._ratios_kept:
            self._refresh_ratios(slice(None), self._flat_pulls, stats.active.reshape(-1))
            self._ratios_kept = True
        arms = np.argmax(self._ratio, axis=1)
        self._unsure_first(stats, arms)
        if np.count_nonzero(forced):
            rows = np.flatnonzero(forced)
            arms[rows] = np.argmin(pulls[rows], axis=1)
        return arms

    def _unsure_first(self, stats: ArmStats, arms: np.ndarray) -> None:
        """Where some active arm's bound is invalid ("unsure"), replace ``arms`` by the unsure
        arm with the fewest stage pulls (lowest index on ties).

        An unsure arm's ratio is ``+inf``, so only the rows whose chosen ratio is ``+inf`` are
        looked at (rarely any once the forced phase is over): their bounds are recomputed."""
        infinite = np.isinf(self._flat_ratio[self._row_starts + arms])  # -inf: no active arm, none unsure
        if not np.count_nonzero(infinite):
            return
        rows = np.flatnonzero(infinite)
        unsure = stats.active[rows] & np.isinf(self._bounds(self.stage_n[rows], self.stage_m2[rows]))
        some = unsure.any(axis=1)  # an infinite ratio without an unsure arm: an arm not pulled
        rows, unsure = rows[some], unsure[some]
        pulls = self.round_robin.kept[rows]
        arms[rows] = np.argmin(np.where(unsure, pulls, np.iinfo(pulls.dtype).max), axis=1)
