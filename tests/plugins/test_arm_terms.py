"""ArmTerms leaves the terms of a single result (the live experiment's every result) to the
next reader: read then, they are bit for bit the ones computed at each result, each stale
entry is computed once, and live experiments of every policy that keeps terms choose as on
the reference path."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.config import validate_config
from armlab.orchestrator.live.session import LiveSession
from armlab.plan import build_plan
from armlab.plugins._fast import reference_paths
from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry
from armlab.stats import ArmStats

K = 4
ONE = np.array([0])


def inv_sqrt_n(arm):
    return 1.0 / np.sqrt(arm.counts)


def test_single_results_read_later_equal_the_terms_computed_at_each_result():
    rng = np.random.default_rng(2)
    stats, two_rows = ArmStats(1, K), ArmStats(2, K)
    deferred = ArmTerms(1, K, inv_sqrt_n=inv_sqrt_n, spread=lambda arm: np.sqrt(arm.m2 / arm.counts))
    eager = ArmTerms(2, K, inv_sqrt_n=inv_sqrt_n, spread=lambda arm: np.sqrt(arm.m2 / arm.counts))
    for step, (arm, reward) in enumerate(zip(rng.integers(0, K, 300), rng.normal(size=300), strict=True)):
        arms, rows = np.array([arm]), np.array([0, 1])
        stats.dispatch(ONE, arms)
        stats.observe(ONE, arms, np.array([reward]))
        deferred.observed(stats, ONE, arms)  # one result: left to the reader
        both = np.array([arm, arm])
        two_rows.dispatch(rows, both)
        two_rows.observe(rows, both, np.array([reward, reward]))
        eager.observed(two_rows, rows, both)  # two rows: computed now
        if step % 17 == 0:
            for name in ("inv_sqrt_n", "spread"):
                kept, computed = getattr(deferred.current(stats), name), getattr(eager.current(two_rows), name)
                assert kept.tobytes() == computed[:1].tobytes(), (step, name)


def test_each_stale_entry_is_computed_once_when_read():
    calls: list[int] = []

    def counted(arm):
        calls.append(arm.counts.size)
        return 1.0 / np.sqrt(arm.counts)

    stats, terms = ArmStats(1, K), ArmTerms(1, K, inv_sqrt_n=counted)
    calls.clear()  # the prior's computation
    for arm in [0, 1, 0, 2, 0, 1] * 50:
        arms = np.array([arm])
        stats.dispatch(ONE, arms)
        stats.observe(ONE, arms, np.array([0.5]))
        terms.observed(stats, ONE, arms)
    assert calls == []
    terms.current(stats)
    assert calls == [1, 1, 1]  # arms 0, 1 and 2, each alone
    terms.current(stats)
    assert calls == [1, 1, 1]


def live_trials(policy: str) -> list[tuple[int, int, str]]:
    """A live experiment of ``policy`` asked in batches of 12 and told each batch at once:
    every trial's (id, arm), and the final status."""
    cfg = validate_config({
        "name": "terms", "seed": 5, "problem": {"objective": "regret", "budget": 240},
        "source": {"plugin": "external", "arms": K, "reward_min": 0, "reward_max": 1},
        "feedback": {"in_flight": 12}, "policies": [{"plugin": policy}],
    })
    experiment = LiveSession.from_plan(build_plan(cfg, Registry(get_plugin_manager(load_entrypoints=False)))).experiment
    rng = np.random.default_rng(9)
    chosen = []
    while len(experiment.trials) < 240:
        batch = [experiment.ask() for _ in range(12)]
        for trial in batch:
            experiment.tell(trial.id, float(rng.random() < 0.2 + 0.2 * trial.arm))
        chosen += [(trial.id, trial.arm) for trial in batch]
    return chosen + [repr(experiment.status())]


@pytest.mark.parametrize("policy", ["ucb1", "thompson", "klucb", "moss", "ocucb", "ucbv", "bayes-ucb"])
def test_live_choices_equal_the_reference_paths(policy):
    fast = live_trials(policy)
    with reference_paths(), np.errstate(divide="ignore", invalid="ignore"):  # fresh arrays: arms with no result
        assert live_trials(policy) == fast
