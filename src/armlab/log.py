"""Logging for armlab: silent library loggers, the CLI's set-up, and the event-log listener.

Library code gets its logger from :func:`get_logger`.  Such a logger drops every call until
the application configures structlog (``structlog.configure``, or :func:`configure_logging`
as the CLI does), so importing and calling armlab from a notebook or a web app prints
nothing unless that application asked for logs.  The check is made at each call, so loggers
created at import time follow a configuration made later.

A live experiment's structured log is its typed events (:mod:`armlab.events`): whoever runs
the experiment registers :func:`log_event` as a listener, and each event becomes one line.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Any, TextIO

import structlog

from armlab.errors import ConfigError
from armlab.events import ExperimentEvent, ReportLate, TrialAbandoned, TrialDispatched, TrialFailed, TrialObserved

__all__ = ["LibraryLogger", "configure_logging", "escape_control_characters", "get_logger", "log_event"]


def _discard(*args: Any, **kwargs: Any) -> None:
    """Stands in for every log method while structlog is unconfigured."""


class LibraryLogger:
    """A structlog logger that stays silent until the application configured structlog.

    Without configuration structlog prints every call to stdout, which is right for a
    script's own logs and wrong for a library's.  Library code only calls the level
    methods (``debug``, ``info``, ``warning``, ``error``) on it.
    """

    __slots__ = ("_logger",)

    def __init__(self, name: str) -> None:
        self._logger = structlog.get_logger(name)

    def __getattr__(self, method: str) -> Any:
        return getattr(self._logger, method) if structlog.is_configured() else _discard


def get_logger(name: str) -> LibraryLogger:
    """The logger armlab modules use (instead of ``structlog.get_logger``)."""
    return LibraryLogger(name)


_events_log = structlog.get_logger("armlab.events")

#: Events that mean a trial gave no usable reward: logged as warnings.
_WARNINGS = (TrialFailed, TrialAbandoned, ReportLate)
#: One line per trial: logged at debug level (``ARMLAB_LOG_LEVEL=debug``), so a busy service
#: does not spend most of its time writing them; ``/events`` streams them all.
_PER_TRIAL = (TrialDispatched, TrialObserved)
#: The logger class :func:`configure_logging` installed when it filters out debug lines: while
#: it is the configured one, per-trial events are skipped before any line is built.
_quiet_wrapper: type | None = None


def log_event(event: ExperimentEvent) -> None:
    """Listener that writes ``event`` as one structured log line (``event.to_dict()``).

    Failed and abandoned trials and late reports are warnings, dispatched and observed trials
    debug, every other event (eliminations, recommendation changes, checkpoints, stops) info.
    Silent, like every armlab logger, until the application configured structlog.
    """
    if not structlog.is_configured():  # checked first: building the fields costs more than the check
        return
    if isinstance(event, _PER_TRIAL):
        if _quiet_wrapper is not None and structlog.get_config()["wrapper_class"] is _quiet_wrapper:
            return
        write = _events_log.debug
    else:
        write = _events_log.warning if isinstance(event, _WARNINGS) else _events_log.info
    write(**event.to_dict())


#: C0 and C1 control characters and DEL: a terminal acts on them (moves the cursor, clears the
#: screen, retitles the window), so text from clients must not reach it raw.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def escape_control_characters(logger: Any, method: str, line: str) -> str:
    """structlog processor placed after the console renderer: every control character of the
    rendered line written as ``\\xNN``.

    Log lines carry strings that clients chose (abandon and failure reasons, idempotency
    keys, labels, request paths), and the console format writes a string without spaces as
    it is; on a terminal an escape sequence in one would be executed, and a newline would
    forge a line.  (The console format has no multi-line parts: tracebacks are fields.)
    """
    return _CONTROL.sub(_escaped, line)


def configure_logging(
    *, stream: TextIO | None = None, json: bool | None = None, level: str | None = None
) -> None:
    """Send armlab's structlog events to ``stream`` (default stderr).

    ``json=None`` picks JSON lines when the stream is not a terminal and a readable console
    format when it is.  ``level=None`` reads ``ARMLAB_LOG_LEVEL`` (default ``info``; ``debug``
    adds a line per dispatched and observed trial).  Events carry the bound context
    (experiment, policy, trial, arm...).
    """
    stream = stream or sys.stderr
    global _quiet_wrapper
    level = level or os.environ.get("ARMLAB_LOG_LEVEL", "info")
    number = logging.getLevelName(level.upper())
    if not isinstance(number, int):
        raise ConfigError(f"ARMLAB_LOG_LEVEL={level!r} is not a log level; use debug, info, warning or error")
    wrapper = structlog.make_filtering_bound_logger(number)
    _quiet_wrapper = wrapper if number > logging.DEBUG else None
    if json is None:
        json = not (hasattr(stream, "isatty") and stream.isatty())
    # JSON escapes control characters itself; the console format writes strings as they are
    render = [structlog.processors.JSONRenderer()] if json else [structlog.dev.ConsoleRenderer(colors=False),
                                                                 escape_control_characters]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            *render,
        ],
        wrapper_class=wrapper,
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
