"""A kept set is repaired by swaps that give up a member of the lowest value.

The sets check themselves against the values they are given, so a swap giving up the wrong
member still ends in a right set (after more rounds or a rebuild); these tests pin the
cheap repair itself: one arm overtaking costs one swap.
"""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.fixed_confidence.common import TopSet, set_mask

R, K = 25, 12


class CountingTopSet(TopSet):
    """A :class:`TopSet` that counts the members it swaps out and the rows it rebuilds."""

    swapped = rebuilt = 0

    def _swap(self, rows, best, slot):
        self.swapped += rows.size
        super()._swap(rows, best, slot)

    def _rebuild(self, values, rows):
        self.rebuilt += rows.size
        super()._rebuild(values, rows)


@pytest.mark.parametrize("need, size", [(3, 3), (4, 7)])
def test_one_arm_overtaking_costs_one_swap_of_a_lowest_member(need, size):
    rng = np.random.default_rng(size)
    top = CountingTopSet(R, K, need, size=size)
    rows = np.arange(R)
    values = np.round(rng.normal(size=(R, K)), 1)  # coarse: ties between members are common
    top.update(values, rows)
    top.rebuilt = 0
    for _ in range(30):
        before = set_mask(top.members(rows), K)
        inside = np.where(before, values, np.inf)
        # one arm outside each set (chosen at random) rises above every arm
        risen = np.argmax(np.where(before, -np.inf, rng.random((R, K))), axis=1)
        values[rows, risen] = values.max(axis=1) + 0.1
        top.update(values, rows)
        after = set_mask(top.members(rows), K)
        left = before & ~after
        assert np.array_equal(after & ~before, set_mask(risen[None, :], K))
        assert (left.sum(axis=1) == 1).all()
        assert np.array_equal(values[left], inside.min(axis=1))
    assert (top.swapped, top.rebuilt) == (30 * R, 0)
