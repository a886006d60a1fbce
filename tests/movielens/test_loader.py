"""The ratings loader: the three standard layouts, format detection, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.movielens.loader import RatingsFileError, detect_format, load_ratings

ROWS = [(196, 242, 3, 881250949), (186, 302, 3, 891717742), (22, 377, 1, 878887116), (196, 377, 5, 881250950)]


@pytest.mark.parametrize(
    ("name", "sep", "header", "fmt"),
    [
        ("u.data", "\t", None, "ml-100k"),
        ("ratings.dat", "::", None, "ml-1m"),
        ("ratings.csv", ",", "userId,movieId,rating,timestamp", "csv"),
    ],
)
def test_each_layout_is_detected_and_reindexed(write_ratings, name, sep, header, fmt):
    ratings = load_ratings(write_ratings(name, ROWS, sep, header))
    assert ratings.format == fmt
    assert len(ratings) == 4
    assert ratings.user_ids.tolist() == [22, 186, 196]
    assert ratings.item_ids.tolist() == [242, 302, 377]
    assert ratings.users.tolist() == [2, 1, 0, 2]
    assert ratings.items.tolist() == [0, 1, 2, 2]
    assert ratings.values.tolist() == [3.0, 3.0, 1.0, 5.0]
    assert ratings.item_counts().tolist() == [1, 1, 2]
    assert load_ratings(write_ratings("x" + name, ROWS, sep, header), format=fmt).values.tolist() == [3, 3, 1, 5]


def test_csv_half_stars_three_fields_and_blank_lines(write_ratings, tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("userId,movieId,rating\n\n1,10,4.5\n\n2,10,0.5\n", encoding="utf-8")
    ratings = load_ratings(path)
    assert ratings.values.tolist() == [4.5, 0.5]
    assert (ratings.n_users, ratings.n_items) == (2, 1)


def test_detect_format():
    assert detect_format("1::2::3::4") == "ml-1m"
    assert detect_format("1\t2\t3\t4") == "ml-100k"
    assert detect_format("userId,movieId,rating,timestamp") == "csv"
    assert detect_format("1 2 3 4") is None


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["1\t2\t3\t4", "1\t3\t4\t5", "2\t2"], r"line 3: expected 3 or 4 fields .* found 2"),
        (["1\t2\t3\t4", "", "x\t3\t4\t5"], r"line 3: user id 'x' is not an integer"),
        (["1\t2\t3\t4", "2\t2.5\t4\t5"], r"line 2: movie id '2.5' is not an integer"),
        (["1\t2\t3\t4", "2\t3\tfour\t5"], r"line 2: rating 'four' is not a number"),
        (["1\t2\t3\t4", "2\t3\tnan\t5"], r"line 2: rating 'nan' is not finite"),
        (["1\t2\t3\t4", "2\t3\t4"], r"line 2: found 3 fields where the first rating line has 4"),
        (["1\t2\t3\t4", "2\t3\t4\tlate"], r"line 2: timestamp 'late' is not a number"),
    ],
)
def test_malformed_line_is_reported_with_its_number(tmp_path, lines, message):
    path = tmp_path / "u.data"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(RatingsFileError, match=message):
        load_ratings(path)


def test_wrong_explicit_format_points_at_line_one(write_ratings):
    path = write_ratings("u.data", ROWS, "\t")
    with pytest.raises(RatingsFileError, match=r"line 1: expected 3 or 4 fields"):
        load_ratings(path, format="ml-1m")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "contains no ratings"),
        ("\n  \n", "contains no ratings"),
        ("userId,movieId,rating,timestamp\n\n", "header but no ratings"),
        ("1 2 3 4\n", r"cannot tell the format from line 1 .* pass the format explicitly"),
    ],
)
def test_empty_or_unrecognised_files(tmp_path, text, message):
    path = tmp_path / "ratings.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RatingsFileError, match=message):
        load_ratings(path)


def test_missing_file_and_duplicate_pairs(tmp_path, write_ratings):
    with pytest.raises(RatingsFileError, match="cannot read ratings file"):
        load_ratings(tmp_path / "nope.dat")
    path = write_ratings("u.data", [*ROWS, (186, 302, 5, 1)], "\t")
    with pytest.raises(RatingsFileError, match=r"user 186 rated movie 302 more than once \(1 repeated"):
        load_ratings(path)


def test_movielens_100k(ml100k_path):
    ratings = load_ratings(ml100k_path)
    assert ratings.format == "ml-100k"
    assert (len(ratings), ratings.n_users, ratings.n_items) == (100_000, 943, 1682)
    assert set(np.unique(ratings.values).tolist()) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert ratings.user_ids.tolist() == list(range(1, 944))
    assert (ratings.item_counts() >= 20).sum() == 939  # the candidate count with at least 20 ratings


def test_ml100k_is_looked_for_under_data_first_as_the_readme_says(tmp_path, ml100k_locator):
    clone, shared = tmp_path / "clone", tmp_path / "shared" / "data" / "ml-100k" / "u.data"
    clone.mkdir()
    assert ml100k_locator(clone) is None
    shared.parent.mkdir(parents=True)
    shared.write_text("1\t2\t3\t4\n", encoding="utf-8")
    assert ml100k_locator(clone) == clone / ".." / "shared" / "data" / "ml-100k" / "u.data"  # the fallback
    readme = clone / "data" / "ml-100k" / "u.data"
    readme.parent.mkdir(parents=True)
    readme.write_text("1\t2\t3\t4\n", encoding="utf-8")
    assert ml100k_locator(clone) == readme
