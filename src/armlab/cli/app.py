"""Shared state of CLI commands: the plugin registry, built lazily once."""

from __future__ import annotations

from functools import cached_property

from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry


class App:
    """What every command needs; stored as click's ``ctx.obj``."""

    def __init__(self, load_entrypoints: bool | None = True) -> None:
        self.load_entrypoints = load_entrypoints

    @cached_property
    def registry(self) -> Registry:
        return Registry(get_plugin_manager(load_entrypoints=self.load_entrypoints))
