"""``armlab movielens prepare`` and ``armlab movielens info``."""

from __future__ import annotations

import re

import numpy as np
from click.testing import CliRunner

from armlab.cli import cli
from armlab.movielens.model import load_model

ROWS = [(1, 10, 4, 0), (1, 20, 2, 0), (2, 10, 5, 0), (3, 20, 1, 0), (3, 30, 3, 0)]


def invoke(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, ["--no-plugins", "movielens", *args])
    assert result.exit_code == code, result.output
    return result.output


def test_prepare_prints_rmse_size_and_path_then_hits_the_cache(write_ratings, tmp_path):
    ratings = write_ratings("ratings.dat", ROWS, "::")
    out = tmp_path / "model.npz"
    text = invoke("prepare", str(ratings), "--rank", "2", "--iterations", "4", "--out", str(out),
                  "--cache-dir", str(tmp_path / "cache"))
    assert "ratings:  5 (ml-1m)" in text
    assert "matrix:   3 users x 3 movies, rank 2" in text
    rmse = float(re.search(r"training RMSE: ([\d.]+)", text).group(1))
    model = load_model(out)
    assert rmse == round(model.info["train_rmse"], 4) and model.info["iterations"] == 4
    assert f"model:    {out}\n" in text
    again = invoke("prepare", str(ratings), "--rank", "2", "--iterations", "4", "--cache-dir", str(tmp_path / "cache"))
    assert re.search(r"model:    .*cache.*ratings-[0-9a-f]{16}-[0-9a-f]{12}\.npz \(from cache\)", again)


def test_prepare_dense_and_usage_errors(write_ratings, tmp_path):
    ratings = write_ratings("u.data", ROWS, "\t")
    invoke("prepare", str(ratings), "--out", str(tmp_path / "m.npz"), "--dense", "--cache-dir", str(tmp_path))
    with np.load(tmp_path / "m.npz") as data:
        assert data["completed"].shape == (3, 3)
    assert "--dense needs --out" in invoke("prepare", str(ratings), "--dense", code=2)
    assert "rank: Input should be greater than or equal to 1" in invoke("prepare", str(ratings), "--rank", "0", code=2)
    bad = tmp_path / "bad.data"
    bad.write_text("1\t2\t3\t4\n1\t2\n")
    assert "line 2: expected 3 or 4 fields" in invoke("prepare", str(bad), code=2)


def test_info_describes_a_model(write_ratings, tmp_path):
    ratings = write_ratings("u.data", ROWS, "\t")
    invoke("prepare", str(ratings), "--out", str(tmp_path / "m.npz"), "--cache-dir", str(tmp_path))
    text = invoke("info", str(tmp_path / "m.npz"), "--min-ratings", "2")
    assert "3 users x 3 movies, 5 ratings, rank 5, regularization 0.1, iterations 15, als_seed 0" in text
    assert re.search(r"^all\s+3\s", text, re.M) and re.search(r"^>= 2 ratings\s+2\s", text, re.M)


def test_info_rejects_a_non_model(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(1))
    assert "not an armlab MovieLens model" in invoke("info", str(tmp_path / "x.npz"), code=2)
