"""How long a simulated experiment will take, estimated from a short probe before it runs.

Memory is estimated from a formula (:mod:`armlab.memory_estimate`); time cannot be: a step's
cost depends on the policy, the arms and the machine.  So each policy runs for a moment
(:data:`PROBE_SECONDS` shared among the policies, :mod:`armlab.orchestrator.montecarlo.probe`)
on up to :data:`PROBE_REPLICAS` replicas of the first run, its trials per second are measured,
and the whole experiment (every policy, replica and sweep value, in one process) is
extrapolated from them.  A policy that finishes within its share has measured its whole run.
Steps of fewer replicas cost more per trial, so the estimate errs on the long side;
fixed-confidence rules that stop early shorten the run further.  ``armlab validate`` prints it; ``armlab run`` logs it off a terminal.
"""

from __future__ import annotations

from collections.abc import Sequence

from armlab.orchestrator.montecarlo.probe import seconds_per_trial
from armlab.plan import ExperimentPlan

__all__ = ["PROBE_REPLICAS", "PROBE_SECONDS", "estimate_seconds", "format_duration"]

#: Seconds the probe runs in all (each policy gets its share, at least a report's worth of steps).
PROBE_SECONDS = 0.5
#: The most replicas the probe simulates (enough to reach numpy's per-trial speed).
PROBE_REPLICAS = 1000


def estimate_seconds(plans: Sequence[ExperimentPlan]) -> float | None:
    """Estimated seconds for the simulated runs ``plans`` (the runs of one experiment: one per
    sweep value) in one process; ``None`` for a live experiment, whose pace the world sets."""
    if not plans or plans[0].live:
        return None
    first = plans[0]
    share = PROBE_SECONDS / len(first.policies)
    trials = sum(plan.config.replicas * plan.config.problem.budget for plan in plans)
    return sum(seconds_per_trial(first, spec, replicas=PROBE_REPLICAS, seconds=share) * trials
               for spec in first.policies)


def format_duration(seconds: float) -> str:
    """``about 40 s``, ``about 3.5 min``, ``about 2.1 h``: two significant digits at most
    (never below ``about 0.01 s``)."""
    seconds = max(seconds, 0.01)
    if seconds < 90:
        return f"about {seconds:.2g} s"
    if seconds < 90 * 60:
        return f"about {seconds / 60:.2g} min"
    return f"about {seconds / 3600:.2g} h"
