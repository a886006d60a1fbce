"""Built-in reward sources."""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.sources.random_bernoulli import RandomBernoulli
from armlab.plugins.sources.heterogeneous_gaussian import HeterogeneousVarianceGaussian
from armlab.plugins.sources.simulated import Bernoulli, Gaussian


@hookimpl
def armlab_register_sources():
    return [Gaussian, Bernoulli, RandomBernoulli, HeterogeneousVarianceGaussian]
