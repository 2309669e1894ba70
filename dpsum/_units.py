"""Privacy units: ids checked, coded and hashed, and each unit's rows bounded
and combined into one vector per (unit, group) cell; shared by
:mod:`dpsum.tables`, :mod:`dpsum.mechanisms` and :mod:`dpsum.pipeline`
(private to the package).

Two parts. The *keys* (below) turn ids into codes and keyed hashes. The
*bounding* (:func:`bound_cells`, the chapter *From rows to people*) keeps at
most ``max_groups`` groups per unit and ``max_rows`` rows per (unit, group)
and combines the kept rows of a cell into one vector (their sum or their
mean); :func:`unit_rows` applies it with one group to the single-table
releases (``privacy_unit=`` of the vector mechanisms and of
``private_mean``/``private_sum``): after it each unit is one row.

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

import dataclasses
import hashlib
import numbers
import secrets
from typing import Any, NamedTuple

import numpy as np

from dpsum import _validation as V

__all__ = ["check_key", "draw_key", "ids_structure", "canonical_codes", "plain_id", "encode",
           "words", "mix", "row_digest", "ContributionBounds", "BoundedContributions",
           "bound_cells", "UnitRows", "unit_rows", "UnitBits", "unit_bits",
           "column", "is_label"]

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
        if getattr(col.dtype, "kind", "O") in "US" and not isinstance(values, np.ndarray) \
                and col.ndim == 1 and not all(isinstance(v, (str, np.str_)) for v in values):
            # NumPy turns [1, "a"] into strings: the kinds were mixed
            raise TypeError(f"{name} mixes kinds of ids (integers and strings, say): use one "
                            "kind")
    if col.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional (one id per row of X), got shape "
                         f"{tuple(np.shape(col))}")
    if len(col) != n:
        raise ValueError(f"{name} must have one id per row of X ({n} rows), got "
                         f"{len(col)} entries")
    kind = getattr(col.dtype, "kind", "O")
    if len(col) == 0 and kind == "f" and not V._is_series(col):
        return np.zeros(0, dtype=np.int64)        # [] is float64 to NumPy: no id at all
    if kind == "b":
        raise TypeError(f"{name} must hold integer or string ids, not booleans")
    if kind in "fc":
        raise TypeError(f"{name} must hold integer or string ids; a float column is refused "
                        "(it is how missing ids (NaN) usually arrive)")
    if kind in "mMV":
        raise TypeError(f"{name} must hold integer or string ids, got dtype {col.dtype}")
    return col


def plain_id(v: Any) -> Any:
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
        plain = [plain_id(v) for v in np.asarray(uniq, dtype=object)]
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
    plain = [plain_id(v) for v in arr.tolist()]
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


# ================================================================= bounding
_FLOAT_MAX = float(np.finfo(np.float64).max)


@dataclasses.dataclass(frozen=True)
class ContributionBounds:
    """The public contribution bounds of a privacy unit.

    Parameters
    ----------
    max_rows : int
        Rows kept per unit and group (``>= 1``), chosen at random by keyed
        hash when a unit has more.
    max_groups : int
        Groups kept per unit (``>= 1``), chosen at random by keyed hash.
    per_unit : {"sum", "mean"}
        How a unit's kept rows in a group become one vector. ``"sum"`` for a
        per-group **sum** (the group's total over its rows, each unit's
        total clipped to ``C``); ``"mean"`` for a per-group **mean** over
        units (each unit's average row, so a person with many rows weighs
        as much as a person with one, and the denominator is the number of
        units, whose sensitivity is one per group). ``"sum"`` with a mean
        gives the average per-unit total (spend per customer, say).

    Examples
    --------
    >>> ContributionBounds(max_rows=5, max_groups=2)
    ContributionBounds(max_rows=5, max_groups=2, per_unit='sum')
    """

    max_rows: int
    max_groups: int = 1
    per_unit: str = "sum"

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_rows", V.check_integer(self.max_rows, "max_rows", 1,
                                                             2**31))
        object.__setattr__(self, "max_groups", V.check_integer(self.max_groups, "max_groups",
                                                               1, 2**31))
        object.__setattr__(self, "per_unit", V.check_choice(self.per_unit, "per_unit",
                                                            ("sum", "mean")))


class BoundedContributions(NamedTuple):
    """The bounded table: one combined vector per kept (unit, group) cell.

    **Private**: every field but ``groups`` and ``columns`` depends on the
    data. Pass it to a mechanism; never publish it.
    """

    vectors: np.ndarray        #: (P, d) combined vectors, not yet clipped
    group_index: np.ndarray    #: (P,) index into ``groups`` of each vector
    unit_index: np.ndarray     #: (P,) canonical code of each vector's unit
    groups: tuple              #: group labels (public when listed by the caller)
    columns: tuple | None      #: column labels of a DataFrame input
    kept: np.ndarray           #: (n,) bool, the rows that were kept
    units: int                 #: units with at least one row in a listed group
    truncated_units: int       #: units that lost a group or a row to the bounds


# ----------------------------------------------------------------- bounding
def _cells(idx: np.ndarray, uu: np.ndarray, gg: np.ndarray, pw: np.ndarray, U: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (unit, group) cells of the rows at positions ``idx``, sorted by
    unit, then cell word, then group code (canonical: no row order enters).
    Returns the rows in that order, each cell's start in it and row count,
    and each cell's unit and group code."""
    us, ws, gs = uu[idx], pw[idx], gg[idx]
    m = idx.size
    if m == 0:
        e = np.empty(0, dtype=np.int64)
        return e, e, e, e, e
    bu = max(1, (U - 1).bit_length())
    fast = False
    if bu < 48:
        key = us.astype(np.uint64) << np.uint64(64 - bu)
        key |= ws >> np.uint64(bu)
        o = np.argsort(key)
        sk = key[o]
        new = np.empty(m, dtype=bool)
        new[0] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
        go = gs[o]
        starts = np.flatnonzero(new)
        fast = bool(np.all(go == go[starts][np.cumsum(new) - 1]))
    if not fast:
        # truncated words tied (or too many units): the exact order
        o = np.lexsort((gs, ws, us))
        uo, go = us[o], gs[o]
        new = np.empty(m, dtype=bool)
        new[0] = True
        new[1:] = (uo[1:] != uo[:-1]) | (go[1:] != go[:-1])
        starts = np.flatnonzero(new)
    cnt = np.diff(np.append(starts, m))
    return idx[o], starts, cnt, us[o[starts]], go[starts]


def bound_cells(Xv: Any, u: np.ndarray, unit_ids: list, g: np.ndarray, labels: list,
           bounds: ContributionBounds, key: bytes) -> tuple:
    """The bounding pass on coded rows (``u`` unit codes into ``unit_ids``,
    ``g`` group codes into ``labels``, -1: dropped): ``(vectors, group
    codes, unit codes, kept rows, units, truncated units)``, the cells in a
    canonical order (by unit code, then by the cell's keyed word), so that
    no row order or block split enters; see
    :func:`dpsum.tables.bound_contributions`."""
    n, d = Xv.shape
    kept = np.zeros(n, dtype=bool)
    sel = np.flatnonzero(g >= 0) if n and g.min() < 0 else np.arange(n)
    m = sel.size
    if m == 0:
        return (np.empty((0, d)), np.empty(0, np.int64), np.empty(0, np.int64), kept, 0, 0)
    uu, gg = (u, g) if m == n else (u[sel], g[sel])
    used_units = np.unique(uu) if m < n else None
    uw = words(unit_ids if used_units is None else [unit_ids[i] for i in used_units],
                 key, b"dpsum-unit")
    if used_units is not None:
        full = np.zeros(len(unit_ids), dtype=np.uint64)
        full[used_units] = uw
        uw = full
    gw = mix(words(labels, key, b"dpsum-group"))
    pw = uw[uu]
    pw ^= gw[gg]
    pw = mix(pw, inplace=True)                        # the cell's word: H(unit, group)
    U = len(unit_ids)
    k = bounds.max_groups
    # Pass 1 on the candidate cells: a unit's cells whose word is below a
    # per-unit level, set from its row count so that about 2k + 8 of its
    # cells pass. Candidacy is a property of the cell (all its rows share the
    # word); the k smallest words of a unit with at least k candidate cells
    # are among them, whatever the level: the level changes the work, never
    # the result. Units with fewer candidates are redone on all their rows.
    r_u = np.bincount(uu, minlength=U)
    Gt = max(1, len(labels))
    with np.errstate(over="ignore"):
        d_hat = Gt * -np.expm1(-r_u / Gt)
        frac = (2.0 * k + 8.0) / np.maximum(d_hat, 1e-300)
    level = np.where(frac >= 1.0, np.uint64(2**64 - 1),
                     (np.minimum(frac, 0.5) * 2.0 ** 64).astype(np.uint64))
    cand = pw <= level[uu]
    all_cand = bool(cand.all())
    idx1 = np.arange(m) if all_cand else np.flatnonzero(cand)
    rs, starts, cnt, pu, pg = _cells(idx1, uu, gg, pw, U)
    c_u = np.bincount(pu, minlength=U)
    more_u = np.zeros(U, dtype=bool) if all_cand else \
        r_u > np.bincount(pu, weights=cnt, minlength=U)   # cells beyond the level
    redo_u = more_u & (c_u < k)
    from_pass1 = np.ones(starts.size, dtype=bool)
    if redo_u.any():
        keep1 = ~redo_u[pu]
        rs2, st2, cnt2, pu2, pg2 = _cells(np.flatnonzero(redo_u[uu]), uu, gg, pw, U)
        starts = np.concatenate([starts[keep1], st2 + rs.size])
        rs = np.concatenate([rs, rs2])
        cnt = np.concatenate([cnt[keep1], cnt2])
        pu = np.concatenate([pu[keep1], pu2])
        pg = np.concatenate([pg[keep1], pg2])
        from_pass1 = np.concatenate([np.ones(int(keep1.sum()), bool), np.zeros(st2.size, bool)])
    P = starts.size
    unew = np.empty(P, dtype=bool)
    unew[0] = True
    np.not_equal(pu[1:], pu[:-1], out=unew[1:])
    first = np.flatnonzero(unew)
    rank = np.arange(P) - first[np.cumsum(unew) - 1]
    keep_pair = rank < k
    trunc = (rank >= k) | (keep_pair & (cnt > bounds.max_rows)) | (from_pass1 & more_u[pu])
    truncated_units = int(np.unique(pu[trunc]).size)
    n_units = int(np.count_nonzero(r_u))
    # cells with one row: the row itself
    kp = np.flatnonzero(keep_pair)
    vectors = np.empty((kp.size, d))
    single = cnt[kp] == 1
    one_rows = sel[rs[starts[kp[single]]]]
    vectors[single] = Xv[one_rows] + 0.0              # -0.0 read as 0.0, as in a sum
    kept[one_rows] = True
    multi = kp[~single]
    if multi.size:
        lens = cnt[multi]
        pos = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens - starts[multi], lens)
        cell = np.repeat(np.arange(multi.size), lens)
        rows = sel[rs[pos]]
        R = Xv[rows]
        h = row_digest(R, pw[rs[pos]])
        o = np.lexsort((h, cell))
        cs, hs = cell[o], h[o]
        tie = (cs[1:] == cs[:-1]) & (hs[1:] == hs[:-1])
        if np.any(tie):
            a, b = o[:-1][tie], o[1:][tie]
            if not np.array_equal(R[a] + 0.0, R[b] + 0.0):
                # a 64-bit collision between different rows: order by content too
                o = np.lexsort(tuple(R[:, j] + 0.0 for j in range(d - 1, -1, -1))
                               + (h, cell))
        cs = cell[o]
        cstart = np.cumsum(lens) - lens
        j = np.arange(cs.size) - cstart[cs]
        take = j < bounds.max_rows
        kept[rows[o[take]]] = True
        per = np.minimum(lens, bounds.max_rows)
        acc = np.zeros((multi.size, d))
        Ro = R[o]
        with np.errstate(over="ignore", invalid="ignore"):
            for step in range(int(per.max())):
                live = np.flatnonzero(per > step)
                rows_j = Ro[cstart[live] + step]
                if bounds.per_unit == "mean":
                    rows_j = rows_j / per[live][:, None]
                acc[live] += rows_j                   # the same order on any machine
        vectors[~single] = np.clip(acc, -_FLOAT_MAX, _FLOAT_MAX)
    return vectors, pg[kp], pu[kp], kept, n_units, truncated_units




# ========================================================= one table, by unit
def is_label(value: Any) -> bool:
    """Whether ``value`` is a column label (an int or a str, not a bool)."""
    return isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_))


def column(frame: Any, label: Any, name: str) -> Any:
    """The column ``label`` of a DataFrame (``name`` in messages): exactly one."""
    labels = list(frame.columns)
    hits = [i for i, c in enumerate(labels) if c == label and type(c) is type(label)] or \
        [i for i, c in enumerate(labels) if c == label]
    if not hits:
        raise ValueError(f"{name} names no column of X")
    if len(hits) > 1:
        raise ValueError(f"{name} names a column label X holds twice")
    return frame.iloc[:, hits[0]]


def _is_dask(X: Any) -> bool:
    return type(X).__module__.split(".")[0] in ("dask", "dask_expr")


class UnitRows:
    """The rows of a single-table release grouped by privacy unit.

    Made by :func:`unit_rows` from the public arguments and the table's
    structure (no value read). ``X`` is the value part of the table (a
    DataFrame without its unit column); :meth:`count` reads the ids (the
    number of units, public under replace-one of a unit); :meth:`collapse`
    reads the values and returns one row per unit. Without a privacy unit
    every method is the identity: the release is over rows, as before.
    """

    def __init__(self, X: Any, ids: Any = None, bounds: ContributionBounds | None = None
                 ) -> None:
        self.X = X
        self.ids = ids
        self.bounds = bounds
        self._codes: tuple[np.ndarray, list] | None = None
        self.key: bytes | None = None          # the hashing key, once drawn

    @property
    def active(self) -> bool:
        """Whether the release is over privacy units."""
        return self.bounds is not None

    def read_ids(self, n: int) -> None:
        """Check the ids (one per row of ``n``) and code them (reads the ids,
        not the values); once."""
        if self.bounds is not None and self._codes is None:
            col = ids_structure(self.ids, "privacy_unit", n)
            self._codes = canonical_codes(col, "privacy_unit")

    def count(self, n: int | None) -> int | None:
        """The number of units (``n`` rows; the ids checked and coded), or
        ``n`` itself without a privacy unit."""
        if self.bounds is None or n is None:
            return n
        if self._codes is not None and len(self._codes[0]) != n:
            raise ValueError(f"privacy_unit must have one id per row of X ({n} rows), got "
                             f"{len(self._codes[0])} entries")
        self.read_ids(n)
        assert self._codes is not None
        return len(self._codes[1])

    def box(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The box of one unit's vector: with ``per_unit="sum"`` a sum of
        ``k <= m`` rows of ``[lo, hi]`` lies in ``[min(lo, m lo), max(hi,
        m hi)]`` (``m = max_rows``), the box returned; else ``[lo, hi]``."""
        if self.bounds is None or self.bounds.per_unit != "sum":
            return lo, hi
        m = float(self.bounds.max_rows)
        with np.errstate(over="ignore"):
            lo2, hi2 = np.minimum(lo, m * lo), np.maximum(hi, m * hi)
            ok = np.all(np.isfinite(hi2 - lo2))
        if not ok:
            raise ValueError("lower and upper times max_rows overflow (a unit's sum of "
                             "max_rows rows must have a finite box): narrow the box or lower "
                             "max_rows")
        return lo2, hi2

    def widths(self, widths: np.ndarray) -> np.ndarray:
        """The widths of one unit's vector's box (centred at 0): ``m`` times
        wider with ``per_unit="sum"``, else unchanged."""
        if self.bounds is None or self.bounds.per_unit != "sum":
            return widths
        with np.errstate(over="ignore"):
            out = widths * float(self.bounds.max_rows)
        if not np.all(np.isfinite(out)):
            raise ValueError("widths times max_rows overflow (a unit's sum of max_rows rows "
                             "must have a finite box): narrow the widths or lower max_rows")
        return out

    def collapse(self, data: Any, gen: np.random.Generator | None) -> Any:
        """One vector per unit, in a canonical order (by the rank of the
        unit's id): at most ``max_rows`` of its rows, chosen by keyed hash
        (the key drawn from ``gen``, or from the OS when ``gen`` is None),
        combined by ``per_unit``. Reads the ids, then the values (refusing
        NaN and infinities). Without a privacy unit, ``data`` itself."""
        if self.bounds is None:
            return data
        arr = np.asarray(data, dtype=np.float64)
        self.count(arr.shape[0])
        assert self._codes is not None
        if not np.all(np.isfinite(arr)):
            raise ValueError("X contains NaN or infinite values")
        key = draw_key(gen) if gen is not None else secrets.token_bytes(16)
        self.key = key
        codes, ids = self._codes
        vectors = bound_cells(arr, codes, ids, np.zeros(arr.shape[0], dtype=np.int64), [()],
                              self.bounds, key)[0]
        return vectors

    def describe(self) -> str | None:
        """The record's ``privacy_unit``: None without a unit, else the
        contribution bound in words."""
        if self.bounds is None:
            return None
        return (f"a privacy unit: at most {self.bounds.max_rows} rows each, "
                f"combined by their {self.bounds.per_unit}")

    def mark(self, release: Any) -> Any:
        """``release`` with its ``privacy_unit`` field set (a frozen record)."""
        if self.bounds is None:
            return release
        return dataclasses.replace(release, privacy_unit=self.describe())

    def fold(self, data: Any, gen: np.random.Generator | None, plan: Any, acc: Any
             ) -> tuple[Any, Any]:
        """``(rows, accumulator)`` for a mechanism's pass: without a privacy
        unit ``(data, acc)``; with one, the collapsed rows (:meth:`collapse`)
        and ``plan(units)``, the mechanism's set-up rebuilt for the number
        of units (``acc = plan(n)`` was built for the ``n`` rows, so that
        every public argument was checked before the ids were read). The
        privacy event does not depend on the count (checked)."""
        if self.bounds is None:
            return data, acc
        vectors = self.collapse(data, gen)
        out = plan(vectors.shape[0])
        assert out.privacy_event == acc.privacy_event
        return vectors, out


def unit_rows(X: Any, privacy_unit: Any, max_rows: Any, per_unit: Any,
              statistic: Any) -> UnitRows:
    """Check the privacy-unit arguments of a single-table release against
    the table's structure (no value is read).

    ``privacy_unit`` is a column label of a DataFrame ``X`` (the column is
    then taken out of the values) or an array of one id per row; None: the
    release is over rows, and ``max_rows`` and ``per_unit`` must be None.
    ``max_rows`` (an int ``>= 1``) is required with a unit; ``per_unit``
    defaults to ``statistic`` (``"sum"`` or ``"mean"``). The ids' structure
    is checked here (one per row, a dtype that holds integers or strings);
    their values (none missing, one kind) when they are read, after every
    public argument and before any value of ``X`` (:meth:`UnitRows.fold`).
    """
    if privacy_unit is None:
        for value, name in ((max_rows, "max_rows"), (per_unit, "per_unit")):
            if value is not None:
                raise ValueError(f"{name} bounds the rows of a privacy unit: give "
                                 "privacy_unit too (or leave {name} out)".replace("{name}",
                                                                                  name))
        return UnitRows(X)
    if max_rows is None:
        raise TypeError("max_rows is required with privacy_unit: the public number of rows "
                        "kept per unit")
    pu = V.check_choice(statistic, "statistic", ("sum", "mean")) if per_unit is None \
        else per_unit
    bounds = ContributionBounds(max_rows, 1, pu)
    if _is_dask(X):
        raise TypeError("privacy_unit is not supported for a dask X here: use "
                        "dpsum.tables.private_group_sums on a dask DataFrame (it bounds "
                        "units on the cluster)")
    if V._is_frame(X):
        if is_label(privacy_unit):
            ids = column(X, privacy_unit, "privacy_unit")
            pos = [i for i, c in enumerate(X.columns)
                   if not (c == privacy_unit and type(c) is type(privacy_unit))]
            if len(pos) == X.shape[1]:          # matched by value only (1 == 1.0)
                pos = [i for i, c in enumerate(X.columns) if not c == privacy_unit]
            if not pos:
                raise ValueError("X has no value column besides privacy_unit")
            ids_structure(ids, "privacy_unit", len(X))
            return UnitRows(X.iloc[:, pos], ids, bounds)
        ids_structure(privacy_unit, "privacy_unit", len(X))
        return UnitRows(X, privacy_unit, bounds)
    if is_label(privacy_unit):
        raise TypeError("privacy_unit names a column, but X is not a DataFrame: pass an "
                        "array of one id per row (or a DataFrame X)")
    try:
        n = len(X)                 # the rows of X, where its type tells (no value read)
    except TypeError:
        n = None
    if n is not None:
        ids_structure(privacy_unit, "privacy_unit", n)
    return UnitRows(X, privacy_unit, bounds)


# ============================================================ one bit per unit
class UnitBits(UnitRows):
    """The bits of a count grouped by privacy unit: each unit becomes one
    bit, ``"any"`` (1 if one of its kept rows is 1: the units with the
    property) or ``"mean"`` (1 with probability the mean of its kept rows: a
    randomized rounding, unbiased for the sum of the units' means, its
    uniform the keyed hash of the unit's id, so that a unit's bit depends on
    its own rows and the key only). Either way one unit moves the count by
    at most one, whatever its bit, which is all the count mechanisms' proofs
    use (the rounding's randomness serves the accuracy, not the privacy); a
    unit's sum of bits (up to ``max_rows``) would move it by more."""

    rule: str = "any"

    def collapse_bits(self, bits: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        """One bit per unit (canonical order: by the rank of the id), the
        hashing key drawn from ``gen``. Without a privacy unit, ``bits``
        itself."""
        if self.bounds is None:
            return bits
        col = np.asarray(bits, dtype=np.float64).reshape(-1, 1)
        means = self.collapse(col, gen)[:, 0]
        if self.rule == "any":
            return means > 0.0
        assert self._codes is not None and self.key is not None
        w = words(self._codes[1], self.key, b"dpsum-round")
        uniform = (w >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        return uniform < means


def unit_bits(bits: Any, privacy_unit: Any, max_rows: Any, per_unit: Any) -> UnitBits:
    """Check the privacy-unit arguments of a count of bits (``per_unit``:
    ``"any"``, the default, or ``"mean"``; no value is read)."""
    rule = "any" if per_unit is None or privacy_unit is None else \
        V.check_choice(per_unit, "per_unit", ("any", "mean"))
    rows = unit_rows(bits, privacy_unit, max_rows,
                     per_unit if privacy_unit is None else "mean", "mean")
    out = UnitBits(rows.X, rows.ids, rows.bounds)
    out.rule = rule
    return out
