"""armlab's exception hierarchy.

User-facing errors (bad config, unknown plugin, a policy that cannot run on a source) derive
from :class:`ArmlabError`; the CLI turns them into a clean message and exit code 2.
"""

from __future__ import annotations

__all__ = [
    "ArmlabError",
    "ConfigError",
    "DuplicatePluginError",
    "PluginError",
    "TrialFailed",
    "UnknownPluginError",
]


class ArmlabError(Exception):
    """Base class of every error armlab raises on purpose."""


class ConfigError(ArmlabError, ValueError):
    """An experiment description is invalid; the message names the field and the fix."""


class PluginError(ArmlabError):
    """A plugin could not be loaded, registered or used."""


class UnknownPluginError(PluginError, LookupError):
    """No plugin of that kind has that name; the message lists the available ones."""


class DuplicatePluginError(PluginError):
    """Two plugin classes claim the same name."""


class TrialFailed(ArmlabError):
    """A live trial produced no usable reward; the run records it and goes on."""
