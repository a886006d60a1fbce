"""Reduced-scale statistical check of the greedy-confidence-pursuit paper's main multi-bandit ordering (Fig. 4a)."""

from __future__ import annotations

import math

import pytest

import armlab
from armlab.config import validate_config


@pytest.mark.slow
def test_gcp_bayes_completes_more_bandits_than_uniform_bandit_choice():
    # Fig. 4(a)'s instance at reduced scale: one bandit with gap 0.1 among bandits with gap
    # 0.01 (3 bandits of 3 arms instead of 20 of 10, 2000 trials, 48 replicas).  Both methods
    # pull arms round-robin inside the chosen bandit, so only the bandit choice differs:
    # GCP-Bayes (Alg. 3) against the uniform (round-robin) choice of Uni-UCB.
    config = validate_config({
        "seed": 7, "replicas": 48, "checkpoints": [1000, 2000],
        "problem": {"objective": "best-arm", "budget": 2000},
        "bandits": [
            {"label": "easy", "source": {"plugin": "gap-bernoulli", "n_arms": 3, "gap": 0.1}},
            {"label": "hard", "count": 2, "source": {"plugin": "gap-bernoulli", "n_arms": 3, "gap": 0.01}},
        ],
        "policies": [
            {"label": "gcp", "plugin": "uniform", "allocator": {"plugin": "gcp-bayes", "warmup_per_arm": 5}},
            {"label": "uni", "plugin": "uniform", "allocator": {"plugin": "uniform-bandit"}},
        ],
    })
    result = armlab.run_experiment(config)["policies"]
    gcp, uni = result["gcp"], result["uni"]
    for at in (0, 1):
        lead = gcp["bandits_completed_mean"][at] - uni["bandits_completed_mean"][at]
        noise = math.hypot(gcp["bandits_completed_stderr"][at], uni["bandits_completed_stderr"][at])
        assert lead > 1.5 * noise, (at, lead, noise)
    # the uniform cycle splits the budget equally, whatever the bandits' confidence
    assert uni["bandit_trials_mean"] == pytest.approx([2000 / 3] * 3, abs=1)
