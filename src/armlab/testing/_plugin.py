"""What every plugin class must declare, checked the same way by every ``check_*``."""

from __future__ import annotations

from armlab.plugins.interfaces import PluginParams


def check_declaration(cls: type, base: type) -> str:
    """Assert that ``cls`` subclasses ``base`` and declares a name and a frozen ``Params``
    model that forbids unknown fields; return the name (for the other messages)."""
    assert isinstance(cls, type) and issubclass(cls, base), (
        f"{cls!r} must be a class derived from armlab's {base.__name__}"
    )
    name = getattr(cls, "name", None)
    assert isinstance(name, str) and name, f"{cls.__qualname__} needs a non-empty class attribute 'name'"
    assert issubclass(cls.Params, PluginParams), f"{name}.Params must subclass armlab.PluginParams"
    config = cls.Params.model_config
    assert config.get("frozen") and config.get("extra") == "forbid", f"{name}.Params must be frozen and forbid extra fields"
    return name
