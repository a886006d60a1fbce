"""What a live experiment reports: its answer, intervals, per-bandit summaries and status.

:class:`Answers` is the read-only half of the live state machine
(:class:`~armlab.orchestrator.live.experiment.LiveExperiment` inherits it): everything here reads the
engine core's statistics and the experiment's records and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from armlab.orchestrator.live.types import ExperimentState
from armlab.problem import Objective

if TYPE_CHECKING:
    from armlab.orchestrator.core import DecisionCore
    from armlab.orchestrator.live.types import TrialRecord
    from armlab.problem import Problem
    from armlab.stats import ArmStats

__all__ = ["Answers"]

_Z95 = float(special.ndtri(0.975))


class Answers:
    """Answers of a live experiment (mixed into :class:`~armlab.orchestrator.live.experiment.LiveExperiment`)."""

    core: DecisionCore
    problems: list[Problem]
    trials: list[TrialRecord]
    recommendations: list[Any]
    retired: set[tuple[int, int]]
    stop_record: dict[str, Any] | None
    in_flight: int
    _pending: dict[int, TrialRecord]

    # supplied by the experiment
    problem: Problem
    stats: ArmStats
    state: ExperimentState
    stopped: bool
    counters: Any
    _sent: list[np.ndarray]

    def _answer(self, bandit: int) -> Any:
        """Bandit ``bandit``'s current answer, JSON-ready (None for the regret objective)."""
        if self.problems[bandit].objective is Objective.REGRET:
            return None
        answer = self.core.recommend(bandit)[0]
        return int(answer) if np.ndim(answer) == 0 else np.flatnonzero(answer).tolist()

    def _checkpoint_state(self, trials: int) -> dict[str, Any]:
        """The run at a checkpoint of ``trials`` dispatched trials (a row group of the live
        ``results.csv``): the outcome counters, and per bandit its answer and, per arm, the
        trials sent to it (``pulls``, failed ones included), the rewards observed and their mean."""
        c = self.counters
        return {
            "trials": trials, "completed": c.completed, "failed": c.failed, "abandoned": c.abandoned, "late": c.late,
            "bandits": [
                {
                    "recommendation": self._answer(b),
                    "pulls": self._sent[b].tolist(),
                    "observed": st.counts[0].tolist(),
                    "means": [float(m) if n else None for m, n in zip(st.means[0], st.counts[0], strict=True)],
                }
                for b, st in enumerate(self.core.stats)
            ],
        }

    def recommendation(self) -> Any:
        """The current answer, JSON-ready: one bandit's, or a list with one per bandit."""
        if not self.core.multi_bandit:
            return self._answer(0)
        return [self._answer(b) for b in range(len(self.problems))]

    def confidence_intervals(self, bandit: int = 0) -> list[list[float] | None]:
        """Normal-approximation 95% intervals of each arm's mean (None below two rewards)."""
        stats = self.core.stats[bandit]
        n = stats.counts[0]
        half = _Z95 * np.sqrt(stats.variances(ddof=1)[0] / np.maximum(n, 1))
        means = stats.means[0]
        return [
            [float(means[i] - half[i]), float(means[i] + half[i])] if n[i] >= 2 else None
            for i in range(stats.n_arms)
        ]

    def bandit_summaries(self) -> list[dict[str, Any]]:
        """Per bandit: observed counts, means, pending trials, 95% intervals and answer."""
        return [
            {
                "counts": st.counts[0].tolist(),
                "means": st.means[0].tolist(),
                "pending": st.pending[0].tolist(),
                "intervals": self.confidence_intervals(b),
                "retired": sorted(arm for bandit, arm in self.retired if bandit == b),
                "recommendation": self._answer(b),
                "stopped": not self.core.open[0, b],
            }
            for b, st in enumerate(self.core.stats)
        ]

    def summary(self) -> dict[str, Any]:
        """Counts, means, outcomes and the recommendation (the live part of ``summary.json``).

        ``counts`` and ``means`` are the first bandit's (the only one in a one-bandit
        experiment); ``bandits`` holds every bandit's.
        """
        c = self.counters
        out = {
            "trials": c.closed,
            "completed": c.completed,
            "failed": c.failed,
            "abandoned": c.abandoned,
            "late": c.late,
            "counts": self.stats.counts[0].tolist(),
            "means": self.stats.means[0].tolist(),
            "recommendation": self.recommendation(),
            "recommendations": list(self.recommendations),
        }
        if self.core.multi_bandit:
            out["bandits"] = self.bandit_summaries()
        return out

    def status(self) -> dict[str, Any]:
        """Everything a monitoring client needs: state, progress, estimates, recommendation."""
        return {
            "state": self.state.value,
            "budget": self.problem.budget,
            "dispatched": len(self.trials),
            "in_flight_limit": self.in_flight,
            "pending": len(self._pending),
            "pending_trials": list(self._pending),
            **self.summary(),
            "bandits": self.bandit_summaries(),
            "confidence": {
                "level": 0.95,
                "intervals": self.confidence_intervals(),
                "policy_stopped": self.stopped,
            },
            "stop": self.stop_record,
        }

    def _explain(self, state: ExperimentState) -> str:
        pending, budget = len(self._pending), self.problem.budget
        if state is ExperimentState.IN_FLIGHT_FULL:
            return f"all {self.in_flight} in-flight slots are taken; report or abandon a trial first"
        if state is ExperimentState.BUDGET_SPENT:
            return f"budget spent: all {budget} trials are dispatched, {pending} still pending"
        if state is ExperimentState.STOPPED:
            return f"the policy stopped after {len(self.trials)} trials; {pending} still pending"
        return f"the experiment is finished: {len(self.trials)} trials dispatched, none pending"
