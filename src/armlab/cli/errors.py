"""Map armlab's user-facing errors to click's clean exit-code-2 failures."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from armlab.errors import ArmlabError


class UserError(click.ClickException):
    """An error the user can fix: printed without a traceback, exit code 2."""

    exit_code = 2


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn :class:`ArmlabError` (also inside exception groups) into :class:`UserError`."""
    try:
        yield
    except ArmlabError as exc:
        raise UserError(str(exc)) from None
    except BaseExceptionGroup as group:
        matched, rest = group.split(ArmlabError)
        if matched is None or rest is not None:
            raise
        raise UserError("\n".join(str(e) for e in _leaves(matched))) from None


def _leaves(group: BaseExceptionGroup) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc
