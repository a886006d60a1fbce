"""Fixtures of the journal tests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 600 kB tmpfs, to fill the disk under a journal (skipped without root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (a full disk); CI runs as root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (mount -t tmpfs refused)")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)])
