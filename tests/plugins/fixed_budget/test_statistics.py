"""Reduced-scale check of the heterogeneous-variance paper's main ordering: SHVar and SHAdaVar beat SH and Unif.

Seeded; the margin is two standard errors of the per-replica error difference (all policies
meet the same instances and rewards).  The bandit is the heterogeneous-variance paper's, K = 16 and n = 1600 (100 pulls
per arm), with the high variances on the odd arms so the best arm is a high-variance one: the
variant under which our runs reproduce the paper's ordering (see examples/heterogeneous_variances/fig2_budget.toml).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.plugins.fixed_budget.sh_variance import SHAdaVar, SHVar
from armlab.plugins.policies.sh import SequentialHalving
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.sources.heterogeneous_gaussian import HeterogeneousVarianceGaussian
from armlab.testing import simulate_policy

pytestmark = pytest.mark.slow

REPLICAS, N_ARMS, BUDGET, SEED = 3000, 16, 1600, 3


@pytest.fixture(scope="module")
def errors() -> dict[str, np.ndarray]:
    out = {}
    for cls in (Uniform, SequentialHalving, SHVar, SHAdaVar):
        source = HeterogeneousVarianceGaussian({"n_arms": N_ARMS, "high_variance_arms": "odd"})
        sim = simulate_policy(cls, source, budget=BUDGET, replicas=REPLICAS, seed=SEED)
        out[cls.name] = sim.cp_error[:, -1]
    return out


@pytest.mark.parametrize("better", ["shvar", "shadavar"])
@pytest.mark.parametrize("worse", ["sh", "uniform"])
def test_variance_adaptive_halving_beats_sh_and_unif(errors, better, worse):
    difference = errors[worse] - errors[better]
    stderr = difference.std(ddof=1) / math.sqrt(REPLICAS)
    assert difference.mean() > 2 * stderr, (errors[worse].mean(), errors[better].mean(), stderr)
