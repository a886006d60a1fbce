"""Bandits completed vs trials: eq. (3) per bandit, the hold rule, targets, summary keys."""

from __future__ import annotations

import math

import numpy as np
import pytest

import armlab
from armlab.config import validate_config

LEVEL, HOLD, BUDGET = 0.9, 5, 120


def rho_by_hand(successes, failures):
    """Eq. (3) from per-arm successes and failures (Beta(1, 1) posterior, best-arm)."""
    counts = [s + f for s, f in zip(successes, failures)]
    means = [(s + 1) / (n + 2) for s, n in zip(successes, counts)]
    top = sorted(means, reverse=True)
    location = (top[0] + top[1]) / 2
    tails = sum(
        0.5 * math.erfc(math.sqrt(n) * abs(r - location) / math.sqrt(r * (1 - r)) / math.sqrt(2))
        for r, n in zip(means, counts)
    )
    return max(0.0, 1.0 - tails)


def expected_completions(arm_counts):
    """Replay the round robins by hand: completion trial of each bandit (or None)."""
    pulls = [[0] * k for k in arm_counts]
    run = [0] * len(arm_counts)
    done = [None] * len(arm_counts)
    for t in range(1, BUDGET + 1):
        b = (t - 1) % len(arm_counts)  # uniform-bandit: round robin over bandits
        arm = pulls[b].index(min(pulls[b]))  # uniform policy: round robin over arms
        pulls[b][arm] += 1
        for i, k in enumerate(arm_counts):
            wins = [pulls[i][0]] + [0] * (k - 1)  # arm 0 always pays 1, the others 0
            losses = [0] + pulls[i][1:]
            rho = rho_by_hand(wins, losses)
            run[i] = run[i] + 1 if rho >= LEVEL else 0
            if done[i] is None and run[i] > HOLD:
                done[i] = t
    return done


def deterministic_experiment(arm_counts, targets):
    return validate_config({
        "seed": 1, "replicas": 3, "checkpoints": [40, 80, BUDGET],
        "problem": {"objective": "best-arm", "budget": BUDGET},
        "metrics": {"confidence_level": LEVEL, "confidence_hold": HOLD},
        "bandits": [
            {"label": f"k{k}", "target_arm": t, "source": {"plugin": "bernoulli", "means": [1.0] + [0.0] * (k - 1)}}
            for k, t in zip(arm_counts, targets)
        ],
        "policies": [{"plugin": "uniform", "allocator": {"plugin": "uniform-bandit"}}],
    })


def test_completion_times_and_counts_match_a_hand_replay():
    arm_counts, targets = (2, 4), (0, 1)  # bandit k4's target (arm 1) is not its best arm
    done = expected_completions(arm_counts)
    assert done[0] is not None and done[1] is not None and done[0] < done[1]
    summary = armlab.run_experiment(deterministic_experiment(arm_counts, targets))
    entry = summary["policies"]["uniform-bandit/uniform"]
    assert entry["bandit_labels"] == ["k2", "k4"]
    assert entry["bandit_completion_time_median"] == [float(d) for d in done]
    assert entry["bandit_completed_fraction"] == [1.0, 1.0]
    expected = [sum(d <= cp for d in done) for cp in (40, 80, BUDGET)]
    assert entry["bandits_completed_mean"] == pytest.approx(expected)
    assert entry["bandits_completed_stderr"] == pytest.approx([0.0, 0.0, 0.0])
    # only bandit k2 has its target arm best
    assert entry["target_best_bandits_mean"] == 1.0
    assert entry["target_best_completed_mean"] == pytest.approx([float(done[0] <= cp) for cp in (40, 80, BUDGET)])
    assert entry["bandit_trials_mean"] == [60.0, 60.0]
    assert entry["allocator"] == {
        "plugin": "uniform-bandit", "params": {"order": "round-robin", "arm_rule": "policy", "warmup_per_arm": 20},
    }
    assert entry["completion_level"] == LEVEL and entry["completion_hold"] == HOLD


def test_hold_zero_is_the_first_crossing():
    config = deterministic_experiment((2, 4), (None, None))
    strict = armlab.run_experiment(config)["policies"]["uniform-bandit/uniform"]
    data = config.model_dump(mode="json")
    data["metrics"]["confidence_hold"] = 0
    first = armlab.run_experiment(validate_config(data))["policies"]["uniform-bandit/uniform"]
    assert "target_best_completed_mean" not in first
    gaps = np.subtract(strict["bandit_completion_time_median"], first["bandit_completion_time_median"])
    assert (gaps >= HOLD).all()  # holding for 5 trials completes at least 5 trials later
