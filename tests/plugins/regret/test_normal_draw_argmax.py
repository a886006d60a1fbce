"""The exact argmax of keyed normal draws of Gaussian Thompson sampling
(:func:`~armlab.plugins._fast.normal_draw_argmax.argmax_of_normal_draws`): the argmax of every
draw made, ties and inactive arms included, while making few draws; and the tabulated quantile
brackets it rests on.  That Thompson sampling chooses with it as with every draw made is the
contract of tests/plugins/test_fast_paths.py and tests/plugins/regret/test_speed_paths.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from armlab.plugins import _fast
from armlab.plugins._fast import normal_draw_argmax
from armlab.plugins._fast.normal_draw_argmax import BIN_BITS, argmax_of_normal_draws, quantile_brackets
from armlab.random import KeyedRandom


def every_draw_argmax(rng, step, mean, sd, active):
    with _fast.reference_paths():
        return argmax_of_normal_draws(rng, step, mean, sd, active)


def test_reference_path_is_the_argmax_of_every_draw():
    r, k = 5, 7
    rng = KeyedRandom(1, "test", replicas=np.arange(r))
    mean, sd, active = np.zeros((r, k)), np.ones((r, k)), np.ones((r, k), dtype=bool)
    assert (every_draw_argmax(rng, 3, mean, sd, active) == np.argmax(rng.normal(3, k), axis=1)).all()


@pytest.mark.parametrize("arms", [3, 50, 1000])
def test_is_the_argmax_of_every_draw_with_ties_and_inactive_arms(arms):
    r = 40
    gen = np.random.default_rng(arms)
    rng = KeyedRandom(7, "thompson-test", replicas=np.arange(100, 100 + r))
    for step in range(12):
        mean = gen.choice([0.0, 0.3, 0.5], size=(r, arms))
        sd = gen.choice([0.05, 0.2, 1.0], size=(r, arms))
        mean[:4], sd[:4] = 1e6, 1e-12  # 1e6 + 1e-12 z rounds to 1e6: exact ties, the first wins
        active = gen.random((r, arms)) < 0.8
        active[4] = False  # nothing active: arm 0, as np.argmax of -inf everywhere
        active[5:8] = True
        steps = np.full(r, step) + gen.integers(0, 3, size=r)  # replicas out of step
        fast = argmax_of_normal_draws(rng, steps, mean, sd, active)
        assert (fast == every_draw_argmax(rng, steps, mean, sd, active)).all()
    assert (fast[:4] == np.argmax(active[:4], axis=1)).all()


def test_makes_few_draws_at_many_arms(monkeypatch):
    r, k = 200, 1000
    made, ndtri = [], special.ndtri

    def counted_ndtri(u):
        made.append(np.size(u))
        return ndtri(u)

    monkeypatch.setattr(normal_draw_argmax.special, "ndtri", counted_ndtri)
    rng = KeyedRandom(3, "test", replicas=np.arange(r))
    mean = np.random.default_rng(0).uniform(0.0, 1.0, (r, k))
    argmax_of_normal_draws(rng, 9, mean, np.full((r, k), 0.1), np.ones((r, k), dtype=bool))
    assert 0 < sum(made) < 5 * r  # a few per replica, not r * k


def test_quantile_brackets_hold_every_uniform_of_their_slice():
    lower, upper = quantile_brackets()
    slices = 2**BIN_BITS
    assert lower[0] == -np.inf and upper[-1] == np.inf
    edges = np.arange(1, slices) / slices
    below, above = np.nextafter(edges, 0.0), np.nextafter(edges, 1.0)  # the uniforms nearest each edge
    inside = np.random.default_rng(1).random(100_000)
    for u in (below, above, inside):
        b = np.floor(u * slices).astype(np.int64)
        z = special.ndtri(u)
        assert (lower[b] <= z).all() and (z <= upper[b]).all()
