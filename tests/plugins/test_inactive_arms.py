"""``Policy.honours_inactive_arms`` is a checked claim: a policy that makes it never picks an
arm whose ``stats.active`` entry is False (what live arm retirement relies on), and the
built-in policies that do not make it are known."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ArmlabError
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.problem import Objective, Problem, Truth

MEANS = np.array([[0.2, 0.9, 0.5, 0.4]])  # arm 1, the one made inactive, is the best by far


def _problem(cls) -> Problem:
    objective = next(o for o in (Objective.BEST_ARM, Objective.REGRET, Objective.THRESHOLD, Objective.TOP_M)
                     if o in cls.objectives)
    truth = Truth(means=MEANS, variances=np.full(MEANS.shape, 0.1))
    return Problem(objective=objective, budget=300, n_arms=4, reward_range=(0.0, 1.0), threshold=0.5,
                   top_m=1, delta=0.1, truth=truth)


def _pulls_of_an_inactive_arm(cls) -> int:
    experiment = LiveExperiment(cls, [_problem(cls)], 1)
    experiment.core.stats[0].active[0, 1] = False
    rng = np.random.default_rng(0)
    pulls = 0
    for _ in range(300):
        try:
            trial = experiment.ask()
        except ArmlabError:
            break  # stopped
        pulls += trial.arm == 1
        experiment.tell(trial.id, float(rng.random() < MEANS[0, trial.arm]))
    return pulls


def _policies(registry):
    return [info for info in registry.infos("policy")]


@pytest.fixture(scope="module")
def policy_classes(registry):
    return {info.name: info.cls for info in _policies(registry)}


def test_every_policy_that_claims_it_never_picks_an_inactive_arm(policy_classes):
    claimed = {name: cls for name, cls in policy_classes.items() if cls.honours_inactive_arms}
    assert {"ucb1", "thompson", "uniform", "klucb", "eucbv", "gape", "apt"} <= claimed.keys()
    for name, cls in claimed.items():
        try:
            pulls = _pulls_of_an_inactive_arm(cls)
        except ArmlabError:  # needs inputs this small problem lacks (e.g. an oracle parameter)
            continue
        assert pulls == 0, f"{name} claims honours_inactive_arms but pulled an inactive arm {pulls} times"


def test_the_policies_that_do_not_claim_it_are_refused_retirement(policy_classes):
    unclaimed = sorted(name for name, cls in policy_classes.items() if not cls.honours_inactive_arms)
    assert "lucb1" in unclaimed and "sh" in unclaimed
    assert _pulls_of_an_inactive_arm(policy_classes["lucb1"]) > 0  # the reason they must be refused
