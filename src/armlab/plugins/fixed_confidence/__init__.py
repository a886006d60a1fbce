"""(epsilon, m)-best-arm and fixed-confidence policies (seed 002: UGapE; LUCB1)."""

from __future__ import annotations

from armlab.plugins import hookimpl


@hookimpl
def armlab_register_policies():
    return []
