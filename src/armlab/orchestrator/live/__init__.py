"""The live driver: one replica whose trials run in the outside world.

``experiment`` (the ask/tell state machine, :class:`LiveExperiment`, and its journal
replay), ``types`` (its states, records and errors), ``answers`` (what it reports), ``run``
(:class:`LiveRun`, the async driver that runs trials through live sources) and ``session``
(an experiment with its journal, as the CLI and the service open it).
"""
