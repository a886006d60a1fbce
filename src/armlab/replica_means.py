"""Means over replicas and their standard errors: how every summary reports a per-replica value.

A low-level helper shared by the Monte Carlo summaries (:mod:`armlab.orchestrator.montecarlo.metrics`)
and the plugins' step observers (:mod:`armlab.plugins.gcp`), which may not import the engine.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mean_and_stderr"]


def mean_and_stderr(values: np.ndarray) -> tuple[list[float], list[float | None]]:
    """Column means of ``(R, C)`` values and their standard errors (None when R = 1)."""
    mean = values.mean(axis=0)
    if values.shape[0] < 2:
        return mean.tolist(), [None] * values.shape[1]
    stderr = values.std(axis=0, ddof=1) / math.sqrt(values.shape[0])
    return mean.tolist(), stderr.tolist()
