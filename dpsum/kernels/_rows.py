"""Shared pieces of the row kernels: the public plan of a clipped pass, each row's
squared norm in an order this module fixes, clip factors with a rounding-safe
re-check, and the per-row fallback for values near the float range. Private to
dpsum.kernels.

**One row, one result.** A row's clipped contribution must be a function of
that row and the public parameters alone: not of the BLAS, not of the CPU's
vector width, not of the row's position in a block (the chapter
:ref:`Floating point <fp-clipping>`). Every operation here is therefore an
element-wise IEEE operation (correctly rounded, the same bits on any
machine) or a reduction in the order :func:`_lane_sum` fixes; no matrix
product and no ``sum``/``einsum`` whose order is the library's choice.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

# the kernel's domain: C >= 2^-1000 and b_j / C (up to powers of two) in these ranges
_MIN_CLIP_EXP, _MAX_CLIP_EXP = -1000, 1023

_U = 2.0 ** -53

# about 512 KiB of float64 per block: fits in L2 cache on current CPUs
_BLOCK_ELEMENTS = 1 << 16

_MAX_WEIGHT_EXP = 1021       # b_n must be a normal float: 2^-1021 <= b_n <= 2^1021


def _gamma(k: float) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``: the relative error bound of ``k``
    rounded operations (here: of one row's squared norm, ``k = d + 2``)."""
    ku = k * _U
    if ku >= 0.5:
        return math.inf
    return ku / (1.0 - ku)


class ClipPlan(NamedTuple):
    """Everything the kernel precomputes from the public parameters."""
    d: int
    e: int                  # C = C_n 2^e
    C_n: float              # in [1, 2)
    b_n: np.ndarray         # b 2^-e, normal floats
    shrink: float           # 1 - mu: clip factors are multiplied by it
    tau: float              # rows with computed squared norm <= tau are unclipped
    center: np.ndarray | None
    rows: int               # rows per block


def _margin(d: int) -> float:
    """Relative margin ``mu = 2 (d + 10) u`` that absorbs the rounding of a
    ``d``-term squared norm, its square root, the clip factor and the product
    with it (proof in :func:`dpsum.kernels.grid.accumulate_grid`)."""
    return 2.0 * (d + 10) * _U


def _abs_slack(d: int) -> float:
    """Bound on all underflow errors of one squared norm in normalised units."""
    return d * 2.0 ** -70


def make_clip_plan(C: float, b: np.ndarray, center: np.ndarray | None, d: int) -> ClipPlan:
    mant, exp = math.frexp(C)          # C = mant 2^exp, mant in [0.5, 1)
    e = exp - 1
    if not _MIN_CLIP_EXP <= e <= _MAX_CLIP_EXP:
        raise ValueError("clip_norm must be at least 2^-1000 (about 9.3e-302)")
    C_n = math.ldexp(C, -e)
    b_exp = np.frexp(b)[1] - 1 - e
    if np.any(b_exp < -_MAX_WEIGHT_EXP) or np.any(b_exp > _MAX_WEIGHT_EXP - 1):
        raise ValueError("scaling / clip_norm must lie in [2^-1021, 2^1021] in every "
                         "coordinate: rescale scaling or clip_norm")
    b_n = np.ldexp(b, -e)
    mu = _margin(d)
    tau = (C_n * C_n * (1.0 - mu) - _abs_slack(d)) * (1.0 - 8 * _U)
    rows = max(1, _BLOCK_ELEMENTS // d)
    return ClipPlan(d, e, C_n, b_n, 1.0 - mu, tau, center, rows)


#: The lanes of a row's squared norm: term ``j`` goes to lane ``j mod 8``.
LANES = 8


def _tree_sum(s: np.ndarray) -> np.ndarray:
    """The sums of the rows of ``s`` (shape ``(m, w)``, overwritten), each in
    the one order this function fixes: the last ``floor(w/2)`` columns are
    added to the first ones, element by element, and the same is repeated on
    the ``ceil(w/2)`` columns left, until one remains. For the ``w = 8``
    lanes of :func:`_lane_sum`: ``((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))``.
    """
    w = s.shape[1]
    while w > 1:
        h = w // 2
        np.add(s[:, :h], s[:, w - h:w], out=s[:, :h])
        w -= h
    return s[:, 0]


def _lane_sum(s: np.ndarray) -> np.ndarray:
    """The sums of the rows of ``s`` (shape ``(m, d)``, non-negative terms) in
    the one order the kernels fix, for NumPy and the compiled kernel alike:
    term ``j`` goes to lane ``j mod 8``; each lane is summed left to right
    (``l = ((s_l + s_{l+8}) + s_{l+16}) + ...``, a lane without terms is
    ``+0``), and the 8 lanes are combined by the tree of :func:`_tree_sum`.

    The order is fixed by this code, not by the machine: every step is an
    element-wise IEEE addition, so row ``i``'s result is a function of row
    ``i`` alone, the same bits on any machine and in any block; the compiled
    kernel's 8 accumulators are the same additions, whatever vector width
    runs them. Additions of ``+0`` are exact, so a term passes through at most
    ``min(d - 1, ceil(d / 8) + 2)`` rounded additions (a lane's ``d / 8``
    terms in sequence, then the 3 levels of the tree; and at most ``d - 1``,
    the depth of any summation tree of ``d`` terms): with the rounding of the
    square and the two of ``t_j``, at most ``d + 2`` roundings, inside the
    ``gamma_{d+2}`` of the norm's error bound (:func:`_norm_upper_bound`).
    """
    m, d = s.shape
    lanes = np.zeros((m, LANES))
    for start in range(0, d, LANES):
        w = min(LANES, d - start)
        np.add(lanes[:, :w], s[:, start:start + w], out=lanes[:, :w])
    return _tree_sum(lanes)


def _norm_upper_bound(nu: np.ndarray, d: int) -> np.ndarray:
    """Upper bound on the exact norm of a row whose computed norm is
    ``nu = fl(sqrt(s~))`` with ``s~ >= 1/16``: the exact squared norm is at
    most ``(s~ + A) / (1 - gamma_{d+2}) <= s~ (1 + 16 A) / (1 - gamma_{d+2})``
    and ``sqrt(s~) <= nu / (1 - u) <= nu (1 + 2u)``; the factor ``1 + 8u``
    covers the rounding of this bound's own computation."""
    factor = (1.0 + 2 * _U) * math.sqrt((1.0 + 16 * _abs_slack(d)) / (1.0 - _gamma(d + 2)))
    return nu * (factor * (1.0 + 8 * _U))


#: Upper limit on the re-check iterations; the proof in
#: :func:`dpsum.kernels.grid.accumulate_grid` shows that the first check already passes.
MAX_RECHECKS = 64


def _shrink_until_bounded(f: np.ndarray, nu_upper: np.ndarray, C_n: float) -> np.ndarray:
    """The re-check loop: shrink each factor until ``f * nu_upper <= C_n``.

    ``nu_upper`` bounds the exact norm of the row from above, so a factor that
    passes gives a contribution of exact norm at most ``C_n`` (the product is
    compared after rounding it up by a relative ``2u``). Termination: each
    pass multiplies a failing factor by ``1 - 2^-20`` (rounded, still a
    decrease by at least ``2^-21``), so after ``k`` passes it is at most
    ``(1 - 2^-21)^k`` of its start; the loop stops after ``MAX_RECHECKS``
    passes at the latest and sets any factor still failing to zero, which
    trivially satisfies the bound. With the margin of :func:`_margin` no
    factor fails the first check (tested).
    """
    f = np.array(f, dtype=np.float64, copy=True)
    for _ in range(MAX_RECHECKS):
        bad = f * nu_upper * (1.0 + 2 * _U) > C_n
        if not bad.any():
            return f
        f[bad] *= 1.0 - 2.0 ** -20
    f[f * nu_upper * (1.0 + 2 * _U) > C_n] = 0.0
    return f


def _hard_row(x: np.ndarray, plan: ClipPlan) -> tuple[np.ndarray, bool]:
    """Contribution (normalised scaled units) of a row whose deviation or
    squared norm overflowed, and whether it was clipped.

    The deviation is formed as ``h = x/2 - c/2`` (finite for finite inputs) and
    normalised by a power of two ``2^E`` chosen from the exponents of ``h`` and
    ``b_n`` so that the largest entry of ``v = (h 2^-E) ⊙ b_n`` lies in
    ``[1/4, 1)``; the row is ``v 2^(E+1)`` and its contribution is ``v 2^(E+1)``
    if that has norm at most ``C_n``, else ``phi v`` with
    ``||phi v|| <= C_n`` (the same bound as for ordinary rows). The squared
    norm is summed in the order of :func:`_lane_sum`.
    """
    h = x * 0.5 if plan.center is None else x * 0.5 - plan.center * 0.5
    nz = h != 0
    if not nz.any():
        return np.zeros(plan.d), False
    exps = np.frexp(h[nz])[1] + np.frexp(plan.b_n[nz])[1]
    E = int(exps.max())
    with np.errstate(under="ignore"):
        v = np.ldexp(h, -E) * plan.b_n
        sq = float(_lane_sum((v * v)[None, :])[0])   # >= 1/16: no overflow
    scale = 2 * (E + 1)
    # unclipped iff sq 4^(E+1) <= tau; compared without overflow
    if scale <= 0 or math.log2(sq) + scale <= math.log2(plan.tau):
        full = sq * 2.0 ** scale if scale < 2000 else math.inf
        if full <= plan.tau:
            return np.ldexp(v, E + 1), False
    nu = np.sqrt(np.array([sq]))
    phi = _shrink_until_bounded(plan.C_n / nu * plan.shrink,
                                _norm_upper_bound(nu, plan.d), plan.C_n)
    return v * phi[0] * (1.0 - 2 * _U), True


def rows_outside(block: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
    """The rows of ``block`` with a value outside ``[lower, upper]``: the one
    count the diagnostics of every box (the mechanisms', the pipeline's) use.
    **Not private.**"""
    return int(np.count_nonzero(np.any((block < lower) | (block > upper), axis=1)))


def _raise_non_finite(block: np.ndarray) -> None:
    """Raise the data-validation error if ``block`` holds NaN or inf."""
    if not np.all(np.isfinite(block)):
        raise ValueError("X contains NaN or infinite values")


def _scaled_rows(block: np.ndarray, plan: ClipPlan, buf: np.ndarray,
                 sq_buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows in normalised scaled units, ``t = fl(fl(x - c) b_n)`` (into
    ``buf``), and their squared norms ``sum_j t_j^2`` summed by
    :func:`_lane_sum` (``sq_buf`` is scratch): element-wise operations and one
    fixed-order reduction, so each row's values depend on that row alone."""
    m = block.shape[0]
    t = buf[:m]
    if plan.center is None:
        np.multiply(block, plan.b_n, out=t)
    else:
        np.subtract(block, plan.center, out=t)
        np.multiply(t, plan.b_n, out=t)
    s = np.multiply(t, t, out=sq_buf[:m])
    return t, _lane_sum(s)
