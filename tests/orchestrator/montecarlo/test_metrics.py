"""Error definitions per objective and the aggregate statistics."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.orchestrator.montecarlo.metrics import mean_and_stderr, recommendation_errors
from armlab.problem import Objective, Problem, Truth

MEANS = np.array([[0.9, 0.8, 0.5, 0.45, 0.1]])


def problem(objective, **kw):
    truth = Truth(means=MEANS.repeat(3, axis=0), variances=np.ones((3, 5)))
    return Problem(objective=objective, budget=10, n_arms=5, truth=truth, **kw)


def test_best_arm_error_with_and_without_epsilon():
    rows = np.arange(3)
    answer = np.array([0, 1, 2])
    assert recommendation_errors(problem(Objective.BEST_ARM), rows, answer).tolist() == [False, True, True]
    eps = problem(Objective.BEST_ARM, epsilon=0.15)
    assert recommendation_errors(eps, rows, answer).tolist() == [False, False, True]


def test_top_m_error_any_misplaced_arm_is_wrong():
    masks = np.array([
        [True, True, False, False, False],  # exact top-2
        [True, False, True, False, False],  # swaps the 2nd arm
        [True, True, True, False, False],  # too many arms
    ])
    p = problem(Objective.TOP_M, top_m=2)
    assert recommendation_errors(p, np.arange(3), masks).tolist() == [False, True, True]
    lenient = problem(Objective.TOP_M, top_m=2, epsilon=0.35)  # 0.5 >= 0.8 - 0.35 is acceptable
    assert recommendation_errors(lenient, np.arange(3), masks).tolist() == [False, False, True]


def test_threshold_error_any_misclassified_arm_is_wrong():
    truth_set = MEANS[0] >= 0.5
    flipped = truth_set.copy()
    flipped[3] = True
    masks = np.stack([truth_set, flipped, ~truth_set])
    p = problem(Objective.THRESHOLD, threshold=0.5)
    assert recommendation_errors(p, np.arange(3), masks).tolist() == [False, True, True]


def test_mean_and_stderr():
    mean, stderr = mean_and_stderr(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]))
    assert mean == [0.5, 0.0]
    assert stderr == pytest.approx([np.std([1, 0, 1, 0], ddof=1) / 2, 0.0])
    assert mean_and_stderr(np.array([[3.0]])) == ([3.0], [None])
