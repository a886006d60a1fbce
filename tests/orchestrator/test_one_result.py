"""One replica's one result (the live experiment's every result) takes ArmStats' scalar path;
its statistics are bit for bit those of the array path (a second replica forces that one)."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.stats import ArmStats

K = 3


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_one_result_of_one_replica_folds_like_the_array_path(dtype):
    rng = np.random.default_rng(5)
    one, two = ArmStats(1, K), ArmStats(2, K)
    row = np.array([0])
    for arm, reward in zip(rng.integers(0, K, 500), rng.normal(3.0, 2.0, 500) * 10, strict=True):
        arms, rewards = np.array([arm]), np.array([reward]).astype(dtype)
        for stats in (one, two):
            stats.dispatch(row, arms)
            stats.dispatch(row, arms)  # one stays pending
            stats.observe(row, arms, rewards)
    for name in ("counts", "means", "m2", "pending"):
        assert getattr(one, name)[0].tobytes() == getattr(two, name)[0].tobytes(), name
    assert (one.observed[0], one.dispatched[0]) == (two.observed[0], two.dispatched[0]) == (500, 1000)
