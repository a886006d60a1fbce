"""``external``: trials are run by clients that ask for them and report back (ask/tell)."""

from __future__ import annotations

from armlab.adapters.base import Trial
from armlab.adapters.common import ArmsSource
from armlab.errors import TrialFailed

__all__ = ["External"]


class External(ArmsSource):
    """Arms whose trials are handed out by ``ask`` and reported by ``tell``.

    Use it with ``armlab serve`` (clients call ``/ask`` and ``/tell`` over HTTP) or with
    :class:`~armlab.orchestrator.live.experiment.LiveExperiment` in Python.  armlab never runs these
    trials itself, so ``armlab run`` refuses this source.  Rewards outside
    ``[reward_min, reward_max]`` are rejected at ``tell``.  Pending trials (asked, not yet
    told) are visible to the policy as delayed feedback, bounded by ``[feedback] in_flight``;
    ``[feedback] timeout`` (seconds) fails trials nobody reported in time.
    """

    name = "external"
    runs_trials = False

    async def pull(self, trial: Trial) -> float:
        raise TrialFailed("source 'external' has no pipeline of its own; report rewards with tell")
