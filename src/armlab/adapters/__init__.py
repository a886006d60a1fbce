"""Adapters connecting armlab to real trial pipelines (live reward sources).

``callback`` calls a Python function, ``command`` runs a program, ``webhook`` POSTs to a
URL, and ``external`` leaves the trials to ask/tell clients (``armlab serve``).
"""

from armlab.adapters.base import DEFERRED, LiveSource, RewardRejected, Trial, validate_reward

__all__ = ["DEFERRED", "LiveSource", "RewardRejected", "Trial", "validate_reward"]
