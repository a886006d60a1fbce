"""The fake wall clock of the ask/tell tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def clock():
    """A fake wall clock: ``clock.now`` seconds, advanced by the test."""

    class Clock:
        now = 1000.0

        def __call__(self) -> float:
            return self.now

    return Clock()
