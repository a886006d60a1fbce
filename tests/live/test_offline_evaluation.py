"""Offline evaluation against ground truth (issue 33, items 3 and 4).

A live run of a uniform policy with ``exploration_floor = 0.2`` is logged on ten simulated
Bernoulli arms; UCB1, Thompson sampling and uniform are then evaluated on the log, and each
estimate is compared with the policy's true mean reward per trial over the replayed horizon,
computed by Monte Carlo on the same arms.  Seeds: the live run 11 (rewards drawn by
``numpy.random.default_rng(2024)``), the Monte Carlo truth 400 replicas keyed by seed 3.
Tolerance: 3 standard errors of the estimate plus 3 of the truth (15 comparisons at once:
at 2 standard errors one in two runs of a correct estimator would fail somewhere).
"""

from __future__ import annotations

import json

import anyio
import numpy as np
import pytest
from click.testing import CliRunner

import armlab
from armlab.cli import cli
from armlab.config import validate_config
from armlab.decisionlog import estimators as est
from armlab.orchestrator.live.session import LiveSession
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

MEANS = np.linspace(0.1, 0.6, 10)
TRIALS = 20_000
CANDIDATES = ("ucb1", "thompson", "uniform")


def _log(path, registry, policy: dict, trials: int, floor: float, seed: int = 2024) -> None:
    config = validate_config({
        "name": "ground-truth", "seed": 11, "exploration_floor": floor,
        "problem": {"objective": "regret", "budget": trials},
        "source": {"plugin": "external", "arms": 10, "reward_min": 0, "reward_max": 1},
        "policies": [policy],
    })
    session = LiveSession.open(journal=path, config=config, registry=registry)
    rng = np.random.default_rng(seed)
    draws = rng.random(trials)

    async def drive() -> None:
        async with session.group_commit():
            for i in range(trials):
                trial = session.experiment.ask()
                session.experiment.tell(trial.id, float(draws[i] < MEANS[trial.arm]))

    anyio.run(drive)
    session.close()


@pytest.fixture(scope="module")
def floored_log(tmp_path_factory, registry):
    path = tmp_path_factory.mktemp("offline") / "uniform-floored.sqlite"
    _log(path, registry, {"plugin": "uniform", "order": "random"}, TRIALS, floor=0.2)
    return path


def _true_mean_per_trial(registry, plugin: str, horizon: int, replicas: int = 400) -> tuple[float, float]:
    """The policy's expected reward per trial over ``horizon`` trials on MEANS (Monte Carlo)."""
    policy = registry.create("policy", plugin, {})
    problem = Problem(objective=Objective.REGRET, budget=horizon, n_arms=10, reward_range=(0.0, 1.0))
    ids = np.arange(replicas)
    policy.reset(problem, replicas, KeyedRandom(3, "policy", plugin, replicas=ids))
    stats = ArmStats(replicas, 10)
    rewards = KeyedRandom(3, "rewards", replicas=ids)
    earned = np.zeros(replicas)
    for step in range(horizon):
        arms = policy.select(stats)
        earned += MEANS[arms]
        r = (rewards.uniform(step, 1)[:, 0] < MEANS[arms]).astype(float)
        stats.record(ids, arms, r)
        policy.update(stats, ids, arms, r)
    per_trial = earned / horizon
    return float(per_trial.mean()), float(per_trial.std(ddof=1) / np.sqrt(replicas))


@pytest.mark.slow
def test_every_estimate_is_near_the_true_mean_reward_of_its_policy(floored_log, registry):
    evaluation = armlab.evaluate_log(floored_log, list(CANDIDATES), registry=registry)
    assert evaluation.trials == TRIALS and not evaluation.estimated_propensities
    for plugin in CANDIDATES:
        estimates = {e.estimator: e for e in evaluation.results[plugin]}
        assert set(estimates) == set(est.ESTIMATORS)
        horizon = estimates["replay"].trials  # the trials the candidate made: the replayed horizon
        assert 0.08 * TRIALS < horizon < 0.12 * TRIALS  # uniform logging: one trial in ten matches
        truth, truth_se = _true_mean_per_trial(registry, plugin, horizon)
        for name in ("replay", "ips", "snips", "doubly-robust"):
            e = estimates[name]
            assert abs(e.estimate - truth) <= 3 * e.stderr + 3 * truth_se, (plugin, name, e, truth)
            assert e.interval[0] < e.estimate < e.interval[1]


def test_ips_and_snips_are_unbiased_with_exact_propensities_over_200_seeded_logs():
    """A non-uniform stochastic logging policy q, a target policy pi; 200 logs of 2000 trials."""
    q = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    pi = np.array([0.05, 0.05, 0.1, 0.2, 0.6])
    means = np.array([0.2, 0.3, 0.4, 0.5, 0.7])
    truth = float(pi @ means)
    values = {"ips": [], "snips": []}
    covered = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        arms = rng.choice(5, size=2000, p=q)
        rewards = (rng.random(2000) < means[arms]).astype(float)
        choices = rng.choice(5, size=2000, p=pi)
        weights = np.where(choices == arms, 1.0 / q[arms], 0.0)
        ips, snips = est.ips(rewards, weights), est.snips(rewards, weights)
        values["ips"].append(ips.estimate)
        values["snips"].append(snips.estimate)
        covered += ips.interval[0] <= truth <= ips.interval[1]
    for name, xs in values.items():
        xs = np.asarray(xs)
        assert abs(xs.mean() - truth) <= 2 * xs.std(ddof=1) / np.sqrt(xs.size), name
    assert covered >= 0.9 * 200  # the 95 % intervals cover the truth (a few misses allowed)


def test_estimators_that_do_not_apply_say_why_instead_of_a_number(tmp_path, registry):
    path = tmp_path / "deterministic.sqlite"
    _log(path, registry, {"plugin": "ucb1"}, 300, floor=0.0)  # UCB1: propensity 1 at every trial
    evaluation = armlab.evaluate_log(path, "thompson", registry=registry)
    estimates = {e.estimator: e for e in evaluation.results["thompson"]}
    for name in ("replay", "ips", "snips", "doubly-robust"):
        assert estimates[name].estimate is None and "deterministic" in estimates[name].reason
    assert estimates["direct"].estimate is not None
    p = np.array([0.5, np.nan, 0.2])
    assert "1 of 3 logged trials have no propensity" in est.positivity_problem(p)


def test_the_command_prints_one_json_object_per_policy_and_estimator(floored_log):
    result = CliRunner().invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "ucb1",
                                      "--param", "exploration=1.0", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["estimator"] for r in rows] == list(est.ESTIMATORS)
    assert all(r["policy"] == "ucb1(exploration=1.0)" and r["stderr"] > 0 and len(r["interval"]) == 2 for r in rows)
    table = CliRunner().invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "uniform"])
    assert table.exit_code == 0 and "doubly-robust" in table.output
    bad = CliRunner().invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "ucb1", "--param", "x"])
    assert bad.exit_code == 2 and "NAME=VALUE" in bad.output
    unknown = CliRunner().invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "nope"])
    assert unknown.exit_code == 2 and "Traceback" not in unknown.output
