"""The Monte Carlo driver: ``R`` simulated replicas stepped in a plain synchronous loop.

``engine`` (one vectorized step of the decision core over replicas), ``simulate`` (the loop
of one policy), ``delays`` (delayed feedback), ``metrics`` and ``comparisons`` (what a run
reports); ``scale`` splits a run into tasks over processes or a Dask cluster.
"""
