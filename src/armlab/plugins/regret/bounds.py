"""Confidence-bound math shared by the regret policies, vectorized over arrays of any shape.

* the Bernoulli Kullback-Leibler divergence (DMED, KL-UCB);
* the KL-UCB upper bound ``max{q in [p, 1] : d(p, q) <= delta}`` for the Bernoulli divergence
  (Newton's method or bisection, a fixed small number of vectorized iterations) and its
  closed form for the Gaussian divergence;
* upper posterior quantiles of Beta and Gaussian posteriors (Bayes-UCB), through scipy's
  special functions in their upper-tail form, accurate for levels close to 1.

Probabilities inside the Bernoulli divergence are clamped to ``[1e-15, 1 - 1e-15]``, as
pymaBandits does (docs/algorithms/regret.md), so ``0 log 0 = 0`` holds up to that clamp.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import special

__all__ = [
    "beta_quantile_slope",
    "beta_upper_quantile",
    "gaussian_upper_quantile",
    "kl_bernoulli",
    "klucb_bernoulli",
    "klucb_bernoulli_slope",
    "klucb_gaussian",
    "neg_entropy",
]

#: Clamp of probabilities inside logarithms.
CLAMP = 1e-15
#: Newton steps on the KL-UCB root: 4 already reach 1e-11 on the (p, delta) grid of the tests.
NEWTON_STEPS = 5
#: Bisection tolerance and the iteration count that reaches it from a bracket of width <= 1.
BISECTION_TOL = 1e-6
BISECTION_STEPS = 20
_TINY = 1e-300


def _clamp(p: np.ndarray) -> np.ndarray:
    """``p`` clamped to ``[CLAMP, 1 - CLAMP]``."""
    return np.minimum(np.maximum(p, CLAMP), 1.0 - CLAMP)


def neg_entropy(p: np.ndarray) -> np.ndarray:
    """``p log p + (1 - p) log(1 - p)`` (clamped): the part of ``d(p, q)`` free of ``q``."""
    p = _clamp(np.asarray(p, dtype=np.float64))
    return p * np.log(p) + (1.0 - p) * np.log1p(-p)


def kl_bernoulli(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Bernoulli divergence ``d(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q))`` (clamped)."""
    p = _clamp(np.asarray(p, dtype=np.float64))
    q = _clamp(np.asarray(q, dtype=np.float64))
    return p * np.log(p / q) + (1.0 - p) * np.log((1.0 - p) / (1.0 - q))


def klucb_bernoulli(
    p: np.ndarray, delta: np.ndarray, solver: Literal["newton", "bisection"] = "newton"
) -> np.ndarray:
    """KL-UCB index ``max{q in [p, 1] : d(p, q) <= delta}`` for means ``p`` in [0, 1].

    Edge cases: ``delta <= 0`` gives ``p``; ``p >= 1`` gives 1; ``p = 0`` gives ``1 - exp(-delta)``.

    Newton (default) works in ``u = -log(1 - q)``, where ``g(u) = d(p, q(u)) - delta`` is
    convex, increasing right of the root and asymptotically linear, so Newton's iterates
    started right of the root decrease monotonically to it even when the root is close to 1
    (in ``q`` the steps would be tiny there).  It starts from the smallest of three upper
    bounds on the root, from lower bounds on ``d(p, q)`` for ``q >= p``: Pinsker's
    ``2 (q - p)^2``, ``(q - p)^2 / (2 q)`` (tight for small ``p``) and
    ``(q - p)^2 / (2 (1 - p))`` (tight for ``p`` near 1); the result is clipped to that
    bound.  Bisection halves the Pinsker bracket ``[p, min(1, p + sqrt(delta / 2))]`` 20
    times (width below 1e-6, the textbook bisection's tolerance).
    """
    p = np.minimum(np.maximum(np.asarray(p, dtype=np.float64), 0.0), 1.0)
    delta = np.asarray(delta, dtype=np.float64)
    if delta.shape != p.shape:
        delta = np.broadcast_to(delta, p.shape)
    pc = _clamp(p)
    h = neg_entropy(pc)
    positive = np.maximum(delta, 0.0)
    pinsker = np.minimum(pc + np.sqrt(positive / 2.0), 1.0)
    if solver == "newton":
        upper = np.minimum(pinsker, pc + positive + np.sqrt(positive * (positive + 2.0 * pc)))
        upper = np.minimum(upper, pc + np.sqrt(2.0 * (1.0 - pc) * positive))
        q = np.minimum(_newton(pc, positive, h, upper), upper)
    else:
        q = _bisection(pc, positive, h, pinsker)
    q = np.minimum(np.maximum(q, p), 1.0)
    q = np.where(p == 0.0, -np.expm1(-positive), q)
    q = np.where(p >= 1.0, 1.0, q)
    return np.where(delta <= 0.0, p, q)


def klucb_bernoulli_slope(p: np.ndarray, q: np.ndarray, inv_n: np.ndarray) -> np.ndarray:
    """Derivative of the KL-UCB index ``q`` (at ``delta = f / N``) with respect to ``f``.

    From ``N d(p, q) = f`` and ``d/dq d(p, q) = (q - p) / (q (1 - q))``: ``dq/df = q (1 - q)
    / (N (q - p))``; 0 at ``q = 1``, ``inf`` at ``q = p < 1`` (``f = 0``, vertical tangent).
    ``q`` is concave in ``f`` (the inverse of the convex ``d(p, .)``), so the tangent bounds
    it from above for larger ``f``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = inv_n * q * (1.0 - q) / (q - p)
    return np.where(q >= 1.0, 0.0, np.where(q > p, slope, np.inf))


def _newton(p: np.ndarray, delta: np.ndarray, h: np.ndarray, upper: np.ndarray) -> np.ndarray:
    one_minus_p = 1.0 - p
    offset = h - delta
    with np.errstate(divide="ignore"):
        from_upper = -np.log1p(-np.minimum(upper, 1.0 - CLAMP))
    floor = -np.log1p(-p)  # u at q = p, where g = -delta <= 0
    u = np.maximum(np.minimum(offset / -one_minus_p, from_upper), floor)  # g >= 0 at (delta - h) / (1 - p)
    for _ in range(NEWTON_STEPS):
        em1 = np.expm1(-u)  # = -q
        g = offset + one_minus_p * u - p * np.log(-em1)
        slope = np.maximum(one_minus_p + p * (1.0 + em1) / em1, _TINY)  # (1 - p) - p / (e^u - 1)
        u = np.maximum(u - g / slope, floor)
    return -np.expm1(-u)


def _bisection(p: np.ndarray, delta: np.ndarray, h: np.ndarray, hi: np.ndarray) -> np.ndarray:
    lo = p.copy()
    hi = hi.copy()
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        mc = _clamp(mid)
        over = h - p * np.log(mc) - (1.0 - p) * np.log1p(-mc) > delta
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    return 0.5 * (lo + hi)


def klucb_gaussian(means: np.ndarray, f: np.ndarray, variance: float, counts: np.ndarray) -> np.ndarray:
    """KL-UCB index for the Gaussian divergence ``(x - y)^2 / (2 variance)`` with
    ``delta = f / N``: the closed form ``mean + sqrt(2 variance f / N)``."""
    return means + np.sqrt(2.0 * variance * np.maximum(f, 0.0)) * np.sqrt(1.0 / counts)


def beta_upper_quantile(a: np.ndarray, b: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """The ``1 - tail`` quantile of Beta(a, b), computed from the upper tail (accurate near 1)."""
    return special.betainccinv(a, b, tail)


def beta_quantile_slope(a: np.ndarray, b: np.ndarray, q: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """Derivative of the ``1 - tail`` quantile ``q`` of Beta(a, b) in ``log(1 / tail)``.

    ``d q / d log(1/tail) = tail / pdf(q)`` (``inf`` where the density vanishes).  For
    ``a, b >= 1`` the density is log-concave, so the quantile is concave in ``log(1/tail)``
    and the tangent bounds it from above at larger levels.
    """
    log_pdf = special.xlogy(a - 1.0, q) + special.xlog1py(b - 1.0, -q) - special.betaln(a, b)
    with np.errstate(over="ignore"):
        return tail * np.exp(-log_pdf)


def gaussian_upper_quantile(means: np.ndarray, sd: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """The ``1 - tail`` quantile of N(mean, sd^2): ``mean - sd * Phi^-1(tail)``."""
    return means - sd * special.ndtri(tail)
