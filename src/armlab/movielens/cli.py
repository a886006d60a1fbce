"""``armlab movielens ...``: complete a MovieLens ratings file once, inspect a completed model."""

from __future__ import annotations

from typing import Any

import click
import numpy as np
from pydantic import ValidationError

from armlab.cli.errors import UserError, user_errors
from armlab.config import format_validation_error
from armlab.log import configure_logging
from armlab.movielens.als import ALSSettings
from armlab.movielens.cache import prepare_model
from armlab.movielens.loader import FORMATS
from armlab.movielens.model import CompletedModel, load_model
from armlab.movielens.selection import candidate_movies

__all__ = ["movielens_group"]


def _help(field: str) -> str:
    info = ALSSettings.model_fields[field]
    return f"{info.description} [default: {info.default}]"


@click.group("movielens")
def movielens_group() -> None:
    """MovieLens replay (the heterogeneous-variance paper, section 5.2): complete ratings by ALS, inspect models.

    armlab never downloads MovieLens: get u.data (ML-100K), ratings.dat (ML-1M) or
    ratings.csv (ml-latest) from grouplens.org yourself.
    """


@movielens_group.command("prepare")
@click.argument("ratings_file", type=click.Path(dir_okay=False))
@click.option("--rank", type=int, help=_help("rank"))
@click.option("--regularization", type=float, help=_help("regularization"))
@click.option("--iterations", type=int, help=_help("iterations"))
@click.option("--seed", "als_seed", type=int, help=_help("als_seed"))
@click.option("--format", "fmt", type=click.Choice(["auto", *FORMATS]), default="auto", show_default=True,
              help="layout of RATINGS_FILE")
@click.option("--out", type=click.Path(dir_okay=False), help="also write the model to this .npz file")
@click.option("--cache-dir", type=click.Path(file_okay=False),
              help="model cache [default: $XDG_CACHE_HOME/armlab/movielens]")
@click.option("--dense", is_flag=True, help="store the dense completed matrix in --out as well (large)")
def prepare_command(ratings_file: str, fmt: str, out: str | None, cache_dir: str | None, dense: bool,
                    **settings: Any) -> None:
    """Complete RATINGS_FILE by rank-r ALS; print the training RMSE and where the model went.

    The model (factors only) is cached under the file's hash and the settings, so a config
    with ratings = "RATINGS_FILE" reuses it; use model = "OUT" with --out.
    """
    if dense and out is None:
        raise click.UsageError("--dense needs --out (the cache keeps factors only)")
    configure_logging(level="warning")
    try:
        als = ALSSettings.model_validate({k: v for k, v in settings.items() if v is not None})
    except ValidationError as exc:
        raise UserError("; ".join(format_validation_error(exc))) from None
    with user_errors():
        prepared = prepare_model(ratings_file, als, format=fmt, cache_dir=cache_dir, out=out, dense=dense)
    model, info = prepared.model, prepared.model.info
    click.echo(f"ratings:  {info['n_ratings']} ({info['format']})")
    click.echo(f"matrix:   {model.n_users} users x {model.n_items} movies, rank {model.rank}")
    click.echo(f"training RMSE: {info['train_rmse']:.4f}")
    click.echo(f"model:    {prepared.path}{' (from cache)' if prepared.from_cache else ''}")


@movielens_group.command("info")
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option("--min-ratings", type=click.IntRange(min=1), default=20, show_default=True,
              help="candidate movies need this many observed ratings")
def info_command(model_file: str, min_ratings: int) -> None:
    """Describe MODEL_FILE: how it was made and the spread of movie means and variances."""
    with user_errors():
        model = load_model(model_file)
    click.echo(describe(model, min_ratings))


def describe(model: CompletedModel, min_ratings: int) -> str:
    """Settings, size, and percentiles of the movie statistics (all movies and candidates)."""
    settings = ", ".join(f"{k} {model.info[k]}" for k in ALSSettings.model_fields)
    lines = [
        f"{model.n_users} users x {model.n_items} movies, {model.info['n_ratings']} ratings, {settings}",
        f"training RMSE {model.info['train_rmse']:.4f}",
        f"{'movies':<24} {'count':>6} {'mean: min':>10} {'q01':>7} {'q99':>7} {'max':>7}   "
        f"{'variance: min':>13} {'q01':>7} {'q99':>7} {'max':>7}",
    ]
    groups = [("all", np.arange(model.n_items)),
              (f">= {min_ratings} ratings", candidate_movies(model.item_counts, min_ratings))]
    for label, idx in groups:
        if idx.size == 0:
            lines.append(f"{label:<24} {0:>6}")
            continue
        cols = []
        for values in (model.movie_means[idx], model.movie_variances[idx]):
            lo, q01, q99, hi = np.percentile(values, [0, 1, 99, 100])
            cols.append(f"{lo:>10.3f} {q01:>7.3f} {q99:>7.3f} {hi:>7.3f}")
        lines.append(f"{label:<24} {idx.size:>6} {cols[0]}   {cols[1]:>13}")
    return "\n".join(lines)
