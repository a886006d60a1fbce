"""The greedy-confidence-pursuit paper's single-bandit top-m arm rules (Bachman & Precup): the Bayes rule (Alg. 2) and
the PAC baseline (LUCB1 as used there).  The UCB baseline (A-GapE-V for top-m) lives in
:mod:`armlab.plugins.gcp.agapev_topm`.  Definitions: docs/algorithms/greedy-confidence-pursuit.md.

All rules share the greedy-confidence-pursuit paper's model: a Beta(1, 1) posterior per arm built from the run's
statistics (successes = sum of rewards, so rewards must lie in [0, 1]), a round-robin
warm-up of ``warmup_per_arm`` pulls per arm (the authors' code: 10 for single bandits), and
the MAP top-m group (largest posterior means, ties: lower index) as the answer.

Speed paths: once every arm of every replica has its warm-up results the round robin is no
longer checked (:class:`~armlab.plugins._fast.warm_arms.WarmArms`), and PAC keeps its posterior
means, trial counts and gaps between steps (:class:`~armlab.plugins._fast.gap_terms.GapTerms`).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

import numpy as np
from pydantic import Field

from armlab.complexity import midpoint_gaps
from armlab.errors import ConfigError
from armlab.plugins._fast.gap_terms import EVERY_ARM, Arms, GapTerms
from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.fixed_confidence.common import (
    SET_OBJECTIVES,
    as_answer,
    require_top_m,
    smallest_m,
)
from armlab.plugins.fixed_confidence.lucb1 import lucb_width
from armlab.plugins.gcp.confidence import beta_posterior
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["BayesTopM", "GreedyConfidencePursuitParams", "GreedyConfidencePursuitRule", "PACTopM"]

#: Smallest standard deviation used to normalise sampled gaps (avoids 0/0 at r = 0 or 1).
_SD_FLOOR = 1e-12


class GreedyConfidencePursuitParams(PluginParams):
    warmup_per_arm: int = Field(10, ge=0, description="round-robin pulls per arm before the rule starts (code: 10)")


class GreedyConfidencePursuitRule(Policy):
    """The greedy-confidence-pursuit paper's shared model: warm-up, Beta posterior from the statistics, MAP answer.

    Subclasses implement :meth:`choose` for the replicas past their warm-up.  The warm-up
    counts pending pulls (it is a schedule); the posterior only observed rewards.
    """

    objectives = SET_OBJECTIVES
    Params = GreedyConfidencePursuitParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        low, high = problem.reward_range
        if low < 0.0 or high > 1.0:
            raise ConfigError(
                f"{self.name}: the greedy-confidence-pursuit paper's Beta-Bernoulli model needs rewards in [0, 1], but "
                f"source {problem.source!r} produces rewards in [{low}, {high}]"
            )
        self.top_m = require_top_m(self.name, problem)
        warmup = self.params.warmup_per_arm * problem.n_arms
        if warmup >= problem.budget:
            raise ConfigError(
                f"{self.name}: the warm-up of warmup_per_arm = {self.params.warmup_per_arm} pulls "
                f"for each of {problem.n_arms} arms uses {warmup} trials, the whole budget "
                f"{problem.budget}; lower warmup_per_arm or raise [problem] budget"
            )
        # speed path: once every arm of every replica has its warm-up results, the round robin is skipped
        self._round_robin_done = WarmArms(need=self.params.warmup_per_arm)

    @staticmethod
    def outcomes(stats: ArmStats, arms: Arms = EVERY_ARM) -> tuple[np.ndarray, np.ndarray]:
        """Successes (sums of rewards) and failures of ``arms`` (every arm: ``(R, K)``)."""
        counts = arms.of(stats.counts).astype(np.float64)
        successes = counts * arms.of(stats.means)
        return successes, counts - successes

    def posterior(self, stats: ArmStats) -> tuple[np.ndarray, np.ndarray]:
        """Posterior means and real trial counts ``(R, K)`` (Beta(1, 1) prior)."""
        return beta_posterior(*self.outcomes(stats))

    @abstractmethod
    def choose(self, stats: ArmStats) -> np.ndarray:
        """The rule's arms ``(R,)`` (only used for replicas past their warm-up)."""

    def select(self, stats: ArmStats) -> np.ndarray:
        """The round robin of the warm-up (``warmup_per_arm`` pulls of every arm), then :meth:`choose`."""
        if self._round_robin_done.all_warm(stats):
            return self.choose(stats)
        pulls = stats.pulls
        round_robin = np.argmin(pulls, axis=1)
        ready = pulls.min(axis=1) >= self.params.warmup_per_arm
        if not ready.any():
            return round_robin
        return np.where(ready, self.choose(stats), round_robin)

    def recommend(self, stats: ArmStats) -> np.ndarray:
        """The MAP top-m group (best arm for m = 1)."""
        means, _ = self.posterior(stats)
        return as_answer(self.problem, smallest_m(-means, self.top_m))


class BayesParams(GreedyConfidencePursuitParams):
    normalize_by_sd: bool = Field(
        True,
        description="score sqrt(t) |r - g| / sqrt(r (1 - r)) (authors' code, default) or the literal "
        "Alg. 2 score sqrt(t) |r - g| (docs/algorithms/greedy-confidence-pursuit.md)",
    )
    exp_rate: float = Field(
        0.0, ge=0, le=1,
        description="probability of pulling the arm with the largest r (1 - r) / t instead (code only; 0 = paper)",
    )


class BayesTopM(GreedyConfidencePursuitRule):
    """The greedy-confidence-pursuit paper's Bayes top-m arm selection (Bachman & Precup, Alg. 2; "Bayes" in Figs. 1-2).

    Each step draws one posterior sample ``r_j ~ Beta(1 + S_j, 1 + F_j)`` per arm, puts the
    gap location ``g`` midway between the sampled m-th and (m+1)-th largest returns, and
    pulls ``argmin_j sqrt(t_j) |r_j - g| / sqrt(r_j (1 - r_j))``: the arm whose term of the
    confidence bound (eq. 3) is weakest under the sample.  ``normalize_by_sd = false`` drops
    the division (the literal eq. 6-8 with a common bound).  ``exp_rate`` is the
    authors' optional exploration (not in the paper; default 0).

    Rewards in [0, 1] (non-binary rewards enter the posterior as fractional successes).
    Draws are keyed by (seed, replica, trials dispatched).  Pending pulls are not in the
    posterior yet, so the sampling itself spreads pulls while feedback is delayed; ``t_j``
    counts observed rewards (an arm whose results are all pending scores 0 and is pulled
    first, ties going to the lower index).
    """

    name = "bayes-topm"
    Params = BayesParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._explore = KeyedRandom(*rng.words, "bayes-explore", replicas=rng.replicas)

    def choose(self, stats: ArmStats) -> np.ndarray:
        successes, failures = self.outcomes(stats)
        counts = successes + failures
        step = stats.dispatched
        sample = self.rng.beta(step, 1.0 + successes, 1.0 + failures)
        score = np.sqrt(counts) * midpoint_gaps(sample, self.top_m)
        spread = sample * (1.0 - sample)
        if self.params.normalize_by_sd:
            score = score / np.sqrt(np.maximum(spread, _SD_FLOOR**2))
        arms = np.argmin(score, axis=1)
        if self.params.exp_rate > 0:
            explore = self._explore.uniform(step, 1)[:, 0] < self.params.exp_rate
            with np.errstate(divide="ignore"):
                widest = np.argmax(spread / counts, axis=1)
            arms = np.where(explore, widest, arms)
        return arms


@dataclass
class PosteriorTerms:
    """PAC's per-arm terms for the speed path."""

    #: Posterior means ``rbar_j`` (their gaps are ``|rbar_j - g|``).
    means: np.ndarray
    #: Real trial counts ``t_j``.
    trials: np.ndarray


class PACParams(GreedyConfidencePursuitParams):
    delta: float = Field(0.05, gt=0, lt=1, description="confidence parameter of the width (paper: 0.05; code: 0.95)")


class PACTopM(GreedyConfidencePursuitRule):
    """The greedy-confidence-pursuit paper's "PAC" baseline: LUCB1 as Bachman & Precup use it (their eq. 10).

    One pull per step: ``argmax_j (-|r_j - g| + beta_j)`` with posterior-mean (MAP) gaps to the
    midpoint ``g`` of the m-th and (m+1)-th largest posterior means, and LUCB1's width
    ``beta_j = sqrt(ln(5 K t^4 / (4 delta)) / (2 t_j))``, ``t_j`` = observed rewards of arm j,
    ``t`` = observed rewards of the bandit (at least 1).  Unlike the original LUCB1 (policy
    ``lucb1``) there is no High/Low split, no paired pulls and no stopping rule (section 5.3 of the
    paper).  ``delta = 0.05`` as in the paper, real counts
    rather than the code's prior pseudo-observations (docs/algorithms/greedy-confidence-pursuit.md).

    Rewards in [0, 1].  Pending pulls are not counted: with delayed feedback the rule keeps
    pulling the same arm until results arrive (as the paper notes for UCB-style rules).
    """

    name = "pac"
    Params = PACParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        # speed path: posterior means, trial counts and gaps kept between steps
        self._terms = GapTerms(self.arm_terms, top_m=self.top_m, style="midpoint", reads_pending=False)

    def index(self, stats: ArmStats) -> np.ndarray:
        """``-|rbar_j - g| + beta_j`` (the gap to the midpoint ``g``, LUCB1's width)."""
        means, trials = self.posterior(stats)
        return self.index_from(midpoint_gaps(means, self.top_m), trials, stats)

    def index_from(self, gaps: np.ndarray, trials: np.ndarray, stats: ArmStats) -> np.ndarray:
        """The index from the gaps ``|rbar_j - g|`` and the trial counts ``t_j``."""
        total = np.maximum(stats.observed, 1)[:, None]
        return lucb_width(trials, total, stats.n_arms, self.params.delta) - gaps

    def current_index(self, stats: ArmStats) -> np.ndarray:
        """:meth:`index`, from the posterior terms and gaps kept between steps."""
        kept = self._terms.current(stats)
        return self.index_from(kept.gaps, kept.terms.trials, stats)

    def choose(self, stats: ArmStats) -> np.ndarray:
        return np.argmax(self.current_index(stats), axis=1)

    def arm_terms(self, stats: ArmStats, arms: Arms) -> PosteriorTerms:
        """The speed path's terms of ``arms``: posterior means and trial counts."""
        means, trials = beta_posterior(*self.outcomes(stats, arms))
        return PosteriorTerms(means, trials)

    def update(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        self._terms.observed(stats, rows, arms)

