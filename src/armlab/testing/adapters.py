"""The conformance check of live adapters (:class:`~armlab.adapters.LiveSource` plugins).

A live source connects armlab to a real trial pipeline.  The live driver
(:class:`~armlab.orchestrator.live.run.LiveRun`) enters it as an async context manager, calls
``pull(trial)`` for each trial, bounds each call by a timeout, and treats a reward, the
``DEFERRED`` marker and :class:`~armlab.errors.TrialFailed` as the only outcomes: anything
else a pull raises ends the run.  :func:`check_adapter` checks a source against that
contract and then runs a small experiment through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel

from armlab.adapters.base import DEFERRED, LiveSource, Trial
from armlab.errors import TrialFailed
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.run import LiveRun
from armlab.plugins.interfaces import Policy
from armlab.plugins.policies.uniform import Uniform
from armlab.problem import Objective, Problem
from armlab.testing._plugin import check_declaration

__all__ = ["check_adapter"]

_OUTCOMES = "return a number within reward_range, return DEFERRED, or raise armlab.TrialFailed"


def check_adapter(
    source_cls: type[LiveSource],
    params: Mapping[str, Any] | None = None,
    *,
    pulls_per_arm: int = 2,
    budget: int = 12,
    timeout: float = 30.0,
    policy: Callable[[], Policy] = Uniform,
) -> None:
    """Assert that ``source_cls`` meets armlab's live-source contract (raises AssertionError).

    ``params`` are the plugin parameters to test with (pointing at a pipeline that answers:
    the check runs real trials).  Checked: the name and ``Params``; ``n_arms`` and one
    distinct ``arm_names`` entry per arm; ``async with source``; ``pull`` of every arm
    (``pulls_per_arm`` each) answers a number within ``reward_range``, :data:`DEFERRED`
    (only when ``defers_rewards`` says so) or raises :class:`~armlab.errors.TrialFailed`,
    and at least one pull answers a number; a pull cancelled while it runs (as a timeout
    cancels it) lets the cancellation through and leaves the source usable; and a
    :class:`~armlab.orchestrator.live.run.LiveRun` of ``budget`` trials (``policy()``, default
    ``uniform``; each trial bounded by ``timeout`` seconds) ends with every trial closed.
    A source that does not run trials itself (``runs_trials = False``: its trials go out
    through ask/tell) gets the first three checks only, and one that defers rewards
    (``defers_rewards``: they arrive through ``tell``) no live run.
    """
    name = check_declaration(source_cls, LiveSource)

    def make() -> LiveSource:
        return source_cls(source_cls.Params.model_validate(dict(params or {})))

    source = make()
    k = source.n_arms
    assert isinstance(k, int) and k >= 1, f"{name}.n_arms must be a positive int, got {k!r}"
    names = source.arm_names
    assert isinstance(names, list) and len(names) == k and all(isinstance(n, str) for n in names), (
        f"{name}.arm_names must be a list of {k} strings (one per arm), got {names!r}"
    )
    assert len(set(names)) == k, f"{name}.arm_names must be distinct, got {names!r}"
    low, high = source.reward_range
    assert low < high, f"{name}.reward_range must be (low, high) with low < high, got {source.reward_range}"
    anyio.run(_check_pulls, name, source, pulls_per_arm)
    fresh = make()
    if fresh.runs_trials and not fresh.defers_rewards:
        anyio.run(_check_live_run, name, fresh, policy, budget, timeout)


async def _check_pulls(name: str, source: LiveSource, pulls_per_arm: int) -> None:
    async with source as entered:
        assert entered is source, f"{name}.__aenter__ must return the source itself (return self)"
        if not source.runs_trials:
            return
        answered = 0
        trial_id = 0
        for pull in range(pulls_per_arm):
            for arm in range(source.n_arms):
                answered += _valid(name, source, await _pull(name, source, Trial(trial_id, arm, 0, pull)))
                trial_id += 1
        assert answered, (
            f"{name}: none of {trial_id} pulls answered a reward (all failed or were deferred); point the "
            "check's params at a pipeline that answers"
        )
        for how, cancel in (("at once", _cancel_at_once), ("while it runs", _cancel_while_running)):
            error = await cancel(source.pull(Trial(trial_id, 0, 0, pulls_per_arm)))
            if error is not None and not isinstance(error, TrialFailed):  # failing before the cancel is fine
                raise AssertionError(
                    f"{name}.pull raised {type(error).__name__}: {error} when cancelled {how}; let the "
                    "cancellation through (do not catch it; clean up in finally blocks)"
                ) from error
            _valid(name, source, await _pull(name, source, Trial(trial_id + 1, 0, 0, pulls_per_arm)))
            trial_id += 2


async def _cancel_at_once(call: Awaitable[Any]) -> Exception | None:
    """Await ``call`` in a scope that is already cancelled (a timeout that fires at its first
    wait); return what it raised other than the cancellation."""
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await call
        except Exception as exc:  # noqa: BLE001 - the caller judges it
            return exc
    return None


async def _cancel_while_running(call: Awaitable[Any]) -> Exception | None:
    """Start ``call`` in a task and cancel it as soon as it waits for something; return what
    it raised other than the cancellation."""
    raised: list[Exception] = []

    async def run() -> None:
        try:
            await call
        except Exception as exc:  # noqa: BLE001 - the caller judges it
            raised.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    return raised[0] if raised else None


async def _pull(name: str, source: LiveSource, trial: Trial) -> Any:
    try:
        return await source.pull(trial)
    except TrialFailed:
        return None
    except Exception as exc:  # any other exception is the finding
        raise AssertionError(
            f"{name}.pull({trial}) raised {type(exc).__name__}: {exc}; a pull must {_OUTCOMES} (anything else "
            "ends a live run)"
        ) from exc


def _valid(name: str, source: LiveSource, value: Any) -> bool:
    """Assert ``value`` is a pull's answer; True when it is a reward."""
    if value is None:  # TrialFailed
        return False
    if value is DEFERRED:
        assert source.defers_rewards, (
            f"{name}.pull returned DEFERRED but {name}.defers_rewards is False; set defers_rewards = True so "
            "armlab runs the experiment behind the ask/tell service that receives the late reports"
        )
        return False
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (
        f"{name}.pull returned {type(value).__name__} {value!r}; it must {_OUTCOMES} "
        "(armlab.adapters.validate_reward turns a value into a checked float)"
    )
    low, high = source.reward_range
    assert low <= value <= high, (
        f"{name}.pull returned {value!r}, outside reward_range {source.reward_range}; raise TrialFailed for "
        "unusable values (armlab.adapters.validate_reward does) or widen reward_range"
    )
    return True


async def _check_live_run(name: str, source: LiveSource, policy: Callable[[], Policy], budget: int,
                          timeout: float) -> None:
    problem = Problem(objective=Objective.BEST_ARM, budget=budget, n_arms=source.n_arms, source=name,
                      reward_range=source.reward_range)
    experiment = LiveExperiment(policy, [problem], 0, in_flight=2)
    run = await LiveRun(experiment=experiment, sources=[source], timeout=timeout).run()
    assert not experiment.pending_trials(), f"{name}: a live run ended with trials still pending"
    assert len(run.outcomes) == len(experiment.trials) == budget, (
        f"{name}: a live run of {budget} trials closed {len(run.outcomes)} of {len(experiment.trials)} dispatched"
    )
