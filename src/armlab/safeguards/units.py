"""Sticky units: a unit (a user, a session, a sample id) keeps the arm it was first given.

The rule, applied at every ``ask`` that names a unit:

* **new**: the unit has no binding; the experiment dispatches a trial as usual and
  :meth:`StickyUnits.bind` binds the unit to (trial, arm, bandit);
* **open**: the unit's trial is still open; the ask returns that same trial (no new trial);
* **repeat**: the unit's trial is closed; the ask returns the same arm again as a *repeat
  exposure*: no new trial, nothing in the policy's counts (the unit's outcome was already
  counted once; counting it again would weigh a returning user twice);
* **rebind**: the bound arm was retired (a guardrail, an elimination); the unit gets a fresh
  trial on an arm the policy picks among the active ones and is bound to it, marked as
  rebound so its exposure history can be told apart.

Bindings are a dict from unit to a ``(trial, arm, bandit)`` tuple: O(1) per ask at any number
of units.  They are rebuilt on replay by binding the units of journaled dispatches in order
(the last dispatch of a unit is its binding), so they survive restarts.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import NamedTuple

__all__ = ["Binding", "StickyUnits", "UnitAsk"]


class UnitAsk(str, Enum):
    """What an ask of a unit does (see the module for the rule)."""

    NEW = "new"
    OPEN = "open"
    REPEAT = "repeat"
    REBIND = "rebind"


class Binding(NamedTuple):
    trial: int
    arm: int
    bandit: int


class StickyUnits:
    """The bindings of one experiment's units."""

    def __init__(self) -> None:
        self._bindings: dict[str, Binding] = {}

    def __len__(self) -> int:
        return len(self._bindings)

    def decide(self, unit: str, trial_is_open: Callable[[int], bool],
               arm_is_retired: Callable[[int, int], bool]) -> tuple[UnitAsk, Binding | None]:
        """What an ask of ``unit`` does, and the unit's binding (``None`` when new).

        ``trial_is_open(trial)`` and ``arm_is_retired(bandit, arm)`` come from the experiment.
        For ``NEW`` and ``REBIND`` the caller dispatches a trial and calls :meth:`bind`.
        """
        binding = self._bindings.get(unit)
        if binding is None:
            return UnitAsk.NEW, None
        if trial_is_open(binding.trial):
            return UnitAsk.OPEN, binding
        if arm_is_retired(binding.bandit, binding.arm):
            return UnitAsk.REBIND, binding
        return UnitAsk.REPEAT, binding

    def bind(self, unit: str, trial: int, arm: int, bandit: int) -> None:
        """Bind ``unit`` to a trial just dispatched for it (replaces an earlier binding)."""
        self._bindings[unit] = Binding(trial, arm, bandit)

    def get(self, unit: str) -> Binding | None:
        return self._bindings.get(unit)
