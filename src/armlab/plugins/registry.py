"""Name -> class lookup for each plugin kind, with clear errors and provenance."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pluggy

from armlab.adapters.base import LiveSource
from armlab.errors import DuplicatePluginError, PluginError, UnknownPluginError
from armlab.plugins.interfaces import Allocator, Policy, ResultSink, RewardSource
from armlab.plugins.manager import entry_points_enabled, get_plugin_manager
from armlab.plugins.scalar import ScalarPolicy, vectorize

__all__ = ["KINDS", "PluginInfo", "Registry", "default_registry"]

Kind = Literal["policy", "source", "allocator", "sink"]

#: kind -> (hook name, required base classes)
KINDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "policy": ("armlab_register_policies", (Policy, ScalarPolicy)),
    "source": ("armlab_register_sources", (RewardSource, LiveSource)),
    "allocator": ("armlab_register_allocators", (Allocator,)),
    "sink": ("armlab_register_sinks", (ResultSink,)),
}


@dataclass(frozen=True)
class PluginInfo:
    """A registered plugin class and where it came from."""

    kind: str
    name: str
    cls: type
    origin: str

    def describe(self) -> dict[str, Any]:
        """JSON-ready description: name, origin, summary line and parameter schema."""
        doc = (self.cls.__doc__ or "").strip().splitlines()
        params = {}
        for field, info in self.cls.Params.model_fields.items():
            params[field] = {
                "type": getattr(info.annotation, "__name__", str(info.annotation)),
                "default": None if info.is_required() else _jsonable(info.default),
                "required": info.is_required(),
                "description": info.description or "",
            }
        return {
            "kind": self.kind,
            "name": self.name,
            "origin": self.origin,
            "summary": doc[0] if doc else "",
            "params": params,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


class Registry:
    """All plugin classes known to a plugin manager, by kind and name."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._by_kind: dict[str, dict[str, PluginInfo]] = {}
        for kind, (hook_name, bases) in KINDS.items():
            self._by_kind[kind] = self._collect(kind, hook_name, bases)

    def _collect(self, kind: str, hook_name: str, bases: tuple[type, ...]) -> dict[str, PluginInfo]:
        found: dict[str, PluginInfo] = {}
        for plugin_name, result in self._registrations(hook_name):
            origin = self._origin(plugin_name)
            classes = result if isinstance(result, (list, tuple)) else [result]
            for cls in classes:
                if cls is None:
                    continue
                if not (isinstance(cls, type) and issubclass(cls, bases)):
                    raise PluginError(
                        f"plugin {plugin_name!r} registered {cls!r} as a {kind}, "
                        f"but it is not a subclass of {' or '.join(b.__name__ for b in bases)}"
                    )
                name = getattr(cls, "name", None)
                if not isinstance(name, str) or not name:
                    raise PluginError(
                        f"{kind} class {cls.__module__}.{cls.__qualname__} from plugin "
                        f"{plugin_name!r} has no 'name' class attribute"
                    )
                if name in found:
                    other = found[name]
                    raise DuplicatePluginError(
                        f"two {kind} plugins are named {name!r}: "
                        f"{other.cls.__module__}.{other.cls.__qualname__} (from {other.origin}) and "
                        f"{cls.__module__}.{cls.__qualname__} (from {origin}); "
                        f"block one with ARMLAB_BLOCK_PLUGINS or rename it"
                    )
                if kind == "policy" and issubclass(cls, ScalarPolicy):
                    cls = vectorize(cls)
                found[name] = PluginInfo(kind, name, cls, origin)
        return found

    def _registrations(self, hook_name: str) -> Iterator[tuple[str, Any]]:
        """``(plugin name, what it returned)`` for each plugin implementing ``hook_name``.

        Each plugin's implementation is called through pluggy, in a hook caller without the
        other plugins' implementations, so every wrapper (``wrapper=True`` or
        ``hookwrapper=True``) runs around each plugin's registration while the returned
        classes stay attributed to the plugin that returned them.
        """
        impls = getattr(self.pm.hook, hook_name).get_hookimpls()
        plugins = list(dict.fromkeys(impl.plugin for impl in impls if not (impl.wrapper or impl.hookwrapper)))
        for plugin in plugins:
            others = [other for other in plugins if other is not plugin]
            for result in self.pm.subset_hook_caller(hook_name, others)():
                yield self.pm.get_name(plugin), result

    def _origin(self, plugin_name: str) -> str:
        for plugin, dist in self.pm.list_plugin_distinfo():
            if self.pm.get_name(plugin) == plugin_name:
                return f"{dist.project_name} {dist.version}"
        return "armlab (built-in)" if plugin_name.startswith("armlab.") else plugin_name

    def names(self, kind: str) -> list[str]:
        """Sorted names of the registered plugins of ``kind``."""
        return sorted(self._by_kind[kind])

    def infos(self, kind: str | None = None) -> Iterator[PluginInfo]:
        """Registered plugins, sorted by kind then name."""
        for k in KINDS if kind is None else [kind]:
            for name in self.names(k):
                yield self._by_kind[k][name]

    def get(self, kind: str, name: str) -> type:
        """The class registered as ``name``; raises with the list of available names."""
        try:
            return self._by_kind[kind][name].cls
        except KeyError:
            available = ", ".join(self.names(kind)) or "(none)"
            raise UnknownPluginError(
                f"unknown {kind} plugin {name!r}; available: {available}"
            ) from None

    def create(self, kind: str, name: str, params: Mapping[str, Any] | None = None) -> Any:
        """Instantiate plugin ``name`` with validated ``params``."""
        cls = self.get(kind, name)
        return cls(cls.Params.model_validate(dict(params or {})))


def default_registry(load_entrypoints: bool | None = None) -> Registry:
    """The registry of this process, built once per ``load_entrypoints`` value.

    ``None`` follows ``ARMLAB_DISABLE_PLUGIN_AUTOLOAD`` (so it shares the registry of the
    value the environment gives).  Building one imports every plugin and calls its
    registration hooks, so the CLI, the runners and live sessions share it;
    ``default_registry.cache_clear()`` drops it (tests that change the environment).
    """
    return _built_registry(entry_points_enabled(load_entrypoints))


@functools.cache
def _built_registry(load_entrypoints: bool) -> Registry:
    return Registry(get_plugin_manager(load_entrypoints=load_entrypoints))


default_registry.cache_clear = _built_registry.cache_clear  # type: ignore[attr-defined]
