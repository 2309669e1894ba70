"""The dask path: the same releases on data that does not fit in one machine's memory.

The vector mechanisms of :mod:`dpsum.mechanisms` accept a
:class:`dask.array.Array` of shape ``(n, d)`` and come here. The pass over the
rows runs where the data lives: every row chunk is folded into a fresh
:class:`~dpsum.release.Accumulator` by one task (a map over the chunks),
the partial results are merged by a tree of tasks (``split_every`` partials
per merge), and only the merged accumulator, a few vectors of length ``d``,
reaches the client, which adds the noise once (the appendix
:ref:`At scale <at-scale>`). Nothing gathers the data on one machine. With a
:class:`dask.distributed.Client` active the tasks run on its cluster; without
one, on dask's default scheduler (threads).

The release is the in-memory mechanism's, bit for bit: the same public
set-up, the same noise from the same ``rng``, and the same exact sum (every
row clipped and rounded to a public grid by itself, the integers added
exactly), whatever the chunking and the number of chunks.

The same engine runs any pass (:class:`dpsum.data.Pass`: ``update(block)``
and an exact ``merge``) over a :class:`dpsum.data.Dataset`
(:func:`run_pass`): the steps of :func:`dpsum.pipeline.private_mean` and
the quantile functions of :mod:`dpsum.pipeline` run there, in memory or on a
cluster, with the same result.

dask is an optional dependency (``pip install "dpsum[dask]"``); this module
imports it only when a dask array is actually released, so ``import dpsum``
never needs it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsum import _validation as V
from dpsum.data import Dataset, Pass, as_data, is_dask_array
from dpsum.kernels._compiled import one_thread
from dpsum.release.accumulator import Accumulator

__all__ = [
    "accumulate",
]


#: Partial results merged by one task of the reduction tree.
SPLIT_EVERY = 8


def _dask() -> Any:
    try:
        import dask
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("the dask path needs dask: pip install 'dpsum[dask]'") from None
    return dask


def _non_finite(index: int, start: float, m: int) -> ValueError:
    """The error for a row chunk holding NaN or infinite values: named by
    chunk and rows (when the chunk sizes are known), never by value."""
    rows = "" if math.isnan(start) else f" (rows {int(start)} to {int(start) + m - 1})"
    return ValueError(f"X contains NaN or infinite values in row chunk {index}{rows}")


def _fold_chunk(empty: Accumulator, block: np.ndarray, index: int, start: float) -> Accumulator:
    """The map task: one row chunk folded into the empty accumulator, the
    compiled kernel on this task's thread alone (dask runs a task per core)."""
    try:
        with one_thread():
            return empty.update(block)
    except ValueError:
        arr = np.asarray(block)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise _non_finite(index, start, arr.shape[0]) from None
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
        An empty accumulator with ``d`` columns (a non-empty one is refused:
        the blocks of ``X`` must be the only rows it holds).
    split_every : int
        Fan-in of the merge tree, at least 2.

    Returns
    -------
    Accumulator
        The accumulator of all rows of ``X``, with ``accumulator``'s plan.
        Its sums are private: call :meth:`~dpsum.release.Accumulator.release`.

    Raises
    ------
    ValueError
        If ``X`` has the wrong number of columns, or a chunk holds NaN or
        infinite values (the message names the chunk and its rows).
    """
    if not isinstance(accumulator, Accumulator):
        raise TypeError(f"accumulator must be an Accumulator, got {type(accumulator).__name__}")
    if not accumulator.is_empty:
        raise ValueError("accumulator must be empty (as built by a *_accumulator function, or "
                         "acc.empty()): rows folded into it before would be added to those of "
                         "X, and rows already in X counted twice")
    fan_in = V.check_integer(split_every, "split_every", minimum=2)
    if not is_dask_array(X):
        raise TypeError(f"X must be a dask.array.Array, got {type(X).__name__}")
    # the boundary's checks (metadata only) and one chunk across the columns
    X = as_data(X, "X").rows
    if X.shape[1] != accumulator.d:
        raise ValueError(f"X must have {accumulator.d} columns, as the accumulator, "
                         f"got {X.shape[1]}")
    dask = _dask()
    # keys need not be deterministic (each call computes its own graph):
    # pure=False spares dask tokenizing, i.e. pickling, the plan per task,
    # which at a thousand columns costs about as much as a chunk's kernel
    empty = dask.delayed(accumulator.empty(), pure=False)
    starts = np.concatenate([[0.0], np.cumsum(X.chunks[0], dtype=np.float64)])
    fold = dask.delayed(_fold_chunk, pure=False)
    parts = [fold(empty, block, i, starts[i])
             for i, block in enumerate(X.to_delayed(optimize_graph=True)[:, 0])]
    merge = dask.delayed(_merge_all, pure=False)
    while len(parts) > 1:
        parts = [merge(parts[i:i + fan_in]) for i in range(0, len(parts), fan_in)]
    (total,) = dask.compute(parts[0])
    return accumulator.merge(total)


def _block_state(plan: Any, block: np.ndarray, index: int, start: float) -> Any:
    """The map task of :func:`run_pass`: one row chunk's partial state, after
    refusing NaN and infinite values (named by chunk and rows, never by value)."""
    arr = np.ascontiguousarray(block, dtype=np.float64)    # rows contiguous, as in memory
    if not np.all(np.isfinite(arr)):
        raise _non_finite(index, start, arr.shape[0])
    with one_thread():            # the cluster's tasks already share the cores
        return plan.update(arr)


def _merge_states(plan: Any, parts: list) -> Any:
    """The reduce task of :func:`run_pass`: merge a few partial states."""
    total = parts[0]
    for part in parts[1:]:
        total = plan.merge(total, part)
    return total


def run_pass(plan: Pass, data: Dataset, *, split_every: int = SPLIT_EVERY) -> Any:
    """Apply a pass (:class:`dpsum.data.Pass`) to every row of ``data``.

    In memory, one ``plan.update(rows)``; on a dask array, one task per row
    chunk computes its partial state, a tree of tasks merges ``split_every``
    at a time, and the merged state is computed and returned. The merge is
    exact and order-independent, so the result is the same on both engines
    and under any chunking. A numpy dataset's values must have been checked
    (:meth:`dpsum.data.Dataset.require_finite`); a dask dataset's blocks are
    checked here.
    """
    if not data.is_dask:
        return plan.update(data.rows)
    dask = _dask()
    X = data.rows
    starts = np.concatenate([[0.0], np.cumsum(X.chunks[0], dtype=np.float64)])
    fold = dask.delayed(_block_state, pure=False)     # see accumulate
    parts = [fold(plan, block, i, starts[i])
             for i, block in enumerate(X.to_delayed(optimize_graph=True)[:, 0])]
    if not parts:
        return plan.update(np.empty((0, data.d)))
    merge = dask.delayed(_merge_states, pure=False)
    while len(parts) > 1:
        parts = [merge(plan, parts[i:i + split_every])
                 for i in range(0, len(parts), split_every)]
    (total,) = dask.compute(parts[0])
    return total
