"""Identifiers and keys of a table: privacy-unit ids and group keys checked,
coded and hashed (private to :mod:`dpsum.tables`).

**Checking.** An id or a group key is an integer or a string (every entry of
one column of the same kind). Floats are refused (a float id column usually
means a missing id turned into NaN), so are booleans, missing values and
mixed kinds. Messages name the argument, never a value.

**Coding.** The distinct values are sorted and each row gets the rank of its
value (its *canonical code*): the codes do not depend on the row order.

**Keyed hashing.** A release draws a 128-bit key from its ``rng``
(:func:`draw_key`). Each distinct unit id and group key gets a 64-bit
pseudo-random word (:func:`words`: ``blake2b(encode(value), key=key)``, or
for integer ids a keyed SplitMix64 mix seeded by blake2b of the key); words
of pairs and rows are mixed from these with the SplitMix64 finaliser,
vectorised. The
words depend on the key and on the value only, never on the row order, the
other rows or how the table is split, so a selection made by comparing them
is the same on any order and any partition of the rows.
"""

from __future__ import annotations

import hashlib
import numbers
from typing import Any

import numpy as np

from dpsum import _validation as V

__all__ = ["check_key", "draw_key", "ids_structure", "canonical_codes", "encode", "words",
           "mix", "row_digest"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def check_key(key: Any, name: str = "key") -> bytes:
    """A hashing key: 16 bytes (128 bits)."""
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"{name} must be 16 bytes (a 128-bit key), got {V.describe(key)}")
    if len(key) != 16:
        raise ValueError(f"{name} must be 16 bytes (a 128-bit key), got {len(key)} bytes")
    return bytes(key)


def draw_key(gen: np.random.Generator) -> bytes:
    """A 128-bit hashing key drawn from the release's generator."""
    return bytes(gen.bytes(16))


def ids_structure(values: Any, name: str, n: int) -> Any:
    """The structural check of an id or key column (no value is read): a
    1-d array or pandas Series of length ``n`` whose dtype can hold integer
    or string ids. Returns the column (a Series stays a Series)."""
    if isinstance(values, (str, bytes, bool, np.bool_)) or values is None \
            or isinstance(values, numbers.Number):
        raise TypeError(f"{name} must be an array with one id per row of X (or, for a "
                        f"DataFrame X, a column label), got {V.describe(values)}")
    if isinstance(values, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array: masked (missing) ids are refused")
    if V._is_series(values):
        col = values
    else:
        try:
            col = np.asarray(values)
        except (ValueError, TypeError):
            raise ValueError(f"{name} must be a 1-d array of ids, got a ragged sequence") from None
    if col.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional (one id per row of X), got shape "
                         f"{tuple(np.shape(col))}")
    if len(col) != n:
        raise ValueError(f"{name} must have one id per row of X ({n} rows), got "
                         f"{len(col)} entries")
    kind = getattr(col.dtype, "kind", "O")
    if kind == "b":
        raise TypeError(f"{name} must hold integer or string ids, not booleans")
    if kind in "fc":
        raise TypeError(f"{name} must hold integer or string ids; a float column is refused "
                        "(it is how missing ids (NaN) usually arrive)")
    if kind in "mMV":
        raise TypeError(f"{name} must hold integer or string ids, got dtype {col.dtype}")
    return col


def _plain(v: Any) -> Any:
    """An id as a Python int or str, or None if it is neither."""
    if isinstance(v, str):
        return v
    if isinstance(v, (numbers.Integral,)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    return None


def canonical_codes(col: Any, name: str) -> tuple[np.ndarray, list]:
    """(codes, uniques): ``uniques`` the sorted distinct ids (Python ints or
    strs), ``codes[i]`` the rank of row ``i``'s id. Refuses missing ids and
    mixed kinds, naming ``name``."""
    kind = getattr(col.dtype, "kind", "O")
    if V._is_series(col):
        if kind in "iu":
            codes, uniq = col.factorize(sort=True, use_na_sentinel=True)
            codes = np.asarray(codes, dtype=np.int64)
            if codes.size and codes.min() < 0:       # a nullable integer column with NA
                raise ValueError(f"{name} has missing ids (NA): every row needs its id")
            return codes, [int(v) for v in np.asarray(uniq, dtype=object)]
        try:
            codes, uniq = col.factorize(sort=True, use_na_sentinel=True)
        except TypeError:
            raise TypeError(f"{name} mixes kinds of ids (integers and strings, say): "
                            "use one kind") from None
        codes = np.asarray(codes, dtype=np.int64)
        if codes.size and codes.min() < 0:
            raise ValueError(f"{name} has missing ids (None or NaN): every row needs its id")
        plain = [_plain(v) for v in np.asarray(uniq, dtype=object)]
        _check_plain(plain, name)
        return codes, plain
    arr = np.asarray(col)
    if kind in "iu":
        uniq, codes = np.unique(arr, return_inverse=True)
        return codes.astype(np.int64).ravel(), [int(v) for v in uniq]
    if kind == "U":
        uniq, codes = np.unique(arr, return_inverse=True)
        return codes.astype(np.int64).ravel(), [str(v) for v in uniq]
    if kind == "S":
        raise TypeError(f"{name} must hold integer or string ids, got bytes")
    plain = [_plain(v) for v in arr.tolist()]
    _check_plain(plain, name)
    kinds = {type(v) for v in plain}
    if kinds == {int}:
        return canonical_codes(np.array(plain, dtype=np.int64)
                               if all(-2**63 <= v < 2**63 for v in plain)
                               else np.array(plain, dtype=object).astype(str), name)
    uniq, codes = np.unique(np.array(plain, dtype=object), return_inverse=True)
    return codes.astype(np.int64).ravel(), list(uniq)


def _check_plain(plain: list, name: str) -> None:
    if any(v is None for v in plain):
        raise ValueError(f"{name} has missing ids or ids that are neither integers nor "
                         "strings (None, NaN, objects): every row needs an integer or "
                         "string id")
    if len({type(v) for v in plain}) > 1:
        raise TypeError(f"{name} mixes kinds of ids (integers and strings, say): use one kind")


def encode(value: Any) -> bytes:
    """Canonical bytes of an id or key (an int, a str or a tuple of them)."""
    if isinstance(value, tuple):
        parts = [encode(v) for v in value]
        return b"t" + b"".join(len(p).to_bytes(8, "little") + p for p in parts)
    if isinstance(value, str):
        return b"s" + value.encode("utf-8", "surrogatepass")
    return b"i" + str(int(value)).encode()


def words(values: list, key: bytes, person: bytes) -> np.ndarray:
    """One keyed 64-bit word per value: ``blake2b(encode(v), key=key)`` for
    strings and tuples; for integers (every value an int of 64 bits) the
    keyed mix ``mix(mix(v ^ k0) ^ k1)``, vectorised, with ``(k0, k1)`` from
    ``blake2b(key)``. Either way a word depends on the key and the value
    only (what the bounds' invariance needs); the choice of hash affects
    how uniform the random choices are, never the privacy guarantee."""
    if values and all(type(v) is int and -2**63 <= v < 2**63 for v in values):
        seed = hashlib.blake2b(b"int", digest_size=16, key=key, person=person).digest()
        k0, k1 = (np.uint64(int.from_bytes(seed[i:i + 8], "little")) for i in (0, 8))
        z = np.array(values, dtype=np.int64).view(np.uint64) ^ k0
        z = mix(z, inplace=True)
        z ^= k1
        return mix(z, inplace=True)
    base = hashlib.blake2b(digest_size=8, key=key, person=person)
    out = []
    for v in values:
        h = base.copy()
        h.update(encode(v))
        out.append(h.digest())
    return np.frombuffer(b"".join(out), dtype="<u8").astype(np.uint64)


def mix(z: np.ndarray, inplace: bool = False) -> np.ndarray:
    """The SplitMix64 finaliser, a bijection of 64-bit words (vectorised;
    ``inplace`` overwrites a uint64 array ``z``)."""
    z = z if inplace else np.array(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


def row_digest(rows: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """A 64-bit word per row from its float64 bit patterns (``-0.0`` read as
    ``0.0``), folded column by column into ``seeds`` (one word per row)."""
    bits = np.ascontiguousarray(rows + 0.0, dtype=np.float64).view(np.uint64)
    acc = np.asarray(seeds, dtype=np.uint64).copy()
    with np.errstate(over="ignore"):
        for j in range(bits.shape[1]):
            acc = mix(acc ^ (bits[:, j] + _GOLDEN * np.uint64(j + 1)))
    return acc
