"""Build the pluggy plugin manager: hook specs, entry points, then the built-ins."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
from collections.abc import Iterable

import pluggy

from armlab import hookspecs
from armlab.errors import PluginError

__all__ = [
    "BLOCK_VARIABLE",
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "ArmlabPluginManager",
    "entry_points_enabled",
    "get_plugin_manager",
]

ENTRY_POINT_GROUP = "armlab"

#: Built-in plugin modules, registered exactly as third-party plugins are.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "armlab.plugins.policies",
    "armlab.plugins.thresholding",
    "armlab.plugins.fixed_budget",
    "armlab.plugins.fixed_confidence",
    "armlab.plugins.regret",
    "armlab.plugins.gcp",
    "armlab.plugins.sources",
    "armlab.plugins.allocators",
    "armlab.plugins.sinks",
    "armlab.movielens.plugin",
    "armlab.adapters.plugin",
    "armlab.cli.extras",
)

#: The environment variable that blocks plugins by name (comma-separated).
BLOCK_VARIABLE = "ARMLAB_BLOCK_PLUGINS"


class ArmlabPluginManager(pluggy.PluginManager):
    """pluggy's plugin manager, plus what armlab's messages need to say about it.

    ``blocked`` maps each blocked name to what blocked it (``ARMLAB_BLOCK_PLUGINS``, or the
    ``blocked`` argument of :func:`get_plugin_manager`).
    """

    def __init__(self) -> None:
        super().__init__("armlab")
        self.blocked: dict[str, str] = {}

    @functools.cached_property
    def entry_points(self) -> dict[str, str]:
        """The installed ``armlab`` entry points, loaded or not: name -> distribution."""
        return {
            ep.name: f"{dist.name} {dist.version}"
            for dist in importlib.metadata.distributions()
            for ep in dist.entry_points.select(group=ENTRY_POINT_GROUP)
        }


def get_plugin_manager(
    load_entrypoints: bool | None = None, blocked: Iterable[str] = ()
) -> ArmlabPluginManager:
    """Return a fresh plugin manager with armlab's hooks and plugins registered.

    Order: add the specs; block names from ``blocked`` and ``ARMLAB_BLOCK_PLUGINS``
    (comma-separated); load the ``armlab`` entry points unless ``load_entrypoints`` is
    false or ``ARMLAB_DISABLE_PLUGIN_AUTOLOAD=1``; register the built-in modules; check that
    every implemented hook exists.  A blocked name must be an installed entry point's or a
    built-in module's (anything else would block nothing, silently): the registry refuses
    others, naming the module of a plugin so named (:class:`~armlab.plugins.registry.Registry`).
    """
    pm = ArmlabPluginManager()
    pm.add_hookspecs(hookspecs)
    env_blocked = os.environ.get(BLOCK_VARIABLE, "")
    pm.blocked = {
        **dict.fromkeys(blocked, "get_plugin_manager(blocked=...)"),
        **dict.fromkeys(filter(None, (n.strip() for n in env_blocked.split(","))), BLOCK_VARIABLE),
    }
    for name in pm.blocked:
        pm.set_blocked(name)
    if entry_points_enabled(load_entrypoints):
        _load_entry_points(pm)
    for module_name in BUILTIN_PLUGINS:
        if not pm.is_blocked(module_name):
            pm.register(importlib.import_module(module_name), name=module_name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"a plugin implements a hook armlab does not define: {exc}") from exc
    return pm


def entry_points_enabled(load_entrypoints: bool | None) -> bool:
    """``load_entrypoints``, where ``None`` means: unless ``ARMLAB_DISABLE_PLUGIN_AUTOLOAD=1``."""
    if load_entrypoints is None:
        return os.environ.get("ARMLAB_DISABLE_PLUGIN_AUTOLOAD", "") != "1"
    return load_entrypoints


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Register the ``armlab`` entry points; one that fails to import is named with its
    distribution instead of surfacing as a bare import error.

    Each entry point pluggy would load (not blocked, name not taken: the first distribution
    wins) is imported here first, so a failure names it; pluggy then registers the imported
    modules and records their distributions (``pm.list_plugin_distinfo()``, the origin shown
    by ``armlab plugins``).
    """
    names: set[str] = set()
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points.select(group=ENTRY_POINT_GROUP):
            if ep.name in names or pm.has_plugin(ep.name) or pm.is_blocked(ep.name):
                continue
            names.add(ep.name)
            try:
                ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin entry point '{ep.name} = {ep.value}' of distribution "
                    f"'{dist.name} {dist.version}' failed to import: {type(exc).__name__}: {exc}; "
                    "uninstall it or run with --no-plugins"
                ) from exc
    pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
