"""Built-in budget allocators."""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.allocators.single import Single


@hookimpl
def armlab_register_allocators():
    return [Single]
