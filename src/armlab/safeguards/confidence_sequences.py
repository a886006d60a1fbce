"""Anytime-valid confidence sequences of arm means, and the fixed-sample interval beside them.

A *confidence sequence* (CS) at level ``1 - alpha`` is a sequence of intervals ``C_1, C_2, ...``
with ``P(mu in C_n for every n at once) >= 1 - alpha``: a person may look after every
observation and stop whenever they like without losing the guarantee.  A fixed-sample 95 %
interval holds only at one pre-planned look; looked at after every observation it excludes
the true mean at *some* look far more often than 5 % of the time.

Two constructions, both updated in O(1) per observation from running sums (the state is a few
floats per arm, and replaying the same observations in the same order gives the same bits):

* :class:`BoundedSequences`, rewards in a declared range ``[a, b]``: the predictable plug-in
  empirical-Bernstein CS (PrPl-EB) of Waudby-Smith & Ramdas (2023), "Estimating means of
  bounded random variables by betting", JRSS-B, Theorem 2.  With ``x = (r - a) / (b - a)``::

      mu_hat_t  = (1/2 + sum_{i<=t} x_i) / (t + 1)
      var_hat_t = (1/4 + sum_{i<=t} (x_i - mu_hat_i)^2) / (t + 1)
      lambda_t  = min(sqrt(2 log(2/alpha) / (var_hat_{t-1} t log(1 + t))), 1/2)
      v_i       = 4 (x_i - mu_hat_{i-1})^2,    psi(l) = (-log(1 - l) - l) / 4
      C_t       = sum lambda_i x_i / sum lambda_i
                  +- (log(2/alpha) + sum v_i psi(lambda_i)) / sum lambda_i

* :class:`SubGaussianSequences`, values sigma-sub-Gaussian around their mean with a declared
  ``scale`` sigma (unbounded metrics): the two-sided normal-mixture boundary of Howard,
  Ramdas, McAuliffe & Sekhon (2021), "Time-uniform, nonparametric, nonasymptotic confidence
  sequences", Annals of Statistics, with intrinsic time ``V_t = sigma^2 t``::

      C_t = mean_t +- sqrt((V_t + rho) log((V_t + rho) / (rho alpha^2))) / t
      rho = sigma^2 m / (2 log(1/alpha) + log(1 + 2 log(1/alpha))),   m = TIGHT_AT

  (any ``rho > 0`` is valid; this one makes the boundary nearly tightest after ``m``
  observations).

Both keep the running intersection ``C_1 ∩ ... ∩ C_t`` (valid because the guarantee is
simultaneous over times), started from the declared range, so no interval of 0/1 rewards
goes below 0.  Adaptive sampling: each arm's sequence is a supermartingale argument over *that
arm's* observations; a policy that chooses the arm from past data only decides *when* the
next term arrives, which Ville's inequality allows (optional skipping), so the guarantee holds
under any policy, provided the reward of a trial does not depend on the choices.

Arrays have shape ``(R, K)`` (replicas, arms) like :class:`armlab.stats.ArmStats`; a live
experiment uses ``R = 1``.  ``delta`` is split over the ``K`` arms (each arm's sequence is at
level ``1 - delta / K``), so all arms' sequences, and every difference built from them by
:func:`difference_intervals`, hold together with probability ``1 - delta``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "TIGHT_AT",
    "BoundedSequences",
    "SubGaussianSequences",
    "difference_intervals",
    "fixed_sample_difference",
    "fixed_sample_intervals",
]

#: Observations after which the sub-Gaussian boundary is (nearly) tightest.
TIGHT_AT = 100

#: The largest bet of PrPl-EB (the paper's ``c``; 1/2 or 3/4 are its suggestions).
MAX_BET = 0.5

#: Standard-normal quantile of the two-sided 95 % fixed-sample interval.
Z95 = 1.959963984540054


class _Sequences:
    """Shared bookkeeping: counts, the running intersection and the declared range."""

    def __init__(self, replicas: int, n_arms: int, delta: float, low: float, high: float) -> None:
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta = {delta} must lie strictly between 0 and 1, e.g. delta = 0.05")
        self.replicas, self.n_arms = replicas, n_arms
        self.delta = delta
        self.alpha = delta / n_arms  # each arm's level; all arms hold together at 1 - delta
        self.range_low, self.range_high = float(low), float(high)
        shape = (replicas, n_arms)
        self.counts = np.zeros(shape, dtype=np.int64)
        self.low = np.full(shape, self.range_low)
        self.high = np.full(shape, self.range_high)

    def observe(self, rows: np.ndarray, arms: np.ndarray, values: np.ndarray) -> None:
        """Fold one value per row into arm ``arms[i]`` of replica ``rows[i]`` (unique rows)."""
        self._update((np.asarray(rows), np.asarray(arms)), np.asarray(values, dtype=np.float64))

    def observe_one(self, arm: int, value: float, replica: int = 0) -> None:
        """Fold one value into one arm: the live experiment's path, the same arithmetic on
        scalars (a few microseconds instead of the tens that fancy indexing costs)."""
        self._update((replica, arm), np.float64(value))

    def _update(self, at, values) -> None:
        self.counts[at] += 1
        low, high = self._fold(at, self.counts[at], values)
        # the intersection starts at the declared range, so it never leaves it (and a bounded
        # sequence's center, an average of values in the range, keeps low <= b and high >= a)
        self.low[at] = np.maximum(self.low[at], low)
        self.high[at] = np.minimum(self.high[at], high)

    def _fold(self, at: tuple[np.ndarray, np.ndarray], n: np.ndarray, values: np.ndarray):
        raise NotImplementedError

    def intervals(self, replica: int = 0) -> list[list[float] | None]:
        """``[low, high]`` per arm of one replica (``None`` before the arm's first value)."""
        return [
            [float(lo), float(hi)] if n else None
            for lo, hi, n in zip(self.low[replica], self.high[replica], self.counts[replica], strict=True)
        ]


class BoundedSequences(_Sequences):
    """PrPl-EB confidence sequences of means of values in ``[low, high]`` (see the module)."""

    def __init__(self, replicas: int, n_arms: int, delta: float, value_range: tuple[float, float]) -> None:
        low, high = value_range
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"the range {list(value_range)} must be two finite numbers, low < high, e.g. [0, 1]")
        super().__init__(replicas, n_arms, delta, low, high)
        self.log_term = math.log(2.0 / self.alpha)
        shape = (replicas, n_arms)
        self.sum_x = np.zeros(shape)  # sum of normalized values
        self.sum_sq = np.zeros(shape)  # sum of (x_i - mu_hat_i)^2
        self.sum_bet = np.zeros(shape)  # sum of lambda_i
        self.sum_bet_x = np.zeros(shape)  # sum of lambda_i x_i
        self.sum_penalty = np.zeros(shape)  # sum of v_i psi(lambda_i)

    def _fold(self, at, n, values):
        width = self.range_high - self.range_low
        x = np.clip((values - self.range_low) / width, 0.0, 1.0)
        sums = (self.sum_x, self.sum_sq, self.sum_bet, self.sum_bet_x, self.sum_penalty)
        folded, low, high = self._step(x, n, tuple(s[at] for s in sums), np.sqrt, np.minimum, np.log1p, _add)
        for kept, value in zip(sums, folded, strict=True):
            kept[at] = value
        return low, high

    def observe_one(self, arm: int, value: float, replica: int = 0) -> None:
        """Fold one value into one arm: the array path's arithmetic on Python floats, the same
        bits (IEEE operations, a correctly rounded square root, NumPy's own ``log1p``) for a
        third of the time that NumPy's scalars take (the live experiment's every result)."""
        at = (replica, arm)
        n = int(self.counts[at]) + 1
        self.counts[at] = n
        width = self.range_high - self.range_low
        x = min(max((float(value) - self.range_low) / width, 0.0), 1.0)
        sums = (self.sum_x, self.sum_sq, self.sum_bet, self.sum_bet_x, self.sum_penalty)
        folded, low, high = self._step(x, n, tuple(float(s[at]) for s in sums), math.sqrt, min, _float_log1p, _add)
        for kept, total in zip(sums, folded, strict=True):
            kept[at] = total
        self.low[at] = max(float(self.low[at]), low)
        self.high[at] = min(float(self.high[at]), high)

    def observe_run(self, arm: int, values: np.ndarray, replica: int = 0) -> None:
        """Fold several values into one arm, in order: the steps of :meth:`observe_one` on
        arrays, each running sum accumulated one term at a time from the kept one (the same
        additions in the same order, so the same bits) and the intersection kept by its
        extremes, for the cost of a few array operations."""
        at = (replica, arm)
        values = np.asarray(values, dtype=np.float64)
        n0 = int(self.counts[at])
        n = np.arange(n0 + 1, n0 + 1 + values.size, dtype=np.int64)
        self.counts[at] = n0 + values.size
        width = self.range_high - self.range_low
        x = np.clip((values - self.range_low) / width, 0.0, 1.0)
        sums = (self.sum_x, self.sum_sq, self.sum_bet, self.sum_bet_x, self.sum_penalty)
        folded, low, high = self._step(x, n, tuple(float(s[at]) for s in sums), np.sqrt, np.minimum, np.log1p,
                                       _accumulate)
        for kept, totals in zip(sums, folded, strict=True):
            kept[at] = totals[-1]
        self.low[at] = max(float(self.low[at]), float(low.max()))
        self.high[at] = min(float(self.high[at]), float(high.min()))

    def _step(self, x, n, sums, sqrt, minimum, log1p, running):
        """PrPl-EB steps: the running sums ``(sum_x, sum_sq, sum_bet, sum_bet_x,
        sum_penalty)`` after the normalized value ``x`` (the ``n``-th), and the new interval;
        on arrays or on floats, with the matching ``sqrt``, ``minimum`` and ``log1p``.
        ``running(total, terms)`` is each sum before and after its terms: one term per entry
        (:func:`_add`), or one arm's successive terms (:func:`_accumulate`)."""
        sum_x, sum_sq, sum_bet, sum_bet_x, sum_penalty = sums
        sum_x_before, sum_x = running(sum_x, x)
        mean_before = (0.5 + sum_x_before) / n  # mu_hat_{t-1} = (1/2 + sum) / t
        sum_sq_before, sum_sq = running(sum_sq, (x - (0.5 + sum_x) / (n + 1)) ** 2)
        var_before = (0.25 + sum_sq_before) / n
        bet = minimum(sqrt(2.0 * self.log_term / (var_before * n * log1p(n))), MAX_BET)
        sum_bet = running(sum_bet, bet)[1]
        sum_bet_x = running(sum_bet_x, bet * x)[1]
        sum_penalty = running(sum_penalty, (x - mean_before) ** 2 * (-log1p(-bet) - bet))[1]  # v psi: the 4s cancel
        center = sum_bet_x / sum_bet
        half = (self.log_term + sum_penalty) / sum_bet
        width = self.range_high - self.range_low
        low, high = self.range_low + width * (center - half), self.range_low + width * (center + half)
        return (sum_x, sum_sq, sum_bet, sum_bet_x, sum_penalty), low, high


def _add(total, term):
    """A running sum before and after one term per entry."""
    return total, total + term


def _accumulate(total: float, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A running sum before and after each of successive terms, added one at a time."""
    sums = np.add.accumulate(np.concatenate(([total], terms)))
    return sums[:-1], sums[1:]


def _float_log1p(value: float) -> float:
    """NumPy's ``log1p`` as a float: ``math.log1p`` is another implementation, which differs
    from NumPy's in the last bit for some values."""
    return float(np.log1p(value))


class SubGaussianSequences(_Sequences):
    """Normal-mixture confidence sequences of means of ``scale``-sub-Gaussian values."""

    def __init__(self, replicas: int, n_arms: int, delta: float, scale: float) -> None:
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale = {scale} must be a positive number (the values' sub-Gaussian sigma)")
        super().__init__(replicas, n_arms, delta, -math.inf, math.inf)
        self.scale = float(scale)
        level = 2.0 * math.log(1.0 / self.alpha)
        self.rho = scale**2 * TIGHT_AT / (level + math.log1p(level))
        self.sums = np.zeros((replicas, n_arms))

    def _fold(self, at, n, values):
        self.sums[at] += values
        v = self.scale**2 * n + self.rho
        half = np.sqrt(v * np.log(v / (self.rho * self.alpha**2))) / n
        mean = self.sums[at] / n
        return mean - half, mean + half


def difference_intervals(low: np.ndarray, high: np.ndarray, arm: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of ``mu_arm - mu_j`` for every arm ``j``: ``[low_arm - high_j, high_arm - low_j]``.

    Built from per-arm sequences that hold together (each at ``1 - delta/K``), the ``K``
    differences hold together at ``1 - delta``, at every time and for an ``arm`` chosen from
    the data (the union bound covers every choice).  ``low``/``high`` are ``(R, K)``, ``arm``
    one arm or one per replica; the entry of ``arm`` against itself is meaningless.
    """
    rows = np.arange(low.shape[0])
    a = np.broadcast_to(np.asarray(arm), rows.shape)
    return low[rows, a][:, None] - high, high[rows, a][:, None] - low


def fixed_sample_intervals(counts, means, variances, value_range=(-math.inf, math.inf), z: float = Z95):
    """Normal-approximation intervals ``mean +- z sqrt(var / n)``, clipped to the range.

    Valid only at one look planned before the data (the label must say so); ``variances``
    are the sample variances (``ddof = 1``); entries with fewer than two values are NaN.
    """
    counts = np.asarray(counts)
    half = z * np.sqrt(np.divide(variances, counts, out=np.full(counts.shape, np.nan), where=counts >= 2))
    return np.clip(means - half, *value_range), np.clip(means + half, *value_range)


def fixed_sample_difference(counts, means, variances, arm, value_range=(-math.inf, math.inf), z: float = Z95):
    """Fixed-sample intervals of ``mu_arm - mu_j`` (Welch's standard error), clipped to
    ``[low - high, high - low]`` of the range; one pre-planned look only."""
    counts = np.asarray(counts, dtype=np.float64)
    rows = np.arange(counts.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        se2 = np.where(counts >= 2, np.asarray(variances) / counts, np.nan)
    diff = means[rows, arm][:, None] - means
    half = z * np.sqrt(se2[rows, arm][:, None] + se2)
    span = value_range[1] - value_range[0]
    return np.clip(diff - half, -span, span), np.clip(diff + half, -span, span)
