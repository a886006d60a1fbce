"""The set rules shared by UGapE and LUCB1 against hand-computed values: the m arms of largest
value and the arm of best bound, with their tie orders."""

from __future__ import annotations

import numpy as np

from armlab.plugins.fixed_confidence.common import (
    argbest,
    best_of,
    set_mask,
    smallest_m,
    top_m,
)


def test_top_m_ties_go_to_the_lower_index():
    values = np.array([[0.5, 0.9, 0.5, 0.7, 0.5], [1.0, 1.0, 1.0, 1.0, 1.0]])
    assert top_m(values, 1).tolist() == [[1], [0]]
    assert top_m(values, 2).tolist() == [[1, 3], [0, 1]]
    assert top_m(values, 3).tolist() == [[0, 1, 3], [0, 1, 2]]
    assert top_m(values, 4).tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert smallest_m(values, 2).tolist() == [[True, False, True, False, False], [True, True, False, False, False]]


def test_top_m_is_the_head_of_a_stable_sort():
    rng = np.random.default_rng(5)
    values = np.round(rng.normal(size=(200, 9)), 1)  # coarse: many ties
    for m in range(1, 9):
        expected = np.sort(np.argsort(-values, axis=1, kind="stable")[:, :m], axis=1)
        assert np.array_equal(top_m(values, m), expected)


def test_best_arm_ties_go_to_the_larger_tiebreak_then_the_lower_index():
    bound = np.array([[0.3, 0.8, 0.8, 0.8, 0.9]])
    among = np.array([[True, True, True, True, False]])
    assert argbest(bound, among, largest=True).tolist() == [1]
    assert argbest(bound, among, largest=True, tiebreak=np.array([[0, 1, 2, 2, 9]])).tolist() == [2]
    assert argbest(bound, among, largest=False).tolist() == [0]
    ids = np.array([[1, 2, 3]])
    assert best_of(ids, np.array([[0.8, 0.8, 0.8]]), largest=True).tolist() == [1]
    assert best_of(ids, np.array([[0.8, 0.8, 0.8]]), largest=False, tiebreak=np.array([[1, 2, 2]])).tolist() == [2]
    assert set_mask(ids, 5).tolist() == [[False, True, True, True, False]]
