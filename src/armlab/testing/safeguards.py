"""Seeded simulations of the anytime stopping rule (:mod:`armlab.safeguards.stopping`), for
its tests and ``benchmarks/anytime_stopping.py``.

Vectorized over runs like the engine: arrays of shape ``(R, K)``.  The sampling rule beside
the stopping rule is a plain elimination-style one: each step pulls, among the arms whose
sequence still overlaps the leader's lower bound (and the leader), the least-pulled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from armlab.safeguards import BoundedSequences, should_stop
from armlab.stats import ArmStats

__all__ = ["anytime_stopping_runs"]


def anytime_stopping_runs(means: Sequence[float], *, delta: float, runs: int, budget: int,
                          seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``runs`` seeded runs on Bernoulli arms ``means`` until the anytime rule stops or
    ``budget`` trials; returns the trials used at the stop (-1: never stopped) and the arm
    recommended at the stop (-1: never stopped), one per run."""
    p = np.asarray(means, dtype=np.float64)
    rng = np.random.default_rng(seed)
    stats, seq = ArmStats(runs, p.size), BoundedSequences(runs, p.size, delta, (0.0, 1.0))
    active = np.ones((runs, p.size), dtype=bool)
    stopped_at = np.full(runs, -1)
    recommended = np.full(runs, -1)
    live = np.arange(runs)
    for t in range(1, budget + 1):
        counts, low, high = stats.counts[live], seq.low[live], seq.high[live]
        leader = np.argmax(stats.means[live], axis=1)
        open_arms = high >= low[np.arange(live.size), leader][:, None]
        arms = np.argmin(np.where(open_arms, counts, np.iinfo(np.int64).max), axis=1)
        rewards = (rng.random(live.size) < p[arms]).astype(np.float64)
        stats.record(live, arms, rewards)
        seq.observe(live, arms, rewards)
        stop, best = should_stop(seq.low[live], seq.high[live], stats.means[live], active[live])
        stopped_at[live[stop]] = t
        recommended[live[stop]] = best[stop]
        live = live[~stop]
        if live.size == 0:
            break
    return stopped_at, recommended
