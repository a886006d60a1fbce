"""Where ``armlab server`` keeps its experiments: a catalog and one journal per experiment.

:func:`open_storage` opens the storage a URL names (:mod:`armlab.storage.url`); every
backend implements :class:`~armlab.storage.base.Storage`.
"""

from armlab.storage.base import ExperimentExists, ExperimentRecord, Storage, UnknownExperiment
from armlab.storage.url import open_storage

__all__ = ["ExperimentExists", "ExperimentRecord", "Storage", "UnknownExperiment", "open_storage"]
