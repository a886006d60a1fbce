"""Registers the live adapters (callback, command, webhook) and the live-run commands."""

from __future__ import annotations

from armlab.plugins import hookimpl


@hookimpl
def armlab_register_sources():
    return []
