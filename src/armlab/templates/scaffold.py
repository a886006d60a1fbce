"""``armlab new-plugin NAME``: render the plugin-package template shipped with armlab.

The template (``armlab/templates/plugin/``) is a complete third-party package: pyproject
with the ``armlab`` entry point, one vectorized policy, and its tests.  Files end in
``.tmpl`` (so no tool mistakes them for code) and use :class:`string.Template` placeholders:
``${dist}`` (distribution name), ``${module}`` (import name), ``${plugin}`` (the policy's
registered name) and ``${cls}`` (its class name); a path part ``__module__`` becomes the
import name.  ``examples/plugin_package`` is this template rendered for ``epsilon-greedy``.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from armlab.errors import ConfigError

if TYPE_CHECKING:
    from armlab.plugins.registry import Registry

__all__ = ["check_unclaimed", "plugin_names", "render_plugin"]

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
_SUFFIX = ".tmpl"


def plugin_names(name: str) -> dict[str, str]:
    """Names derived from a plugin name: ``epsilon-greedy`` -> ``armlab-epsilon-greedy``,
    ``armlab_epsilon_greedy``, ``epsilon-greedy``, ``EpsilonGreedy``."""
    if not _NAME.match(name):
        raise ConfigError(
            f"plugin name {name!r} is not valid: use lowercase letters and digits, words joined "
            f"by '-' or '_', starting with a letter (e.g. 'epsilon-greedy')"
        )
    words = re.split(r"[-_]", name)
    return dict(
        dist=f"armlab-{'-'.join(words)}",
        module=f"armlab_{'_'.join(words)}",
        plugin=name,
        cls="".join(w.capitalize() for w in words),
    )


def check_unclaimed(name: str, registry: Registry) -> None:
    """Refuse a plugin name that an installed plugin (or entry point) already has.

    The package would register a second plugin of that name (and an entry point of that
    name), so once installed the name would be unusable for both; the message names the
    plugin that has it.
    """
    plugin_names(name)  # a valid name first
    claims = [(info.kind, info.origin) for info in registry.infos() if info.name == name]
    claims += [(infos[0].kind, " and ".join(i.origin for i in infos))
               for clashed, infos in registry.clashes().items() if clashed == name]
    entry_points = getattr(registry.pm, "entry_points", {})
    if name in entry_points:
        claims.append(("plugin entry point", entry_points[name]))
    if claims:
        kind, origin = claims[0]
        raise ConfigError(
            f"{name!r} is already the name of a {kind} ({origin}); a package registering it again would, "
            f"once installed, make {name!r} unusable: choose another name, e.g. 'my-{name}'"
        )


def _files(root: Traversable, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Traversable]]:
    found = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            found += _files(entry, (*prefix, entry.name))
        elif entry.name.endswith(_SUFFIX):
            found.append(((*prefix, entry.name.removesuffix(_SUFFIX)), entry))
    return found


def render_plugin(name: str, dest: str | Path) -> list[Path]:
    """Write the plugin package for ``name`` into ``dest`` (created; must not hold files).

    Returns the files written, relative to ``dest``.
    """
    names = plugin_names(name)
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConfigError(f"{dest} already exists and is not an empty directory; choose another --dir")
    written = []
    for parts, source in _files(resources.files("armlab.templates") / "plugin"):
        relative = Path(*(names["module"] if part == "__module__" else part for part in parts))
        text = Template(source.read_text(encoding="utf-8")).substitute(names)
        try:
            (dest / relative).parent.mkdir(parents=True, exist_ok=True)
            (dest / relative).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write {dest / relative}: {exc.strerror or exc}; choose another --dir") from None
        written.append(relative)
    return written
