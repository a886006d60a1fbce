"""Fixed-budget best-arm identification policies (seed 004 and cited baselines)."""

from __future__ import annotations

from armlab.plugins import hookimpl


@hookimpl
def armlab_register_policies():
    return []
