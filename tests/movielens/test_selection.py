"""Movie selection: the affine target mapping and the greedy nearest-movie matching."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.movielens import selection
from armlab.movielens.selection import candidate_movies, match_movies, normalized_targets


def test_candidates_need_min_ratings():
    assert candidate_movies(np.array([20, 19, 0, 300]), 20).tolist() == [0, 3]


def test_normalized_targets_map_the_synthetic_ranges_onto_percentiles():
    movie_means = np.linspace(1.0, 5.0, 101)  # q01 = 1.04, q99 = 4.96
    movie_vars = np.linspace(0.0, 1.0, 101)  # q01 = 0.01, q99 = 0.99
    mu, var = normalized_targets(np.array([[0.0, 0.5, 1.0]]), np.array([[0.05, 0.775, 1.5]]), movie_means, movie_vars)
    np.testing.assert_allclose(mu, [[1.04, 3.0, 4.96]])
    np.testing.assert_allclose(var, [[0.01, 0.5, 0.99]])


def test_greedy_matching_without_replacement_by_hand():
    means = np.array([1.0, 2.0, 3.0, 2.1])
    variances = np.array([0.5, 0.5, 0.5, 0.6])
    # arm 0 wants (2, 0.5) -> movie 1; arm 1 wants the same -> next nearest, movie 3
    # (distance 0.01 + 0.01) rather than movie 0 or 2 (distance 1); arm 2 wants (0, 0) -> movie 0.
    targets_m = np.array([[2.0, 2.0, 0.0]])
    targets_v = np.array([[0.5, 0.5, 0.0]])
    assert match_movies(targets_m, targets_v, means, variances, replace=False).tolist() == [[1, 3, 0]]
    assert match_movies(targets_m, targets_v, means, variances, replace=True).tolist() == [[1, 1, 0]]


def test_ties_go_to_the_lowest_movie_index():
    means, variances = np.array([1.0, 3.0, 1.0]), np.zeros(3)
    assert match_movies(np.array([[2.0, 2.0]]), np.zeros((1, 2)), means, variances, replace=False).tolist() == [[0, 1]]


def test_too_few_candidates_without_replacement():
    with pytest.raises(ConfigError, match="3 arms need 3 distinct movies but only 2 are candidates"):
        match_movies(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(2), np.zeros(2), replace=False)
    assert match_movies(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(2), np.zeros(2), replace=True).shape == (1, 3)


def test_blocks_of_replicas_give_the_same_answer(monkeypatch):
    rng = np.random.default_rng(5)
    means, variances = rng.uniform(1, 5, 50), rng.uniform(0, 1, 50)
    tm, tv = rng.uniform(1, 5, (9, 8)), rng.uniform(0, 1, (9, 8))
    whole = match_movies(tm, tv, means, variances, replace=False)
    monkeypatch.setattr(selection, "_BLOCK_CELLS", 100)  # blocks of 2 replicas
    np.testing.assert_array_equal(match_movies(tm, tv, means, variances, replace=False), whole)
    assert all(len(set(row)) == 8 for row in whole.tolist())
