"""Built-in policies, registered through the same hook as third-party ones."""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.policies.sh import SequentialHalving
from armlab.plugins.policies.thompson import Thompson
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform


@hookimpl
def armlab_register_policies():
    return [Uniform, UCB1, SequentialHalving, Thompson]
