"""Running a Monte Carlo experiment past one loop: tasks, worker processes, Dask, resuming.

``tasks`` (how a run is split), ``shards`` (the runner that picks an executor),
``processes`` and ``dask_cluster`` (the executors), ``portable`` (a plan as workers rebuild
it), ``collect`` (their reports, merged), ``saved_tasks`` (interrupt and resume), ``heap``
(the allocator's headroom in every worker).
"""
