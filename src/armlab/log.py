"""Logging set-up for applications (the CLI); library code only calls ``get_logger``."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

__all__ = ["configure_logging"]


def configure_logging(
    *, stream: TextIO | None = None, json: bool | None = None, level: str = "info"
) -> None:
    """Send armlab's structlog events to ``stream`` (default stderr).

    ``json=None`` picks JSON lines when the stream is not a terminal and a readable console
    format when it is.  Events carry the bound context (experiment, policy, trial, arm...).
    """
    stream = stream or sys.stderr
    if json is None:
        json = not (hasattr(stream, "isatty") and stream.isatty())
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
