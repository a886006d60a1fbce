"""armlab-epsilon-greedy: the ``epsilon-greedy`` policy as an armlab plugin (entry-point group ``armlab``)."""

from armlab import hookimpl

from armlab_epsilon_greedy.policy import EpsilonGreedy

__all__ = ["EpsilonGreedy", "armlab_register_policies"]


@hookimpl
def armlab_register_policies():
    """Hand this package's policies to armlab; it looks them up by their ``name``."""
    return [EpsilonGreedy]
