"""The probability with which a policy picks each arm at its next step (the decision log).

A live dispatch records the propensity of the arm it sent: the probability, given the
statistics at that moment, that the policy's ``select`` returns that arm.  Every policy
draws its randomness from keyed streams (:mod:`armlab.random`), so the probability is over
the keys: a different key, the same statistics.

* **Exact.**  A ``select`` that reads no random number is deterministic: probability 1 for
  its arm.  Policies with a closed form say so themselves (uniform random choice, ties broken
  at random among index policies).
* **Estimated.**  Otherwise ``select`` is called again with :data:`PROPENSITY_DRAWS` other
  keys of the same stream (the policy's key words, then ``"propensity"`` and the draw's
  number), and each arm's share of the draws, the decision actually made counted as one
  more draw, is the estimate: ``(1 + hits) / (draws + 1)`` for the chosen arm, never zero.
* **Unknown.**  A policy holding a generator of its own besides ``rng`` (e.g. one member
  generator per replica) may draw from it in ``select``, where swapping ``rng`` does not
  reach: :func:`generic_propensities` answers ``None`` for it rather than a wrong number.

Only live dispatches compute propensities; Monte Carlo runs never call these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["PROPENSITY_DRAWS", "Propensities", "generic_propensities", "one_hot", "sampled_shares"]

#: Draws of a policy's keyed randomness behind an estimated propensity.
PROPENSITY_DRAWS = 1000

#: ``(p, draws)``: ``p`` the ``(R, K)`` probabilities of each arm at the next step (``None``
#: when unknown), ``draws`` ``None`` when ``p`` is exact, else the number of draws it estimates.
Propensities = tuple[np.ndarray | None, int | None]


class _Watched:
    """A stand-in for a policy's ``rng`` that notes whether ``select`` drew from it."""

    def __init__(self, rng: KeyedRandom) -> None:
        self._rng = rng
        self.used = False

    def __getattr__(self, name: str) -> Any:
        if name not in ("words", "replicas"):
            self.used = True
        return getattr(self._rng, name)


def one_hot(arms: np.ndarray, n_arms: int) -> np.ndarray:
    """Probability 1 at each replica's ``arms`` ``(R,)``: ``(R, K)``."""
    p = np.zeros((arms.size, n_arms))
    p[np.arange(arms.size), arms] = 1.0
    return p


def sampled_shares(chosen: np.ndarray, draws: np.ndarray, n_arms: int) -> np.ndarray:
    """Each arm's share ``(R, K)`` of ``draws`` ``(R, D)`` plus the decision ``chosen`` ``(R,)``
    itself (so the chosen arm's share is at least ``1 / (D + 1)``)."""
    rows = chosen.size
    counts = np.zeros((rows, n_arms))
    np.add.at(counts, (np.repeat(np.arange(rows), draws.shape[1]), draws.reshape(-1)), 1.0)
    counts[np.arange(rows), chosen] += 1.0
    return counts / (draws.shape[1] + 1)


def generic_propensities(policy: Any, stats: ArmStats, draws: int = PROPENSITY_DRAWS) -> Propensities:
    """The propensities of any policy (module docstring): exact when ``select`` reads no random
    number, estimated from ``draws`` other keys when it reads ``policy.rng``, unknown when the
    policy holds another generator.  ``select`` is called with the policy's state unchanged
    (its contract: the same statistics give the same answer for the same key)."""
    if _other_generators(policy):
        return None, None
    rng = policy.rng
    watched = _Watched(rng)
    policy.rng = watched
    try:
        chosen = np.asarray(policy.select(stats), dtype=np.int64)
    finally:
        policy.rng = rng
    if (chosen < 0).any():
        return None, None
    if not watched.used:
        return one_hot(chosen, stats.n_arms), None
    picks = np.empty((chosen.size, draws), dtype=np.int64)
    try:
        for d in range(draws):
            policy.rng = KeyedRandom(*rng.words, "propensity", d, replicas=rng.replicas)
            picks[:, d] = policy.select(stats)
    finally:
        policy.rng = rng
    return sampled_shares(chosen, picks, stats.n_arms), draws


def _other_generators(policy: Any) -> bool:
    """Whether ``policy`` keeps a :class:`KeyedRandom` besides ``rng`` (in its attributes or
    one level down: members, lists of members)."""
    def generators(value: Any, depth: int) -> bool:
        if isinstance(value, KeyedRandom):
            return value is not policy.rng
        if depth == 0:
            return False
        if isinstance(value, (list, tuple)):
            return any(generators(v, depth - 1) for v in value)
        inner = getattr(value, "__dict__", None)
        return isinstance(inner, dict) and any(generators(v, depth - 1) for v in inner.values())

    return any(generators(v, 2) for k, v in vars(policy).items() if k != "rng")
