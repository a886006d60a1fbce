"""armlab: live and Monte Carlo bandit experimentation.

Policies, reward sources, budget allocators and result sinks are pluggy plugins; the
orchestrator runs them vectorized over replicas, with delayed feedback and live trials.
"""

from armlab._version import __version__
from armlab.adapters.base import LiveSource, Trial
from armlab.config import ExperimentConfig, load_config
from armlab.decisionlog.evaluate import evaluate_log
from armlab.decisionlog.export import read_log
from armlab.errors import ArmlabError, ConfigError, PluginError, TrialFailed, UnknownPluginError
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.runner import ExperimentResult, run_experiment, run_experiment_async
from armlab.plugins import hookimpl
from armlab.plugins.interfaces import STOPPED, Allocator, PluginParams, Policy, ResultSink, RewardSource
from armlab.plugins.scalar import ReplicaView, ScalarPolicy
from armlab.problem import Objective, Problem, Truth
from armlab.stats import ArmStats


__all__ = [
    "STOPPED",
    "Allocator",
    "ArmStats",
    "ArmlabError",
    "ConfigError",
    "ExperimentConfig",
    "ExperimentResult",
    "LiveSession",
    "LiveSource",
    "Objective",
    "PluginError",
    "PluginParams",
    "Policy",
    "Problem",
    "ReplicaView",
    "ResultSink",
    "RewardSource",
    "ScalarPolicy",
    "Trial",
    "TrialFailed",
    "Truth",
    "UnknownPluginError",
    "__version__",
    "evaluate_log",
    "hookimpl",
    "load_config",
    "read_log",
    "run_experiment",
    "run_experiment_async",
]
