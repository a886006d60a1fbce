"""KL-UCB and Bayes-UCB against what compiled code can do with the same index, in the same
process: how far the numpy engine is from it, and what bounds it.

Figures (run-steps per second, Bernoulli arms, a window of ``--steps`` steps after the first
pull of every arm and ``--skip`` more steps; fastest of ``--repeats`` rounds):

* ``armlab``: the built-in ``klucb`` (Newton root, tangent bounds in ``f(n)``, only the entries
  that can win are solved at each step), and the built-in ``ucb1`` for the issue's ratio;
* ``compiled select``: the built-in ``klucb`` with its selection replaced by a compiled kernel
  of the same rule over all replicas (:class:`CompiledSelection`): what compiling the index
  gives inside armlab's engine, whose step serves every replica at once.  Timed over the same
  window as an unchanged ``klucb`` run beside it, and checked to pull the same arms;
* ``numba-all``: a compiled per-run loop solving every arm's index at every step (the usual
  compiled reference, as ``engine_speed.py``'s UCB1 loop), with the same scalar Newton root;
* ``numba-lazy``: a compiled per-run loop (one run at a time, in cache) with armlab's own rule (the arm just observed is
  solved, the others only when their tangent upper bound reaches the largest value known).

the cost of one KL-UCB root, compiled and in numpy batches of ``--batch`` entries, and, for
Bayes-UCB, the cost of one Beta quantile (scipy's ``betainccinv``, which armlab calls,
in batches of ``--batch`` entries) in units of ``ucb1``'s whole run-step: at least one quantile
(the arm just observed) is solved per run-step, compiled or not.

The compiled root is a scalar port of :func:`armlab.plugins.regret.bounds.klucb_bernoulli`;
the script first checks that it gives the same bits on a grid of means and levels.  Ties go
to the lowest arm in the compiled loops (armlab's default breaks them at random), and the
compiled loops draw rewards from numba's own generator: they time the same work, not the same
runs.  Needs ``pip install -e '.[bench]'`` (numba).

    python benchmarks/compiled_index.py --arms 100 --replicas 500 --steps 1000 --skip 3000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numba
import numpy as np
from engine_speed import budget_for, build, engine_speed, fastest
from scipy import special

from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.selection import random_among
from armlab.plugins.registry import Registry
from armlab.plugins.regret.bounds import (
    CLAMP,
    NEWTON_STEPS,
    klucb_bernoulli,
    neg_entropy,
)

#: armlab's slack of the tangent bounds over the Newton root (its error is below 1e-10).
SLACK = 1e-8


@numba.njit(cache=False)
def kl_index(p: float, delta: float, h: float) -> float:
    """Scalar :func:`klucb_bernoulli` (Newton): the same operations in the same order."""
    p = min(max(p, 0.0), 1.0)
    pc = min(max(p, CLAMP), 1.0 - CLAMP)
    positive = max(delta, 0.0)
    upper = min(pc + math.sqrt(positive / 2.0), 1.0)
    upper = min(upper, pc + positive + math.sqrt(positive * (positive + 2.0 * pc)))
    upper = min(upper, pc + math.sqrt(2.0 * (1.0 - pc) * positive))
    one_minus_p = 1.0 - pc
    offset = h - positive
    floor = -math.log1p(-pc)
    u = max(min(offset / -one_minus_p, -math.log1p(-min(upper, 1.0 - CLAMP))), floor)
    for _ in range(NEWTON_STEPS):
        em1 = math.expm1(-u)
        g = offset + one_minus_p * u - pc * math.log(-em1)
        u = max(u - g / max(one_minus_p + pc * (1.0 + em1) / em1, 1e-300), floor)
    q = min(max(min(-math.expm1(-u), upper), p), 1.0)
    if p == 0.0:
        q = -math.expm1(-positive)
    if p >= 1.0:
        q = 1.0
    return p if delta <= 0.0 else q


@numba.njit(cache=False)
def _entropy(p: float) -> float:
    pc = min(max(p, CLAMP), 1.0 - CLAMP)
    return pc * math.log(pc) + (1.0 - pc) * math.log1p(-pc)


@numba.njit(cache=False)
def _solve(i, p, inv_n, h, f, lower, intercept, slope):
    """Arm ``i``'s index at level ``f`` (mean ``p``, ``1 / N = inv_n``, cached entropy ``h``),
    stored as armlab stores it: the value, and a tangent upper bound for later levels."""
    q = kl_index(p, f * inv_n, h)
    lower[i] = q
    if q >= 1.0:
        intercept[i], slope[i] = q, 0.0  # constant from now on
    else:
        d = inv_n * q * (1.0 - q) / (q - p) if q > p else np.inf
        c = q + SLACK - d * f
        intercept[i], slope[i] = (c, d) if math.isfinite(c) else (np.inf, 0.0)
    return q


@numba.njit(cache=False)
def _lazy_row(means, inv_n, entropy, f, lower, intercept, slope, changed, values):
    """One replica's arm of largest index (lowest on ties), solving the arm ``changed`` (-1:
    none) and then only the arms whose upper bound reaches the largest known value.  Writes
    the values compared (``-inf`` elsewhere) into ``values``; returns (arm, number of ties)."""
    if changed >= 0:
        _solve(changed, means[changed], inv_n[changed], entropy[changed], f, lower, intercept, slope)
    floor = lower.max()
    best, best_value, tied = 0, -np.inf, 0
    for i in range(means.size):
        value = intercept[i] + slope[i] * f
        values[i] = -np.inf
        if value >= floor:
            if i != changed and not (slope[i] == 0.0 and math.isfinite(intercept[i])):
                _solve(i, means[i], inv_n[i], entropy[i], f, lower, intercept, slope)
            value = values[i] = lower[i]
            if value > best_value:
                best, best_value, tied = i, value, 1
            elif value == best_value:
                tied += 1
    return best, tied


@numba.njit(cache=False)
def select_replicas(means, inv_n, entropy, f, lower, intercept, slope, changed, best, tied, values):
    """:func:`_lazy_row` for every replica (armlab's step: all replicas at once)."""
    for r in range(means.shape[0]):
        best[r], tied[r] = _lazy_row(means[r], inv_n[r], entropy[r], f[r], lower[r], intercept[r], slope[r],
                                     changed[r], values[r])


@numba.njit(cache=False)
def first_pulls(means, seed, counts, sums, estimate, inv_n, entropy):
    """One pull of every arm in every run (``(R, K)`` state arrays, filled in place)."""
    np.random.seed(seed)
    for r in range(counts.shape[0]):
        for i in range(means.size):
            x = 1.0 if np.random.random() < means[i] else 0.0
            counts[r, i], sums[r, i], estimate[r, i], inv_n[r, i] = 1.0, x, x, 1.0
            entropy[r, i] = _entropy(x)


@numba.njit(cache=False)
def klucb_runs(means, start, steps, lazy, counts, sums, estimate, inv_n, entropy, lower, intercept, slope,
               values, changed):
    """Trials ``start .. start + steps - 1`` of every run, one run at a time (its arms stay in
    cache), continuing from the state arrays; ``lazy`` picks armlab's rule, else every index
    is solved at every step."""
    for r in range(counts.shape[0]):
        count, total, estimate_r, inv_r, entropy_r = counts[r], sums[r], estimate[r], inv_n[r], entropy[r]
        last = changed[r]
        for n in range(start, start + steps):
            f = math.log(n)
            if lazy:
                best = _lazy_row(estimate_r, inv_r, entropy_r, f, lower[r], intercept[r], slope[r], last, values[r])[0]
            else:
                best, best_value = 0, -np.inf
                for i in range(means.size):
                    value = kl_index(estimate_r[i], f * inv_r[i], entropy_r[i])
                    if value > best_value:
                        best, best_value = i, value
            count[best] += 1.0
            total[best] += 1.0 if np.random.random() < means[best] else 0.0
            estimate_r[best], inv_r[best] = total[best] / count[best], 1.0 / count[best]
            entropy_r[best] = _entropy(estimate_r[best])
            last = best
        changed[r] = last


def compiled_speed(k: int, r: int, skip: int, steps: int, lazy: bool) -> float:
    """Run-steps per second of :func:`klucb_runs` over trials ``K + skip`` to ``K + skip + steps``."""
    means = np.linspace(0.1, 0.9, k)
    counts, sums, estimate, inv_n, entropy, slope, values = (np.zeros((r, k)) for _ in range(7))
    lower, intercept = np.full((r, k), -np.inf), np.full((r, k), np.inf)
    changed = np.full(r, -1, dtype=np.int64)
    state = (counts, sums, estimate, inv_n, entropy, lower, intercept, slope, values, changed)
    first_pulls(means, 1, counts, sums, estimate, inv_n, entropy)
    klucb_runs(means, k, skip, lazy, *state)
    start = time.perf_counter()
    klucb_runs(means, k + skip, steps, lazy, *state)
    return r * steps / (time.perf_counter() - start)


class CompiledSelection:
    """Replaces a built-in ``klucb``'s selection by :func:`select_replicas` on the policy's
    own state (means, ``1 / N``, entropies, level): the same exact rule, compiled, inside
    armlab's engine, with the policy's random tie break for the replicas that have ties.
    Immediate feedback only (one result per replica and step)."""

    def __init__(self, policy, replicas: int, k: int) -> None:
        self.policy = policy
        self.lower, self.intercept = np.full((replicas, k), -np.inf), np.full((replicas, k), np.inf)
        self.slope, self.values = np.zeros((replicas, k)), np.empty((replicas, k))
        self.changed = np.full(replicas, -1, dtype=np.int64)
        self.best, self.tied = np.zeros(replicas, dtype=np.int64), np.zeros(replicas, dtype=np.int64)
        policy._lazy_argmax.observed = self.observed
        policy.select = self.select

    def observed(self, stats, rows, arms) -> None:
        self.changed[rows] = arms

    def select(self, stats) -> np.ndarray:
        policy = self.policy
        inv_n = 1.0 / np.maximum(stats.counts, 1)
        select_replicas(stats.means, inv_n, neg_entropy(stats.means), policy.exploration(stats), self.lower,
                        self.intercept, self.slope, self.changed, self.best, self.tied, self.values)
        self.changed[:] = -1
        best = self.best.copy()
        rows = np.flatnonzero(self.tied > 1)
        if rows.size:
            values = self.values[rows]
            best[rows] = random_among(values == values.max(axis=1)[:, None], rows, policy.rng, stats.dispatched)
        return best


def in_engine_speeds(policy_cls, k: int, r: int, skip: int, steps: int) -> tuple[float, float]:
    """Run-steps per second of the built-in policy and of the same with
    :class:`CompiledSelection`, over the same window of the same runs; checks that both pull
    the same arms."""
    plain, compiled = (build(policy_cls, k, r, budget_for(k, skip, steps)) for _ in range(2))
    for _ in range(k + skip):
        plain.step()
        compiled.step()
    CompiledSelection(compiled.policies[0], r, k)
    plain.step()
    compiled.step()  # compiles the kernel and solves every entry once
    speeds = []
    for sim in (plain, compiled):
        start = time.perf_counter()
        for _ in range(steps):
            sim.step()
        speeds.append(r * steps / (time.perf_counter() - start))
    if not np.array_equal(plain.stats[0].pulls, compiled.stats[0].pulls):
        raise AssertionError("the compiled selection pulled other arms than the built-in klucb")
    return speeds[0], speeds[1]


def ns_per_entry(solve: Callable[[], object], batch: int, repeats: int) -> float:
    """Nanoseconds per entry of ``solve``, a call over ``batch`` entries (after one untimed call)."""
    solve()
    start = time.perf_counter()
    for _ in range(repeats):
        solve()
    return (time.perf_counter() - start) / repeats / batch * 1e9


def quantile_ns(batch: int) -> float:
    """Nanoseconds per entry of scipy's Beta upper quantile on posteriors like Bayes-UCB's."""
    rng = np.random.default_rng(0)
    a, b = rng.integers(1, 200, batch).astype(float), rng.integers(1, 200, batch).astype(float)
    return ns_per_entry(partial(special.betainccinv, a, b, np.full(batch, 1.0 / 5000.0)), batch, 20)


@numba.njit(cache=False)
def _roots(p, delta, h, out):
    for j in range(p.size):
        out[j] = kl_index(p[j], delta[j], h[j])


def root_ns(batch: int) -> tuple[float, float]:
    """Nanoseconds per KL-UCB root, compiled and in armlab's numpy batches of ``batch``."""
    rng = np.random.default_rng(0)
    p, delta = rng.random(batch), 8.0 / rng.integers(5, 200, batch)
    h = neg_entropy(p)
    compiled = ns_per_entry(partial(_roots, p, delta, h, np.empty(batch)), batch, 200)
    return compiled, ns_per_entry(partial(klucb_bernoulli, p, delta, "newton"), batch, 200)


def root_mismatches() -> int:
    """Entries of a (mean, level) grid where the compiled root differs from armlab's."""
    p = np.repeat(np.linspace(0.0, 1.0, 201), 60)
    delta = np.tile(np.geomspace(1e-6, 50.0, 60), 201)
    expected = klucb_bernoulli(p, delta, "newton")
    got = np.array([kl_index(a, b, c) for a, b, c in zip(p, delta, neg_entropy(p), strict=True)])
    return int(np.count_nonzero(got != expected))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--steps", type=int, default=1000, help="timed steps")
    parser.add_argument("--skip", type=int, default=3000, help="untimed steps after the first pulls")
    parser.add_argument("--repeats", type=int, default=3, help="report the fastest of this many rounds")
    parser.add_argument("--all-replicas", type=int, default=10,
                        help="runs of the compiled solve-every-arm loop (its speed does not depend on R)")
    parser.add_argument("--batch", type=int, default=670,
                        help="entries per KL root or Beta quantile call (armlab's: about 670)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "compiled_index.json"))
    args = parser.parse_args()
    mismatches = root_mismatches()
    print(f"compiled root against armlab's on a 201 x 60 grid: {mismatches} different values")
    registry = Registry(get_plugin_manager(load_entrypoints=False))
    k, r = args.arms, args.replicas
    ucb1, klucb, lazy, every = fastest(
        args.repeats,
        partial(engine_speed, registry.get("policy", "ucb1"), k, r, args.steps, args.skip),
        partial(engine_speed, registry.get("policy", "klucb"), k, r, args.steps, args.skip),
        partial(compiled_speed, k, r, args.skip, args.steps, True),
        partial(compiled_speed, k, args.all_replicas, args.skip, args.steps, False),
    )
    assert ucb1 and klucb
    paired = [in_engine_speeds(registry.get("policy", "klucb"), k, r, args.skip, args.steps) for _ in range(args.repeats)]
    in_engine = max(pair[1] for pair in paired)
    engine_gain = in_engine / max(pair[0] for pair in paired)
    rows = {"armlab ucb1": ucb1, "armlab klucb": klucb, "klucb, compiled select": in_engine,
            "numba-lazy klucb": lazy, "numba-all klucb": every}
    for name, speed in rows.items():
        print(f"K={k} R={r} {name:<24} {speed:>12,.0f} run-steps/s  armlab klucb is {klucb / speed:5.2f}x this")
    print(f"compiled select in the engine: {engine_gain:.2f}x the built-in klucb's speed (same arms pulled)")
    compiled_root, numpy_root = root_ns(args.batch)
    print(f"one KL-UCB root: {compiled_root:,.0f} ns compiled, {numpy_root:,.0f} ns in numpy batches of {args.batch}")
    quantile = quantile_ns(args.batch)
    ucb1_ns = 1e9 / ucb1
    print(f"Bayes-UCB: one Beta quantile {quantile:,.0f} ns = {quantile / ucb1_ns:.2f}x ucb1's run-step ({ucb1_ns:,.0f} ns)")
    result = {"benchmark": "compiled_index", "arms": k, "replicas": r, "steps": args.steps, "skip": args.skip,
              "repeats": args.repeats, "root_mismatches": mismatches, "run_steps_per_s": rows,
              "klucb_to_ucb1": klucb / ucb1, "klucb_to_numba_lazy": klucb / lazy, "klucb_to_numba_all": klucb / every,
              "numba_lazy_to_ucb1": lazy / ucb1, "compiled_select_gain": engine_gain,
              "compiled_select_to_ucb1": in_engine / ucb1, "root_ns": {"compiled": compiled_root, "numpy": numpy_root},
              "quantile_ns": quantile,
              "quantile_to_ucb1_run_step": quantile / ucb1_ns, "load_average": os.getloadavg(),
              "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
              "machine": platform.machine()}
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
