"""Greedy confidence pursuit (seed 003): top-m arm rules and multi-bandit allocators."""

from __future__ import annotations

from armlab.plugins import hookimpl


@hookimpl
def armlab_register_policies():
    return []
