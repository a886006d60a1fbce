"""Values as the journal stores them, so what is hashed, kept in memory and read back agree.

The journal's integrity chain hashes every event when it is written and again when it is
read, so an event must be written in the form SQLite gives back.  SQLite keeps a REAL's
eight bytes exactly (subnormals, the largest floats, infinities), with one exception: it
writes a float without a fractional part as an integer, so ``-0.0`` comes back as ``0.0``.
The decision log's fields (propensity, unit, metrics text) go the same way.
Text must be valid UTF-8: a lone surrogate (which JSON's ``"\\ud800"`` decodes to) cannot be
written at all, and PostgreSQL's TEXT refuses the NUL character (which SQLite keeps), so
both are written as their escapes, the same in every store.  The live experiment passes
rewards, reasons and idempotency keys through these functions where they enter it, and
every journal store passes every event through :func:`as_stored` before hashing it, so a
value that enters any other way is still stored as it was hashed.
"""

from __future__ import annotations

import dataclasses
import math

from armlab.orchestrator.journal.schema import Event

__all__ = ["as_stored", "stored_float", "stored_text"]


def stored_float(value: float) -> float:
    """``value`` as a float as SQLite returns it: ``-0.0`` becomes ``0.0``, all else is kept."""
    return float(value) + 0.0  # IEEE addition: -0.0 + 0.0 is 0.0, any other value is unchanged


def stored_text(text: str) -> str:
    """``text`` as every store can keep it: a lone surrogate is written as its escape
    (``\\ud800``), and so is the NUL character (``\\x00``)."""
    text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def as_stored(event: Event) -> Event:
    """``event`` with every field as the journal's table returns it: ``event`` itself when
    every field already is (the live experiment's events, which it made so), else a copy."""
    reward = None if event.reward is None else stored_float(event.reward)
    key = None if event.key is None else stored_text(event.key)
    propensity = None if event.propensity is None else stored_float(event.propensity)
    unit = None if event.unit is None else stored_text(event.unit)
    metrics = None if event.metrics is None else stored_text(event.metrics)
    reason, at = stored_text(event.reason), stored_float(event.at)
    if (_same(reward, event.reward) and _same(propensity, event.propensity) and _same(at, event.at)
            and (reason, key, unit, metrics) == (event.reason, event.key, event.unit, event.metrics)):
        return event
    return dataclasses.replace(event, reward=reward, reason=reason, key=key, at=at, propensity=propensity,
                               unit=unit, metrics=metrics)


def _same(stored: float | None, given: float | None) -> bool:
    """Whether ``given`` is already the float ``stored`` bit for bit (``-0.0`` is not ``0.0``;
    an int, or a NaN, which no event holds, counts as changed)."""
    if given is None:
        return True
    return type(given) is float and stored == given and math.copysign(1.0, stored) == math.copysign(1.0, given)
