"""The dask path: the same releases on data that does not fit in one machine's memory.

The vector mechanisms of :mod:`dpsum.mechanisms` accept a
:class:`dask.array.Array` of shape ``(n, d)`` and come here. The pass over the
rows runs where the data lives: every row chunk is folded into a fresh
:class:`~dpsum.accumulator.Accumulator` by one task (a map over the chunks),
the partial results are merged by a tree of tasks (``split_every`` partials
per merge), and only the merged accumulator, a few vectors of length ``d``,
reaches the client, which adds the noise once (book appendix "At scale",
``book/16_at_scale``). Nothing gathers the data on one machine. With a
:class:`dask.distributed.Client` active the tasks run on its cluster; without
one, on dask's default scheduler (threads).

The release is the in-memory mechanism's: the same public set-up, the same
noise from the same ``rng``, and a clipped sum that differs from the
in-memory one only by the rounding of the different summation order
(:func:`dpsum.accumulator.merged_sum_rounding_bound`).

dask is an optional dependency (``pip install "dpsum[dask]"``); this module
imports it only when a dask array is actually released, so ``import dpsum``
never needs it.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as V
from .accumulator import (
    Accumulator,
    _ClampedSum,
    _ClippedSum,
    _GridClippedSum,
    clipped_gaussian_accumulator,
    elliptical_gaussian_accumulator,
    gaussian_data_accumulator,
)
from .privacy import Neighbouring
from .release import Mechanism, Release

__all__ = [
    "is_dask_array",
    "accumulate",
    "gaussian_data_mechanism",
    "clipped_gaussian_mechanism",
    "elliptical_gaussian_mechanism",
    "release_diagnostics",
]

#: Partial results merged by one task of the reduction tree.
SPLIT_EVERY = 8


def is_dask_array(X: Any) -> bool:
    """Whether ``X`` is a :class:`dask.array.Array` (without importing dask:
    if ``dask.array`` was never imported, ``X`` cannot be one)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(X, module.Array)


def _dask() -> Any:
    try:
        import dask
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("the dask path needs dask: pip install 'dpsum[dask]'") from None
    return dask


def _check_matrix(X: Any) -> Any:
    """``X`` as a dask array of real rows, one chunk across the columns.

    Checks only metadata (shape, dtype, chunks): nothing is computed. A
    chunking along the columns is undone by a rechunk (each row must be
    clipped as a whole), with the row chunks chosen by dask's
    ``array.chunk-size`` setting.
    """
    if not is_dask_array(X):
        raise TypeError(f"X must be a dask.array.Array, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
    if X.dtype == np.bool_ or X.dtype.kind not in "iuf":
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    d = X.shape[1]
    if math.isnan(d) or d == 0:
        raise ValueError(f"X must have a known, positive number of columns, got shape {X.shape}")
    if len(X.chunks[1]) > 1:
        rows = "auto" if not any(math.isnan(c) for c in X.chunks[0]) else None
        X = X.rechunk({0: rows, 1: -1}) if rows else X.rechunk({1: -1})
    return X


def _public_rows(X: Any, relation: Neighbouring) -> int | None:
    """The row count under replace-one (public there, and needed), else None."""
    if relation is Neighbouring.ADD_REMOVE:
        return None
    n = X.shape[0]
    if math.isnan(n):
        raise ValueError("X must have known chunk sizes under replace-one neighbouring (the "
                         "number of rows is public there): call X.compute_chunk_sizes()")
    if n == 0:
        raise ValueError("X must hold at least one row under replace-one neighbouring (the "
                         "empty dataset has no replace-one neighbour); use "
                         "neighbouring='add-remove'")
    return int(n)


def _fold_chunk(empty: Accumulator, block: np.ndarray, index: int, start: float) -> Accumulator:
    """The map task: one row chunk folded into the empty accumulator."""
    try:
        return empty.update(block)
    except ValueError:
        arr = np.asarray(block)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            rows = "" if math.isnan(start) else \
                f" (rows {int(start)} to {int(start) + arr.shape[0] - 1})"
            raise ValueError(f"X contains NaN or infinite values in row chunk {index}{rows}"
                             ) from None
        raise


def _merge_all(parts: list[Accumulator]) -> Accumulator:
    """The reduce task: merge a few partial results."""
    total = parts[0]
    for part in parts[1:]:
        total = total.merge(part)
    return total


def accumulate(X: Any, accumulator: Accumulator, *, split_every: int = SPLIT_EVERY
               ) -> Accumulator:
    """Fold every row of the dask array ``X`` into ``accumulator``, on the cluster.

    One task per row chunk calls ``accumulator.update(chunk)``; a tree of
    tasks merges ``split_every`` partial results at a time; the merged
    accumulator is computed and returned. Only accumulators (a few
    ``d``-vectors each) move between workers and to the client.

    Parameters
    ----------
    X : dask.array.Array, shape (n, d)
        Real rows, chunked along the rows (a chunking along the columns is
        rechunked).
    accumulator : Accumulator
        An accumulator with ``d`` columns, usually empty.
    split_every : int
        Fan-in of the merge tree, at least 2.

    Returns
    -------
    Accumulator
        ``accumulator`` merged with the accumulator of all rows of ``X``.
        Its sums are private: call :meth:`~dpsum.accumulator.Accumulator.release`.

    Raises
    ------
    ValueError
        If ``X`` has the wrong number of columns, or a chunk holds NaN or
        infinite values (the message names the chunk and its rows).
    """
    if not isinstance(accumulator, Accumulator):
        raise TypeError(f"accumulator must be an Accumulator, got {type(accumulator).__name__}")
    fan_in = V.check_integer(split_every, "split_every", minimum=2)
    X = _check_matrix(X)
    if X.shape[1] != accumulator.d:
        raise ValueError(f"X must have {accumulator.d} columns, as the accumulator, "
                         f"got {X.shape[1]}")
    dask = _dask()
    empty = dask.delayed(accumulator._with(accumulator._zero(), 0, 0), pure=True)
    starts = np.concatenate([[0.0], np.cumsum(X.chunks[0], dtype=np.float64)])
    fold = dask.delayed(_fold_chunk, pure=True)
    parts = [fold(empty, block, i, starts[i])
             for i, block in enumerate(X.to_delayed(optimize_graph=True)[:, 0])]
    merge = dask.delayed(_merge_all, pure=True)
    while len(parts) > 1:
        parts = [merge(parts[i:i + fan_in]) for i in range(0, len(parts), fan_in)]
    (total,) = dask.compute(parts[0])
    return accumulator.merge(total)


def gaussian_data_mechanism(X: Any, *, epsilon: float, delta: float, stds: ArrayLike,
                            center: ArrayLike | None = None,
                            clip_probability: float | None = None,
                            scaling: str | ArrayLike = "optimal",
                            neighbouring: Neighbouring | str = "replace",
                            rng: Any = None, return_diagnostics: bool = False,
                            secure: bool = False) -> Release:
    """Algorithm 3 on a dask array: :func:`dpsum.mechanisms.gaussian_data_mechanism`
    with the pass on the cluster. Arguments and result as there (``secure=True``
    takes the grid path, whose integer sums merge exactly); the number of
    rows ``n`` (public under replace-one) is read from ``X.shape``. The
    deprecated ``return_diagnostics=True`` is refused: call
    :func:`release_diagnostics`."""
    V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)
    _refuse_diagnostics(return_diagnostics)
    relation = Neighbouring.parse(neighbouring)
    X = _check_matrix(X)
    acc = gaussian_data_accumulator(
        _vector(stds, X.shape[1]), epsilon=epsilon, delta=delta, center=center,
        clip_probability=clip_probability, n=_public_rows(X, relation), scaling=scaling,
        neighbouring=relation, secure=secure)
    gen = _rng(rng, secure)                  # checked before the pass
    return accumulate(X, acc).release(gen)


def clipped_gaussian_mechanism(X: Any, *, epsilon: float, delta: float, clip_norm: float,
                               neighbouring: Neighbouring | str = "replace",
                               rng: Any = None, return_diagnostics: bool = False,
                               secure: bool = False) -> Release:
    """The clipping baseline on a dask array:
    :func:`dpsum.mechanisms.clipped_gaussian_mechanism` with the pass on the
    cluster."""
    V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)
    _refuse_diagnostics(return_diagnostics)
    relation = Neighbouring.parse(neighbouring)
    V.check_positive(clip_norm, "clip_norm", scalar=True)
    X = _check_matrix(X)
    acc = clipped_gaussian_accumulator(X.shape[1], epsilon=epsilon, delta=delta,
                                       clip_norm=clip_norm, neighbouring=relation,
                                       n=_public_rows(X, relation), secure=secure)
    gen = _rng(rng, secure)                  # checked before the pass
    return accumulate(X, acc).release(gen)


def elliptical_gaussian_mechanism(X: Any, *, epsilon: float, delta: float, widths: ArrayLike,
                                  rng: Any = None, return_diagnostics: bool = False,
                                  secure: bool = False) -> Release:
    """Algorithm 2 on a dask array:
    :func:`dpsum.mechanisms.elliptical_gaussian_mechanism` with the pass on
    the cluster (replace-one)."""
    V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)
    _refuse_diagnostics(return_diagnostics)
    X = _check_matrix(X)
    acc = elliptical_gaussian_accumulator(_vector(widths, X.shape[1], "widths"),
                                          epsilon=epsilon, delta=delta,
                                          n=_public_rows(X, Neighbouring.REPLACE),
                                          secure=secure)
    gen = _rng(rng, secure)                  # checked before the pass
    return accumulate(X, acc).release(gen)


def _rng(rng: Any, secure: bool) -> Any:
    """``rng`` checked before the pass; on the grid path ``None`` stays None
    (the operating system's secure generator)."""
    return None if rng is None and secure else V.check_rng(rng)


def _vector(v: ArrayLike, d: int, name: str = "stds") -> np.ndarray:
    return V.check_vector(v, name, d, positive=True)


def _refuse_diagnostics(return_diagnostics: Any) -> None:
    if V.check_bool(return_diagnostics, "return_diagnostics"):
        raise ValueError("return_diagnostics is deprecated and not supported on the dask "
                         "path; call dpsum.mechanisms.release_diagnostics(X, release)")


def release_diagnostics(X: Any, release: Release) -> dict[str, int]:
    """:func:`dpsum.mechanisms.release_diagnostics` on a dask array: the rows
    clipped or values clamped, counted on the cluster with the release's own
    kernel and parameters. **Not differentially private.**"""
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpsum Release, got {type(release).__name__}")
    X = _check_matrix(X)
    if release.mechanism is Mechanism.ELLIPTICAL_GAUSSIAN:
        return {"clamped_values": accumulate(X, _ClampedSum(release, None)).diagnostic_count}
    if release.mechanism in (Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN):
        # the grid kernel clips a hair below C: count with the release's own kernel
        kind = _GridClippedSum if release.secure else _ClippedSum
        return {"clipped_rows": accumulate(X, kind(release, None)).diagnostic_count}
    raise ValueError(f"release_diagnostics has nothing to count for a {release.mechanism} "
                     "release (it neither clips nor clamps)")
