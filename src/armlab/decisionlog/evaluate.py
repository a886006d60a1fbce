"""Offline evaluation: what a registered policy would have earned on a logged run's trials.

The candidate policy (any plugin, with its parameters; adaptive ones learn as they go) walks
the log in trial order: at each logged trial it has a current choice; where that equals the
logged arm, it observes the logged reward and updates, exactly as if it had made that trial
(a trial it chose differently is one it never saw).  Between two matches its statistics do
not change, so its choice does not either (policies' randomness is keyed by their step): the
walk jumps from match to match, one ``select`` per match, and a million logged trials cost
about a hundred thousand policy steps for ten arms.

The walk gives each logged trial's candidate choice, from which :mod:`.estimators` computes
replay, IPS, self-normalized IPS, direct and doubly-robust estimates.  With non-uniform
propensities, replay first keeps trial ``t`` with probability ``min(p) / p_t`` (a keyed
uniform), so the kept trials' arms are uniform, and walks those only.  A candidate whose
stopping rule stops commits to its recommended arm for the rest of the log.

Several candidates are independent tasks over one log; ``workers > 1`` runs them in
processes, like the tasks of a Monte Carlo run.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armlab.decisionlog import estimators as est
from armlab.decisionlog.results import KIND
from armlab.decisionlog.source import read_run
from armlab.decisionlog.table import TrialTable, trial_table
from armlab.errors import ArmlabError
from armlab.orchestrator.journal.postgres_schema import shown as without_password
from armlab.plugins.interfaces import STOPPED, Policy
from armlab.plugins.registry import Registry, default_registry
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["Candidate", "Evaluation", "LoggedTrials", "evaluate_log", "logged_trials", "walk"]

_ROW = np.zeros(1, dtype=np.int64)
#: Spread of propensities below which a log counts as uniform (replay keeps every trial).
_UNIFORM_TOLERANCE = 1e-9


@dataclass(frozen=True)
class LoggedTrials:
    """The completed trials of one bandit of a log, in trial order, and its problem."""

    arms: np.ndarray
    rewards: np.ndarray
    propensities: np.ndarray  # NaN: unknown
    estimated: bool  # some propensity was estimated from draws
    problem: Problem
    seed: int = 0

    @property
    def n_arms(self) -> int:
        return self.problem.n_arms


@dataclass(frozen=True)
class Candidate:
    """A policy to evaluate: a registered plugin name and its parameters."""

    plugin: str
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.plugin}({shown})" if shown else self.plugin


@dataclass
class Evaluation:
    """Every candidate's estimates over one log, and what the log is."""

    trials: int
    results: dict[str, list[est.Estimate]]
    estimated_propensities: bool = False
    log: str = ""
    experiment: str | None = None
    bandit: int = 0
    logging_policy: str = ""
    reward_range: tuple[float, float] = (-float("inf"), float("inf"))

    def rows(self) -> list[dict[str, Any]]:
        """The results as a table: one row per (policy, estimator)."""
        return [{"policy": label, **e.as_dict()} for label, estimates in self.results.items() for e in estimates]

    def document(self) -> dict[str, Any]:
        """The evaluation as data (:mod:`.results`): the log (a URL's password hidden), its
        trials and every row; an unbounded reward range is ``null`` (JSON has no infinity)."""
        bounded = all(np.isfinite(self.reward_range))
        return {"kind": KIND, "log": without_password(self.log), "experiment": self.experiment, "bandit": self.bandit,
                "logging_policy": self.logging_policy, "trials": self.trials,
                "estimated_propensities": self.estimated_propensities,
                "reward_range": [float(x) for x in self.reward_range] if bounded else None,
                "results": self.rows()}

    def to_frame(self) -> Any:
        from armlab.extras import require

        return require("pandas", "log", "an evaluation as a DataFrame").DataFrame(self.rows())


def logged_trials(table: TrialTable, bandit: int = 0) -> LoggedTrials:
    """The completed trials of ``bandit`` (only they carry a reward)."""
    c = table.columns
    keep = (c["status"] == "completed") & (c["bandit"] == bandit)
    if not 0 <= bandit < len(table.context.problems):
        raise ArmlabError(f"--bandit {bandit}: the log has bandits 0..{len(table.context.problems) - 1}")
    return LoggedTrials(c["arm"][keep], c["reward"][keep].astype(float), c["propensity"][keep].astype(float),
                        bool(c["propensity_estimated"][keep].any()), table.context.problems[bandit],
                        table.context.seed)


def walk(policy: Policy, arms: np.ndarray, rewards: np.ndarray, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run ``policy`` (already reset for one replica) along the logged ``arms`` / ``rewards``,
    seeing only the trials in ``keep``; return its choice at every logged trial ``(N,)`` and
    the matched trials (indices, in order)."""
    n, k = arms.size, policy.problem.n_arms
    candidates = np.flatnonzero(np.ones(n, dtype=bool) if keep is None else keep)
    by_arm = [candidates[arms[candidates] == a] for a in range(k)]
    choices = np.empty(n, dtype=np.int64)
    matched: list[int] = []
    stats = ArmStats(1, k)
    pos, committed = 0, -1
    while pos < n:
        arm = committed if committed >= 0 else int(policy.select(stats)[0])
        if arm == STOPPED:
            committed = arm = _committed_arm(policy, stats)
        positions = by_arm[arm]
        at = int(np.searchsorted(positions, pos))
        if at == positions.size:
            choices[pos:] = arm
            break
        j = int(positions[at])
        choices[pos : j + 1] = arm
        matched.append(j)
        pos = j + 1
        if committed < 0:
            chosen, reward = np.array([arm]), rewards[j : j + 1]
            stats.record(_ROW, chosen, reward)
            policy.update(stats, _ROW, chosen, reward)
    return choices, np.asarray(matched, dtype=np.int64)


def _committed_arm(policy: Policy, stats: ArmStats) -> int:
    answer = np.asarray(policy.recommend(stats))
    return int(np.argmax(answer[0])) if answer.ndim == 2 else int(answer[0])


def _policy(candidate: Candidate, trials: LoggedTrials, registry: Registry) -> Policy:
    cls = registry.get("policy", candidate.plugin)
    policy = registry.create("policy", candidate.plugin, dict(candidate.params))
    problem = trials.problem
    if problem.objective not in cls.objectives:
        problem = dataclasses.replace(problem, objective=min(cls.objectives, key=lambda o: o.value))
    problem = dataclasses.replace(problem, budget=max(int(trials.arms.size), 1))
    policy.reset(problem, 1, KeyedRandom(trials.seed, "offline-evaluation", candidate.plugin, replicas=_ROW))
    return policy


def _replay_keep(trials: LoggedTrials) -> np.ndarray | None:
    """Which trials replay keeps: all of a uniform log (``None``), else each with probability
    ``min(p) / p_t`` (keyed by the trial's position)."""
    p = trials.propensities
    if p.max() - p.min() <= _UNIFORM_TOLERANCE:
        return None
    u = KeyedRandom(trials.seed, "replay-acceptance", replicas=_ROW).uniform(0, p.size)[0]
    return u < p.min() / p


def evaluate_candidate(candidate: Candidate, trials: LoggedTrials, registry: Registry | None = None) -> list[est.Estimate]:
    """Every estimator's answer for one candidate (one task), intervals clipped to the
    log's declared reward range."""
    registry = registry or default_registry(False)
    arms, rewards, p = trials.arms, trials.rewards, trials.propensities
    choices, matched = walk(_policy(candidate, trials, registry), arms, rewards)
    out = []
    problem = est.positivity_problem(p)
    if problem:
        out += [est.Estimate(name, reason=problem) for name in ("replay", "ips", "snips")]
    else:
        keep = _replay_keep(trials)
        replayed = matched if keep is None else walk(_policy(candidate, trials, registry), arms, rewards, keep)[1]
        match = np.zeros(arms.size, dtype=bool)
        match[replayed] = True
        weights = np.where(choices == arms, 1.0 / p, 0.0)
        out += [est.replay(rewards, match), est.ips(rewards, weights), est.snips(rewards, weights)]
    out.append(est.direct(arms, rewards, choices, trials.n_arms))
    if problem:
        out.append(est.Estimate("doubly-robust", reason=problem))
    else:
        out.append(est.doubly_robust(arms, rewards, choices, np.where(choices == arms, 1.0 / p, 0.0), trials.n_arms))
    return [est.clipped(e, trials.problem.reward_range) for e in out]


def _task(args: tuple[Candidate, LoggedTrials]) -> list[est.Estimate]:
    return evaluate_candidate(*args)


def evaluate_log(
    log: str | Path | TrialTable,
    policies: str | Candidate | Sequence[str | Candidate],
    params: Mapping[str, Any] | None = None,
    *,
    experiment: str | None = None,
    bandit: int = 0,
    workers: int = 1,
    registry: Registry | None = None,
) -> Evaluation:
    """Estimate each policy's mean reward per trial on the log at ``log`` (a journal file, a
    storage URL with ``experiment``, or a :class:`TrialTable`).  ``policies`` are plugin names
    or :class:`Candidate`; ``params`` apply to a single plugin name."""
    if isinstance(policies, (str, Candidate)):
        policies = [policies]
    candidates = [Candidate(p, dict(params or {})) if isinstance(p, str) else p for p in policies]
    labels = [c.label for c in candidates]
    if twice := sorted({label for label in labels if labels.count(label) > 1}):
        raise ArmlabError(f"--policy {', '.join(twice)} is given twice: the results are one row per policy and "
                          "parameters, so give each once")
    table = log if isinstance(log, TrialTable) else trial_table(read_run(log, experiment), registry)
    trials = logged_trials(table, bandit)
    if trials.arms.size < 2:
        raise ArmlabError(f"the log holds {trials.arms.size} completed trial(s) of bandit {bandit}: nothing to evaluate")
    registry = registry or default_registry(False)
    for c in candidates:  # unknown plugins and bad parameters fail here, before any task runs
        registry.create("policy", c.plugin, dict(c.params))
    if workers > 1 and len(candidates) > 1:
        with ProcessPoolExecutor(min(workers, len(candidates))) as pool:
            results = list(pool.map(_task, [(c, trials) for c in candidates]))
    else:
        results = [evaluate_candidate(c, trials, registry) for c in candidates]
    return Evaluation(int(trials.arms.size), {c.label: r for c, r in zip(candidates, results, strict=True)},
                      trials.estimated, log="trial table" if isinstance(log, TrialTable) else str(log),
                      experiment=experiment, bandit=bandit, logging_policy=table.context.policy,
                      reward_range=trials.problem.reward_range)


def parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``k=v`` pairs of the command line; a value is read as JSON when it parses (numbers,
    booleans), else kept as text."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ArmlabError(f"--param {pair!r}: write it as NAME=VALUE (e.g. --param exploration=1.5)")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out

