"""Adapters connecting armlab to real trial pipelines (live reward sources).

``callback`` calls a Python function, ``command`` runs a program, ``webhook`` POSTs to a
URL, and ``external`` leaves the trials to ask/tell clients (``armlab serve``).

A third-party adapter subclasses one of two bases (guide: ``docs/writing-an-adapter.md``):
:class:`LiveSource`, the contract itself (``n_arms``, ``async with``, ``pull``), or
:class:`AdapterSource`, the base of the built-in adapters, which adds the ``arms``,
``reward_min``/``reward_max``, ``timeout``, ``retries`` and ``backoff`` parameters
(:class:`AdapterParams`), retries and reward validation around one ``run_once`` per attempt.
"""

from armlab.adapters.base import (
    DEFERRED,
    LiveSource,
    RewardRejected,
    Trial,
    validate_reward,
)
from armlab.adapters.common import AdapterParams, AdapterSource

__all__ = ["DEFERRED", "AdapterParams", "AdapterSource", "LiveSource", "RewardRejected", "Trial", "validate_reward"]
