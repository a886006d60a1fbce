"""SHVar and SHAdaVar: variance-adaptive sequential halving (Lalitha et al., seed 004).

Both keep Sequential Halving's schedule (``ceil(log2 K)`` stages of ``floor(n / S)`` pulls,
the better half by *stage* means survives; :class:`~armlab.plugins.policies.sh.SequentialHalving`)
and change only the rule that picks the arm inside a stage (``base_rule``): the arm whose
stage mean is the most uncertain, ``sigma_i^2 / N_{s,i}``, with the variance known (SHVar) or
replaced by a high-probability upper bound (SHAdaVar).  Within a stage this allocates pulls
roughly in proportion to the variances (seed 004, Lemma 1), a G-optimal design.
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


def _most_uncertain(weights: np.ndarray, pulls: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Active arm maximising ``weights / pulls`` (``+inf`` for an unpulled arm); lowest index on ties."""
    ratio = np.full(weights.shape, np.inf)
    np.divide(weights, pulls, out=ratio, where=pulls > 0)
    return np.argmax(np.where(active, ratio, -np.inf), axis=1)


class SHVar(SequentialHalving):
    """SHVar: sequential halving whose stage pulls go to ``argmax_{i in A_s} sigma_i^2 / N_{s,i}``.

    Source: Lalitha, Kalantari, Ma, Deoras & Kveton, "Fixed-budget best-arm identification
    with heterogeneous reward variances" (seed 004), Algorithms 1 and 3; sheet 3.5.
    ``sigma_i^2`` are the **known** reward variances, read from the source's truth (per
    replica): an oracle, refused on live sources.  ``N_{s,i}`` counts the pulls of arm i
    earlier in stage s; an arm not yet pulled in the stage comes first (also when its variance
    is 0); ties go to the lowest index, so with equal variances SHVar is exactly SH.
    Sub-Gaussian rewards with variance proxy ``sigma_i^2`` (analysed for Gaussian noise).

    Pending pulls count in ``N_{s,i}``, so the allocation is the same as without delays; stage
    means and eliminations are Sequential Halving's (observed results only).
    """

    name = "shvar"

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.variances = problem.require_truth(self.name, "variances").variances
        # with positive variances, weight -1 for eliminated arms keeps them below every active
        # arm in one division (a zero variance needs the masked rule: 0 / 0 would be nan)
        self._weights = (
            np.broadcast_to(self.variances, (replicas, problem.n_arms)).astype(np.float64)
            if (np.asarray(self.variances) > 0).all() else None
        )
        self._ratio = np.empty((replicas, problem.n_arms))

    def _stage_started(self, stats: ArmStats, rows: np.ndarray) -> None:
        if self._weights is not None:
            variances = np.broadcast_to(self.variances, self._weights.shape)
            self._weights[rows] = np.where(stats.active[rows], variances[rows], -1.0)

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        if self._weights is None:
            return _most_uncertain(self.variances, self.stage_pulls(stats), stats.active)
        with np.errstate(divide="ignore"):  # an arm not pulled in the stage: +inf, first
            np.divide(self._weights, self.round_robin.pulls(stats), out=self._ratio)
        return np.argmax(self._ratio, axis=1)


def variance_inflation(observations: np.ndarray, delta: float) -> np.ndarray:
    """``1 / (1 - 2 sqrt(ln(1/delta) / (N - 1)))``: SHAdaVar's upper bound on a Gaussian arm's
    variance is its sample variance times this factor (seed 004, eq. 7; from the chi-square
    tail of Laurent & Massart).  ``+inf`` where the bound is invalid (``N - 1 <= 4 ln(1/delta)``)."""
    n = np.asarray(observations, dtype=np.float64)
    denominator = np.full(n.shape, -1.0)
    np.subtract(1.0, 2.0 * np.sqrt(math.log(1.0 / delta) / np.maximum(n - 1.0, 1.0)), out=denominator, where=n > 1)
    factor = np.full(n.shape, np.inf)
    np.divide(1.0, denominator, out=factor, where=denominator > 0)
    return factor


def forced_stage_pulls(delta: float) -> int:
    """``L = floor(4 ln(1/delta) + 1) + 1``: the smallest number of pulls with a valid bound
    (13 for delta = 0.05; Part C #15)."""
    return math.floor(4.0 * math.log(1.0 / delta) + 1.0) + 1


class SHAdaVarParams(PluginParams):
    delta: float = Field(
        0.05, gt=0, lt=1, description="failure probability of each variance upper bound (seed 004 runs: 0.05)"
    )


class SHAdaVar(SequentialHalving):
    """SHAdaVar: sequential halving with ``argmax_{i in A_s} U_{s,i} / N_{s,i}``, ``U`` an upper
    confidence bound on the unknown variance from the stage's own samples.

    Source: seed 004, Algorithms 1 and 4, eq. (7); sheet 3.6.  In each stage, round robin over
    the surviving arms while ``t <= |A_s| L``, then
    ``U_{s,i} = s^2_{s,i} / (1 - 2 sqrt(ln(1/delta) / (N_{s,i} - 1)))`` with the unbiased sample
    variance of the stage's observations.  ``delta = 0.05`` as in the paper's experiments.
    Gaussian noise assumed (the bound is a chi-square tail bound); runs on any rewards.

    Deviation (sheet 3.6, Part C #15): the paper's forced phase ``t <= |A_s| (4 ln(1/delta) + 1)``
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

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.forced_pulls = forced_stage_pulls(self.params.delta)

    def variance_bounds(self) -> np.ndarray:
        """``U_{s,i}`` ``(R, K)`` from the current stage's observations (``+inf`` if invalid)."""
        sample_variance = np.zeros_like(self.stage_m2)
        np.divide(self.stage_m2, self.stage_n - 1, out=sample_variance, where=self.stage_n > 1)
        factor = variance_inflation(self.stage_n, self.params.delta)
        bounds = np.full(factor.shape, np.inf)
        np.multiply(sample_variance, factor, out=bounds, where=np.isfinite(factor))
        return bounds

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        pulls = self.round_robin.pulls(stats)  # stage pulls; eliminated arms masked below
        round_robin = np.argmin(pulls, axis=1)
        active = stats.active
        stage_dispatched = np.where(active, pulls, 0).sum(axis=1)
        forced = stage_dispatched < active.sum(axis=1) * self.forced_pulls
        if forced.all():
            return round_robin
        bounds = self.variance_bounds()
        unsure = active & np.isinf(bounds)
        greedy = _most_uncertain(bounds, pulls, active)
        first_unsure = np.argmin(np.where(unsure, pulls, np.iinfo(np.int64).max), axis=1)
        chosen = np.where(unsure.any(axis=1), first_unsure, greedy)
        return np.where(forced, round_robin, chosen)
