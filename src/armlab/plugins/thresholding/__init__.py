"""Thresholding-bandit policies (seed 000: AugUCB and its baselines)."""

from __future__ import annotations

from armlab.plugins import hookimpl


@hookimpl
def armlab_register_policies():
    return []
