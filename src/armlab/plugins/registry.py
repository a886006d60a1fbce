"""Name -> class lookup for each plugin kind, with clear errors and provenance.

Two plugins of one kind with the same name (an installed package that reuses a built-in
name) do not stop armlab: the name is set aside as a clash, every other plugin keeps
working, and using the name fails with a message that names both classes and where they
come from.  A name that ``ARMLAB_BLOCK_PLUGINS`` hides is reported as blocked, with the
module that blocking removed.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pluggy

from armlab import hookspecs
from armlab.config import suggest
from armlab.errors import DuplicatePluginError, PluginError, UnknownPluginError
from armlab.plugins.interfaces import Allocator, Plugin, Policy, ResultSink, RewardSource
from armlab.plugins.manager import (
    BUILTIN_PLUGINS,
    entry_points_enabled,
    get_plugin_manager,
)
from armlab.plugins.scalar import ScalarPolicy, vectorize

__all__ = ["KINDS", "PluginInfo", "Registry", "default_registry", "plain_text"]

Kind = Literal["policy", "source", "allocator", "sink"]

#: kind -> (hook name, required base classes).  A source is a :class:`RewardSource` or a
#: plugin whose class says ``live = True`` (:class:`armlab.adapters.LiveSource`): the registry
#: asks the class, so it needs nothing from the adapters built on top of it.
KINDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "policy": ("armlab_register_policies", (Policy, ScalarPolicy)),
    "source": ("armlab_register_sources", (RewardSource, Plugin)),
    "allocator": ("armlab_register_allocators", (Allocator,)),
    "sink": ("armlab_register_sinks", (ResultSink,)),
}


def _is_a(cls: object, kind: str, bases: tuple[type, ...]) -> bool:
    """Whether ``cls`` is a plugin class of ``kind``: a subclass of its bases, and for a
    source either simulated (a :class:`RewardSource`) or live (its class says ``live = True``)."""
    if not (isinstance(cls, type) and issubclass(cls, bases)):
        return False
    return kind != "source" or issubclass(cls, RewardSource) or getattr(cls, "live", False) is True


@dataclass(frozen=True)
class PluginInfo:
    """A registered plugin class and where it came from (``plugin``: the name of the pluggy
    plugin that registered it, an entry point's or a built-in module's)."""

    kind: str
    name: str
    cls: type
    origin: str
    plugin: str = ""

    def describe(self) -> dict[str, Any]:
        """JSON-ready description: name, origin, summary (the docstring's first paragraph, as
        plain text) and parameter schema."""
        doc = inspect.cleandoc(self.cls.__doc__ or "").split("\n\n", 1)[0]
        params = {}
        for field, info in self.cls.Params.model_fields.items():
            params[field] = {
                "type": getattr(info.annotation, "__name__", str(info.annotation)),
                "default": None if info.is_required() else _jsonable(info.get_default(call_default_factory=True)),
                "required": info.is_required(),
                "description": info.description or "",
            }
        return {
            "kind": self.kind,
            "name": self.name,
            "origin": self.origin,
            "summary": plain_text(" ".join(doc.split())),
            "params": params,
        }

    @property
    def builtin(self) -> bool:
        return self.plugin in BUILTIN_PLUGINS


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


_ROLE = re.compile(r":[\w:.-]+:`(~?)([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain_text(text: str) -> str:
    """reST markup made readable as plain text: ``:class:`~a.B``` -> ``B``, a role with a
    title -> the title, ````x```` -> ``x`` (docstrings shown in a terminal)."""

    def role(match: re.Match[str]) -> str:
        tilde, target = match.groups()
        if "<" in target:
            return target.split("<", 1)[0].strip()
        return target.rsplit(".", 1)[-1] if tilde else target

    return _LITERAL.sub(r"\1", _ROLE.sub(role, text))


class Registry:
    """All plugin classes known to a plugin manager, by kind and name."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._by_kind: dict[str, dict[str, PluginInfo]] = {}
        self._clashes: dict[str, dict[str, list[PluginInfo]]] = {kind: {} for kind in KINDS}
        for kind, (hook_name, bases) in KINDS.items():
            self._by_kind[kind] = self._collect(kind, hook_name, bases)
        self._check_blocked_names()

    @property
    def blocked(self) -> dict[str, str]:
        """Blocked plugin names -> what blocked them (``ARMLAB_BLOCK_PLUGINS``...)."""
        return dict(getattr(self.pm, "blocked", {}))

    def _check_blocked_names(self) -> None:
        """Refuse a blocked name that is neither an installed entry point's nor a built-in
        module's: it would block nothing.  A plugin's own name gets its module named."""
        entry_points = getattr(self.pm, "entry_points", {})
        for name, by in self.blocked.items():
            if name in entry_points or name in BUILTIN_PLUGINS:
                continue
            named = [info for kind in KINDS for info in self._registered(kind) if info.name == name]
            if named:
                info = named[0]
                raise PluginError(
                    f"{by}: {name!r} is the name of a {info.kind} of {info.plugin!r}, not of a plugin "
                    f"module, so it blocks nothing; block the module {info.plugin!r} (all of its "
                    f"plugins) or leave {name!r} out"
                )
            known = [*entry_points, *BUILTIN_PLUGINS]
            raise PluginError(
                f"{by}: {name!r} is neither an installed entry point nor a built-in module, so it "
                f"blocks nothing; it takes the names of entry points ({', '.join(entry_points) or 'none installed'}) "
                f"or built-in modules ({', '.join(BUILTIN_PLUGINS)}){suggest(name, known)}"
            )

    def _registered(self, kind: str) -> Iterator[PluginInfo]:
        yield from self._by_kind[kind].values()
        for infos in self._clashes[kind].values():
            yield from infos

    def _collect(self, kind: str, hook_name: str, bases: tuple[type, ...]) -> dict[str, PluginInfo]:
        found: dict[str, PluginInfo] = {}
        clashes = self._clashes[kind]
        for plugin_name, result in self._registrations(hook_name):
            origin = self._origin(plugin_name)
            classes = result if isinstance(result, (list, tuple)) else [result]
            for cls in classes:
                if cls is None:
                    continue
                if not _is_a(cls, kind, bases):
                    named = "RewardSource or LiveSource" if kind == "source" else " or ".join(b.__name__ for b in bases)
                    raise PluginError(
                        f"plugin {plugin_name!r} registered {cls!r} as a {kind}, but it is not a subclass of {named}"
                    )
                name = getattr(cls, "name", None)
                if not isinstance(name, str) or not name:
                    raise PluginError(
                        f"{kind} class {cls.__module__}.{cls.__qualname__} from plugin "
                        f"{plugin_name!r} has no 'name' class attribute"
                    )
                if kind == "policy" and issubclass(cls, ScalarPolicy):
                    cls = vectorize(cls)
                info = PluginInfo(kind, name, cls, origin, plugin_name)
                if name in clashes:
                    clashes[name].append(info)
                elif name in found:
                    clashes[name] = [found.pop(name), info]
                else:
                    found[name] = info
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
        """Sorted names of the registered plugins of ``kind`` (clashing names left out)."""
        return sorted(self._by_kind[kind])

    def clashes(self, kind: str | None = None) -> dict[str, list[PluginInfo]]:
        """Names that several plugins of ``kind`` (or of any kind) claim -> those plugins."""
        return {name: infos for k in (KINDS if kind is None else [kind]) for name, infos in self._clashes[k].items()}

    def infos(self, kind: str | None = None) -> Iterator[PluginInfo]:
        """Registered plugins, sorted by kind then name."""
        for k in KINDS if kind is None else [kind]:
            for name in self.names(k):
                yield self._by_kind[k][name]

    def get(self, kind: str, name: str) -> type:
        """The class registered as ``name``.  Raises :class:`DuplicatePluginError` for a name
        several plugins claim, and :class:`UnknownPluginError` saying that ``name`` is
        blocked (and by what), or listing the available names and the closest one."""
        info = self._by_kind[kind].get(name)
        if info is not None:
            return info.cls
        if name in self._clashes[kind]:
            raise DuplicatePluginError(_clash_message(kind, name, self._clashes[kind][name]))
        blocked = self._blocked_source(kind, name)
        if blocked:
            raise UnknownPluginError(f"{kind} plugin {name!r} is blocked: {blocked}")
        available = ", ".join(self.names(kind)) or "(none)"
        raise UnknownPluginError(
            f"unknown {kind} plugin {name!r}; available: {available}{suggest(name, self.names(kind))}"
        )

    def _blocked_source(self, kind: str, name: str) -> str | None:
        """Why plugin ``name`` of ``kind`` is missing, when blocking removed it: an entry point
        of that name, or a blocked built-in module that registers it."""
        entry_points = getattr(self.pm, "entry_points", {})
        for blocked, by in self.blocked.items():
            if blocked == name and blocked in entry_points:
                return (f"{by} blocks the entry point {name!r} of {entry_points[name]}; "
                        f"remove {name!r} from {by} to use it")
            if blocked in BUILTIN_PLUGINS and name in _builtin_names(blocked, KINDS[kind][0]):
                return (f"it comes from the built-in module {blocked!r}, which {by} blocks; "
                        f"remove {blocked!r} from {by} to use it")
        return None

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


def _clash_message(kind: str, name: str, infos: list[PluginInfo]) -> str:
    """Name every plugin that claims ``name`` and the ways out."""
    claims = " and ".join(
        f"{info.cls.__module__}.{info.cls.__qualname__} (from {info.origin})" for info in infos
    )
    outside = [info for info in infos if not info.builtin]
    ways = "; ".join(
        f"uninstall {info.origin.split()[0]} or block it with ARMLAB_BLOCK_PLUGINS={info.plugin}" for info in outside
    ) or "block one of them with ARMLAB_BLOCK_PLUGINS"
    return f"{len(infos)} {kind} plugins are named {name!r}: {claims}; {ways}"


@functools.cache
def _builtin_names(module_name: str, hook_name: str) -> frozenset[str]:
    """Names the built-in module ``module_name`` registers through ``hook_name`` (asked
    through a manager of its own, for modules that blocking kept out of the registry)."""
    pm = pluggy.PluginManager("armlab")
    pm.add_hookspecs(hookspecs)
    pm.register(importlib.import_module(module_name), name=module_name)
    results = getattr(pm.hook, hook_name)()
    return frozenset(
        getattr(cls, "name", "") for result in results
        for cls in (result if isinstance(result, (list, tuple)) else [result]) if cls is not None
    )


@functools.cache
def _built_registry(load_entrypoints: bool) -> Registry:
    return Registry(get_plugin_manager(load_entrypoints=load_entrypoints))


default_registry.cache_clear = _built_registry.cache_clear  # type: ignore[attr-defined]
