"""SHVar and SHAdaVar: variance-adaptive Sequential Halving (Lalitha et al. 2023).

Both keep Sequential Halving's schedule (``S = ceil(log2 K)`` stages of ``n_s = floor(n / S)``
pulls, the better half by *stage* means survives;
:class:`~armlab.plugins.policies.sh.SequentialHalving`) and change only the base rule that
picks the arm inside a stage: the active arm whose stage mean is the most uncertain,
``argmax_{i in A_s} sigma_i^2 / N_{s,i}``, with the variance known (SHVar) or replaced by a
high-probability upper bound (SHAdaVar).  Within a stage this allocates pulls roughly in
proportion to the variances (the heterogeneous-variance paper, Lemma 1), a G-optimal design.
docs/algorithms/fixed-budget.md.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from functools import partial

import numpy as np
from pydantic import Field

from armlab.plugins._fast.kept_arm_values import KeptArmValues
from armlab.plugins._fast.lookup_by_count import LookupByCount
from armlab.plugins._fast.masked_division import divide_where
from armlab.plugins._fast.stage_pulls import pulls_in_stage
from armlab.plugins.interfaces import PluginParams
from armlab.plugins.policies.sh import SequentialHalving
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = [
    "SHAdaVar",
    "SHVar",
    "VarianceAdaptiveHalving",
    "forced_stage_pulls",
    "uncertainty",
    "variance_bound",
    "variance_inflation",
]


def uncertainty(weights: np.ndarray, stage_pulls: np.ndarray) -> np.ndarray:
    """``weights / N_{s,i}``; ``+inf`` for an arm not pulled yet in the stage
    (``N_{s,i} <= 0``), which so comes first, also when its weight is 0."""
    return divide_where(weights, stage_pulls, stage_pulls > 0, np.inf)


class VarianceAdaptiveHalving(SequentialHalving):
    """Sequential Halving whose base rule pulls ``argmax_{i in A_s} w_{s,i} / N_{s,i}``
    (:func:`uncertainty`; ties: lowest index), the weights ``w`` given by :meth:`weights`.

    The ratios are kept between steps by a
    :class:`~armlab.plugins._fast.kept_arm_values.KeptArmValues`, recomputed at the arms just
    observed, and from their first reading in a stage on (SHAdaVar's forced phase does not
    read them).
    """

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.ratio = KeptArmValues(self.ratios_at, replicas, problem.n_arms, whole_arrays=True)
        self.flat_stage_start = self.stage_start.reshape(-1)  # a view

    @abstractmethod
    def weights(self, stats: ArmStats, at: np.ndarray | slice) -> np.ndarray:
        """``w_{s,i}`` at flat positions ``at`` (:meth:`ArmStats.flat_index`; ``slice(None)``:
        all)."""

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        """The active arm of largest ratio, lowest index on ties."""
        return self.ratio.current(stats).argmax(axis=1)

    def ratios_at(self, stats: ArmStats, rows: np.ndarray | slice, at: np.ndarray | slice) -> np.ndarray:
        """``w_{s,i} / N_{s,i}`` of the active arms at flat positions ``at`` (of replicas
        ``rows``, not read), ``-inf`` for the eliminated ones."""
        stage_pulls = stats.pulls_at(at) - self.flat_stage_start[at]  # N_{s,i} of the active arms
        ratio = uncertainty(self.weights(stats, at), stage_pulls)
        active = stats.active.reshape(-1)[at]
        return ratio if np.count_nonzero(active) == active.size else np.where(active, ratio, -np.inf)

    def next_stage(self, stats: ArmStats, rows: np.ndarray) -> None:
        super().next_stage(stats, rows)
        if rows.size:
            self.ratio.refresh_rows(stats, rows)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        """Fold the results into the stage statistics and recompute the ratios of the arms
        observed.  The round robin is not told (it then recomputes its pulls when read): SHVar
        never reads it, and telling it costs a gather and a scatter at every result.  With the ratios' ``N_{s,i}`` read from the stage start
        (:meth:`ratios_at`), SHAdaVar went from about 0.80x to about 0.92x of the commit
        before issues 19-24 end to end (K = 32, R = 500, n = 5000)."""
        flat = stats.flat_index(rows, arms)
        self.fold_stage_results(flat, rewards)
        self.ratio.observed_at(stats, rows, flat)


class SHVar(VarianceAdaptiveHalving):
    """SHVar: Sequential Halving whose stage pulls go to ``argmax_{i in A_s} sigma_i^2 / N_{s,i}``.

    Source: Lalitha, Kalantari, Ma, Deoras & Kveton, "Fixed-budget best-arm identification
    with heterogeneous reward variances" (the heterogeneous-variance paper), Algorithms 1
    and 3; docs/algorithms/fixed-budget.md.  ``sigma_i^2`` are the **known** reward variances,
    read from the source's truth (per replica): an oracle, refused on live sources.
    ``N_{s,i}`` counts the pulls of arm i earlier in stage s (pending ones included, so the
    allocation is the same as without delays); an arm not yet pulled in the stage comes first
    (also when its variance is 0); ties go to the lowest index, so with equal variances SHVar
    is exactly SH.  Sub-Gaussian rewards with variance proxy ``sigma_i^2`` (analysed for
    Gaussian noise).  Stage means and eliminations are Sequential Halving's.
    """

    name = "shvar"

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        variances = problem.require_truth(self.name, "variances").variances
        self.variances = np.ascontiguousarray(np.broadcast_to(variances, (replicas, problem.n_arms)), dtype=np.float64)
        super().reset(problem, replicas, rng)

    def weights(self, stats: ArmStats, at: np.ndarray | slice) -> np.ndarray:
        """``sigma_i^2``."""
        return self.variances.reshape(-1)[at]


def variance_inflation(observations: np.ndarray, delta: float) -> np.ndarray:
    """``1 / (1 - 2 sqrt(ln(1/delta) / (N - 1)))``: SHAdaVar's upper bound on a Gaussian arm's
    variance is its sample variance times this factor (the heterogeneous-variance paper, eq. 7;
    from the chi-square tail of Laurent & Massart).  ``+inf`` where the bound is invalid
    (``N - 1 <= 4 ln(1/delta)``)."""
    n = np.asarray(observations, dtype=np.float64)
    denominator = np.full(n.shape, -1.0)
    np.subtract(1.0, 2.0 * np.sqrt(math.log(1.0 / delta) / np.maximum(n - 1.0, 1.0)), out=denominator, where=n > 1)
    factor = np.full(n.shape, np.inf)
    np.divide(1.0, denominator, out=factor, where=denominator > 0)
    return factor


def variance_bound(observations: np.ndarray, m2: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """``U = s^2 / (1 - 2 sqrt(ln(1/delta) / (N - 1)))`` from ``N`` observations whose sum of
    squared deviations is ``m2`` (``s^2 = m2 / (N - 1)``, the unbiased sample variance), given
    ``factor = variance_inflation(N, delta)``; ``+inf`` where the bound is invalid."""
    return divide_where(m2, observations - 1, np.isfinite(factor), np.inf) * factor  # finite: N > 1


def forced_stage_pulls(delta: float) -> int:
    """``L = floor(4 ln(1/delta) + 1) + 1``: the smallest number of pulls with a valid bound
    (13 for delta = 0.05)."""
    return math.floor(4.0 * math.log(1.0 / delta) + 1.0) + 1


class SHAdaVarParams(PluginParams):
    delta: float = Field(
        0.05, gt=0, lt=1,
        description="failure probability of each variance upper bound (the heterogeneous-variance paper runs: 0.05)",
    )


class SHAdaVar(VarianceAdaptiveHalving):
    """SHAdaVar: Sequential Halving with ``argmax_{i in A_s} U_{s,i} / N_{s,i}``, ``U`` an upper
    confidence bound on the unknown variance from the stage's own samples.

    Source: the heterogeneous-variance paper, Algorithms 1 and 4, eq. (7);
    docs/algorithms/fixed-budget.md.  In stage ``s``, at its ``t``-th pull:

    * while ``t <= |A_s| L`` (forced phase): round robin, Sequential Halving's base rule;
    * then ``argmax_{i in A_s} U_{s,i} / N_{s,i}`` with
      ``U_{s,i} = s^2_{s,i} / (1 - 2 sqrt(ln(1/delta) / (N_{s,i} - 1)))``, ``s^2`` the unbiased
      variance of the stage's observations of arm i (:func:`variance_bound`).

    ``delta = 0.05`` as in the paper's experiments.  Gaussian noise assumed (the bound is a
    chi-square tail bound); runs on any rewards.

    Deviation (docs/algorithms/fixed-budget.md): the paper's forced phase
    ``t <= |A_s| (4 ln(1/delta) + 1)`` leaves some arms with ``N - 1 < 4 ln(1/delta)`` (12
    pulls for delta = 0.05), where the bound's denominator is negative; we use
    ``L = floor(4 ln(1/delta) + 1) + 1`` (13) pulls per arm, and treat any invalid bound as
    ``+inf``.  If ``n_s <= |A_s| L`` the stage is all round robin (stage 1 of n = 5000, K = 64).

    Pending pulls: ``t - 1`` counts the stage pulls of the active arms so far
    (``sum_{i in A_s} N_{s,i}``, observed + pending), ``U`` uses the observed stage results;
    an active arm whose bound is still invalid because its results are in flight ("unsure")
    comes first (fewest ``N_{s,i}`` among such arms, then lowest index).
    """

    name = "shadavar"
    Params = SHAdaVarParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.forced_pulls = forced_stage_pulls(self.params.delta)  # L
        self.inflation = LookupByCount(partial(variance_inflation, delta=self.params.delta))  # by N
        self.stage_m2 = np.zeros((replicas, problem.n_arms))  # sum of squared deviations of stage results
        self.flat_stage_m2 = self.stage_m2.reshape(-1)  # a view
        self.stage_first_dispatch = np.zeros(replicas, dtype=np.int64)  # dispatches when stage s began
        self.forced_length = self.n_active * self.forced_pulls  # |A_s| L
        self.row_starts = np.arange(replicas) * problem.n_arms  # flat position of each replica's arm 0
        self.n_forced = replicas  # replicas in their forced phase at the last base rule

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        in_stage = pulls_in_stage(stats, self.pulls_so_far, self.stage_first_dispatch)  # t - 1
        forced = in_stage < self.forced_length
        n_forced = self.n_forced = np.count_nonzero(forced)
        if n_forced == forced.size:
            return self.round_robin.select(stats)
        ratios = self.ratio.current(stats)
        arms = self.unsure_first(stats, ratios.argmax(axis=1), ratios)
        return np.where(forced, self.round_robin.select(stats), arms) if n_forced else arms

    def pulls_so_far(self, stats: ArmStats) -> np.ndarray:
        """``t - 1 = sum_{i in A_s} N_{s,i}`` per replica ``(R,)``: the stage pulls (observed +
        pending) of the active arms so far."""
        return np.where(stats.active, stats.pulls - self.stage_start, 0).sum(axis=1)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        """Also tells the round robin while some replica is in its forced phase, which reads
        it: kept pulls make the forced phase about 1.3x faster (K = 100, R = 500: 0.75x of
        main's speed without, 0.97-1.04x with, under load).  Once no replica is, none is
        again before a stage ends (``t - 1`` only grows while nothing is released; a release
        makes the round robin recompute its pulls when read, and so does a new stage)."""
        super().update(stats, rows, arms, rewards)
        if self.n_forced:
            self.round_robin.observed(stats, rows, arms)

    def weights(self, stats: ArmStats, at: np.ndarray | slice) -> np.ndarray:
        """``U_{s,i}``."""
        n = self.flat_stage_n[at]
        return variance_bound(n, self.flat_stage_m2[at], self.inflation(n))

    def variance_bounds(self) -> np.ndarray:
        """``U_{s,i}`` ``(R, K)`` from the current stage's observations (``+inf`` if invalid)."""
        return variance_bound(self.stage_n, self.stage_m2, self.inflation(self.stage_n))

    def unsure_first(self, stats: ArmStats, arms: np.ndarray, ratios: np.ndarray) -> np.ndarray:
        """``arms`` (of largest ``ratios``), but where some active arm's bound is invalid, the
        one of them with the fewest ``N_{s,i}`` (lowest index on ties).  Its ratio is ``+inf``,
        so only replicas whose largest ratio is ``+inf`` can have one."""
        infinite = ratios.reshape(-1)[self.row_starts + arms] == np.inf
        if not np.count_nonzero(infinite):
            return arms
        rows = np.flatnonzero(infinite)
        n = self.stage_n[rows]
        unsure = stats.active[rows] & np.isinf(variance_bound(n, self.stage_m2[rows], self.inflation(n)))
        some = unsure.any(axis=1)  # else the +inf is an arm not pulled yet in the stage
        rows, unsure = rows[some], unsure[some]
        pulls = stats.pulls[rows] - self.stage_start[rows]
        arms[rows] = np.argmin(np.where(unsure, pulls, np.iinfo(np.int64).max), axis=1)
        return arms

    def next_stage(self, stats: ArmStats, rows: np.ndarray) -> None:
        self.stage_m2[rows] = 0.0
        self.stage_first_dispatch[rows] = stats.dispatched[rows]
        super().next_stage(stats, rows)
        self.forced_length[rows] = self.n_active[rows] * self.forced_pulls

    def fold_stage_results(self, flat: np.ndarray, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Also the sum of squared deviations (Welford)."""
        delta, mean = super().fold_stage_results(flat, rewards)
        self.flat_stage_m2[flat] += delta * (rewards - mean)
        return delta, mean
