"""Off-policy estimators of a candidate policy's mean reward per trial on a logged run.

Every estimator takes the logged arms ``a_t``, rewards ``r_t`` and propensities ``p_t`` and
the candidate's arm ``c_t`` at each logged trial (from :mod:`.evaluate`), and returns an
:class:`Estimate`: a number with its standard error, 95 % interval and effective sample
size, or a ``reason`` why the estimator does not apply to this log.  The formulas and when
each is trustworthy: docs/decision-log.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

__all__ = ["ESTIMATORS", "Estimate", "clipped", "direct", "doubly_robust", "ips", "positivity_problem", "replay",
           "snips"]

#: The estimators, in the order they are reported.
ESTIMATORS = ("replay", "ips", "snips", "direct", "doubly-robust")

_Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """One estimator's answer; ``estimate`` is ``None`` (and ``reason`` says why) where it
    does not apply."""

    estimator: str
    estimate: float | None = None
    stderr: float | None = None
    interval: tuple[float, float] | None = None
    effective_sample_size: float | None = None
    trials: int = 0
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"estimator": self.estimator, "estimate": self.estimate, "stderr": self.stderr,
                "interval": None if self.interval is None else list(self.interval),
                "effective_sample_size": self.effective_sample_size, "trials": self.trials, "reason": self.reason}


def _answer(name: str, value: float, stderr: float, ess: float, trials: int) -> Estimate:
    return Estimate(name, float(value), float(stderr), (float(value - _Z95 * stderr), float(value + _Z95 * stderr)),
                    float(ess), trials)


def clipped(estimate: Estimate, reward_range: tuple[float, float]) -> Estimate:
    """``estimate`` with its interval clipped to ``reward_range``: a policy's mean reward per
    trial cannot leave the range the rewards are declared in, so the clipped interval covers
    it whenever the normal one does (the point estimate is left as it is: IPS may exceed the
    range on a small log, and says so)."""
    if estimate.interval is None:
        return estimate
    low, high = (min(max(x, reward_range[0]), reward_range[1]) for x in estimate.interval)
    return dataclasses.replace(estimate, interval=(low, high))


def _mean_and_stderr(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")


def _weight_ess(w: np.ndarray) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of importance weights."""
    square = float(np.dot(w, w))
    return float(w.sum() ** 2 / square) if square > 0 else 0.0


def positivity_problem(p: np.ndarray) -> str:
    """Why propensities ``p`` cannot weight a log (empty when they can): unknown values, or
    trials where the logging policy was deterministic (every other arm had probability 0)."""
    unknown = int(np.isnan(p).sum())
    if unknown:
        return (f"{unknown} of {p.size} logged trials have no propensity (a journal written before armlab "
                "recorded them, or a policy whose propensity is unknown); log with a policy that has one")
    certain = int((p >= 1.0).sum())
    if certain:
        return (f"the logging policy was deterministic at {certain} of {p.size} trials (propensity 1: every other "
                "arm had probability 0 there), so other choices cannot be weighted; log with exploration_floor > 0")
    return ""


def replay(rewards: np.ndarray, matched: np.ndarray) -> Estimate:
    """Li et al.'s replay: the mean reward of the accepted trials where the candidate chose the
    logged arm (the candidate learning from those alone)."""
    r = rewards[matched]
    if r.size < 2:
        return Estimate("replay", reason=f"only {r.size} logged trial(s) matched the candidate's choice")
    value, stderr = _mean_and_stderr(r)
    return _answer("replay", value, stderr, r.size, r.size)


def ips(rewards: np.ndarray, weights: np.ndarray) -> Estimate:
    """Inverse propensity scoring: ``mean_t w_t r_t`` with ``w_t = 1[c_t = a_t] / p_t``."""
    value, stderr = _mean_and_stderr(weights * rewards)
    return _answer("ips", value, stderr, _weight_ess(weights), weights.size)


def snips(rewards: np.ndarray, weights: np.ndarray) -> Estimate:
    """Self-normalized IPS: ``sum w r / sum w``; delta-method standard error."""
    total = float(weights.sum())
    if total <= 0:
        return Estimate("snips", reason="no logged trial matched the candidate's choice")
    value = float(np.dot(weights, rewards) / total)
    stderr = float(np.sqrt(np.dot(weights**2, (rewards - value) ** 2)) / total)
    return _answer("snips", value, stderr, _weight_ess(weights), weights.size)


def arm_means(arms: np.ndarray, rewards: np.ndarray, n_arms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The direct model: each arm's logged mean reward, variance and count."""
    n = np.bincount(arms, minlength=n_arms).astype(float)
    total = np.bincount(arms, weights=rewards, minlength=n_arms)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        var = np.bincount(arms, weights=rewards**2, minlength=n_arms) / n - mean**2
    return mean, np.maximum(var, 0.0) * n / np.maximum(n - 1, 1), n


def _unlogged(choices: np.ndarray, counts: np.ndarray) -> str:
    missing = sorted(set(np.unique(choices).tolist()) - set(np.flatnonzero(counts > 0).tolist()))
    return f"the candidate chooses arm(s) {missing} that the log never shows a reward of" if missing else ""


def direct(arms: np.ndarray, rewards: np.ndarray, choices: np.ndarray, n_arms: int) -> Estimate:
    """The direct method: ``mean_t mu_hat(c_t)``, ``mu_hat`` the per-arm logged means."""
    mean, var, n = arm_means(arms, rewards, n_arms)
    if reason := _unlogged(choices, n):
        return Estimate("direct", reason=reason)
    share = np.bincount(choices, minlength=n_arms) / choices.size
    used = share > 0
    stderr = float(np.sqrt(np.sum(share[used] ** 2 * var[used] / n[used])))
    return _answer("direct", float(np.dot(share, np.nan_to_num(mean))), stderr, float(n[used].sum()), choices.size)


def doubly_robust(arms: np.ndarray, rewards: np.ndarray, choices: np.ndarray, weights: np.ndarray,
                  n_arms: int) -> Estimate:
    """Doubly robust: ``mean_t [mu_hat(c_t) + w_t (r_t - mu_hat(a_t))]``."""
    mean, _, n = arm_means(arms, rewards, n_arms)
    if reason := _unlogged(choices, n):
        return Estimate("doubly-robust", reason=reason)
    x = mean[choices] + weights * (rewards - mean[arms])
    value, stderr = _mean_and_stderr(x)
    return _answer("doubly-robust", value, stderr, _weight_ess(weights), choices.size)
