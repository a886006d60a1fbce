"""Offline evaluation against ground truth (issue 33, items 3 and 4).

A live run of a uniform policy with ``exploration_floor = 0.2`` is logged on ten simulated
Bernoulli arms; UCB1, Thompson sampling and uniform are then evaluated on the log, and each
estimate is compared with the policy's true mean reward per trial over the replayed horizon,
computed by Monte Carlo on the same arms.  Seeds: the live run 11 (rewards drawn by
``numpy.random.default_rng(2024)``), the Monte Carlo truth 400 replicas keyed by seed 3; they
were set before the tolerance below and were not changed to make the test pass.

Tolerance, and why it is not the issue's bare "2 standard errors".  The test makes M = 12
comparisons at once (3 policies x replay, IPS, SNIPS, doubly robust; direct is left out: it
averages over all logged trials, not the candidate's decisions, and is not an estimate of the
same quantity for an adaptive candidate).  At 2 standard errors each comparison of a correct,
unbiased estimator fails with probability 4.55 %, so the test as a whole would fail up to
M x 4.55 % = 55 % of the time (43 % were the comparisons independent; they are positively
correlated, which lowers but does not bound it usefully).  A check that a correct estimator
fails that often is no check, and choosing seeds until it passes would be seed tuning.  So the
test fixes its family-wise level instead: each |estimate - truth| must lie within
z = Phi^-1(1 - 0.05 / (2 M)) = 2.87 combined standard errors, sqrt(se_estimate^2 + se_truth^2)
(the Monte Carlo truth is independent of the log, so the errors add in quadrature).  By
Bonferroni's inequality a correct implementation fails the whole test with probability at
most 5 %, whatever the correlation of the comparisons; each single comparison is then at the
99.6 % level instead of 95.4 %.  This is tighter than "3 standard errors plus 3 of the
truth's" (about 4.2 combined standard errors when the two are equal).
"""

from __future__ import annotations

import json
from statistics import NormalDist

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
COMPARED = ("replay", "ips", "snips", "doubly-robust")
#: Two-sided normal quantile at family-wise level 5 % over every comparison (module docstring).
BONFERRONI_Z = NormalDist().inv_cdf(1 - 0.05 / (2 * len(CANDIDATES) * len(COMPARED)))


def _log(path, registry, policy: dict, trials: int, floor: float, seed: int = 2024, arms: int = 10) -> None:
    config = validate_config({
        "name": "ground-truth", "seed": 11, "exploration_floor": floor,
        "problem": {"objective": "regret", "budget": trials},
        "source": {"plugin": "external", "arms": arms, "reward_min": 0, "reward_max": 1},
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
        for name in COMPARED:
            e = estimates[name]
            combined = np.hypot(e.stderr, truth_se)
            assert abs(e.estimate - truth) <= BONFERRONI_Z * combined, (plugin, name, e, truth, truth_se)
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
    twice = CliRunner().invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "ucb1", "--policy",
                                     "uniform", "--policy", "ucb1"])
    assert twice.exit_code == 2 and "--policy ucb1 is given twice" in twice.output  # not one row silently lost


def test_intervals_are_clipped_to_the_reward_range_by_hand():
    """Replay on four matched trials with rewards 1, 1, 1, 0: mean 0.75, sample sd 0.5,
    stderr 0.5 / sqrt(4) = 0.25, so 0.75 -+ 1.96 x 0.25 = [0.26, 1.24], clipped to [0.26, 1].
    IPS with weights 2, 0, 2, 0 on rewards 1, 1, 0, 0: w r = 2, 0, 0, 0, mean 0.5, sample sd 1,
    stderr 0.5, so [-0.48, 1.48], clipped to [0, 1].  The estimates and stderrs stay as they are."""
    z = est._Z95
    replay = est.clipped(est.replay(np.array([1.0, 1.0, 1.0, 0.0]), np.ones(4, dtype=bool)), (0.0, 1.0))
    assert (replay.estimate, replay.stderr) == (0.75, 0.25)
    assert replay.interval == (pytest.approx(0.75 - z * 0.25), 1.0)
    ips = est.clipped(est.ips(np.array([1.0, 1.0, 0.0, 0.0]), np.array([2.0, 0.0, 2.0, 0.0])), (0.0, 1.0))
    assert (ips.estimate, ips.stderr, ips.interval) == (0.5, 0.5, (0.0, 1.0))
    unbounded = est.ips(np.array([1.0, 1.0, 0.0, 0.0]), np.array([2.0, 0.0, 2.0, 0.0]))
    assert est.clipped(unbounded, (-np.inf, np.inf)) == unbounded  # no declared range: nothing to clip
    refused = est.Estimate("replay", reason="too few")
    assert est.clipped(refused, (0.0, 1.0)) is refused


def test_a_tiny_logs_intervals_stay_in_the_declared_reward_range(tmp_path, registry):
    """Eight floored uniform trials on three arms (reward_min 0, reward_max 1): the 95 %
    intervals computed from the stderrs leave [0, 1], the reported ones do not."""
    path = tmp_path / "tiny.sqlite"
    _log(path, registry, {"plugin": "uniform", "order": "random"}, 8, floor=0.2, arms=3)
    evaluation = armlab.evaluate_log(path, ["uniform", "ucb1"], registry=registry)
    assert evaluation.reward_range == (0.0, 1.0)
    numbers = [e for estimates in evaluation.results.values() for e in estimates if e.estimate is not None]
    leaving = [e for e in numbers if e.estimate - est._Z95 * e.stderr < 0 or e.estimate + est._Z95 * e.stderr > 1]
    assert leaving, "the tiny log no longer has an interval to clip: the check would be vacuous"
    for e in numbers:
        assert 0.0 <= e.interval[0] <= e.interval[1] <= 1.0, e
        assert e.interval[0] == pytest.approx(max(0.0, e.estimate - est._Z95 * e.stderr))
        assert e.interval[1] == pytest.approx(min(1.0, e.estimate + est._Z95 * e.stderr))


def test_the_evaluation_is_written_as_data(floored_log, tmp_path):
    """`--out DIR` writes DIR/evaluation.json, `--out FILE.json` that file: the log, its
    trials, the reward range and one row per policy and estimator."""
    runner = CliRunner()
    result = runner.invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "ucb1", "--policy",
                                 "uniform", "--out", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "eval" / "evaluation.json").read_text())
    assert document["kind"] == "armlab offline evaluation" and document["log"] == str(floored_log)
    assert document["trials"] == TRIALS and document["reward_range"] == [0.0, 1.0] and document["bandit"] == 0
    assert document["logging_policy"] == "uniform"
    assert [(r["policy"], r["estimator"]) for r in document["results"]] == [
        (p, e) for p in ("ucb1", "uniform") for e in est.ESTIMATORS]
    for row in document["results"]:
        assert row["estimate"] is not None and row["stderr"] > 0 and row["effective_sample_size"] > 0
        assert 0 <= row["interval"][0] < row["estimate"] < row["interval"][1] <= 1
    single = runner.invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "uniform", "--json",
                                 "--out", str(tmp_path / "one.json")])
    assert single.exit_code == 0, single.output
    rows = [json.loads(line) for line in single.stdout.splitlines()]  # stdout stays JSON lines
    assert rows == json.loads((tmp_path / "one.json").read_text())["results"]
    (tmp_path / "taken").write_text("a file, not a directory")
    bad = runner.invoke(cli, ["--no-plugins", "evaluate", str(floored_log), "--policy", "uniform",
                              "--out", str(tmp_path / "taken" / "eval")])
    assert bad.exit_code == 2 and "cannot write the evaluation" in bad.output and "Traceback" not in bad.output


def test_an_evaluation_document_hides_the_password_of_a_storage_url():
    from armlab.decisionlog.evaluate import Evaluation

    evaluation = Evaluation(trials=0, results={}, log="postgresql://lab:s3cret@db.example:5432/armlab")
    assert evaluation.document()["log"] == "postgresql://lab:***@db.example:5432/armlab"
