"""Which code computed a result: the armlab version and, from a checkout, its git commit.

Every installed copy of a checkout reports the same version (``0.1.0``) whatever its
commit, so results record the commit too when armlab runs from a git checkout (an editable
install), with ``+changes`` when ``src/`` differs from it (uncommitted algorithms).  The
example headers (``examples/_headers.py``) and ``summary.json``'s provenance both use it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["CHECKOUT", "git_commit"]

#: The checkout armlab is imported from, when it is one (``src/armlab`` two levels below).
CHECKOUT = Path(__file__).resolve().parents[2]


def git_commit(checkout: Path = CHECKOUT) -> str | None:
    """HEAD's hash (12 digits) of ``checkout``, with ``+changes`` when its ``src/`` differs
    from HEAD; ``None`` when armlab is not imported from a git checkout (an installed wheel)."""
    if not (checkout / ".git").exists() or not (checkout / "src" / "armlab").is_dir():
        return None

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--", "src")
    except (OSError, subprocess.SubprocessError):  # no git program, or not a repository after all
        return None
    return commit + ("+changes" if changed else "")
