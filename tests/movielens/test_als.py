"""ALS completion: the batched solves against a per-row reference, convergence, seeding, ML-100K."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import sparse

from armlab.movielens.als import ALSSettings, _solve_rows, fit_als, rmse
from armlab.movielens.loader import Ratings
from armlab.random import KeyedRandom


def make_ratings(matrix: np.ndarray, observed: np.ndarray) -> Ratings:
    users, items = np.nonzero(observed)
    return Ratings(
        users=users, items=items, values=matrix[users, items].astype(float),
        user_ids=np.arange(matrix.shape[0]) + 1, item_ids=np.arange(matrix.shape[1]) + 1, format="test",
    )


def objective(r: Ratings, p: np.ndarray, q: np.ndarray, lam: float) -> float:
    """The weighted-lambda ALS objective of the sheet (B.4)."""
    resid = r.values - np.einsum("nr,nr->n", p[r.users], q[r.items])
    n_u = np.bincount(r.users, minlength=p.shape[0])
    n_j = np.bincount(r.items, minlength=q.shape[0])
    return float(resid @ resid + lam * (n_u @ (p * p).sum(1) + n_j @ (q * q).sum(1)))


def test_batched_solve_matches_a_per_row_ridge_regression():
    rng = np.random.default_rng(1)
    values = rng.integers(1, 6, size=(6, 5)).astype(float)
    observed = rng.random((6, 5)) < 0.6
    observed[:, 0] = True  # every user rated something
    r = make_ratings(values, observed)
    q = rng.normal(size=(5, 3))
    by_user = sparse.csr_matrix((r.values, (r.users, r.items)), shape=(6, 5))
    seen = sparse.csr_matrix((np.ones(len(r)), (r.users, r.items)), shape=(6, 5))
    ridge = 0.1 * observed.sum(axis=1)
    got = _solve_rows(by_user, seen, q, ridge)
    for u in range(6):
        js = np.flatnonzero(observed[u])
        a = q[js].T @ q[js] + ridge[u] * np.eye(3)
        np.testing.assert_allclose(got[u], np.linalg.solve(a, q[js].T @ values[u, js]), rtol=1e-10)


def test_hand_computed_rank_one_sweep():
    # One user, one movie, rating 4, lambda 1: the user solve gives p = q*4 / (q^2 + 1); the
    # movie solve then gives q' = p*4 / (p^2 + 1).
    r = make_ratings(np.array([[4.0]]), np.array([[True]]))
    fit = fit_als(r, ALSSettings(rank=1, regularization=1.0, iterations=1))
    q0 = 0.1 * KeyedRandom(0, "movielens-als", replicas=np.arange(1)).normal(0, 1)[0, 0]
    p = 4 * q0 / (q0 * q0 + 1)
    q = 4 * p / (p * p + 1)
    assert fit.user_factors[0, 0] == pytest.approx(p)
    assert fit.item_factors[0, 0] == pytest.approx(q)
    assert fit.train_rmse == pytest.approx(abs(4 - p * q))


def test_objective_never_increases_and_low_rank_data_is_recovered():
    rng = np.random.default_rng(7)
    truth = 3 + rng.normal(size=(60, 2)) @ rng.normal(size=(2, 40))
    observed = rng.random(truth.shape) < 0.5
    r = make_ratings(truth, observed)
    settings = dict(rank=3, regularization=1e-3)
    values = [objective(r, *_factors(r, settings, k), 1e-3) for k in range(1, 9)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:], strict=False)), values
    fit = fit_als(r, ALSSettings(**settings, iterations=60))
    assert fit.train_rmse < 0.02
    held_out = ~observed
    completed = fit.user_factors @ fit.item_factors.T
    assert np.sqrt(np.mean((completed - truth)[held_out] ** 2)) < 0.1


def _factors(r, settings, iterations):
    fit = fit_als(r, ALSSettings(**settings, iterations=iterations))
    return fit.user_factors, fit.item_factors


def test_seeded_and_deterministic():
    rng = np.random.default_rng(3)
    r = make_ratings(rng.integers(1, 6, size=(30, 20)), rng.random((30, 20)) < 0.4)
    a, b = fit_als(r), fit_als(r)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    c = fit_als(r, ALSSettings(als_seed=1))
    assert not np.array_equal(a.item_factors, c.item_factors)
    assert len(a.rmse_history) == 15
    assert a.train_rmse == pytest.approx(rmse(r, a.user_factors, a.item_factors))


@pytest.mark.parametrize("bad", [{"rank": 0}, {"regularization": 0.0}, {"iterations": 0}, {"als_seed": -1}])
def test_settings_are_validated(bad):
    with pytest.raises(ValidationError):
        ALSSettings(**bad)


def test_movielens_100k_matches_the_sheet(ml100k_model):
    # Reference figures: training RMSE 0.82; column means 0.54-4.52, variances from 0.009.
    assert ml100k_model.info["train_rmse"] == pytest.approx(0.82, abs=0.005)
    means, variances = ml100k_model.movie_means, ml100k_model.movie_variances
    assert means.min() == pytest.approx(0.54, abs=0.02) and means.max() == pytest.approx(4.52, abs=0.02)
    assert variances.min() == pytest.approx(0.009, abs=0.002)
    assert 1.0 < variances.max() < 1.5
