"""Conformance checks and test helpers, for armlab's own tests and for plugin authors.

Every extension point has a check that runs a plugin class through the contract armlab
relies on and fails with a message naming the broken rule and its fix:

* :func:`check_policy`: policies (``docs/writing-a-policy.md``);
* :func:`check_source`: simulated reward sources (``docs/writing-a-source.md``);
* :func:`check_allocator`: budget allocators of multi-bandit runs (``docs/writing-an-allocator.md``);
* :func:`check_adapter`: live sources that run real trials (``docs/writing-an-adapter.md``).

For a policy's own tests beside its check: :func:`problem_with_truth`, :func:`start_policy`
and :func:`pull_once` drive it by hand; :func:`simulate_policy` and :func:`run_policy` run
it in the Monte Carlo engine.
"""

from armlab.testing.adapters import check_adapter
from armlab.testing.allocators import check_allocator
from armlab.testing.helpers import (
    problem_with_truth,
    pull_once,
    simulate_policy,
    start_policy,
)
from armlab.testing.policy import _check_replay, _Recorder, check_policy, run_policy  # noqa: F401 - the first two for armlab's tests of check_policy
from armlab.testing.sources import check_source

__all__ = [
    "check_adapter",
    "check_allocator",
    "check_policy",
    "check_source",
    "problem_with_truth",
    "pull_once",
    "run_policy",
    "simulate_policy",
    "start_policy",
]
