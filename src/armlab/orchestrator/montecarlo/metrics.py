"""Correctness of recommendations and the aggregates reported at checkpoints."""

from __future__ import annotations

import numpy as np

from armlab.problem import Objective, Problem
from armlab.replica_means import mean_and_stderr

__all__ = ["mean_and_stderr", "recommendation_errors"]


def recommendation_errors(problem: Problem, rows: np.ndarray, answer: np.ndarray) -> np.ndarray:
    """Boolean ``(len(rows),)``: is each replica's answer wrong?

    best-arm: the arm's mean is below ``max mu - epsilon``.  top-m: the set does not have
    ``m`` arms, or holds an arm below ``mu_(m) - epsilon`` (epsilon = 0: not the true top-m
    set).  threshold: any arm classified on the wrong side of the threshold.
    """
    assert problem.truth is not None
    means = problem.truth.means[rows]
    if problem.objective is Objective.THRESHOLD:
        return np.any(answer != (means >= problem.threshold), axis=1)
    if problem.objective is Objective.TOP_M:
        mth = -np.partition(-means, problem.top_m - 1, axis=1)[:, problem.top_m - 1]
        too_low = answer & (means < (mth - problem.epsilon)[:, None])
        return (answer.sum(axis=1) != problem.top_m) | too_low.any(axis=1)
    best = means.max(axis=1)
    picked = means[np.arange(rows.size), answer]
    return picked < best - problem.epsilon
