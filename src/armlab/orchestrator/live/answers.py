"""What a live experiment reports: its answer, per-bandit summaries, checkpoints.

Plain functions of the engine core's statistics and the experiment's records, used by
:class:`~armlab.orchestrator.live.experiment.LiveExperiment`; they read and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from armlab.orchestrator.core import DecisionCore
from armlab.orchestrator.live.types import Counters, ExperimentState
from armlab.problem import Objective
from armlab.stats import ArmStats

__all__ = ["answer", "bandit_summaries", "checkpoint_state", "explain"]

def answer(core: DecisionCore, bandit: int) -> Any:
    """Bandit ``bandit``'s current answer, JSON-ready (None for the regret objective)."""
    if core.problems[bandit].objective is Objective.REGRET:
        return None
    chosen = core.recommend(bandit)[0]
    return int(chosen) if np.ndim(chosen) == 0 else np.flatnonzero(chosen).tolist()


def checkpoint_state(core: DecisionCore, counters: Counters, sent: Sequence[np.ndarray], trials: int) -> dict[str, Any]:
    """The run at a checkpoint of ``trials`` dispatched trials (a row group of the live
    ``results.csv``): the outcome counters, and per bandit its answer and, per arm, the
    trials sent to it (``pulls``, failed ones included), the rewards observed and their mean."""
    c = counters
    return {
        "trials": trials, "completed": c.completed, "failed": c.failed, "abandoned": c.abandoned, "late": c.late,
        "bandits": [
            {
                "recommendation": answer(core, b),
                "pulls": sent[b].tolist(),
                "observed": st.counts[0].tolist(),
                "means": [float(m) if n else None for m, n in zip(st.means[0], st.counts[0], strict=True)],
            }
            for b, st in enumerate(core.stats)
        ],
    }


def bandit_summaries(core: DecisionCore, retired: Collection[tuple[int, int]],
                     intervals: Callable[[int], list[list[float] | None]]) -> list[dict[str, Any]]:
    """Per bandit: observed counts, means, pending trials, 95% intervals (``intervals(bandit)``),
    retired arms and answer."""
    return [
        {
            "counts": st.counts[0].tolist(),
            "means": st.means[0].tolist(),
            "pending": st.pending[0].tolist(),
            "intervals": intervals(b),
            "retired": sorted(arm for bandit, arm in retired if bandit == b),
            "recommendation": answer(core, b),
            "stopped": not core.open[0, b],
        }
        for b, st in enumerate(core.stats)
    ]


def explain(state: ExperimentState, *, dispatched: int, pending: int, budget: int, in_flight: int) -> str:
    """Why ``ask`` cannot dispatch a trial in ``state``, and what to do."""
    if state is ExperimentState.IN_FLIGHT_FULL:
        return f"all {in_flight} in-flight slots are taken; report or abandon a trial first"
    if state is ExperimentState.BUDGET_SPENT:
        return f"budget spent: all {budget} trials are dispatched, {pending} still pending"
    if state is ExperimentState.STOPPED:
        return f"the policy stopped after {dispatched} trials; {pending} still pending"
    return f"the experiment is finished: {dispatched} trials dispatched, none pending"
