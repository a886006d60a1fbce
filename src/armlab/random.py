"""Counter-based randomness: every random number is a pure function of its key.

armlab never draws from a shared stateful stream.  A reward is a pure function of
``(seed, replica, bandit, arm, pull index)``; a policy's own randomness is a pure function
of ``(seed, policy stream, replica, step)``.  Hence:

* the same seed gives bit-identical results;
* replica ``r`` of a batch equals replica ``r`` run alone (keys use global replica ids);
* two policies see the same reward for the k-th pull of an arm (common random numbers);
* a live run can be replayed exactly from its journal.

The generator is SplitMix64: the stream with key ``k`` outputs ``mix(k + (n + 1) * GOLDEN)``
for counter ``n``, where ``mix`` is the SplitMix64 finalizer.  Keys are derived by hashing
the key words one after another through the same finalizer.  All operations are vectorized
numpy ``uint64`` arithmetic (wrapping modulo 2**64).
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = [
    "KeyedRandom",
    "counter_uniforms",
    "derive_key",
    "mix64",
    "replica_keys",
    "subkeys",
    "uniform_from_bits",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_MASK64 = (1 << 64) - 1
_TWO_M53 = 2.0**-53


def mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer of a ``uint64`` array (returns a new array)."""
    z = z ^ (z >> _S30)
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    return z


def _mix_int(z: int) -> int:
    z &= _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def derive_key(*words: int | str) -> int:
    """Hash integers and strings into one 64-bit key (a pure, stable function)."""
    key = 0x6A09E667F3BCC908
    for word in words:
        if isinstance(word, str):
            data = word.encode("utf-8")
            chunks = [int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data), 8)]
            value = len(data)
            for chunk in chunks:
                value = _mix_int(value * 0x100000001B3 + chunk)
        else:
            value = int(word)
        key = _mix_int(key + (value & _MASK64) * 0x9E3779B97F4A7C15 + 1)
    return key


def uniform_from_bits(bits: np.ndarray) -> np.ndarray:
    """Map uint64 bits to doubles strictly inside (0, 1): ``(top 53 bits + 0.5) / 2**53``."""
    return ((bits >> _S11).astype(np.float64) + 0.5) * _TWO_M53


def _golden_multiple(n: np.ndarray | int) -> np.ndarray:
    """``n * GOLDEN`` modulo 2**64, as a ufunc so numpy never warns about the wrap-around."""
    return np.multiply(np.asarray(n, dtype=np.uint64), _GOLDEN)


def replica_keys(replicas: np.ndarray, *words: int | str) -> np.ndarray:
    """One stream key per global replica id, for the stream named by ``words``."""
    ids = np.asarray(replicas, dtype=np.uint64)
    return mix64(np.uint64(derive_key(*words)) + _golden_multiple(ids + np.uint64(1)))


def subkeys(keys: np.ndarray, n: int) -> np.ndarray:
    """Split each key into ``n`` independent keys: shape ``keys.shape + (n,)``."""
    return mix64(keys[..., None] + _golden_multiple(np.arange(1, n + 1)))


def counter_uniforms(keys: np.ndarray, counters: np.ndarray | int) -> np.ndarray:
    """Element ``counters`` (0-based) of the streams ``keys``, as uniforms in (0, 1)."""
    return uniform_from_bits(mix64(keys + _golden_multiple(np.asarray(counters) + 1)))


class KeyedRandom:
    """Random numbers for a set of replicas, keyed by ``(key words, replica, counter)``.

    ``KeyedRandom(seed, "policy", "ucb1", replicas=ids)`` gives each replica its own key;
    ``uniform(step, size)`` returns an ``(R, size)`` array whose entry ``[r, j]`` depends
    only on the key words, the global replica id, ``step`` and ``j``.  Subsetting the
    replicas never changes the numbers of the remaining ones.
    """

    def __init__(self, *words: int | str, replicas: np.ndarray) -> None:
        self.words = words
        self.replicas = np.asarray(replicas, dtype=np.int64)
        self._keys = replica_keys(self.replicas, *words)

    def __repr__(self) -> str:
        return f"KeyedRandom(replicas={self.replicas.size})"

    def bits(self, step: int, size: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Raw 64-bit words ``(R, size)`` (or ``(len(rows), size)``) for one step."""
        keys = self._keys if rows is None else self._keys[rows]
        return subkeys(mix64(keys + _golden_multiple(np.asarray(step) + 1)), size)

    def uniform(self, step: int, size: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Uniform draws in (0, 1) of shape ``(R, size)``."""
        return uniform_from_bits(self.bits(step, size, rows))

    def uniform_at(self, step: np.ndarray | int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Entries ``[rows[i], cols[i]]`` of :meth:`uniform` (``step`` scalar or per entry),
        without drawing the other columns: for a few entries of wide rows."""
        keys = mix64(self._keys[rows] + _golden_multiple(np.asarray(step) + 1))
        return uniform_from_bits(mix64(keys + _golden_multiple(np.asarray(cols) + 1)))

    def normal(self, step: int, size: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Standard normal draws of shape ``(R, size)`` (inverse-CDF transform)."""
        return special.ndtri(self.uniform(step, size, rows))

    def gamma(self, step: int | np.ndarray, shape: np.ndarray) -> np.ndarray:
        """Gamma(shape, 1) draws, one per entry of ``shape`` (an ``(R, K)`` array).

        Marsaglia & Tsang (2000) squeeze-rejection for shape >= 1, with the boost
        ``G(a) = G(a + 1) * U**(1/a)`` for shape < 1.  Attempt ``j`` of entry ``k`` uses
        words derived from ``(step, k, j)``, so the result stays a pure function of the key.
        The first attempt runs on every entry; later attempts only on the rejected ones.
        """
        shape = np.asarray(shape, dtype=np.float64)
        rows, width = shape.shape
        boosted = shape < 1.0
        any_boost = bool(boosted.any())
        a = np.where(boosted, shape + 1.0, shape) if any_boost else shape
        d = a - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * d)
        n_words = 3 if any_boost else 2
        bits = self.bits(step, n_words * width).reshape(rows, n_words, width)
        first = bits[:, 0, :].reshape(-1)
        second = bits[:, 1, :].reshape(-1)
        d, c = d.reshape(-1), c.reshape(-1)
        out = np.empty(rows * width)
        todo = np.arange(rows * width)
        attempt = 0
        while todo.size:
            if attempt == 0:
                x = special.ndtri(uniform_from_bits(first))
                u = uniform_from_bits(second)
                dd, cc = d, c
            else:
                salt = _golden_multiple(attempt)
                x = special.ndtri(uniform_from_bits(mix64(first[todo] + salt)))
                u = uniform_from_bits(mix64(second[todo] + salt))
                dd, cc = d[todo], c[todo]
            v = 1.0 + cc * x
            v = v * v * v
            x2 = x * x
            accept = (v > 0) & (u < 1.0 - 0.0331 * x2 * x2)  # squeeze: no logarithms
            unsure = np.flatnonzero((v > 0) & ~accept)
            if unsure.size:
                vu, du = v[unsure], dd[unsure]
                accept[unsure] = np.log(u[unsure]) < 0.5 * x2[unsure] + du - du * vu + du * np.log(vu)
            out[todo[accept]] = (dd * v)[accept]
            todo = todo[~accept]
            attempt += 1
        out = out.reshape(rows, width)
        if any_boost:
            boost = uniform_from_bits(bits[:, 2, :]) ** (1.0 / np.where(boosted, shape, 1.0))
            out = np.where(boosted, out * boost, out)
        return out

    def beta(self, step: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Beta(a, b) draws as ``X / (X + Y)`` with independent gammas (distinct sub-steps)."""
        x = self.gamma(2 * step, a)
        y = self.gamma(2 * step + 1, b)
        return x / (x + y)
