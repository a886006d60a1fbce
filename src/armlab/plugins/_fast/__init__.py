"""Speed paths of the built-in policies, fenced off from the algorithms.

Every built-in policy states its rule in its own file, in its paper's shape: an index computed
from the statistics, a phase schedule, a stopping test.  Where recomputing that rule at every
step of every replica would dominate a run, the policy hands the computation to one of the
helpers in this package, each of which computes exactly the same thing with less work:

* :class:`~armlab.plugins._fast.warm_arms.WarmArms`: once every arm of every replica is warm and
  active, an index policy's selection is a plain argmax (the masks of the warm-up are skipped);
* :class:`~armlab.plugins._fast.incremental_index.IncrementalIndex`: an index whose value for
  an arm depends on that arm's statistics only is recomputed for the arms just observed;
* :class:`~armlab.plugins._fast.lazy_argmax.LazyArgmax`: the exact argmax of an index that grows
  concavely in a shared level (KL-UCB, Bayes-UCB), solving only the arms that can win.

Each helper has a reference path, the plain recomputation, taken while
:func:`reference_paths` is active.  The contract test runs every built-in policy both ways on
seeded problems (delays and out-of-step replicas included) and requires the same choices, bit
for bit; the speed each helper buys is measured by ``benchmarks/fast_paths.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["enabled", "reference_paths"]

_enabled = True


def enabled() -> bool:
    """Whether the speed paths are in use (they are, unless :func:`reference_paths` is active)."""
    return _enabled


@contextmanager
def reference_paths() -> Iterator[None]:
    """Within this block every helper of this package recomputes from the statistics at every
    step: the reference against which the speed paths are tested.  The helpers read the
    switch at every call, so run a whole simulation inside the block."""
    global _enabled
    previous, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = previous
