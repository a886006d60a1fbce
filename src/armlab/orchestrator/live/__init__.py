"""The live driver: one replica whose trials run in the outside world.

``experiment`` (the ask/tell state machine, :class:`LiveExperiment`), ``types`` (its
states, records and errors), ``answers`` (what it reports), ``replay`` (resuming it from its
journal), ``run`` (:class:`LiveRun`, the async driver that runs trials through live
sources) and ``session`` (an experiment with its journal, as the CLI and the service open it).
"""
