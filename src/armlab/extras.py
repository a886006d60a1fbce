"""Optional dependencies: import them where a feature needs them, or say how to install them.

armlab installs from its source tree (it is not on a package index), so the fix for a
missing extra is ``pip install -e '.[EXTRA]'`` in the armlab checkout; the one-line
message says so instead of a ``ModuleNotFoundError`` traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from armlab.errors import ArmlabError

__all__ = ["MissingExtra", "require"]


class MissingExtra(ArmlabError):
    """A feature's optional dependency is not installed (the message names the extra)."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingExtra` naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"{feature} needs {module.split('.')[0]}, part of armlab's {extra!r} extra: in the armlab "
            f"checkout run pip install -e '.[{extra}]'"
        ) from None
