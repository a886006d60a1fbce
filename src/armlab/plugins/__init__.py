"""Plugin machinery: the ``hookimpl`` marker, the manager and the registry of plugin classes.

Built-in policies, sources, allocators and sinks live in the sub-packages and are registered
through the same hooks as third-party plugins.
"""

from __future__ import annotations

import pluggy

hookimpl = pluggy.HookimplMarker("armlab")

__all__ = ["hookimpl"]
