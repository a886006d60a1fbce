"""KeptArmValues: the kept values equal a recomputation after results and after a change of
some replicas' constants, in both of its modes, and each mode recomputes what it says."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins._fast.kept_arm_values import KeptArmValues
from armlab.stats import ArmStats

R, K = 4, 3


def played(stats: ArmStats, rng: np.random.Generator, steps: int) -> None:
    rows = np.arange(R)
    for _ in range(steps):
        stats.record(rows, rng.integers(0, K, R), rng.normal(size=R))


class Owner:
    """Values ``counts * scale[row]`` (gathers, a constant per replica) or
    ``counts + scale[0] / 2`` (whole arrays, one constant); records what each call was asked
    for."""

    def __init__(self, whole_arrays: bool) -> None:
        self.scale = np.arange(1.0, R + 1.0)
        self.whole_arrays = whole_arrays
        self.calls: list[int | str] = []
        self.kept = KeptArmValues(self.values_at, R, K, whole_arrays=whole_arrays)

    def values_at(self, stats, rows, at):
        self.calls.append("all" if isinstance(at, slice) else int(np.size(at)))
        counts = stats.counts.reshape(-1)[at]
        return counts + 0.5 * self.scale[0] if self.whole_arrays else counts * self.scale[rows]

    def definition(self, stats):
        return self.kept.compute(stats)


@pytest.mark.parametrize("whole_arrays", [False, True])
def test_kept_values_equal_a_recomputation(whole_arrays):
    rng = np.random.default_rng(5)
    stats, owner = ArmStats(R, K), Owner(whole_arrays)
    played(stats, rng, 2)
    owner.kept.current(stats)
    rows = np.arange(R)
    for step in range(6):
        arms = rng.integers(0, K, R)
        stats.record(rows, arms, rng.normal(size=R))
        owner.kept.observed(stats, rows, arms)
        if step == 3:
            owner.scale[[0, 1, 2]] *= 3.0  # constants of replicas 0 to 2 change
            owner.kept.refresh_rows(stats, np.array([0, 1, 2]))
        np.testing.assert_array_equal(owner.kept.current(stats), owner.definition(stats))


def test_whole_arrays_recompute_everything_at_once_and_defer_refreshes():
    stats, owner = ArmStats(R, K), Owner(whole_arrays=True)
    played(stats, np.random.default_rng(1), 2)
    owner.kept.current(stats)
    owner.kept.refresh_rows(stats, np.array([2]))
    assert owner.calls == ["all"]  # nothing recomputed until read
    owner.kept.current(stats)
    assert owner.calls == ["all", "all"]


def test_gathers_recompute_the_refreshed_rows_at_once():
    stats, owner = ArmStats(R, K), Owner(whole_arrays=False)
    played(stats, np.random.default_rng(1), 2)
    owner.kept.current(stats)
    owner.kept.refresh_rows(stats, np.array([0, 2]))
    owner.kept.current(stats)
    assert owner.calls == [R * K, 2 * K]  # all by gathers, then the two rows' arms only
