"""``callback``: a Python function ``trial -> reward``, async or sync, runs each trial."""

from __future__ import annotations

import contextvars
import importlib
import inspect
import math
import threading
from collections.abc import Callable, Mapping
from contextlib import suppress
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.from_thread
import anyio.lowlevel
from pydantic import Field, PrivateAttr, ValidationInfo, model_validator

from armlab.adapters.base import Trial
from armlab.adapters.common import AdapterParams, AdapterSource, reward_of
from armlab.config_paths import PathBase, import_path, path_base
from armlab.errors import ConfigError, TrialFailed
from armlab.log import get_logger
from armlab.plugins.interfaces import PluginParams

__all__ = ["Callback"]

log = get_logger(__name__)


class CallbackParams(AdapterParams):
    function: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
        description="'module:function' to import, looked for next to the config file first; it gets "
        "the Trial and returns the reward (a number, or {'reward': x, 'metrics': {name: number}}); may be async",
    )
    threads: int = Field(
        4,
        ge=1,
        le=256,
        description="threads for a synchronous function; a call that outlives its trial keeps its "
        "thread until it returns",
    )
    _base: PathBase | None = PrivateAttr(None)  # the config's directory: where the module is looked for first

    @model_validator(mode="after")
    def _remember_the_config_directory(self, info: ValidationInfo) -> CallbackParams:
        self._base = path_base(info)
        return self


class Callback(AdapterSource):
    """Run each trial by calling a user function with the trial (an ``armlab.Trial``).

    From a config, ``function = "package.module:name"``, the module looked for in the
    config file's directory first (:mod:`armlab.config_paths`); from Python,
    ``Callback.from_function(fn, arms=3)``.  An ``async def`` function is awaited on the
    event loop; a plain function runs in a thread of its own, at most ``threads`` at a time.
    Whatever the function raises fails the trial with the exception's type and message
    (the function *is* the pipeline): ``SystemExit``, ``KeyboardInterrupt`` and a
    ``CancelledError`` of its own included, so a callback cannot end the run.  Only a
    cancellation of the trial itself (its timeout, the run's shutdown) cancels the call.
    A reward outside the declared range fails the trial too.

    A function that never returns: an async one is cancelled by the timeout.  A synchronous
    one cannot be interrupted: the timeout (or shutdown) ends the trial, but the thread goes
    on running the call and keeps its place among the ``threads`` until the function
    returns; meanwhile further trials wait for a free thread, under their timeout, whose
    reason then says that every thread is held.  The threads are daemon threads, so calls
    still running do not keep armlab from exiting: they are dropped when the process ends.
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
            function = _import(self.params.function, self.params._base)
        self.function = function
        self._is_async = inspect.iscoroutinefunction(function)
        self._threads: anyio.CapacityLimiter | None = None
        self._abandoned = 0  # calls still running in a thread although their trial has ended

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
        if self._threads is None:
            raise RuntimeError("use the callback source as an async context manager (async with source:)")
        try:
            value = await (self.function(trial) if self._is_async else self._call_in_thread(trial, self._threads))
        except anyio.get_cancelled_exc_class() as exc:
            if anyio.current_effective_deadline() == -math.inf:
                raise  # the trial itself was cancelled: its timeout, or the run's shutdown
            raise TrialFailed(_reason(exc)) from exc  # raised by the function, nothing was cancelled
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the function is the pipeline
            raise TrialFailed(_reason(exc)) from exc
        return reward_of(value)

    def timeout_detail(self) -> str:
        """Says so when every thread is held by a call that has not returned."""
        if self._abandoned < self.params.threads:
            return ""
        return (
            f"; all {self.params.threads} threads are held by calls that have not returned (a synchronous "
            "function cannot be interrupted): make the function return, or raise threads"
        )

    async def _call_in_thread(self, trial: Trial, limiter: anyio.CapacityLimiter) -> Any:
        """Call the synchronous function in a daemon thread that holds one of ``limiter``'s tokens.

        The token is given back when the function returns, not when the trial ends, so
        ``threads`` bounds the threads really in use, stuck calls included.
        """
        call = _ThreadCall(limiter)
        await call.limiter.acquire_on_behalf_of(call)
        context = contextvars.copy_context()  # the caller's log context (trial, arm) goes along
        token = anyio.lowlevel.current_token()

        def finish(value: Any, error: BaseException | None) -> None:  # on the event loop
            call.limiter.release_on_behalf_of(call)
            if call.abandoned:
                self._abandoned -= 1
            call.value, call.error = value, error
            call.finished.set()

        def work() -> None:
            value, error = None, None
            try:
                value = context.run(self.function, trial)
            except BaseException as exc:  # noqa: BLE001 - handed to the trial, which fails with it
                error = exc
            with suppress(RuntimeError):  # the event loop has finished (RunFinishedError) or is closing
                anyio.from_thread.run_sync(finish, value, error, token=token)

        threading.Thread(target=work, name=f"armlab callback, trial {trial.id}", daemon=True).start()
        try:
            await call.finished.wait()
        except anyio.get_cancelled_exc_class():
            call.abandoned = True
            self._abandoned += 1
            log.warning("callback_still_running", trial=trial.id, threads_held=self._abandoned,
                        threads=self.params.threads)
            raise
        if call.error is not None:
            raise call.error
        return call.value


class _ThreadCall:
    """One call of a synchronous function in its thread; changed on the event loop only."""

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self.limiter = limiter  # the source's limiter when the call started (it outlives a re-entry)
        self.finished = anyio.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.abandoned = False  # the trial ended (timeout, shutdown) before the function returned


def _reason(exc: BaseException) -> str:
    """A failed trial's reason: the exception the function raised, type and message."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if not isinstance(exc, Exception):
        text += " (raised by the function: it fails this trial and does not stop the run)"
    return text[:1000]


def _import(spec: str, base: PathBase | None) -> Callable[[Trial], Any]:
    """The function ``module:attribute``, its module looked for in ``base`` (the config's
    directory) before the rest of ``sys.path``."""
    module_name, _, attribute = spec.partition(":")
    try:
        with import_path(base.directory if base is not None else None):
            target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        where = f" (looked in {base}, then on sys.path)" if base is not None else ""
        raise ConfigError(f"source 'callback': cannot import function {spec!r}: {exc}{where}") from None
    if not callable(target):
        raise ConfigError(f"source 'callback': {spec!r} is a {type(target).__name__}, not a function")
    return target
