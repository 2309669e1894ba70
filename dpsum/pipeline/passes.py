"""The pipeline's passes over the data: every step that reads ``X``, as a plan.

Each step of :func:`dpsum.pipeline.private_mean` that reads the rows is a
small frozen plan with ``update(block) -> state`` (the partial state of a
block of float64 rows) and ``merge(a, b) -> state``, exact and
order-independent (:class:`dpsum.data.Pass`):

- :class:`dpsum.data.RowCount` — the number of rows (an integer);
- :class:`dpsum.data.RowValues` — the per-row values of an order-statistic
  step (the coordinate-wise center, the scales, a norm quantile): merged by
  concatenation, sorted by the step's exponential mechanism, so that only
  their multiset matters;
- :class:`NearCount` — the rows within a public distance of a point (the
  whole-vector center's decision);
- :class:`Displacement` — the bias check's integer sum of per-row clipping
  displacements;
- :class:`SignedDisplacement` — the veto's integer sums: the signed
  displacement vectors, each capped at a public norm, and their norms;
- :class:`CheckAndVeto` — the two above in one reading of the data;
- :class:`Fold` — an accumulator's ``update`` on each block and ``merge``
  (:func:`dpsum.release.accumulator.deviation_accumulator`: the exact
  clipped sum of the scaled deviations ``(x - c) ⊙ b`` on a public grid, with
  the rows clipped and outside the box): the last step, the box fallback and
  the whole-vector center's moves, released by the accumulator's
  ``release``.

:func:`dpsum.engines.dask.run_pass` applies a plan to a
:class:`dpsum.data.Dataset`: one ``update`` in memory, a map over the blocks
and a tree of merges on a dask array. Each per-row value is a function of
its row alone, computed element-wise or in an order fixed per row, so the
merged state, and every release computed from it, is the same whatever the
engine and the chunking. The noise of each step is drawn by its finishing
function in ``dpsum.pipeline.mean`` (or the accumulator's ``release``),
once, after the pass.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpsum.pipeline.quantiles import row_norms
from dpsum.release.accumulator import Accumulator

__all__: list[str] = []


@dataclasses.dataclass(frozen=True, eq=False)
class NearCount:
    """The rows with ``||x - point|| <= radius``."""

    point: np.ndarray
    radius: float

    def update(self, block: np.ndarray) -> int:
        return int(np.count_nonzero(row_norms(block, self.point, None) <= self.radius))

    def merge(self, a: int, b: int) -> int:
        return a + b


def _displacements(block: np.ndarray, C: float, b: np.ndarray, c: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the clip factor's complement ``1 - min(1, C / ||x̂_i||)`` and
    the clipping displacement ``r_i`` in the data's units (NaN where a norm
    overflows), from the row alone."""
    scaled = row_norms(block, c, b)
    dist = row_norms(block, c, None)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        factor = np.where(scaled > C, 1.0 - C / scaled, 0.0)
        return factor, factor * dist


@dataclasses.dataclass(frozen=True, eq=False)
class Displacement:
    """The bias check's data part: the integer sum over the rows of
    ``floor(min(r_i, D) / D 2^bits)``, ``r_i = (1 - min(1, C / ||x̂_i||)) ||x_i - c||``
    the row's clipping displacement (``x̂_i = (x_i - c) ⊙ b``), each term an
    integer in ``[0, 2^bits]`` computed from its own row."""

    clip_norm: float
    scaling: np.ndarray
    center: np.ndarray
    diameter: float
    bits: int

    def update(self, block: np.ndarray) -> int:
        _, r = _displacements(block, self.clip_norm, self.scaling, self.center)
        return self.total(r)

    def total(self, r: np.ndarray) -> int:
        """The block's sum from its rows' displacements ``r`` (NaN: unbounded)."""
        D = self.diameter
        with np.errstate(invalid="ignore", over="ignore"):
            r = np.minimum(np.where(np.isnan(r), D, r), D)
        units = np.floor(r / D * 2.0 ** self.bits).astype(np.int64)
        units = np.clip(units, 0, 2 ** self.bits)
        return int(np.sum(units, dtype=np.int64))

    def merge(self, a: int, b: int) -> int:
        return a + b


@dataclasses.dataclass(frozen=True, eq=False)
class SignedDisplacement:
    """The veto's data part: the exact integer sums over the rows of the
    clipping displacement ``delta_i = (1 - min(1, C / ||x̂_i||)) (x_i - c)``
    capped at the norm ``cap`` (``delta_i min(1, cap / ||delta_i||)``) and of
    its capped norm ``min(r_i, cap)``, both on the grid ``cap 2^-bits``
    (each coordinate truncated towards zero, the norm floored): per row an
    integer vector of norm at most ``2^bits`` and an integer in
    ``[0, 2^bits]``, computed from its own row. The state is the ``d + 1``
    sums (Python ints), the norms' last."""

    clip_norm: float
    scaling: np.ndarray
    center: np.ndarray
    cap: float
    bits: int

    def update(self, block: np.ndarray) -> tuple:
        factor, r = _displacements(block, self.clip_norm, self.scaling, self.center)
        return self.total(block, factor, r)

    def total(self, block: np.ndarray, factor: np.ndarray, r: np.ndarray) -> tuple:
        """The block's sums from its rows' clip factors and displacements."""
        K, top = self.cap, 2 ** self.bits
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = np.where(np.isnan(r), np.inf, r)
            # the vector's factor, a hair below the cap so that the truncated
            # integer vector's norm is at most 2^bits whatever the rounding
            shrink = np.where(r > K, K / r, 1.0) * factor * (1.0 - 2.0 ** -40)
            v = np.trunc((block - self.center) * shrink[:, None] * (top / K))
            v = np.where(np.isfinite(v), v, 0.0)
            units = np.floor(np.minimum(r, K) / K * top)
        v = np.clip(v, -top, top).astype(np.int64)
        units = np.clip(units, 0, top).astype(np.int64)
        sums = np.sum(v, axis=0, dtype=np.int64).reshape(-1)
        return tuple(int(x) for x in sums) + (int(np.sum(units, dtype=np.int64)),)

    def merge(self, a: tuple, b: tuple) -> tuple:
        return tuple(x + y for x, y in zip(a, b))


@dataclasses.dataclass(frozen=True, eq=False)
class CheckAndVeto:
    """The bias check's and the veto's passes in one reading of the data
    (they clip at the same ``C`` around the same centre in the same
    scaling): each row's norms are computed once. The state is the pair of
    their states."""

    check: Displacement
    veto: SignedDisplacement

    def __post_init__(self) -> None:
        # one reading serves both only if they clip alike (the check's are used)
        c, v = self.check, self.veto
        if not (c.clip_norm == v.clip_norm and np.array_equal(c.scaling, v.scaling)
                and np.array_equal(c.center, v.center)):
            raise ValueError("check and veto must clip at the same radius around the same "
                             "centre in the same scaling")

    def update(self, block: np.ndarray) -> tuple:
        c = self.check
        factor, r = _displacements(block, c.clip_norm, c.scaling, c.center)
        return c.total(r), self.veto.total(block, factor, r)

    def merge(self, a: tuple, b: tuple) -> tuple:
        return self.check.merge(a[0], b[0]), self.veto.merge(a[1], b[1])


@dataclasses.dataclass(frozen=True, eq=False)
class Fold:
    """An accumulator as a pass: each block folded into the empty accumulator
    (``update``), the partial accumulators merged (``merge``, exact: integer
    sums). The state is the accumulator of all the rows, ready for its
    ``release``."""

    empty: Accumulator

    def update(self, block: np.ndarray) -> Accumulator:
        return self.empty.update(block)

    def merge(self, a: Accumulator, b: Accumulator) -> Accumulator:
        return a.merge(b)
