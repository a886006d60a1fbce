"""The orchestrator: the vectorized engine, delayed feedback, live trials and the runners."""

from armlab.orchestrator.engine import Simulation
from armlab.orchestrator.live import LiveRun, Outcome
from armlab.orchestrator.runner import run_experiment, run_experiment_async

__all__ = ["LiveRun", "Outcome", "Simulation", "run_experiment", "run_experiment_async"]
