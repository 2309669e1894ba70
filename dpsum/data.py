"""The data boundary: a dataset validated and converted once, on its way in.

Every release function that reads rows (the vector mechanisms of
:mod:`dpsum.mechanisms`, :func:`dpsum.pipeline.private_mean` and
:func:`dpsum.pipeline.private_sum`) turns its ``X`` into a :class:`Dataset`
with :func:`as_data`, before anything else reads it. The dataset holds float64
rows, either a numpy array in memory or a dask array chunked along the rows
only (each row must be clipped as a whole), the column labels of a pandas or
dask DataFrame, the row count (None for a dask array whose chunk sizes are
unknown). Privacy units are folded before the boundary
(:mod:`dpsum._units`: one row per unit), so a dataset's rows are always
the units the neighbouring relation speaks of.

Only the type, the shape and the dtypes are checked here; a numpy array's
values are read by the first pass over it, and a dask array's by every pass,
block by block (a pass refuses NaN and infinite values, naming ``X``). A
pandas DataFrame is the exception: it is converted column by column, so that
an error names the column, never a row or a value.

dask is never imported here: a dask array is recognised only if
``dask.array`` was already imported (otherwise ``X`` cannot be one).

A **pass** over a dataset is any object with ``update(block) -> state`` (the
partial state of a block of float64 rows, shape ``(m, d)``, ``m >= 0``) and
``merge(a, b) -> state`` (exact and order-independent: integer sums, or
per-row values that the step sorts), see :class:`Pass`;
:func:`dpsum.engines.dask.run_pass` applies one to a dataset in memory or on
a dask cluster.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any, Callable, Protocol, TypeVar

import numpy as np

from dpsum import _validation as V

# the two names a caller needs; Pass, RowCount, RowValues and is_dask_array
# are the release functions' building blocks
__all__ = ["Dataset", "as_data"]


S = TypeVar("S")


class Pass(Protocol[S]):
    """A pass over the rows: the partial state of a block and an exact merge.

    ``update(block)`` must be a function of the block's rows one by one (or of
    their multiset), and ``merge`` associative, commutative and exact, so that
    the state of a dataset is the same whatever its split into blocks, their
    order and the engine.
    """

    def update(self, block: np.ndarray) -> S:
        ...

    def merge(self, a: S, b: S) -> S:
        ...


def is_dask_array(X: Any) -> bool:
    """Whether ``X`` is a :class:`dask.array.Array` (without importing dask:
    if ``dask.array`` was never imported, ``X`` cannot be one)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(X, module.Array)


def _is_dask_frame(X: Any) -> bool:
    """Whether ``X`` is a dask DataFrame (without importing dask)."""
    module = sys.modules.get("dask.dataframe")
    return module is not None and isinstance(X, module.DataFrame)


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
    """A dataset at the boundary: validated type and shape, float64 rows.

    Attributes
    ----------
    rows : numpy.ndarray or dask.array.Array, shape (n, d)
        float64 rows, C-contiguous (each block of a dask array is made so
        by the passes); a dask array has one chunk across the columns.
    columns : tuple or None
        The column labels of a DataFrame.
    n : int or None
        The number of rows; None for a dask array with unknown chunk sizes.
        **Private** under add-remove neighbouring: only passes read it there.
    d : int
        The number of columns, at least 1.
    """

    rows: Any
    columns: tuple | None
    n: int | None
    d: int

    @property
    def is_dask(self) -> bool:
        """Whether the rows are a dask array (passes then run on its blocks)."""
        return not isinstance(self.rows, np.ndarray)

    def require_finite(self, name: str = "X") -> None:
        """Refuse NaN or infinite values in an in-memory dataset (a read of its
        values; a dask dataset's blocks are checked by every pass)."""
        if not self.is_dask and not np.all(np.isfinite(self.rows)):
            raise ValueError(f"{name} contains NaN or infinite values")


def as_data(X: Any, name: str = "X") -> Dataset:
    """``X`` as a :class:`Dataset`: a numpy array (or nested sequence), a
    pandas DataFrame or Series, a dask array or a dask DataFrame.

    Checks the type, the shape (2-d, at least one column; no rows is allowed,
    the caller applies the rule of its neighbouring relation) and the dtypes;
    errors name ``name`` (a DataFrame's, the column), never a value.

    Examples
    --------
    >>> data = as_data([[1.0, 2.0], [3.0, 4.0]])
    >>> data.n, data.d, data.columns, data.rows.dtype
    (2, 2, None, dtype('float64'))
    """
    if _is_dask_frame(X):
        labels = tuple(X.columns)
        if not labels:
            raise ValueError(f"{name} must have at least one column")
        if len(set(map(str, labels))) != len(labels):
            raise ValueError(f"{name} must have distinct column labels")
        for label, dtype in zip(labels, X.dtypes):
            kind = getattr(dtype, "kind", "O")
            if kind == "b" or kind not in "iuf":
                raise TypeError(f"{name} column {str(label)!r} must hold real numbers, "
                                f"got dtype {dtype}")
        return _dask_data(X.to_dask_array(), name, labels)
    if is_dask_array(X):
        return _dask_data(X, name, None)
    if V.column_labels(X) is not None:
        frame, columns = V.as_dataset(X, name, empty_rows=True)
        return Dataset(frame, columns, int(frame.shape[0]), int(frame.shape[1]))
    arr = V.as_real_array(X, name)
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be 2-dimensional with at least one column, "
                         f"got shape {arr.shape}")
    # rows contiguous in memory (a copy only of a column-major array): every
    # per-row value is then computed in the same order whatever the layout
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return Dataset(arr, None, int(arr.shape[0]), int(arr.shape[1]))


def _dask_data(X: Any, name: str, labels: tuple | None) -> Dataset:
    """A dask array's metadata checked (nothing computed), its dtype made
    float64 and its column chunks merged, lazily."""
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional, got shape {X.shape}")
    if X.dtype == np.bool_ or X.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    d = X.shape[1]
    if math.isnan(d) or d == 0:
        raise ValueError(f"{name} must have a known, positive number of columns, "
                         f"got shape {X.shape}")
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if len(X.chunks[1]) > 1:
        rows = "auto" if not any(math.isnan(c) for c in X.chunks[0]) else None
        X = X.rechunk({0: rows, 1: -1}) if rows else X.rechunk({1: -1})
    n = X.shape[0]
    return Dataset(X, labels, None if math.isnan(n) else int(n), int(d))


@dataclasses.dataclass(frozen=True)
class RowCount:
    """The number of rows."""

    def update(self, block: np.ndarray) -> int:
        return int(block.shape[0])

    def merge(self, a: int, b: int) -> int:
        return a + b


@dataclasses.dataclass(frozen=True, eq=False)
class RowValues:
    """The per-row values ``values(block, *args)`` of an order-statistic step,
    shape ``(m, k)``; merged by concatenation (the step sorts them)."""

    values: Callable[..., np.ndarray]
    args: tuple

    def update(self, block: np.ndarray) -> np.ndarray:
        return self.values(block, *self.args)

    def merge(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a, b], axis=0)
