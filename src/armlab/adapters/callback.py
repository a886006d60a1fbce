"""``callback``: a Python function ``trial -> reward``, async or sync, runs each trial."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Self

import anyio
from pydantic import Field

from armlab.adapters.base import Trial
from armlab.adapters.common import AdapterParams, AdapterSource, reward_of
from armlab.errors import ConfigError, TrialFailed
from armlab.plugins.interfaces import PluginParams

__all__ = ["Callback"]


class CallbackParams(AdapterParams):
    function: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
        description="'module:function' to import; it gets the Trial and returns the reward "
        "(a number or {'reward': x}); may be async",
    )
    threads: int = Field(4, ge=1, le=256, description="worker threads for a synchronous function")


class Callback(AdapterSource):
    """Run each trial by calling a user function with the trial (an ``armlab.Trial``).

    From a config, ``function = "package.module:name"``; from Python,
    ``Callback.from_function(fn, arms=3)``.  An ``async def`` function is awaited on the
    event loop; a plain function runs in a worker thread, at most ``threads`` at a time.
    Any exception the function raises fails the trial with the exception's type and message
    (the function *is* the pipeline); so does a reward outside the declared range.  On
    timeout or shutdown the await is cancelled; a worker thread cannot be interrupted, so
    a synchronous function keeps running in the background until it returns.
    """

    name = "callback"
    Params = CallbackParams
    params: CallbackParams

    def __init__(
        self, params: PluginParams | Mapping[str, Any] | None = None, *, function: Callable[[Trial], Any] | None = None
    ) -> None:
        super().__init__(params)
        if function is None:
            if self.params.function is None:
                raise ConfigError("source 'callback' needs function = 'module:function' (the trial runner)")
            function = _import(self.params.function)
        self.function = function
        self._is_async = inspect.iscoroutinefunction(function)
        self._threads: anyio.CapacityLimiter | None = None

    @classmethod
    def from_function(cls, function: Callable[[Trial], Any], **params: Any) -> Callback:
        """A callback source around ``function``, with the other parameters as keywords."""
        return cls(params, function=function)

    async def __aenter__(self) -> Self:
        self._threads = anyio.CapacityLimiter(self.params.threads)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._threads = None

    async def run_once(self, trial: Trial, attempt: int) -> Any:
        try:
            if self._is_async:
                value = await self.function(trial)
            else:
                value = await anyio.to_thread.run_sync(
                    self.function, trial, limiter=self._threads, abandon_on_cancel=True
                )
        except Exception as exc:  # noqa: BLE001 - the user's function is the pipeline: its error fails the trial
            raise TrialFailed(f"{type(exc).__name__}: {exc}"[:1000]) from exc
        return reward_of(value)


def _import(spec: str) -> Callable[[Trial], Any]:
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"source 'callback': cannot import function {spec!r}: {exc}") from None
    if not callable(target):
        raise ConfigError(f"source 'callback': {spec!r} is a {type(target).__name__}, not a function")
    return target
