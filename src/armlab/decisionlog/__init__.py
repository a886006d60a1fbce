"""The decision log: a live experiment's journal as one row per trial, exported for other
tools, and used to estimate offline what another policy would have earned on the same traffic.

* :mod:`.source`: where a log is read from (a journal file; storage URLs plug in there).
* :mod:`.table`: the trials of a log as columns (no pandas needed).
* :mod:`.export`: ``armlab export`` and :func:`read_log` (pandas, Parquet: the ``log`` extra).
* :mod:`.estimators`, :mod:`.evaluate`: offline evaluation (``armlab evaluate``).
"""
