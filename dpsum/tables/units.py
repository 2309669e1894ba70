"""Privacy units and contribution bounds: from rows to one vector per unit and group.

A table often holds several rows per person (a customer's purchases, a
user's sessions). Protecting a *privacy unit* means protecting all of its
rows at once. Before anything is summed, each unit's influence is bounded
(the chapter *From rows to people*):

1. each unit keeps at most ``max_groups`` of the groups it has rows in;
2. in each kept group it keeps at most ``max_rows`` rows;
3. its kept rows in a group are combined into **one** vector (their sum or
   their mean, ``per_unit``), and that vector, not each row, is later
   clipped to the L2 radius ``C`` like one row of the single-table
   mechanisms.

Removing a unit then changes at most ``max_groups`` per-group sums, each by
one clipped vector: the L2 sensitivity across groups is
``sqrt(max_groups) C`` (``2 C sqrt(max_groups)`` when a unit is replaced).

**Random, but not by position.** Which groups and rows are kept is decided
by keyed hashes (:mod:`dpsum._units`): a group's rank in a unit is
the order of ``H(unit, group)`` and a row's rank in its (unit, group) cell
the order of ``H(unit, group, row content)``, with a 128-bit key drawn from
the release's ``rng``. For a fixed key the kept rows of a unit depend on that
unit's rows only, never on the row order, the other units or how the table
is split into blocks; over the key, each unit's kept groups and rows are a
uniformly random subset (identical rows of one cell are interchangeable).
Never "the first ``k`` rows".
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dpsum import _validation as V
from dpsum import _units as H
from dpsum._units import BoundedContributions, ContributionBounds, bound_cells

__all__ = ["ContributionBounds", "BoundedContributions", "bound_contributions"]

# ----------------------------------------------------------------- inputs
def _labels_arg(value: Any, name: str) -> list:
    """``by`` or ``columns`` given as labels: one label or a list of them."""
    if isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (str, int, np.integer)) and not isinstance(v, (bool, np.bool_))
            for v in value):
        return list(value)
    raise TypeError(f"{name} must be a column label of X or a non-empty list of them, got "
                    f"{V.describe(value)}")


class _Table(NamedTuple):
    """The structure of a table, checked without reading a value."""
    X: Any                     # the value columns (a frame or an array)
    units: Any                 # the unit id column
    keys: list                 # the group key columns (empty: one group)
    by_names: tuple            # labels of the group columns
    columns: tuple | None      # labels of the value columns
    n: int
    d: int


def table_structure(X: Any, privacy_unit: Any, by: Any, columns: Any) -> _Table:
    """Check the shapes and labels of ``X``, ``privacy_unit``, ``by`` and
    ``columns`` (no data value is read)."""
    if V._is_frame(X):
        n = len(X)
        unit_label = None
        if isinstance(privacy_unit, (str, int, np.integer)) and \
                not isinstance(privacy_unit, (bool, np.bool_)):
            units = H.column(X, privacy_unit, "privacy_unit")
            unit_label = privacy_unit
        else:
            units = H.ids_structure(privacy_unit, "privacy_unit", n)
        by_labels: list = []
        if by is None:
            keys: list = []
        elif isinstance(by, (list, tuple, str, int, np.integer)) and \
                not isinstance(by, (bool, np.bool_)):
            by_labels = _labels_arg(by, "by")
            keys = [H.column(X, b, "by") for b in by_labels]
        else:
            keys = [H.ids_structure(by, "by", n)]
        for k in keys:
            H.ids_structure(k, "by", n)
        H.ids_structure(units, "privacy_unit", n)
        used = {unit_label, *by_labels} - {None}
        if columns is None:
            names = [c for c in X.columns if c not in used]
        else:
            names = _labels_arg(columns, "columns")
            for c in names:
                H.column(X, c, "columns")
            if used & set(names):
                raise ValueError("columns must not include the privacy_unit or by columns")
            if len(set(map(str, names))) != len(names):
                raise ValueError("columns must not repeat a label")
        if not names:
            raise ValueError("X has no value column besides privacy_unit and by: name them "
                             "with columns")
        for c in names:
            kind = getattr(H.column(X, c, "columns").dtype, "kind", "O")
            if kind == "b" or kind not in "iuf":
                raise TypeError(f"X column {str(c)!r} must hold real numbers, got another dtype "
                                "(name the value columns with columns)")
        by_names = tuple(by_labels) if by_labels else (("group",) if keys else ())
        return _Table(X, units, keys, by_names, tuple(names), n, len(names))
    if columns is not None:
        raise TypeError("columns selects columns of a DataFrame X; X is an array (select its "
                        "columns before the call)")
    arr = V.as_real_array(X, "X")
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"X must be 2-dimensional with at least one column, got shape "
                         f"{arr.shape}")
    n = arr.shape[0]
    if isinstance(privacy_unit, (str, int, np.integer)) and \
            not isinstance(privacy_unit, (bool, np.bool_, np.ndarray)):
        raise TypeError("privacy_unit names a column, but X is an array: pass an array of "
                        "one id per row (or a DataFrame X)")
    units = H.ids_structure(privacy_unit, "privacy_unit", n)
    if by is None:
        keys = []
    elif isinstance(by, (str, int, np.integer)) and not isinstance(by, (bool, np.bool_)):
        raise TypeError("by names a column, but X is an array: pass an array of one group "
                        "key per row (or a DataFrame X)")
    else:
        keys = [H.ids_structure(by, "by", n)]
    return _Table(arr, units, keys, ("group",) if keys else (), None, n, arr.shape[1])


def check_groups(groups: Any, n_keys: int | None) -> list | None:
    """The public group list: None, or a non-empty list of distinct keys
    (ints or strs; tuples of them for several ``by`` columns)."""
    if groups is None:
        return None
    if isinstance(groups, (str, bytes)) or not isinstance(groups, (list, tuple, np.ndarray)) \
            or isinstance(groups, np.ma.MaskedArray):
        raise TypeError(f"groups must be a list of group keys, got {V.describe(groups)}")
    out = []
    for g in (groups.tolist() if isinstance(groups, np.ndarray) else groups):
        if isinstance(g, (tuple, list)):
            parts = [H.plain_id(v) for v in g]
            if not parts or any(p is None for p in parts):
                raise TypeError("groups must hold integer or string keys (tuples of them for "
                                "several by columns)")
            out.append(tuple(parts))
        else:
            p = H.plain_id(g)
            if p is None:
                raise TypeError("groups must hold integer or string keys (tuples of them for "
                                "several by columns)")
            out.append(p)
    if not out:
        raise ValueError("groups must list at least one group (or be None: private group "
                         "discovery)")
    if len(set(out)) != len(out):
        raise ValueError("groups must not list a group twice")
    if n_keys is not None:
        want = n_keys if n_keys > 1 else 1
        for g in out:
            width = len(g) if isinstance(g, tuple) else 1
            if width != want:
                raise ValueError(f"groups must hold keys of {want} part(s), one per by column")
        if n_keys == 0:
            raise ValueError("groups needs by (the column(s) that hold the group keys)")
    return out


class _Rows:
    """The value columns of a checked table, read by rows on demand: the
    bounding pass gathers only the rows it keeps (a DataFrame's float64
    columns are read in place, never copied whole)."""

    def __init__(self, cols: list[np.ndarray]) -> None:
        self.cols = cols
        self.shape = (cols[0].shape[0] if cols else 0, len(cols))

    def __getitem__(self, idx: np.ndarray) -> np.ndarray:
        out = np.empty((len(self.cols), len(idx)))
        for j, c in enumerate(self.cols):
            np.take(c, idx, out=out[j])              # contiguous writes
        return np.ascontiguousarray(out.T)


def _values(table: _Table) -> Any:
    """The value columns, checked finite (reads the data); an array, or for
    a DataFrame a :class:`_Rows` over its columns."""
    if table.columns is None:
        arr = table.X
        if not np.all(np.isfinite(arr)):
            raise ValueError("X contains NaN or infinite values")
        return np.ascontiguousarray(arr, dtype=np.float64)
    cols = []
    for c in table.columns:
        col = H.column(table.X, c, "columns")
        if getattr(col.dtype, "kind", "O") == "f" and col.dtype == np.float64:
            v = np.asarray(col.to_numpy(copy=False))
        else:
            v = np.asarray(col.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
        if not np.isfinite(v).all():
            raise ValueError(f"X column {str(c)!r} contains NaN or infinite values")
        cols.append(v)
    return _Rows(cols)


def _group_codes(table: _Table, groups: list | None) -> tuple[np.ndarray, list]:
    """Canonical group code of each row (-1: not a listed group) and the labels."""
    n = table.n
    if not table.keys:
        labels: list = [()] if groups is None else list(groups)
        return np.zeros(n, dtype=np.int64), labels
    parts = [H.canonical_codes(k, "by") for k in table.keys]
    if len(parts) == 1:
        codes, labels = parts[0]
    else:
        stacked = np.stack([c for c, _ in parts], axis=1)
        uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
        codes = inv.astype(np.int64).ravel()
        labels = [tuple(parts[j][1][int(r[j])] for j in range(len(parts))) for r in uniq]
    if groups is None:
        return codes, labels
    where = {g: i for i, g in enumerate(groups)}
    dmap = np.array([where.get(lab, -1) for lab in labels] or [-1], dtype=np.int64)
    return (dmap[codes] if codes.size else codes), list(groups)


def bound_contributions(X: Any, *, privacy_unit: Any, bounds: ContributionBounds,
                        key: bytes, by: Any = None, columns: Any = None,
                        groups: Any = None) -> BoundedContributions:
    """Bound each privacy unit's contribution: at most ``max_groups`` groups
    and ``max_rows`` rows per group, combined into one vector per group.

    A pure function of the table and the public ``bounds`` and ``key``; the
    mechanisms of :mod:`dpsum.tables` draw ``key`` from their ``rng``.

    Parameters
    ----------
    X : numpy.ndarray, shape (n, d), or pandas.DataFrame
        The rows (finite). A DataFrame may hold the unit and group columns.
    privacy_unit : column label or array_like, shape (n,)
        Each row's unit id: integers or strings (no missing id, one kind).
    bounds : ContributionBounds
        The public bounds.
    key : bytes
        The 128-bit hashing key (16 bytes) that decides the random choices.
    by : column label, list of labels or array_like, optional
        The group key(s) of each row; None puts every row in one group.
    columns : list of labels, optional
        The value columns of a DataFrame (default: all but ``privacy_unit``
        and ``by``).
    groups : list, optional
        Public groups: rows of other groups are dropped before bounding.

    Returns
    -------
    BoundedContributions
        **Private** (see its fields).

    Examples
    --------
    Unit 7 has three rows in group 0 and keeps two of them (which two
    depends on the key); unit 8 keeps its one row:

    >>> X = np.array([[1.0], [2.0], [3.0], [4.0]])
    >>> b = bound_contributions(X, privacy_unit=[7, 7, 7, 8], by=[0, 0, 0, 1],
    ...                         bounds=ContributionBounds(max_rows=2, max_groups=1),
    ...                         key=bytes(16))
    >>> b.vectors.shape[0], int(b.kept.sum()), b.truncated_units
    (2, 3, 1)
    """
    if not isinstance(bounds, ContributionBounds):
        raise TypeError(f"bounds must be a ContributionBounds, got {V.describe(bounds)}")
    k = H.check_key(key)
    table = table_structure(X, privacy_unit, by, columns)
    listed = check_groups(groups, len(table.keys))
    return _bounded(table, listed, bounds, k)


def _bounded(table: _Table, listed: list | None, bounds: ContributionBounds,
             key: bytes) -> BoundedContributions:
    """Read the data of a checked table and bound it."""
    g, labels = _group_codes(table, listed)
    u, unit_ids = H.canonical_codes(table.units, "privacy_unit")
    Xv = _values(table)
    vec, gi, ui, kept, n_units, trunc = bound_cells(Xv, u, unit_ids, g, labels, bounds, key)
    return BoundedContributions(vec, gi, ui, tuple(labels), table.columns, kept, n_units,
                                trunc)
