"""Registers the MovieLens reward source and the ``armlab movielens`` commands."""

from __future__ import annotations

import click

from armlab.movielens.cli import movielens_group
from armlab.movielens.source import MovieLens
from armlab.plugins import hookimpl


@hookimpl
def armlab_register_sources():
    return [MovieLens]


@hookimpl
def armlab_register_commands(cli: click.Group) -> None:
    cli.add_command(movielens_group)
