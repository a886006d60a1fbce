"""Completed models: moments from the factors, save/load, clear errors, and the cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from armlab.movielens import als as als_module
from armlab.movielens.als import ALSSettings
from armlab.movielens.cache import cache_path, file_sha256, prepare_model
from armlab.movielens.loader import RatingsFileError
from armlab.movielens.model import CompletedModel, ModelFileError, load_model, save_model

ROWS = [(1, 10, 4), (1, 20, 2), (2, 10, 5), (3, 20, 1), (3, 30, 3), (2, 30, 4)]


@pytest.fixture
def tiny(write_ratings):
    return write_ratings("u.data", [(*row, 0) for row in ROWS], "\t")


@pytest.fixture
def model() -> CompletedModel:
    rng = np.random.default_rng(0)
    return CompletedModel(
        user_factors=rng.normal(size=(7, 3)), item_factors=rng.normal(size=(4, 3)),
        user_ids=np.arange(7), item_ids=np.array([3, 8, 11, 40]), item_counts=np.array([5, 1, 30, 2]),
        info={"version": 1, "rank": 3},
    )


def test_moments_equal_those_of_the_dense_matrix(model):
    dense = model.completed()
    np.testing.assert_allclose(model.movie_means, dense.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(model.movie_variances, dense.var(axis=0), rtol=1e-10)
    assert model.predict(np.array([2, 6]), np.array([1, 3])).tolist() == pytest.approx([dense[2, 1], dense[6, 3]])


def test_index_of_maps_ids_and_names_the_missing(model):
    assert model.index_of([40, 3]).tolist() == [3, 0]
    with pytest.raises(KeyError, match=r"\[5, 41\]"):
        model.index_of([8, 5, 41])


def test_save_load_round_trip(model, tmp_path):
    path = save_model(model, tmp_path / "sub" / "m.npz")
    back = load_model(path)
    for name in ("user_factors", "item_factors", "user_ids", "item_ids", "item_counts"):
        np.testing.assert_array_equal(getattr(back, name), getattr(model, name))
    assert back.info == model.info
    assert "completed" not in np.load(path).files
    with np.load(save_model(model, tmp_path / "dense.npz", dense=True)) as data:
        np.testing.assert_allclose(data["completed"], model.completed())
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


def test_load_errors(model, tmp_path):
    with pytest.raises(ModelFileError, match="cannot read model file"):
        load_model(tmp_path / "missing.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ModelFileError, match="cannot read model file"):
        load_model(tmp_path / "text.npz")
    np.savez(tmp_path / "other.npz", a=np.zeros(2))
    with pytest.raises(ModelFileError, match=r"not an armlab MovieLens model \(missing user_factors.*prepare"):
        load_model(tmp_path / "other.npz")
    old = CompletedModel(**{**model.__dict__, "info": {"version": 0}})
    with pytest.raises(ModelFileError, match="format version 0"):
        load_model(save_model(old, tmp_path / "old.npz"))
    broken = CompletedModel(**{**model.__dict__, "item_ids": np.arange(3)})
    with pytest.raises(ModelFileError, match="do not fit together"):
        load_model(save_model(broken, tmp_path / "broken.npz"))


def test_prepare_caches_by_file_hash_and_settings(tiny, tmp_path, monkeypatch):
    fits = []
    real_fit = als_module.fit_als
    monkeypatch.setattr("armlab.movielens.model.fit_als", lambda *a: fits.append(a) or real_fit(*a))
    settings = ALSSettings(rank=2)
    first = prepare_model(tiny, settings, cache_dir=tmp_path / "c")
    assert not first.from_cache and len(fits) == 1
    assert first.path == cache_path(tmp_path / "c", tiny, file_sha256(tiny), "auto", settings)
    assert first.model.info["source_sha256"] == file_sha256(tiny) and first.model.info["rank"] == 2
    again = prepare_model(tiny, ALSSettings(rank=2), cache_dir=tmp_path / "c")
    assert again.from_cache and len(fits) == 1
    np.testing.assert_array_equal(again.model.item_factors, first.model.item_factors)
    other = prepare_model(tiny, ALSSettings(rank=2, regularization=0.5), cache_dir=tmp_path / "c")
    assert not other.from_cache and other.path != first.path and len(fits) == 2
    tiny.write_text(tiny.read_text() + "4\t10\t2\t0\n")
    edited = prepare_model(tiny, settings, cache_dir=tmp_path / "c")
    assert not edited.from_cache and edited.path != first.path and edited.model.n_users == 4


def test_prepare_rebuilds_a_damaged_entry_and_writes_out(tiny, tmp_path):
    first = prepare_model(tiny, cache_dir=tmp_path / "c")
    first.path.write_bytes(b"garbage")
    rebuilt = prepare_model(tiny, cache_dir=tmp_path / "c")
    assert not rebuilt.from_cache
    np.testing.assert_array_equal(load_model(rebuilt.path).item_factors, first.model.item_factors)
    out = prepare_model(tiny, cache_dir=tmp_path / "c", out=tmp_path / "model.npz", dense=True)
    assert out.from_cache and out.path == tmp_path / "model.npz"
    with np.load(out.path) as data:
        assert data["completed"].shape == (3, 3)
        assert json.loads(str(data["info"]))["source_name"] == "u.data"


def test_prepare_reports_a_missing_ratings_file(tmp_path):
    with pytest.raises(RatingsFileError, match="cannot read ratings file"):
        prepare_model(tmp_path / "nope.csv", cache_dir=tmp_path)


def test_default_cache_dir_follows_xdg(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    prepared = prepare_model(tiny)
    assert prepared.path.parent == tmp_path / "xdg" / "armlab" / "movielens"


def test_an_unwritable_cache_is_a_clear_error(tiny, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ModelFileError, match="cannot write the model cache .* writable cache_dir"):
        prepare_model(tiny, cache_dir=blocker / "cache")
