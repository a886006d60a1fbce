"""MovieLens replay (the heterogeneous-variance paper section 5.2): ratings loader, ALS completion, replay source.

``load_ratings`` reads the standard files, ``complete`` / ``prepare_model`` factorise them by
rank-5 alternating least squares (cached by file hash and settings), and the ``movielens``
reward source replays the completed ratings: arms are movies, a pull is a random user's
rating.  ``armlab movielens prepare RATINGS_FILE`` does the factorisation from the shell.
"""

from armlab.movielens.als import ALSFit, ALSSettings, fit_als
from armlab.movielens.cache import PreparedModel, prepare_model
from armlab.movielens.loader import Ratings, RatingsFileError, load_ratings
from armlab.movielens.model import CompletedModel, ModelFileError, complete, load_model, save_model

__all__ = [
    "ALSFit",
    "ALSSettings",
    "CompletedModel",
    "ModelFileError",
    "PreparedModel",
    "Ratings",
    "RatingsFileError",
    "complete",
    "fit_als",
    "load_model",
    "load_ratings",
    "prepare_model",
    "save_model",
]
