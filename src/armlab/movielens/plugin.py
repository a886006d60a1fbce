"""Registers the MovieLens reward source and the ``armlab movielens`` commands."""

from __future__ import annotations

from armlab.plugins import hookimpl


@hookimpl
def armlab_register_sources():
    return []
