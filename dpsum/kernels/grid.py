"""The grid path: clipped sums on a grid 2^K, exact integer accumulation and
exact discrete Gaussian noise (the chapter :ref:`Floating-point attacks and the grid path <ch-floating-point>`).

A release that must resist floating-point attacks avoids floating-point noise
and floating-point sums altogether:

1. every clipped row is rounded to the grid ``2^K`` (``K`` chosen from public
   inputs only, :func:`grid_exponent`) after clipping it to a radius a little
   below ``C``, so that the rounded row still has norm at most ``C``: the
   rounding is charged to the sensitivity instead of ignored;
2. the rounded rows are integers (in units of ``2^K``) and are summed exactly,
   so the sum does not depend on the order of the rows and moves by exactly
   the contribution of the changed row;
3. the noise is an exact discrete Gaussian on the integers (Canonne, Kamath
   and Steinke 2020, the Gaussian-data mechanism), drawn with rational arithmetic from a
   cryptographically secure source (``os.urandom``);
4. its privacy is the discrete Gaussian's: ``rho = Delta^2 / (2 sigma^2)``
   zero-concentrated DP (CKS, Theorem 14) converted to ``(epsilon, delta)``
   with CKS's Proposition 12, not the continuous Gaussian's formula.

Every released value is then an integer multiple of ``2^K``, a deterministic
function of an exactly computed integer vector: the low-order bits carry no
information beyond the noisy integers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.kernels._rows import (
    _BLOCK_ELEMENTS,
    _hard_row,
    _norm_upper_bound,
    _raise_non_finite,
    _shrink_until_bounded,
    _squared_norms,
)
from dpsum.kernels.clipping import make_clip_plan

__all__ = [
    "GRID_CHARGE",
    "grid_exponent",
    "round_to_grid",
    "grid_clipped_sum",
    "make_grid_plan",
    "grid_clamped_sum",
    "accumulate_grid",
]


#: Relative amount of the clip radius given up to grid rounding:
#: ``sqrt(d) 2^(K-1) <= GRID_CHARGE * C``.
GRID_CHARGE = 2.0 ** -20


_U = 2.0 ** -53


_FLOAT_MAX = np.finfo(np.float64).max


# int64 block sums are flushed to Python integers before they could overflow
_INT64_SAFE = 2 ** 62


#: The finest grid the kernel sums exactly: entries of a rounded row are below
#: ``sqrt(d) / charge`` grid units, and a block of at most ``2^18 / d`` rows
#: (or 4 rows when ``d > 2^16``) then sums below ``2^52`` in every column.
_MIN_CHARGE = 2.0 ** -34


#: The grid kernel's blocks hold this many times the rows of the float
#: kernel's (2^18 values): its per-block work on the row vectors (clip factors
#: for every row, the re-check) is amortised over more data. A block's float
#: sum stays exact: at most 2^18 / d rows of integers below sqrt(d) 2^21.
_GRID_BLOCK_FACTOR = 4


def grid_exponent(clip_norm: float, d: int, charge: float = GRID_CHARGE) -> int:
    """The grid exponent ``K`` for rows of norm at most ``clip_norm`` in ``d``
    dimensions: the largest ``K`` with ``sqrt(d) 2^(K-1) <= charge * C``.

    Rounding a vector to the grid ``2^K`` moves it by at most
    ``sqrt(d) 2^(K-1)`` in L2 norm, so clipping to ``C - sqrt(d) 2^(K-1)``
    before rounding keeps every rounded row inside the ball of radius ``C``.
    ``K`` depends on public inputs only.

    Examples
    --------
    >>> grid_exponent(1.0, 4)
    -20
    """
    C = float(V.check_positive(clip_norm, "clip_norm", scalar=True))
    dd = V.check_integer(d, "d", 1)
    ch = float(V.check_open_interval(charge, "charge", 0.0, 0.5, scalar=True))
    root = math.sqrt(dd)
    # log2 C from the exponent and mantissa: exact scale even for subnormal C
    mant, exp = math.frexp(C)
    K = math.floor(math.log2(mant) + exp + math.log2(2 * ch) - math.log2(root))

    def fits(k: int) -> bool:
        """sqrt(d) 2^(k-1) <= charge C, compared without under- or overflow."""
        return root <= math.ldexp(C, 1 - k) * ch

    while not fits(K):                                  # guard log2 rounding
        K -= 1
    while fits(K + 1):
        K += 1
    return int(K)


def round_to_grid(value: ArrayLike, K: int) -> np.ndarray:
    """``value / 2^K`` rounded to the nearest integer (ties to even), as an
    object array of Python integers (exact for any magnitude).

    ``value / 2^K`` is computed exactly when it is a normal float; a
    subnormal quotient is below 1/2 in magnitude and rounds to 0 either way.
    A quotient beyond the float range saturates at ``+-M``, ``M`` the largest
    float (an integer). Saturation is a contraction, so two values still
    round to integers at most ``|a - b| / 2^K + 1`` apart in each coordinate:
    the sensitivity arguments of the grid path hold, and no exception
    depends on the (private) value.

    Examples
    --------
    >>> [int(v) for v in round_to_grid([0.3, 2.5, -1.75], -2)]  # multiples of 1/4, ties to even
    [1, 10, -7]
    """
    K = V.check_integer(K, "K", None)
    x = V.as_real_array(value, "value")
    if not np.all(np.isfinite(x)):
        raise ValueError("value contains NaN or infinite values")
    with np.errstate(under="ignore", over="ignore"):
        q = np.clip(np.rint(np.ldexp(x, -K)), -_FLOAT_MAX, _FLOAT_MAX)
    return np.array([int(v) for v in q.ravel()], dtype=object).reshape(x.shape)


def grid_clipped_sum(X: np.ndarray, clip_norm: float, scaling: ArrayLike | None = None,
                     center: ArrayLike | None = None, *,
                     charge: float = GRID_CHARGE) -> tuple[np.ndarray, int, int]:
    """The Gaussian-data mechanism's clipped sum on the grid ``2^K``, summed exactly in integers.

    Each row ``x̂_i = (x_i - c) ⊙ b`` is clipped to ``C_in = C - sqrt(d) 2^(K-1)``
    (rounded down) with the kernel of :func:`dpsum.kernels.clipped_sum`, then
    every coordinate is rounded to the nearest multiple of ``2^K``, giving an
    integer vector ``q_i`` with ``||q_i|| 2^K <= C`` exactly (proof in the
    book). The integer vectors are summed exactly, so the result does not
    depend on the order of the rows, and for replace-one neighbours the sum
    moves by at most ``2C / 2^K`` in grid units, with no rounding term.

    Every block of rows goes through the same array operations whatever the
    data (clip factors are computed for all rows with one formula), so the
    running time does not reveal how many rows were clipped. Rows whose
    intermediate values overflow float64 (deviations beyond about ``1e308``
    in scaled units) take an extra per-row step.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Real data, finite; never modified. ``n = 0`` is allowed (the sum is 0).
    clip_norm : float
        ``C`` in the scaled space.
    scaling, center : numpy.ndarray, shape (d,), optional
        The public ``b > 0`` and ``c``.
    charge : float
        The relative part of ``C`` given up to rounding (``GRID_CHARGE``).

    Returns
    -------
    S : numpy.ndarray of Python ints, shape (d,)
        The exact sum of the rounded rows, in units of ``2^K``.
    K : int
        The grid exponent (public).
    n_clipped : int
        Rows clipped; **not** differentially private.

    Examples
    --------
    >>> S, K, clipped = grid_clipped_sum(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    >>> S.dtype == object or S.dtype.kind == "i", clipped
    (True, 1)
    """
    C = float(V.check_positive(clip_norm, "clip_norm", scalar=True))
    X = V.as_real_array(X, "X")
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"X must be 2-dimensional with at least one column, got shape {X.shape}")
    n, d = X.shape
    b = np.ones(d) if scaling is None else V.check_vector(scaling, "scaling", d, positive=True)
    c = None if center is None else V.check_vector(center, "center", d)
    if c is not None and not np.any(c):
        c = None
    plan, K, k = make_grid_plan(C, b, c, d, charge)
    S, n_clipped = accumulate_grid(X, plan, k)
    return S, K, n_clipped


def make_grid_plan(clip_norm: float, scaling: np.ndarray, center: np.ndarray | None, d: int,
                   charge: float = GRID_CHARGE) -> tuple:
    """The grid kernel's public set-up: the clipping plan for the inner radius
    ``C - sqrt(d) 2^(K-1)``, the grid exponent ``K`` and ``k = K - e`` (the
    grid exponent in the plan's normalised units). Shared by
    :func:`grid_clipped_sum` and the mergeable accumulators
    (:mod:`dpsum.release`)."""
    K = grid_exponent(clip_norm, d, charge)          # checks clip_norm, d and charge
    if charge < _MIN_CHARGE:
        # finer grids make a block's float64 sum inexact (see accumulate_grid)
        raise ValueError("charge must be at least 2^-34: a finer grid would make the "
                         "kernel's block sums inexact")
    C = float(clip_norm)
    b = V.check_vector(scaling, "scaling", int(d), positive=True)
    c = None if center is None else V.check_vector(center, "center", int(d))
    C_in = (C - math.sqrt(d) * math.ldexp(1.0, K - 1)) * (1 - 8 * _U)
    if C_in < 2.0 ** -1000:
        # the inner radius is below the clipping kernel's domain: name the
        # user's clip_norm and the bound that applies to it
        raise ValueError("clip_norm must be at least 2^-1000 (1 + 2^-19) (about 9.3e-302) "
                         "on the grid path, which clips a little inside it")
    plan = make_clip_plan(C_in, b, c, d)
    plan = plan._replace(fast=False)             # always form t ⊙ b_n: it is rounded
    return plan, K, K - plan.e                   # k: grid exponent in normalised units


def grid_clamped_sum(X: ArrayLike, half_widths: ArrayLike, unit: ArrayLike, K: int
                     ) -> tuple[np.ndarray, int]:
    """The Elliptical Gaussian mechanism's clamped sum on a grid, summed exactly in integers.

    Coordinate ``j`` of every row is clamped to ``[-h_j, h_j]`` (exact), then
    divided by the public ``unit_j`` and rounded to the grid ``2^K``: row ``i``
    contributes the integer vector ``q_i = rint(clamp(x_i) / unit / 2^K)``.
    A replaced row moves ``sum_i clamp(x_i) / unit`` by at most
    ``||2 h / unit||`` and each rounding by at most ``sqrt(d) / 2`` grid
    units, so the integer sum moves by at most ``||2 h / unit|| / 2^K +
    sqrt(d)`` in L2 norm. Every block takes the same operations whatever the
    data.

    Returns
    -------
    S : numpy.ndarray of Python ints, shape (d,)
        The exact sum in grid units.
    n_clamped : int
        Values clamped; **not** differentially private.

    Examples
    --------
    >>> S, clamped = grid_clamped_sum([[3.0, -0.1]], [1.0, 1.0], [1.0, 1.0], -10)
    >>> [int(v) for v in S], clamped
    ([1024, -102], 1)
    """
    X = V.as_real_array(X, "X")
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"X must be 2-dimensional with at least one column, got shape {X.shape}")
    n, d = X.shape
    h = V.check_vector(half_widths, "half_widths", d, positive=True)
    k_exp = V.check_integer(K, "K", None)
    with np.errstate(over="ignore"):
        scale = np.ldexp(1.0 / V.check_vector(unit, "unit", d, positive=True),
                         -max(min(k_exp, 2100), -2100))
    if not np.all(np.isfinite(scale)) or np.any(np.abs(h * scale) >= 2.0 ** 40):
        raise ValueError("the grid is too fine for these widths: choose a larger K")
    rows = max(1, _BLOCK_ELEMENTS // d)
    m0 = min(rows, max(n, 1))
    buf = np.empty((m0, d))
    ones = np.ones(m0)
    total = np.array([0] * d, dtype=object)
    n_clamped = 0
    for start in range(0, n, rows):
        block = X[start:start + rows]
        m = block.shape[0]
        _raise_non_finite(block)
        t = np.clip(block, -h, h, out=buf[:m])
        n_clamped += int(np.count_nonzero(t != block))
        t *= scale
        np.rint(t, out=t)
        total = total + np.array([int(v) for v in ones[:m] @ t], dtype=object)
    return total, n_clamped


def _grid_factors(sq: np.ndarray, plan: Any) -> np.ndarray:
    """Clip factors for every row of a block by one formula,
    ``f = min(1, fl(fl(C_n / fl(sqrt(sq))) (1 - mu)))``, with the re-check of
    the float kernel's ``_shrink_until_bounded`` on every row.

    A row with ``f = 1`` has ``sqrt(sq) <= C_n (1 - mu)``, so its exact squared
    norm is at most ``(C_n^2 (1 - mu)^2 + A) / (1 - gamma_{d+2}) <= C_n^2``; a
    row with ``f < 1`` has ``sq >= 1/2`` and the bound of
    :func:`dpsum.kernels.clipped_sum` applies. No branch depends on the data.
    """
    with np.errstate(divide="ignore"):
        nu = np.sqrt(sq)
        f = np.minimum(1.0, plan.C_n / nu * plan.shrink)
    return _shrink_until_bounded(f, _norm_upper_bound(nu, plan.d), plan.C_n)


def accumulate_grid(X: np.ndarray, plan: Any, k: int) -> tuple[np.ndarray, int]:
    """The grid kernel: a pure function of (rows, public plan, k) returning the
    exact integer sum (object array of Python ints) and the clipped count."""
    n, d = X.shape
    rows = plan.rows * _GRID_BLOCK_FACTOR
    m0 = min(rows, max(n, 1))
    buf = np.empty((m0, d))
    sq_buf = np.empty((m0, d))
    ones = np.ones(m0)
    total = np.array([0] * d, dtype=object)
    run = np.zeros(d, dtype=np.int64)
    # |q_ij| < C_n 2^-k <= sqrt(d) / charge * 2: a block sum is below this
    per_block = rows * (2 * math.ldexp(plan.C_n, -k) + 1)
    flush_every = max(1, int(_INT64_SAFE // per_block))
    in_run = 0
    n_clipped = 0
    scale = math.ldexp(1.0, -k)
    contiguous = X.flags.c_contiguous
    b_tiled = np.tile(plan.b_n, m0) if contiguous else None
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for start in range(0, n, rows):
            block = X[start:start + rows]
            m = block.shape[0]
            if contiguous:                      # t ⊙ b_n as one flat product: no broadcasting
                t = block if plan.center is None else np.subtract(block, plan.center,
                                                                  out=buf[:m])
                assert b_tiled is not None
                base = sq_buf[:m]
                np.multiply(t.reshape(-1), b_tiled[:m * d], out=base.reshape(-1))
                sq = np.einsum("ij,ij->i", base, base)
            else:
                base, sq = _squared_norms(block, plan, buf, sq_buf)
            hard = not sq.max() < np.inf                 # NaN or inf somewhere
            if hard:
                finite = np.isfinite(sq)
                _raise_non_finite(block[~finite])
                sq = np.where(finite, sq, 0.0)
                base[~finite] = 0.0
            f = _grid_factors(sq, plan)
            n_clipped += int(np.count_nonzero(f < 1.0))
            base *= (f * scale)[:, None]
            np.rint(base, out=base)
            run += (ones[:m] @ base).astype(np.int64)    # exact: integers below 2^53
            if hard:
                for i in np.flatnonzero(~finite):
                    v, clipped = _hard_row(block[i], plan)
                    run += np.rint(v * scale).astype(np.int64)
                    n_clipped += clipped
            in_run += 1
            if in_run == flush_every:
                total = total + np.array([int(v) for v in run], dtype=object)
                run[:] = 0
                in_run = 0
    total = total + np.array([int(v) for v in run], dtype=object)
    return total, n_clipped
