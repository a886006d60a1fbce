"""The lazy exact argmax of KL-UCB and Bayes-UCB (:class:`~armlab.plugins._fast.lazy_argmax.LazyArgmax`):
the exact argmax of an index concave in its level while computing few entries, and the
slopes in the level that its tangent bounds use.  That KL-UCB and Bayes-UCB choose with it as
with their whole index is the contract of tests/plugins/regret/test_speed_paths.py."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins._fast.lazy_argmax import LazyArgmax
from armlab.plugins.regret.bounds import (
    beta_quantile_slope,
    beta_upper_quantile,
    klucb_bernoulli,
    klucb_bernoulli_slope,
)
from armlab.plugins.selection import argmax_random_ties, random_among_entries
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


def concave_family(a: np.ndarray, b: np.ndarray):
    """Indices ``a + b sqrt(level)``: nondecreasing and concave in the level for ``b >= 0``."""
    state = {"level": None}

    def value_and_slope(rows, flat):
        level = state["level"][rows]
        root = np.sqrt(level)
        with np.errstate(divide="ignore"):
            return a.reshape(-1)[flat] + b.reshape(-1)[flat] * root, b.reshape(-1)[flat] / (2.0 * root)

    return state, value_and_slope


@pytest.mark.parametrize("random_ties", [False, True])
def test_concave_level_index_is_the_exact_argmax_and_computes_few_entries(random_ties):
    r, k = 64, 30
    gen = np.random.default_rng(0)
    a = gen.choice([0.0, 0.25, 0.5], size=(r, k))  # few distinct values: exact ties happen
    b = gen.choice([0.0, 0.1, 0.2, 0.4], size=(r, k))  # b = 0: constant, exact once computed
    state, value_and_slope = concave_family(a, b)
    computed = []

    def counted(rows, flat):
        computed[-1] += flat.size
        return value_and_slope(rows, flat)

    lazy = LazyArgmax(counted, r, k, slack=1e-12)
    rng = KeyedRandom(5, "test", replicas=np.arange(r))
    rows = np.arange(r)
    shape = ArmStats(r, k)  # only its flat indexing is used
    for step in range(300):
        level = np.log(step + 2.0) + 0.01 * (rows % 3)  # per replica, nondecreasing
        state["level"] = level
        full = a + b * np.sqrt(level)[:, None]
        expected = argmax_random_ties(full, rng, step) if random_ties else np.argmax(full, axis=1)
        computed.append(0)
        chosen = lazy.select(level, rng if random_ties else None, step)
        np.testing.assert_array_equal(chosen, expected)
        # the chosen arm's statistics change (its index drops), as after a pull
        a[rows, chosen] -= gen.choice([0.0, 0.05], size=r)
        lazy.observed(shape, rows, chosen)
    assert np.mean(computed[50:]) < 0.25 * r * k  # the point: far fewer than R x K solves


def test_klucb_slope_is_the_derivative_in_the_level():
    p = np.array([0.0, 0.1, 0.5, 0.9, 0.3])
    inv_n = 1.0 / np.array([1.0, 5.0, 20.0, 3.0, 100.0])
    f, h = 3.0, 1e-6
    q = klucb_bernoulli(p, f * inv_n)
    numeric = (klucb_bernoulli(p, (f + h) * inv_n) - klucb_bernoulli(p, (f - h) * inv_n)) / (2 * h)
    np.testing.assert_allclose(klucb_bernoulli_slope(p, q, inv_n), numeric, rtol=1e-4)
    assert klucb_bernoulli_slope(np.array([1.0]), np.array([1.0]), np.array([1.0]))[0] == 0.0
    assert np.isinf(klucb_bernoulli_slope(np.array([0.4]), np.array([0.4]), np.array([1.0]))[0])


def test_beta_quantile_slope_is_the_derivative_in_log_one_over_tail():
    a = np.array([1.0, 3.0, 10.5, 1.0, 40.0])
    b = np.array([1.0, 8.0, 2.5, 30.0, 40.0])
    level, h = 6.0, 1e-6
    q = beta_upper_quantile(a, b, np.exp(-level))
    above, below = (beta_upper_quantile(a, b, np.exp(-(level + d))) for d in (h, -h))
    numeric = (above - below) / (2 * h)
    np.testing.assert_allclose(beta_quantile_slope(a, b, q, np.exp(-level)), numeric, rtol=1e-4)


def test_constant_entries_are_computed_once():
    r, k = 8, 6
    a = np.tile(np.linspace(1.0, 0.5, k), (r, 1))
    b = np.zeros((r, k))
    b[:, -1] = 1.0  # the last arm grows with the level and eventually wins
    state, value_and_slope = concave_family(a, b)
    seen = []

    def recorded(rows, flat):
        seen.extend(flat.tolist())
        return value_and_slope(rows, flat)

    lazy = LazyArgmax(recorded, r, k, slack=1e-12)
    for step in range(40):
        state["level"] = np.full(r, (step + 1) / 10.0)
        expected = np.argmax(a + b * np.sqrt(state["level"])[:, None], axis=1)
        np.testing.assert_array_equal(lazy.select(state["level"]), expected)
    constant = np.flatnonzero(b.reshape(-1) == 0.0)
    assert np.isin(constant, seen).all()
    assert max(seen.count(f) for f in constant) == 1  # exact at every later level: never again


def test_random_among_entries_draws_what_the_dense_draw_picks():
    r, k = 30, 12
    rng = KeyedRandom(2, "ties", replicas=np.arange(r))
    tied = np.random.default_rng(1).random((r, k)) < 0.3
    tied[np.arange(r), np.arange(r) % k] = True  # every row has a tied entry
    rows, cols = np.nonzero(tied)
    steps = np.arange(r) * 7
    dense = np.argmax(np.where(tied, rng.uniform(steps * 2 + 1, k), -1.0), axis=1)
    np.testing.assert_array_equal(random_among_entries(rows, cols, rng, steps, salt=1), dense)
