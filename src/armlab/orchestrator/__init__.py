"""The orchestrator: one decision core (``core``) and the drivers that feed it.

``montecarlo/`` runs simulated replicas in a plain loop (``scale/`` spreads them over
processes and Dask), ``live/`` runs one replica whose trials happen in the world, and
``journal/`` stores a live experiment's events.  ``runner`` picks the driver for a config.
"""

from armlab.orchestrator.core import DecisionCore
from armlab.orchestrator.journal.store import Journal
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.run import LiveRun, Outcome
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.runner import run_experiment, run_experiment_async

__all__ = [
    "DecisionCore",
    "Journal",
    "LiveExperiment",
    "LiveRun",
    "Outcome",
    "Simulation",
    "run_experiment",
    "run_experiment_async",
]
