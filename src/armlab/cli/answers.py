"""A live run's recommendation in words, the one way every command prints it.

An arm is shown by its name and its index, ``C (arm 2)`` (only ``arm 2`` when the source
names no arms), a set of arms in braces, several bandits as ``bandit 0: ...; bandit 1: ...``;
``armlab run`` and ``armlab resume`` both print it so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["describe_arm", "describe_recommendation"]


def describe_arm(index: int, names: Sequence[str] | None) -> str:
    """``C (arm 2)`` for arm ``index`` of a bandit whose arms are ``names``; ``arm 2`` without names."""
    return f"{names[index]} (arm {index})" if names and 0 <= index < len(names) else f"arm {index}"


def describe_recommendation(recommendation: Any, names: Sequence[Sequence[str] | None], several: bool) -> str:
    """``recommendation`` as ``summary.json`` holds it (an arm index, a list of indices, ``None``,
    or with ``several`` bandits one of those per bandit), with each bandit's arm ``names``."""

    def answer(value: Any, bandit: int) -> str:
        known = names[bandit] if bandit < len(names) else None
        if value is None:
            return "none"
        if isinstance(value, list):
            return "{" + ", ".join(describe_arm(i, known) for i in value) + "}"
        return describe_arm(value, known)

    if several:
        return "; ".join(f"bandit {b}: {answer(value, b)}" for b, value in enumerate(recommendation))
    return answer(recommendation, 0)
