"""Greedy confidence pursuit (seed 003): top-m arm rules and multi-bandit allocators."""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.gcp.allocators import MAPUCB, GCPBayes, TargetedGCPBayes, UniformBandit
from armlab.plugins.gcp.agapev_topm import AGapEVTopM
from armlab.plugins.gcp.arm_rules import BayesTopM, PACTopM
from armlab.plugins.gcp.gap_source import GapBernoulli
from armlab.plugins.gcp.joint_ucb import GabUCB


@hookimpl
def armlab_register_policies():
    return [BayesTopM, PACTopM, AGapEVTopM]


@hookimpl
def armlab_register_allocators():
    return [GCPBayes, TargetedGCPBayes, MAPUCB, UniformBandit, GabUCB]


@hookimpl
def armlab_register_sources():
    return [GapBernoulli]
