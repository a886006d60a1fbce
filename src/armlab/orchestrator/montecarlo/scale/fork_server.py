"""The fork server of a local Dask cluster: the process its workers fork from, ready.

Each worker of a local cluster would otherwise start an interpreter that imports Dask,
numpy and armlab and builds the plugin registry (about 0.6 s of CPU each, measured on a
2-core machine where it competes with this process's tasks).  The server does that once
(importing this module builds the registry it inherits to every worker), and each worker
forks from it: where the workers could not be forked from this process before it ran any
thread (:mod:`armlab.orchestrator.montecarlo.scale.dask_forked`), forking them from it now
would be unsafe, as it runs threads.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver

from armlab.plugins.registry import default_registry

__all__ = ["start_fork_server"]

#: The modules the server imports before it forks any worker: Dask, armlab's task runner for
#: Dask (which imports the engine) and this one (the registry).
PRELOAD = ["distributed", "armlab.orchestrator.montecarlo.scale.dask_cluster", __name__]

default_registry()  # built here once, so the workers forked from the server have it


def start_fork_server() -> None:
    """Start this process's fork server (once; later calls do nothing) with :data:`PRELOAD`,
    and keep Dask from importing its own list (pandas among them, which a worker does not
    need) into this process to start it otherwise.

    Dask's flag that it has set up the server is private: should it disappear, the server
    still runs with this list, and the cost is only those imports here."""
    multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOAD)
    multiprocessing.forkserver.ensure_running()
    import distributed.utils  # after the server starts: it imports Dask meanwhile

    distributed.utils._forkserver_preload_set = True
