"""Read MovieLens rating files: ML-100K ``u.data``, ML-1M ``ratings.dat``, ml-latest ``ratings.csv``.

The three standard layouts differ only in the field separator (tab, ``::``, comma) and in
the csv header line; every line is ``user item rating [timestamp]``.  Parsing is numpy's
C reader on the happy path; when it (or a value check) fails, a line-by-line scan finds the
first offending line so the error names its number and content.  Nothing is downloaded:
users fetch MovieLens themselves (its licence forbids redistribution).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from armlab.errors import ArmlabError

__all__ = ["FORMATS", "RatingsFileError", "Ratings", "detect_format", "load_ratings"]

RatingsFormat = Literal["ml-100k", "ml-1m", "csv"]

#: Field separator of each supported layout.
FORMATS: dict[str, str] = {"ml-100k": "\t", "ml-1m": "::", "csv": ","}

_UNIT_SEPARATOR = "\x1f"


class RatingsFileError(ArmlabError, ValueError):
    """A ratings file cannot be read; the message names the file, the line and the fix."""


@dataclass(frozen=True)
class Ratings:
    """Observed ratings with users and movies re-indexed densely (``0..n-1``).

    ``users[k]``, ``items[k]``, ``values[k]`` is the k-th rating; ``user_ids`` and
    ``item_ids`` map dense indices back to the file's ids (sorted ascending).
    """

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    user_ids: np.ndarray
    item_ids: np.ndarray
    format: str

    @property
    def n_users(self) -> int:
        return int(self.user_ids.size)

    @property
    def n_items(self) -> int:
        return int(self.item_ids.size)

    def __len__(self) -> int:
        return int(self.values.size)

    def __repr__(self) -> str:
        return f"Ratings({len(self)} ratings, {self.n_users} users x {self.n_items} movies, {self.format})"

    def item_counts(self) -> np.ndarray:
        """Number of observed ratings of each movie ``(n_items,)``."""
        return np.bincount(self.items, minlength=self.n_items)


def detect_format(first_line: str) -> RatingsFormat | None:
    """Guess the layout from the first non-empty line (``None`` if no separator fits)."""
    if "::" in first_line:
        return "ml-1m"
    if "\t" in first_line:
        return "ml-100k"
    if "," in first_line:
        return "csv"
    return None


def load_ratings(path: str | Path, format: RatingsFormat | Literal["auto"] = "auto") -> Ratings:
    """Read a MovieLens rating file; ``format="auto"`` detects it from the first line.

    Raises :class:`RatingsFileError` for an unreadable or empty file, an undetectable
    layout, a malformed line (with its 1-based number), or a (user, movie) pair rated twice.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RatingsFileError(f"cannot read ratings file {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise RatingsFileError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    lines = text.splitlines()
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise RatingsFileError(f"{path}: the file contains no ratings (it is empty)")
    if format == "auto":
        detected = detect_format(lines[first])
        if detected is None:
            raise RatingsFileError(
                f"{path}: cannot tell the format from line {first + 1} ({lines[first][:60]!r}); "
                f"expected tab (ML-100K u.data), '::' (ML-1M ratings.dat) or ',' (ratings.csv) "
                f"separated fields; pass the format explicitly ({', '.join(FORMATS)})"
            )
        format = detected
    elif format not in FORMATS:
        raise RatingsFileError(f"unknown ratings format {format!r}; choose auto, {', '.join(FORMATS)}")
    skip = first + 1 if _is_header(lines[first], format) else first
    if not any(line.strip() for line in lines[skip:]):
        raise RatingsFileError(f"{path}: the file has a header but no ratings")
    return _index(path, _parse(path, lines, skip, format), format)


def _is_header(line: str, format: str) -> bool:
    """The csv layout starts with ``userId,movieId,rating,timestamp``: a non-numeric first field."""
    head = line.split(FORMATS[format], 1)[0].strip()
    return format == "csv" and not head.lstrip("+-").isdigit()


def _parse(path: Path, lines: list[str], skip: int, format: str) -> np.ndarray:
    """``(N, 3)`` float array of user, item, rating; pinpoints the first bad line on failure."""
    sep = FORMATS[format]
    body = "\n".join(lines[skip:])
    if len(sep) > 1:  # numpy wants one character: use the ASCII unit separator, absent from text
        body = body.replace(sep, _UNIT_SEPARATOR)
    try:
        table = np.loadtxt(
            io.StringIO(body), delimiter=_UNIT_SEPARATOR if len(sep) > 1 else sep,
            comments=None, ndmin=2, dtype=np.float64,
        )
        ok = table.shape[1] in (3, 4) and _values_ok(table)
    except ValueError:
        ok = False
    if not ok:
        _raise_first_bad_line(path, lines, skip, sep)
    return table[:, :3]


def _values_ok(table: np.ndarray) -> bool:
    ids = table[:, :2]
    return bool(np.isfinite(table).all() and (ids == np.round(ids)).all())


def _raise_first_bad_line(path: Path, lines: list[str], skip: int, sep: str) -> None:
    width = len(next(line for line in lines[skip:] if line.strip()).split(sep))
    for number, line in enumerate(lines[skip:], start=skip + 1):
        if not line.strip():
            continue
        fields = line.split(sep)
        problem = _line_problem(fields)
        if problem is None and len(fields) != width:
            problem = f"found {len(fields)} fields where the first rating line has {width}"
        if problem is not None:
            raise RatingsFileError(f"{path}, line {number}: {problem}: {line[:80]!r}")
    raise RatingsFileError(f"{path}: the ratings could not be parsed")  # pragma: no cover


def _line_problem(fields: list[str]) -> str | None:
    """Why a split line is not ``user item rating [timestamp]`` (``None`` if it is fine)."""
    if len(fields) not in (3, 4):
        return f"expected 3 or 4 fields (user, movie, rating[, timestamp]), found {len(fields)}"
    for name, text in zip(("user id", "movie id"), fields[:2], strict=True):
        if not text.strip().lstrip("+-").isdigit():
            return f"{name} {text.strip()!r} is not an integer"
    for name, text in zip(("rating", "timestamp"), fields[2:], strict=False):
        try:
            value = float(text)
        except ValueError:
            return f"{name} {text.strip()!r} is not a number"
        if not math.isfinite(value):
            return f"{name} {text.strip()!r} is not finite"
    return None


def _index(path: Path, table: np.ndarray, format: str) -> Ratings:
    raw_users = table[:, 0].astype(np.int64)
    raw_items = table[:, 1].astype(np.int64)
    user_ids, users = np.unique(raw_users, return_inverse=True)
    item_ids, items = np.unique(raw_items, return_inverse=True)
    pair = users.astype(np.int64) * item_ids.size + items
    unique_pairs, counts = np.unique(pair, return_counts=True)
    if unique_pairs.size != pair.size:
        dup = unique_pairs[np.argmax(counts > 1)]
        raise RatingsFileError(
            f"{path}: user {user_ids[dup // item_ids.size]} rated movie {item_ids[dup % item_ids.size]} "
            f"more than once ({pair.size - unique_pairs.size} repeated pairs in all); keep one "
            f"rating per (user, movie), e.g. the latest"
        )
    return Ratings(
        users=users.astype(np.int64),
        items=items.astype(np.int64),
        values=table[:, 2].copy(),
        user_ids=user_ids,
        item_ids=item_ids,
        format=format,
    )
