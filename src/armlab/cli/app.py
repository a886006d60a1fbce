"""Shared state of CLI commands: the plugin registry of the process."""

from __future__ import annotations

from armlab.plugins.registry import Registry, default_registry


class App:
    """What every command needs; stored as click's ``ctx.obj``."""

    def __init__(self, load_entrypoints: bool | None = True) -> None:
        self.load_entrypoints = load_entrypoints

    @property
    def registry(self) -> Registry:
        """The process's registry (:func:`~armlab.plugins.registry.default_registry`), built
        on first use so commands that need no plugins never load them."""
        return default_registry(self.load_entrypoints)
