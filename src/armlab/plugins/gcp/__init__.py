"""Greedy confidence pursuit: top-m arm rules, multi-bandit allocators and their metrics."""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.gcp.allocators import MAPUCB, GCPBayes, TargetedGCPBayes, UniformBandit
from armlab.plugins.gcp.agapev_topm import AGapEVTopM
from armlab.plugins.gcp.arm_rules import BayesTopM, PACTopM
from armlab.plugins.gcp.completion_observer import BanditCompletionObserver
from armlab.plugins.gcp.confidence_observer import ConfidenceObserver
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


@hookimpl
def armlab_step_observers(metrics, bandit_labels):
    """The confidence bound when ``[metrics] confidence`` asks for it; bandits completed vs
    trials in every multi-bandit run (the point of one)."""
    observers = []
    if metrics.confidence:
        observers.append(ConfidenceObserver(metrics.confidence_level, metrics.confidence_hold))
    if bandit_labels is not None:
        observers.append(BanditCompletionObserver(metrics.confidence_level, metrics.confidence_hold, bandit_labels))
    return observers
