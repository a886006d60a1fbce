"""Seconds to load and factorise MovieLens-sized rating files with armlab's ALS (rank 5).

Two inputs: a generated file the size of ML-1M (6040 users x 3952 movies, 1,000,209 distinct
ratings in ``::`` layout, drawn from a rank-5 model plus noise and rounded to 1..5 stars) and,
when present, the shared ML-100K ``u.data``.  Each is loaded and factorised with the default
settings (rank 5, lambda 0.1, 15 sweeps); the best of ``--repeat`` runs is reported.  BLAS
threads are limited to ``--threads`` (default 1: the issue asks for one core).  Prints the
figures and writes them to benchmarks/results/movielens_als.json.

    python benchmarks/movielens_als.py [--threads 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _limit_threads(argv: list[str]) -> int:
    """BLAS reads its thread count when numpy is imported, so set it before that import."""
    threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 1
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    return threads


THREADS = _limit_threads(sys.argv)

import json  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from armlab.log import configure_logging  # noqa: E402
from armlab.movielens.als import fit_als  # noqa: E402
from armlab.movielens.loader import load_ratings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ML100K = ROOT.parent / "shared" / "data" / "ml-100k" / "u.data"
ML1M_SHAPE, ML1M_RATINGS = (6040, 3952), 1_000_209


def write_ml1m_sized(path: Path, seed: int = 0) -> None:
    """A ``ratings.dat``-style file with ML-1M's size and distinct (user, movie) pairs."""
    rng = np.random.default_rng(seed)
    users, movies = ML1M_SHAPE
    cells = rng.choice(users * movies, size=ML1M_RATINGS, replace=False)
    u, j = np.divmod(cells, movies)
    taste = 3.6 + 0.5 * np.einsum("nr,nr->n", rng.normal(size=(users, 5))[u], rng.normal(size=(movies, 5))[j]) / np.sqrt(5)
    stars = np.clip(np.rint(taste + rng.normal(scale=0.9, size=u.size)), 1, 5).astype(np.int64)
    stamps = rng.integers(956_703_932, 1_046_454_590, size=u.size)
    lines = [f"{a}::{b}::{c}::{d}" for a, b, c, d in zip(u + 1, j + 1, stars, stamps, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def measure(path: Path, repeat: int) -> dict[str, float | int]:
    load_s, fit_s = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        ratings = load_ratings(path)
        load_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        fit = fit_als(ratings)
        fit_s.append(time.perf_counter() - start)
    return {
        "users": ratings.n_users,
        "movies": ratings.n_items,
        "ratings": len(ratings),
        "load_seconds": min(load_s),
        "factorise_seconds": min(fit_s),
        "train_rmse": fit.train_rmse,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (read before numpy loads)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per input; the fastest is reported")
    args = parser.parse_args()
    configure_logging(level="warning")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        generated = Path(tmp) / "ratings.dat"
        write_ml1m_sized(generated)
        results["generated ML-1M size"] = measure(generated, args.repeat)
    if ML100K.is_file():
        results["ML-100K u.data"] = measure(ML100K, args.repeat)
    for name, r in results.items():
        print(f"{name:<22} {r['users']} x {r['movies']}, {r['ratings']} ratings: load {r['load_seconds']:.2f} s, "
              f"factorise {r['factorise_seconds']:.2f} s (rank 5, 15 sweeps), training RMSE {r['train_rmse']:.4f}")
    out = ROOT / "benchmarks" / "results" / "movielens_als.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"threads": THREADS, "repeat": args.repeat, "python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "cpus": os.cpu_count()}
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n", encoding="utf-8")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
