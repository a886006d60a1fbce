"""Every armlab hook, in one place.

armlab's hooks are synchronous (pluggy has no async hooks); asynchronous behaviour lives in
the objects plugins register (live reward sources).  Registration hooks take no arguments and
return a class or a list of classes; each class declares its name once in ``name``.  How
registration, blocking and ``--no-plugins`` work: ``docs/plugins-and-hooks.md``.

Use in a plugin package::

    # pyproject.toml
    [project.entry-points.armlab]
    my_policies = "my_package.plugin"

    # my_package/plugin.py
    from armlab import hookimpl

    @hookimpl
    def armlab_register_policies():
        return [MyPolicy]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from armlab.config_tables import MetricsConfig
    from armlab.plugins.interfaces import Allocator, Policy, ResultSink, RewardSource, StepObserver
    from armlab.plugins.scalar import ScalarPolicy

hookspec = pluggy.HookspecMarker("armlab")

# --------------------------------------------------------------------------- registration


@hookspec
def armlab_register_policies() -> list[type[Policy] | type[ScalarPolicy]]:
    """Return policy classes (vectorized :class:`~armlab.Policy` or one-replica
    :class:`~armlab.ScalarPolicy`, which armlab wraps).

    Called once when the plugin registry is built.  Each class names itself in ``name``.
    """


@hookspec
def armlab_register_sources() -> list[type[RewardSource]]:
    """Return reward-source classes: simulated (:class:`~armlab.RewardSource`) or live.

    Called once when the plugin registry is built.
    """


@hookspec
def armlab_register_allocators() -> list[type[Allocator]]:
    """Return budget-allocator classes (which bandit to pull when several share a budget).

    Called once when the plugin registry is built.
    """


@hookspec
def armlab_register_sinks() -> list[type[ResultSink]]:
    """Return result-sink classes that persist a finished experiment's summary.

    Called once when the plugin registry is built; every registered sink writes each result.
    """


# --------------------------------------------------------------------------- command line


@hookspec
def armlab_register_commands(cli: click.Group) -> None:
    """Add sub-commands to the ``armlab`` command-line group.

    :param cli: a click group whose commands join the root ``armlab`` group; call
        ``cli.add_command(...)``.

    Called once per plugin registry, the first time ``armlab`` resolves or lists its
    commands, never at import time.
    """


# --------------------------------------------------------------------------- simulation


@hookspec
def armlab_step_observers(metrics: MetricsConfig, bandit_labels: list[str] | None, plan: object) -> list[StepObserver]:
    """Return the step observers (extra metrics tracked every simulated step) a run needs.

    :param metrics: the experiment's ``[metrics]`` table; return ``[]`` when it asks for none
        of yours.
    :param bandit_labels: the labels of a ``[[bandits]]`` experiment's bandits, in order;
        ``None`` for a single-bandit experiment.
    :param plan: the validated experiment (:class:`armlab.plan.ExperimentPlan`), for
        implementations written before ``metrics`` and ``bandit_labels``; new ones take only
        what they read (pluggy passes an implementation the arguments it names).

    Called once for every policy of every simulated run (observers keep per-run state, so
    return fresh ones); each observer's ``summary()`` joins that policy's summary entry.
    Observers receive the run as :class:`armlab.plugins.interfaces.SimulatedRun`.
    """
