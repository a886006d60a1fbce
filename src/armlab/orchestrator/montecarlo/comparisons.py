"""Paired comparisons of the policies of one run: the differences a reviewer asks for first.

The policies of a run see the same rewards for the k-th pull of an arm in each replica
(common random numbers), so the difference between two policies' final metric is measured
replica by replica.  Its standard error is that of the paired differences, usually far
smaller than what the two policies' separate standard errors suggest (``unpaired_stderr``,
given for contrast).  The 95 % interval is the normal one (mean +- 1.96 standard errors);
a difference is ``significant`` when that interval excludes 0.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
from scipy import special

from armlab.orchestrator.montecarlo.simulate import PolicyResult
from armlab.problem import Objective

__all__ = ["paired_comparisons"]

_Z95 = float(special.ndtri(0.975))


def paired_comparisons(results: list[PolicyResult], objective: Objective) -> dict[str, Any]:
    """``{"metric": ..., "pairs": [...]}``: for every pair of policies (in config order) the
    mean of ``first - second`` of the final metric (regret or error at the last checkpoint),
    its paired standard error, 95 % interval, significance and the unpaired standard error."""
    metric = "regret" if objective is Objective.REGRET else "error_rate"
    finals = {r.label: (r.cp_regret if objective is Objective.REGRET else r.cp_error)[:, -1] for r in results}
    pairs = []
    for (a, x), (b, y) in combinations(finals.items(), 2):
        diff = x - y
        n = diff.size
        stderr = float(diff.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        unpaired = float(np.sqrt(x.var(ddof=1) / n + y.var(ddof=1) / n)) if n > 1 else float("nan")
        mean = float(diff.mean())
        low, high = mean - _Z95 * stderr, mean + _Z95 * stderr
        pairs.append({
            "first": a, "second": b, "difference": mean, "stderr": stderr,
            "ci95": [low, high], "significant": bool(low > 0 or high < 0), "unpaired_stderr": unpaired,
        })
    return {"metric": metric, "replicas": int(next(iter(finals.values())).size) if finals else 0, "pairs": pairs}
