"""Speed paths of the built-in policies, fenced off from the algorithms.

Every built-in policy states its rule in its own file, in its paper's shape: an index computed
from the statistics, a phase schedule, a stopping test.  Where recomputing that rule at every
step of every replica would dominate a run, the policy hands the computation to one of the
helpers here, each of which computes exactly the same thing with less work (gains measured end
to end at K = 100 arms, R = 500 replicas; a helper is kept only where it gains 10 % or more):

* shared by index policies: :mod:`.warm_arms` (a plain argmax once every arm is warm),
  :mod:`.kept_arm_values` and :mod:`.arm_terms` (arm-wise values or their terms recomputed
  for the arms just observed; the values also SHVar's and SHAdaVar's ratios),
  :mod:`.lazy_argmax` (the exact argmax of KL-UCB's and Bayes-UCB's indices, solving only
  the arms that can win);
* Thompson sampling: :mod:`.normal_draw_argmax` (the exact argmax of Gaussian posterior draws,
  turning into normals only the draws that can win);
* cumulative regret: :mod:`.elimination_bounds` (EUCBV), :mod:`.arm_list` and
  :mod:`.divergence_test` (DMED), :mod:`.result_quota` (UCB-Improved, Median Elimination);
* thresholding: :mod:`.arms_to_retest` (AugUCB's elimination tests);
* fixed budget: :mod:`.pulls_since_start` (round robin), :mod:`.stage_pulls` and
  :mod:`.lookup_by_count` (SHAdaVar), :mod:`.active_arms` (uniform allocation),
  :mod:`.gap_terms` (the GapE family and the greedy-confidence-pursuit rules);
* fixed confidence: :mod:`.kept_top_set`, :mod:`.gap_round` and :mod:`.lookup_by_count_at_level`
  (UGapE, LUCB1).

The helpers that keep an ``(R, K)`` array between steps share one protocol,
:class:`~armlab.plugins._fast.kept_per_arm.KeptPerArm`: ``observed(stats, rows, arms)`` after
results, ``refresh_rows(stats, rows)`` after any other change of some replicas.

Each helper has a reference path, the plain recomputation, taken while
:func:`reference_paths` is active.  ``tests/plugins/test_fast_paths.py`` runs every built-in
policy both ways on seeded problems (delays and out-of-step replicas included) and requires the
same choices, bit for bit; the families' ``test_speed_paths.py`` do the same for their
non-default variants.  ``benchmarks/compare_trees.py`` measures speed against an older tree.
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
