"""KL divergences, the KL-UCB root finder and posterior quantiles against hand and brute-force values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from armlab.plugins.regret.bounds import (
    beta_upper_quantile,
    gaussian_upper_quantile,
    kl_bernoulli,
    klucb_bernoulli,
    klucb_gaussian,
    neg_entropy,
)

P_GRID = np.concatenate([[0.0, 1e-12, 1e-6, 1e-3], np.linspace(0.001, 0.999, 60), [1 - 1e-6, 1 - 1e-12, 1.0]])
D_GRID = np.concatenate([[1e-8, 1e-6], np.geomspace(1e-4, 60.0, 40)])


def brute_force(p: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """The KL-UCB root by 200 bisection steps in extended precision (no shortcuts)."""
    p = p.astype(np.longdouble)
    pc = np.clip(p, 1e-15, 1 - 1e-15)
    lo, hi = p.copy(), np.ones_like(p)
    for _ in range(200):
        mid = (lo + hi) / 2
        mc = np.clip(mid, 1e-15, 1 - 1e-15)
        over = pc * np.log(pc / mc) + (1 - pc) * np.log((1 - pc) / (1 - mc)) > delta
        hi, lo = np.where(over, mid, hi), np.where(over, lo, mid)
    return ((lo + hi) / 2).astype(np.float64)


def test_bernoulli_divergence_by_hand():
    assert kl_bernoulli(0.5, 0.5) == pytest.approx(0.0, abs=1e-15)
    assert kl_bernoulli(0.1, 0.2) == pytest.approx(0.1 * math.log(0.5) + 0.9 * math.log(0.9 / 0.8))
    assert kl_bernoulli(0.0, 0.5) == pytest.approx(math.log(2.0))  # 0 log 0 = 0
    assert neg_entropy(0.3) == pytest.approx(0.3 * math.log(0.3) + 0.7 * math.log(0.7))


def test_klucb_newton_matches_brute_force_and_bisection():
    p, delta = np.meshgrid(P_GRID, D_GRID)
    truth = brute_force(p, delta)
    truth = np.where(p == 0, -np.expm1(-delta), np.where(p >= 1, 1.0, truth))
    newton = klucb_bernoulli(p, delta)
    bisection = klucb_bernoulli(p, delta, solver="bisection")
    assert np.abs(newton - truth).max() < 1e-9
    assert np.abs(bisection - truth).max() < 1e-6
    assert np.abs(newton - bisection).max() < 1e-6


def test_klucb_edge_cases_and_shape():
    assert klucb_bernoulli(np.array([0.0]), np.array([0.7]))[0] == pytest.approx(1 - math.exp(-0.7), abs=1e-15)
    assert klucb_bernoulli(np.array([1.0]), np.array([0.7]))[0] == 1.0
    assert klucb_bernoulli(np.array([0.4]), np.array([0.0]))[0] == 0.4
    assert klucb_bernoulli(np.array([0.4]), np.array([-1.0]))[0] == 0.4
    # a hand case: d(0.5, q) = log 2 + 0.5 log(1 / (4 q (1 - q))) = 0.1  ->  q (1 - q) = exp(-0.2) / 4
    q = 0.5 + math.sqrt(0.25 - math.exp(-0.2) / 4)
    assert klucb_bernoulli(np.array([0.5]), np.array([0.1]))[0] == pytest.approx(q, abs=1e-12)


def test_klucb_index_lies_in_p_1_and_grows_with_delta():
    p, delta = np.meshgrid(P_GRID, D_GRID)
    index = klucb_bernoulli(p, delta)
    assert (index >= p).all() and (index <= 1.0).all()
    assert (np.diff(index, axis=0) >= -1e-12).all()  # D_GRID is increasing along axis 0
    inside = (p > 1e-6) & (p < 1 - 1e-6) & (index < 1 - 1e-9)
    assert np.allclose(kl_bernoulli(p, index)[inside], delta[inside], rtol=1e-6, atol=1e-12)


def test_klucb_gaussian_closed_form():
    means, f, counts = np.array([0.2, 0.5]), np.array([3.0]), np.array([1, 4])
    expected = means + np.sqrt(2 * 0.25 * 3.0 / counts)
    assert np.allclose(klucb_gaussian(means, f, 0.25, counts), expected)


def test_beta_upper_quantile_matches_scipy_and_grows_with_the_level():
    a, b = np.array([1.0, 3.0, 40.0]), np.array([1.0, 8.0, 3.0])
    for tail in (0.5, 1e-2, 1e-6):
        assert np.allclose(beta_upper_quantile(a, b, tail), scipy_stats.beta.isf(tail, a, b), rtol=1e-10)
    levels = beta_upper_quantile(a[:, None], b[:, None], np.array([0.5, 0.1, 1e-3, 1e-6])[None, :])
    assert (np.diff(levels, axis=1) > 0).all()
    assert beta_upper_quantile(1.0, 1.0, 0.25) == pytest.approx(0.75)  # uniform posterior


def test_gaussian_upper_quantile_closed_form():
    assert gaussian_upper_quantile(0.3, 0.5, 0.025) == pytest.approx(0.3 + 0.5 * 1.959963984540054)
    assert gaussian_upper_quantile(0.3, 0.5, 0.5) == pytest.approx(0.3)
