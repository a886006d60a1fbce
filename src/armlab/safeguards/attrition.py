"""Attrition check: does the share of dispatched trials that come back differ across arms?

The bandit's analogue of an A/B sample-ratio mismatch: an arm whose trials fail or are
abandoned more often than the others' distorts every estimate (its mean is over the trials
that survived).  Per arm the monitor counts trials dispatched, reported, failed and abandoned;
the test compares, across arms, the share of *closed* trials that were reported (a trial in
flight has no outcome yet; a report that never comes is seen once the trial times out, so
set ``[feedback] timeout``).

Because people watch the dashboard continuously, a fixed-level test (chi-square at 0.001)
checked at every closing would raise false alarms far above its level.  The monitor instead
runs an anytime-valid test, a sequential universal-inference e-process (Wasserman, Ramdas &
Balakrishnan 2020, "Universal inference", PNAS): with ``s_k`` reports and ``f_k`` other
closings on arm ``k``, ``S, F`` their totals and ``N = S + F``::

    log E = sum_k [log B(s_k + 1/2, f_k + 1/2) - log B(1/2, 1/2)]    (Jeffreys mixture per arm)
            - [S log(S/N) + F log(F/N)]                              (pooled maximum likelihood)

For every common return probability ``p`` the numerator over the likelihood of ``p`` is a
nonnegative martingale of mean 1 (a mixture of likelihood ratios, whatever arms the policy
picks), and the pooled maximum likelihood is at least the likelihood of ``p``; so by Ville's
inequality ``P(E ever reaches 1/alpha) <= alpha`` under "no arm differs".  The check is
flagged once the running maximum of ``E`` over closings reaches ``1/alpha``, and its
anytime-valid p-value is ``min(1, 1 / max E)``.  The bound assumes the order in which trials
close tells nothing about whether they came back beyond their arm; with long timeouts,
reports (fast) close before failures (slow), which makes the running maximum slightly
optimistic, not the counts.  ``alpha`` defaults to 0.001: a false alarm stops people trusting
the banner, and a real 20 % drop is flagged within a few hundred trials anyway.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaln, xlogy

__all__ = ["ABANDONED", "DEFAULT_ALPHA", "FAILED", "REPORTED", "AttritionMonitor"]

REPORTED, FAILED, ABANDONED = 0, 1, 2
DEFAULT_ALPHA = 0.001
_PRIOR = betaln(0.5, 0.5)


class AttritionMonitor:
    """Counts and the anytime-valid attrition test of ``replicas`` copies of a ``K``-armed bandit."""

    def __init__(self, replicas: int, n_arms: int, alpha: float = DEFAULT_ALPHA) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha = {alpha} must lie strictly between 0 and 1, e.g. alpha = 0.001")
        self.alpha = alpha
        self.dispatched = np.zeros((replicas, n_arms), dtype=np.int64)
        self.closed = np.zeros((replicas, n_arms, 3), dtype=np.int64)  # reported, failed, abandoned
        self._arm_terms = np.zeros((replicas, n_arms))  # log B(s+1/2, f+1/2) - log B(1/2, 1/2)
        self._terms_stale = False  # reports were counted whose arm terms wait for the next reader
        self.max_log_e = np.zeros(replicas)
        self._lost_any = False  # some replica may have lost a trial (False: none did, no counts read)

    def dispatch(self, rows: np.ndarray | int, arms: np.ndarray | int) -> None:
        """Count trials started (one per row; ``rows`` unique, or ints for one trial)."""
        self.dispatched[rows, arms] += 1

    def close(self, rows: np.ndarray | int, arms: np.ndarray | int, outcomes: np.ndarray | int) -> None:
        """Count trials closed as ``REPORTED``, ``FAILED`` or ``ABANDONED`` and update the
        test: O(K) per trial (only the closing arm's term is recomputed).  Ints close one
        trial (the live experiment's path: scalar indexing, a few microseconds).

        One reported trial (ints) of a replica that never lost a trial leaves the test's
        maximum as it was, so the e-value is not recomputed: with nothing lost, each arm's term
        ``log B(s+1/2, 1/2) - log B(1/2, 1/2)`` is <= 0 (the beta function decreases in ``s``)
        and the pooled term is 0, so the log e-value is <= 0 and its running maximum, which
        starts at 0, stays put.  That is the live experiment's usual report, and its arm's term
        waits until someone reads :attr:`arm_terms` (computed then from the counts: a term is a
        function of its arm's counts alone, so the value is the same as computed now).  Until a
        first trial is lost (anywhere) no count is read to know that none was."""
        self.closed[rows, arms, outcomes] += 1
        if not (isinstance(outcomes, int) and outcomes == REPORTED):
            self._lost_any = True
        elif not self._lost_any or not self.closed[rows, :, FAILED:].any():
            self._terms_stale = True
            return
        back = self.closed[rows, arms, REPORTED]
        lost = self.closed[rows, arms, FAILED] + self.closed[rows, arms, ABANDONED]
        terms = self.arm_terms
        terms[rows, arms] = betaln(back + 0.5, lost + 0.5) - _PRIOR
        self.max_log_e[rows] = np.maximum(self.max_log_e[rows], self.log_e(rows))

    @property
    def arm_terms(self) -> np.ndarray:
        """Each arm's term ``log B(s+1/2, f+1/2) - log B(1/2, 1/2)`` ``(R, K)``, brought up to
        date with the reports :meth:`close` counted without computing it."""
        if self._terms_stale:
            self._terms_stale = False
            back = self.closed[:, :, REPORTED]
            lost = self.closed[:, :, FAILED] + self.closed[:, :, ABANDONED]
            self._arm_terms[...] = betaln(back + 0.5, lost + 0.5) - _PRIOR
        return self._arm_terms

    def log_e(self, rows: np.ndarray | int | None = None) -> np.ndarray:
        """The current log e-value of each replica (``rows``; default all)."""
        rows = slice(None) if rows is None else rows
        back = self.closed[rows, :, REPORTED].sum(axis=-1)
        lost = self.closed[rows, :, FAILED].sum(axis=-1) + self.closed[rows, :, ABANDONED].sum(axis=-1)
        total = back + lost
        pooled = xlogy(back, back / np.maximum(total, 1)) + xlogy(lost, lost / np.maximum(total, 1))
        return self.arm_terms[rows].sum(axis=-1) - pooled

    @property
    def flagged(self) -> np.ndarray:
        """Per replica: whether the e-value has ever reached ``1 / alpha``."""
        return self.reaches(self.max_log_e)

    def reaches(self, log_e: np.ndarray | float) -> np.ndarray | bool:
        """Whether the log e-value ``log_e`` reaches the threshold ``log(1 / alpha)``."""
        return log_e >= math.log(1.0 / self.alpha)

    def p_values(self) -> np.ndarray:
        """Anytime-valid p-values ``min(1, 1 / max E)``."""
        return np.minimum(1.0, np.exp(-self.max_log_e))

    def summary(self, replica: int = 0) -> dict:
        """What ``/status`` shows under ``checks.attrition``: the test and the counts per arm."""
        closed = self.closed[replica]
        return {
            "p_value": float(self.p_values()[replica]),
            "threshold": self.alpha,
            "flagged": bool(self.flagged[replica]),
            "dispatched": self.dispatched[replica].tolist(),
            "reported": closed[:, REPORTED].tolist(),
            "failed": closed[:, FAILED].tolist(),
            "abandoned": closed[:, ABANDONED].tolist(),
        }
