"""The pre-noise statistics of a bounded table: exact per-group sums of the
clipped cell vectors and per-group unit counts (private to :mod:`dpsum.tables`;
shared by the in-memory path and the dask path, which runs it on each
partition of a table shuffled by unit and adds the integers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsum.kernels.grid import EXACT_CHARGE, accumulate_grid, make_grid_plan
from dpsum.tables.units import ContributionBounds, _bounded

__all__ = ["_statistics"]


def _statistics(table: Any, listed: list | None, bounds: ContributionBounds, key: bytes,
                C: float) -> tuple[Any, list, int, np.ndarray]:
    """The pre-noise statistics: the bounded table, each group's exact sum of
    clipped, grid-rounded cell vectors (Python integers in units of ``2^K``),
    ``K``, and each group's unit count. **Private**."""
    plan, K, kk = make_grid_plan(C, np.ones(table.d), None, table.d, EXACT_CHARGE)
    b = _bounded(table, listed, bounds, key)
    G = len(b.groups)
    order = np.argsort(b.group_index, kind="stable")
    vec = np.ascontiguousarray(b.vectors[order])
    ends = np.cumsum(np.bincount(b.group_index, minlength=G))
    zero = [0] * table.d
    sums = []
    start = 0
    for g in range(G):
        S = accumulate_grid(vec[start:ends[g]], plan, kk)[0] if ends[g] > start else zero
        sums.append([int(s) for s in S])
        start = int(ends[g])
    return b, sums, K, np.bincount(b.group_index, minlength=G)
