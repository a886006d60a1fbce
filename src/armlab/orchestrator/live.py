"""Drive one live replica: trials are awaited through a :class:`~armlab.adapters.LiveSource`.

A task group holds one task per trial in flight.  A trial task awaits the source (under an
optional timeout) and always sends exactly one :class:`Outcome` into a memory object stream;
the feedback consumer is the only writer of statistics and policy state, and it frees the
in-flight slot *after* applying the result, so every choice sees every finished trial.
Failed and timed-out trials are outcomes: they release their slot and are logged.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import numpy as np
import structlog
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from structlog.contextvars import bound_contextvars

from armlab.adapters.base import LiveSource, Trial
from armlab.errors import TrialFailed
from armlab.plugins.interfaces import Policy
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["LiveRun", "Outcome"]

log = structlog.get_logger("armlab.orchestrator")

_ROW = np.zeros(1, dtype=np.int64)


@dataclass(frozen=True)
class Outcome:
    """What became of one trial."""

    trial: Trial
    status: Literal["completed", "failed", "timed_out"]
    reward: float | None = None
    reason: str = ""


@dataclass
class LiveRun:
    """One live replica of ``policy`` on ``source``."""

    policy: Policy
    source: LiveSource
    problem: Problem
    seed: int
    in_flight: int = 1
    timeout: float | None = None
    checkpoints: list[int] = field(default_factory=list)
    stats: ArmStats = field(init=False)
    outcomes: list[Outcome] = field(init=False, default_factory=list)
    recommendations: list[Any] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.stats = ArmStats(1, self.problem.n_arms)
        self.policy.reset(self.problem, 1, KeyedRandom(self.seed, "policy", 0, replicas=_ROW))

    def __repr__(self) -> str:
        failed = sum(o.status != "completed" for o in self.outcomes)
        return (
            f"LiveRun(dispatched={int(self.stats.dispatched[0])}, "
            f"in_flight={int(self.stats.pending.sum())}, completed={len(self.outcomes) - failed}, "
            f"failed={failed})"
        )

    async def run(self) -> LiveRun:
        """Dispatch up to ``budget`` trials, at most ``in_flight`` pending at a time."""
        limiter = anyio.CapacityLimiter(self.in_flight)
        send, receive = anyio.create_memory_object_stream[Outcome](max_buffer_size=self.in_flight)
        started = time.perf_counter()
        async with self.source, anyio.create_task_group() as tg:
            tg.start_soon(self._consume, receive, limiter)
            async with send:
                for trial_id in range(self.problem.budget):
                    await limiter.acquire_on_behalf_of(trial_id)
                    arm = int(self.policy.select(self.stats)[0])
                    if arm < 0:
                        limiter.release_on_behalf_of(trial_id)
                        log.info("policy_stopped", trials=trial_id)
                        break
                    trial = Trial(id=trial_id, arm=arm, pull=int(self.stats.pulls[0, arm]))
                    self.stats.dispatch(_ROW, np.array([arm]))
                    tg.start_soon(self._run_trial, trial, send.clone())
        log.info("live_run_finished", trials=len(self.outcomes),
                 wall_seconds=round(time.perf_counter() - started, 4))
        return self

    async def _run_trial(self, trial: Trial, send: ObjectSendStream[Outcome]) -> None:
        async with send:
            with bound_contextvars(trial=trial.id, arm=trial.arm, bandit=trial.bandit):
                log.debug("trial_started")
                try:
                    with anyio.fail_after(self.timeout if self.timeout is not None else math.inf):
                        value = await self.source.pull(trial)
                    reward = float(value)
                    if not math.isfinite(reward):
                        raise TrialFailed(f"reward is not a finite number: {value!r}")
                    outcome = Outcome(trial, "completed", reward=reward)
                except TrialFailed as exc:
                    outcome = Outcome(trial, "failed", reason=str(exc))
                except TimeoutError:
                    outcome = Outcome(trial, "timed_out", reason=f"no reward within {self.timeout} s")
                await send.send(outcome)

    async def _consume(self, receive: ObjectReceiveStream[Outcome], limiter: anyio.CapacityLimiter) -> None:
        async with receive:
            async for outcome in receive:
                self._apply(outcome)
                limiter.release_on_behalf_of(outcome.trial.id)

    def _apply(self, outcome: Outcome) -> None:
        trial = outcome.trial
        arm = np.array([trial.arm])
        with bound_contextvars(trial=trial.id, arm=trial.arm, bandit=trial.bandit):
            if outcome.status == "completed":
                reward = np.array([outcome.reward])
                self.stats.observe(_ROW, arm, reward)
                self.policy.update(self.stats, _ROW, arm, reward)
                log.info("trial_completed", reward=outcome.reward)
            else:
                self.stats.release(_ROW, arm)
                log.warning("trial_failed", status=outcome.status, reason=outcome.reason)
        self.outcomes.append(outcome)
        if len(self.outcomes) in self.checkpoints:
            self.recommendations.append(self.recommendation())
            log.info("checkpoint", trials=len(self.outcomes), recommendation=self.recommendations[-1])

    def recommendation(self) -> Any:
        """The policy's current answer, JSON-ready (None for the regret objective)."""
        if self.problem.objective is Objective.REGRET:
            return None
        answer = self.policy.recommend(self.stats)[0]
        return int(answer) if np.ndim(answer) == 0 else np.flatnonzero(answer).tolist()

    def summary(self) -> dict[str, Any]:
        """Counts, means, failures and the final recommendation."""
        failed = [o for o in self.outcomes if o.status != "completed"]
        return {
            "trials": len(self.outcomes),
            "completed": len(self.outcomes) - len(failed),
            "failed": len(failed),
            "counts": self.stats.counts[0].tolist(),
            "means": self.stats.means[0].tolist(),
            "recommendation": self.recommendation(),
            "recommendations": self.recommendations,
        }
