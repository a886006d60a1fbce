"""The conformance check of simulated reward sources (:class:`~armlab.RewardSource` plugins).

A simulated source must make every reward a pure function of (seed, replica, bandit, arm,
pull): that is what makes a seed reproduce a study bit for bit, lets armlab split replicas
over processes without changing a number, and gives every policy of a run the same rewards.
:func:`check_source` checks it mechanically, together with the shapes and ranges the
engine relies on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from armlab.plugins.interfaces import RewardSource
from armlab.testing._plugin import check_declaration

__all__ = ["check_source"]

#: Global replica ids of the checked batch: not 0..R-1, so a source that confuses row
#: indices with replica ids is caught.
_REPLICAS = np.array([3, 7, 8, 12, 20])
_KEYED = "draw every random number from the keyed uniforms (self.uniforms, or rewards_from_uniforms's u)"


def check_source(
    source_cls: type[RewardSource],
    params: Mapping[str, Any] | None = None,
    *,
    seed: int = 5,
    pulls: int = 4000,
) -> None:
    """Assert that ``source_cls`` meets armlab's simulated-source contract (AssertionError).

    ``params`` are the plugin parameters to test with.  Checked: the name and ``Params``;
    ``reset(replicas, seed, bandit)`` then ``truth`` of shape ``(R, K)`` with finite means
    and finite, non-negative variances; ``sample`` vectorized, its rewards finite and inside
    ``reward_range``; rewards that depend only on (seed, replica, bandit, arm, pull), so the
    same key gives the same reward bit for bit whatever the call order, and replica ``r`` of
    a batch gets the rewards of replica ``r`` alone; successive pulls that look independent
    (lag-one correlation near 0); and means over ``pulls`` pulls per arm within six standard
    errors of the truth.
    """
    name = check_declaration(source_cls, RewardSource)

    def fresh(replicas: np.ndarray = _REPLICAS, bandit: int = 1) -> RewardSource:
        source = source_cls(source_cls.Params.model_validate(dict(params or {})))
        source.reset(replicas, seed, bandit)
        return source

    source = fresh()
    k, r = source.n_arms, _REPLICAS.size
    assert isinstance(k, (int, np.integer)) and k >= 1, f"{name}.n_arms must be a positive int, got {k!r}"
    low, high = source.reward_range
    assert low < high, f"{name}.reward_range must be (low, high) with low < high, got {source.reward_range}"
    _check_truth(name, source, r, k)

    # every (replica, arm) once, pulls 0..2, in one vectorized call
    rows, arms, counts = (a.ravel() for a in np.meshgrid(np.arange(r), np.arange(k), np.arange(3), indexing="ij"))
    rewards = np.asarray(source.sample(rows, arms, counts))
    assert rewards.shape == rows.shape, (
        f"{name}.sample returned shape {rewards.shape} for {rows.size} pulls: return one reward per "
        "(row, arm, pull) entry, computed for all of them at once"
    )
    assert np.issubdtype(rewards.dtype, np.floating), f"{name}.sample returned dtype {rewards.dtype}, expected floats"
    _check_range(name, source, rewards)

    again = np.asarray(source.sample(rows, arms, counts))
    assert np.array_equal(rewards, again), (
        f"{name}.sample gave different rewards when called again with the same (row, arm, pull): rewards must "
        f"depend on (seed, replica, bandit, arm, pull) only, not on calls made before; {_KEYED}"
    )
    order = np.random.default_rng(0).permutation(rows.size)
    shuffled = np.asarray(fresh().sample(rows[order], arms[order], counts[order]))
    assert np.array_equal(shuffled, rewards[order]), (
        f"{name}.sample gave different rewards for the same (replica, arm, pull) asked in another order: "
        f"rewards must not depend on the order of calls or on other entries of the batch; {_KEYED}"
    )
    for row in (0, r - 1):
        alone = fresh(_REPLICAS[[row]])
        mine = rows == row
        for attribute in ("means", "variances"):
            assert np.array_equal(getattr(alone.truth, attribute)[0], getattr(source.truth, attribute)[row]), (
                f"{name}: replica {_REPLICAS[row]}'s truth.{attribute} differs when it is reset alone; draw "
                "per-replica instances from truth_for's rng, which is keyed by the global replica ids"
            )
        solo = np.asarray(alone.sample(np.zeros(mine.sum(), dtype=np.int64), arms[mine], counts[mine]))
        assert np.array_equal(solo, rewards[mine]), (
            f"{name}: replica {_REPLICAS[row]} (row {row} of a batch) got other rewards when reset alone: "
            "index per-replica data by row (rows count from 0 within the batch) and key randomness by "
            f"the global replica ids; {_KEYED}"
        )
    _check_pulls(name, source, r, k, pulls)


def _check_truth(name: str, source: RewardSource, r: int, k: int) -> None:
    truth = source.truth
    for attribute in ("means", "variances"):
        value = np.asarray(getattr(truth, attribute))
        assert value.shape == (r, k), (
            f"{name}.truth.{attribute} has shape {value.shape}, expected (replicas, arms) = ({r}, {k})"
        )
        assert np.isfinite(value).all(), f"{name}.truth.{attribute} holds non-finite values"
    assert (np.asarray(truth.variances) >= 0).all(), f"{name}.truth.variances holds negative values"
    low, high = source.reward_range
    means = np.asarray(truth.means)
    assert ((means >= low) & (means <= high)).all(), (
        f"{name}.truth.means lie outside reward_range {source.reward_range}: declare the range the rewards really have"
    )


def _check_range(name: str, source: RewardSource, rewards: np.ndarray) -> None:
    low, high = source.reward_range
    assert np.isfinite(rewards).all(), f"{name}.sample returned non-finite rewards: {rewards[~np.isfinite(rewards)][:3]}"
    outside = (rewards < low) | (rewards > high)
    assert not outside.any(), (
        f"{name}.sample returned rewards outside reward_range {source.reward_range}: {rewards[outside][:3]}; "
        "widen reward_range or clip the rewards"
    )


def _check_pulls(name: str, source: RewardSource, r: int, k: int, pulls: int) -> None:
    """Many pulls of every arm of the first rows: range, independence, means near the truth."""
    rows_used = min(r, 2)
    rows, arms, counts = (
        a.ravel() for a in np.meshgrid(np.arange(rows_used), np.arange(k), np.arange(pulls), indexing="ij")
    )
    rewards = np.asarray(source.sample(rows, arms, counts)).reshape(rows_used, k, pulls)
    _check_range(name, source, rewards)
    truth = source.truth
    for row in range(rows_used):
        for arm in range(k):
            series = rewards[row, arm]
            mean, variance = truth.means[row, arm], truth.variances[row, arm]
            assert np.ptp(series) > 0 or variance * pulls < 20, (
                f"{name}: {pulls} pulls of arm {arm} (replica {_REPLICAS[row]}) all gave {series[0]!r} although "
                f"truth.variances says {variance:.6g}; give every pull its own keyed uniform (the pull number is "
                "part of the key)"
            )
            if np.ptp(series) > 0:
                lag = np.corrcoef(series[:-1], series[1:])[0, 1]
                assert abs(lag) < 0.1, (
                    f"{name}: successive pulls of arm {arm} (replica {_REPLICAS[row]}) are correlated "
                    f"(lag-one correlation {lag:.3f}); give every pull its own keyed uniform (the pull number is "
                    "part of the key)"
                )
            tolerance = 6 * np.sqrt(variance / pulls) + 1e-9
            assert abs(series.mean() - mean) <= tolerance, (
                f"{name}: arm {arm} of replica {_REPLICAS[row]} averaged {series.mean():.6g} over {pulls} pulls, "
                f"but truth.means says {mean:.6g} (variance {variance:.6g}); the rewards and the truth disagree"
            )
