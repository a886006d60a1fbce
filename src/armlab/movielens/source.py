"""The ``movielens`` reward source: replay completed MovieLens ratings (the heterogeneous-variance paper, section 5.2)."""

from __future__ import annotations

import os
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from armlab.config_paths import ConfigFile, ConfigPath
from armlab.errors import ConfigError
from armlab.movielens.als import ALSSettings
from armlab.movielens.cache import prepare_model
from armlab.movielens.model import CompletedModel, load_model
from armlab.movielens.selection import Mapping, candidate_movies, match_movies, normalized_targets
from armlab.plugins.sources.heterogeneous_gaussian import heterogeneous_variance_targets
from armlab.plugins.interfaces import RewardSource
from armlab.problem import Truth
from armlab.random import KeyedRandom

__all__ = ["MovieLens", "MovieLensParams"]

#: Candidate filter of each mapping when ``min_ratings`` is not given.
DEFAULT_MIN_RATINGS: dict[str, int] = {"normalized": 20, "literal": 1}


class MovieLensParams(ALSSettings):
    """Where the completed ratings come from and which movies become arms."""

    model: Annotated[str | None, ConfigFile] = Field(
        None, description="model file written by `armlab movielens prepare` (relative to the config file's directory)"
    )
    ratings: Annotated[str | None, ConfigFile] = Field(
        None,
        description="MovieLens ratings file (u.data, ratings.dat or ratings.csv; relative to the config "
        "file's directory): factorised with the ALS settings on first use and cached",
    )
    format: Literal["auto", "ml-100k", "ml-1m", "csv"] = Field("auto", description="layout of the ratings file")
    cache_dir: Annotated[str | None, ConfigPath] = Field(
        None, description="model cache (relative to the config file's directory); default $XDG_CACHE_HOME/armlab/movielens"
    )
    n_arms: int | None = Field(None, ge=2, description="K: movies chosen per replica from the heterogeneous-variance paper's targets")
    movies: list[int] | None = Field(
        None, min_length=2, description="explicit movie ids (the same arms in every replica) instead of n_arms"
    )
    mapping: Mapping = Field(
        "normalized",
        description="normalized: targets mapped onto the movies' range, matched without replacement "
        "(docs/algorithms/sources.md); literal: the heterogeneous-variance paper's rule as written",
    )
    min_ratings: int | None = Field(
        None, ge=1, description="candidate movies need this many observed ratings; default 20 (normalized), 1 (literal)"
    )

    @model_validator(mode="after")
    def _check(self) -> MovieLensParams:
        if (self.model is None) == (self.ratings is None):
            raise ValueError("give exactly one of model = \"...\" (a prepared model) or ratings = \"...\" (a ratings file)")
        if self.model is not None:
            extra = sorted(({"format", "cache_dir"} | set(ALSSettings.model_fields)) & self.model_fields_set)
            if extra:
                raise ValueError(
                    f"{', '.join(extra)} only apply with ratings = \"...\"; a prepared model already fixes them"
                )
        if (self.n_arms is None) == (self.movies is None):
            raise ValueError("give exactly one of n_arms = K (movies chosen per replica) or movies = [ids]")
        if self.movies is not None:
            if len(set(self.movies)) != len(self.movies):
                raise ValueError("movies lists a movie id twice; each arm must be a different movie")
            extra = sorted({"mapping", "min_ratings"} & self.model_fields_set)
            if extra:
                raise ValueError(f"{', '.join(extra)} only apply with n_arms (movies chosen per replica)")
        return self

    @property
    def candidate_min_ratings(self) -> int:
        return self.min_ratings if self.min_ratings is not None else DEFAULT_MIN_RATINGS[self.mapping]


class MovieLens(RewardSource):
    """MovieLens replay: arm i is a movie; a pull returns the completed rating of a random user.

    The heterogeneous-variance paper section 5.2 (Lalitha et al. 2023): ratings are completed by rank-5 ALS
    (:mod:`armlab.movielens.als`); pulling arm i draws a user uniformly (from the keyed
    uniform of that pull, so a pure function of seed, replica, arm and pull index) and
    returns ``M[user, movie_i]``.  Rewards are real-valued, bounded but not Gaussian, and
    unclipped (ALS may predict slightly outside 1-5).  The truth is each movie's exact mean
    and variance over all users, so oracle policies (SHVar) and metrics work.

    Arms: ``movies = [ids]`` fixes them; ``n_arms = K`` draws the heterogeneous-variance paper's synthetic targets
    per replica (the generator of the ``heterogeneous-gaussian`` source, from the same keyed
    stream, so replica r's targets are that source's instance r) and picks the nearest movies.  **Deviation from the paper**: the literal
    nearest-movie rule is degenerate on the rating scale (docs/algorithms/sources.md), so by default
    the targets are mapped onto the candidates' range and matched without replacement
    among movies with at least 20 ratings (``mapping = "normalized"``, armlab's
    recommendation); ``mapping = "literal"`` keeps the rule as written.  The paper used
    ML-1M; armlab's tests use ML-100K.  Paths in a config are relative to the config file's
    directory (:mod:`armlab.config_paths`).
    """

    name = "movielens"
    Params = MovieLensParams
    params: MovieLensParams

    @property
    def n_arms(self) -> int:
        return len(self.params.movies) if self.params.movies is not None else int(self.params.n_arms or 0)

    @cached_property
    def model(self) -> CompletedModel:
        """The completed model (loaded once per process for the same file and settings)."""
        return _open_model(self.params)

    @property
    def movie_ids(self) -> np.ndarray:
        """MovieLens ids of every replica's arms ``(R, K)``, after :meth:`reset`."""
        return self.model.item_ids[self._movie]

    def truth_for(self, rng: KeyedRandom) -> Truth:
        model, p = self.model, self.params
        if p.movies is not None:
            try:
                chosen = model.index_of(p.movies)
            except KeyError as exc:
                raise ConfigError(f"source.movies: {exc.args[0]}") from None
            self._movie = np.broadcast_to(chosen, (rng.replicas.size, chosen.size))
        else:
            self._movie = self._select(model, rng)
        return Truth(means=model.movie_means[self._movie], variances=model.movie_variances[self._movie])

    def _select(self, model: CompletedModel, rng: KeyedRandom) -> np.ndarray:
        p = self.params
        candidates = candidate_movies(model.item_counts, p.candidate_min_ratings)
        if candidates.size == 0:
            raise ConfigError(f"source.min_ratings: no movie has {p.candidate_min_ratings} ratings; lower it")
        means, variances = model.movie_means[candidates], model.movie_variances[candidates]
        target_means, target_vars = heterogeneous_variance_targets(rng, self.n_arms)
        if p.mapping == "normalized":
            target_means, target_vars = normalized_targets(target_means, target_vars, means, variances)
        return candidates[match_movies(target_means, target_vars, means, variances, replace=p.mapping == "literal")]

    def rewards_from_uniforms(self, rows: np.ndarray, arms: np.ndarray, u: np.ndarray) -> np.ndarray:
        n_users = self.model.n_users
        users = np.minimum((u * n_users).astype(np.int64), n_users - 1)
        return self.model.predict(users, self._movie[rows, arms])


def _open_model(params: MovieLensParams) -> CompletedModel:
    if params.model is not None:
        return _load_model_file(*_stamp(params.model))
    settings = ALSSettings.model_validate(params.model_dump(include=set(ALSSettings.model_fields)))
    return _prepare(*_stamp(params.ratings or ""), settings, params.format, params.cache_dir)


def _stamp(path: str) -> tuple[str, int, int]:
    """Absolute path, modification time and size: identifies a file version for the memo."""
    resolved = Path(path).resolve()
    try:
        info = os.stat(resolved)
    except OSError:
        return str(resolved), -1, -1  # the loader reports the missing file
    return str(resolved), info.st_mtime_ns, info.st_size


@lru_cache(maxsize=4)
def _load_model_file(path: str, mtime_ns: int, size: int) -> CompletedModel:
    return load_model(path)


@lru_cache(maxsize=4)
def _prepare(
    path: str, mtime_ns: int, size: int, settings: ALSSettings, format: str, cache_dir: str | None
) -> CompletedModel:
    return prepare_model(path, settings, format=format, cache_dir=cache_dir).model
