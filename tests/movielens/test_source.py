"""The ``movielens`` reward source: parameters, replayed rewards, truth, keyed randomness."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from armlab.errors import ConfigError
from armlab.movielens import cache
from armlab.movielens.model import ModelFileError, save_model
from armlab.movielens.source import MovieLens


@pytest.fixture
def model_file(ml100k_model, tmp_path_factory):
    return str(save_model(ml100k_model, tmp_path_factory.mktemp("model") / "ml100k.npz"))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_arms": 4}, "exactly one of model"),
        ({"model": "m.npz", "ratings": "u.data", "n_arms": 4}, "exactly one of model"),
        ({"model": "m.npz"}, "exactly one of n_arms"),
        ({"model": "m.npz", "n_arms": 4, "movies": [1, 2]}, "exactly one of n_arms"),
        ({"model": "m.npz", "movies": [1, 1]}, "movie id twice"),
        ({"model": "m.npz", "movies": [1, 2], "mapping": "literal"}, "mapping only apply with n_arms"),
        ({"model": "m.npz", "n_arms": 4, "rank": 3}, "rank only apply with ratings"),
        ({"model": "m.npz", "n_arms": 1}, "greater than or equal to 2"),
        ({"ratings": "u.data", "n_arms": 4, "mapping": "closest"}, "'normalized' or 'literal'"),
    ],
)
def test_parameter_combinations_are_checked(params, message):
    with pytest.raises(ValidationError, match=message):
        MovieLens(params)


def test_explicit_movies_replay_the_completed_ratings(ml100k_model, model_file):
    source = MovieLens({"model": model_file, "movies": [50, 181, 1]})
    assert source.n_arms == 3
    source.reset(np.arange(4), seed=9)
    idx = ml100k_model.index_of([50, 181, 1])
    np.testing.assert_array_equal(source.movie_ids, np.tile([50, 181, 1], (4, 1)))
    np.testing.assert_allclose(source.truth.means, np.tile(ml100k_model.movie_means[idx], (4, 1)))
    np.testing.assert_allclose(source.truth.variances, np.tile(ml100k_model.movie_variances[idx], (4, 1)))
    rows, arms, pulls = np.array([0, 1, 3, 3]), np.array([0, 2, 1, 1]), np.array([0, 5, 7, 8])
    u = source.uniforms(rows, arms, pulls)
    users = np.floor(u * 943).astype(int)  # a uniformly random user of the 943
    expected = (ml100k_model.user_factors[users] * ml100k_model.item_factors[idx[arms]]).sum(axis=1)
    np.testing.assert_allclose(source.sample(rows, arms, pulls), expected)


def test_rewards_are_a_pure_function_of_seed_replica_arm_and_pull(model_file):
    def rewards(replicas, seed):
        source = MovieLens({"model": model_file, "movies": [50, 181, 1, 7]})
        source.reset(np.asarray(replicas), seed=seed)
        rows = np.repeat(np.arange(len(replicas)), 4)
        return source.sample(rows, np.tile(np.arange(4), len(replicas)), np.full(rows.size, 3)).reshape(-1, 4)

    batch = rewards([0, 1, 2, 3], seed=1)
    np.testing.assert_array_equal(rewards([2], seed=1), batch[2:3])
    np.testing.assert_array_equal(rewards([0, 1, 2, 3], seed=1), batch)
    assert not np.array_equal(rewards([0, 1, 2, 3], seed=2), batch)


def test_replayed_rewards_have_the_true_moments(model_file):
    source = MovieLens({"model": model_file, "movies": [50, 1, 100]})
    source.reset(np.arange(1), seed=0)
    pulls = np.arange(40_000)
    for arm in range(3):
        x = source.sample(np.zeros_like(pulls), np.full_like(pulls, arm), pulls)
        mean, var = source.truth.means[0, arm], source.truth.variances[0, arm]
        assert abs(x.mean() - mean) < 4 * np.sqrt(var / x.size)
        assert x.var() == pytest.approx(var, rel=0.05)


def test_unknown_movie_ids_and_missing_files(model_file, tmp_path):
    source = MovieLens({"model": model_file, "movies": [50, 99999]})
    with pytest.raises(ConfigError, match=r"source.movies: movie ids not in the model .*\[99999\]"):
        source.reset(np.arange(2), seed=0)
    with pytest.raises(ModelFileError, match="cannot read model file"):
        MovieLens({"model": str(tmp_path / "none.npz"), "movies": [1, 2]}).reset(np.arange(1), seed=0)


def test_ratings_parameter_factorises_once_per_file(ml100k_path, tmp_path, monkeypatch):
    calls = []
    real = cache.complete
    monkeypatch.setattr(cache, "complete", lambda *a, **k: calls.append(1) or real(*a, **k))
    params = {"ratings": str(ml100k_path), "movies": [1, 2], "cache_dir": str(tmp_path), "iterations": 3}
    for _ in range(3):
        source = MovieLens(params)
        source.reset(np.arange(2), seed=0)
    assert len(calls) == 1
    assert source.model.info["iterations"] == 3 and source.model.info["source_name"] == "u.data"
