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
   and Steinke 2020), drawn with rational arithmetic from a
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
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.kernels import _compiled
from dpsum.kernels._rows import (
    _BLOCK_ELEMENTS,
    _hard_row,
    _norm_upper_bound,
    _raise_non_finite,
    _scaled_rows,
    _shrink_until_bounded,
    make_clip_plan,
    rows_outside,
)

__all__ = [
    "GRID_CHARGE",
    "EXACT_CHARGE",
    "clipped_sum",
    "clamped_sum",
    "grid_rows",
    "make_clamp_plan",
    "accumulate_clamped",
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


_FLOAT_MAX = V.FLOAT_MAX


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
    (rounded down) with the grid kernel (``accumulate_grid``), then
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
    plan, K, k = _clip_plan(X, C, scaling, center, charge)
    S, n_clipped = accumulate_grid(X, plan, k)
    return S, K, n_clipped


def _clip_plan(X: np.ndarray, C: float, scaling: ArrayLike | None, center: ArrayLike | None,
               charge: float) -> tuple:
    """The public functions' one argument check: ``scaling`` and ``center``
    against ``X``'s columns, then :func:`make_grid_plan`."""
    d = X.shape[1]
    b = np.ones(d) if scaling is None else V.check_vector(scaling, "scaling", d, positive=True)
    c = None if center is None else V.check_vector(center, "center", d)
    return make_grid_plan(C, b, None if c is None or not np.any(c) else c, d, charge)


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
        raise ValueError("half_widths / unit must stay below 2^40 grid units of 2^K in every "
                         "coordinate (and unit / 2^K must be a float): choose a larger K, or "
                         "rescale half_widths and unit")
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
    ``_shrink_until_bounded`` on every row.

    A row with ``f = 1`` has ``sqrt(sq) <= C_n (1 - mu)``, so its exact squared
    norm is at most ``(C_n^2 (1 - mu)^2 + A) / (1 - gamma_{d+2}) <= C_n^2``; a
    row with ``f < 1`` has ``sq >= 1/2`` and the bound of ``accumulate_grid``
    applies. No branch depends on the data.
    """
    with np.errstate(divide="ignore"):
        nu = np.sqrt(sq)
        f = np.minimum(1.0, plan.C_n / nu * plan.shrink)
    return _shrink_until_bounded(f, _norm_upper_bound(nu, plan.d), plan.C_n)


def _grid_rows(block: np.ndarray, plan: Any, scale: float, buf: np.ndarray,
               sq_buf: np.ndarray) -> tuple[np.ndarray, int, list[tuple[int, np.ndarray]]]:
    """The rows of ``block`` clipped and rounded to the grid: a float matrix of
    integers (in ``buf``; rows that overflowed are zero there), the clipped
    count, and the overflowed rows' integer vectors by index. Row ``i``'s
    integers are a function of row ``i`` and the plan alone (element-wise
    IEEE operations and :func:`~dpsum.kernels._rows._lane_sum`)."""
    t, sq = _scaled_rows(block, plan, buf, sq_buf)
    hard_rows: list[tuple[int, np.ndarray]] = []
    n_clipped = 0
    if not sq.max() < np.inf:                            # NaN or inf somewhere
        finite = np.isfinite(sq)
        _raise_non_finite(block[~finite])
        sq = np.where(finite, sq, 0.0)
        t[~finite] = 0.0
        for i in np.flatnonzero(~finite):
            v, clipped = _hard_row(block[i], plan)
            hard_rows.append((int(i), np.rint(v * scale)))
            n_clipped += clipped
    f = _grid_factors(sq, plan)
    n_clipped += int(np.count_nonzero(f < 1.0))
    t *= (f * scale)[:, None]
    np.rint(t, out=t)
    return t, n_clipped, hard_rows


def accumulate_grid(X: np.ndarray, plan: Any, k: int) -> tuple[np.ndarray, int]:
    """The grid kernel: a pure function of (rows, public plan, k) returning the
    exact integer sum (object array of Python ints) and the clipped count
    (**not** private).

    **Each row alone** (:prf:ref:`fp-thm-row`). Let ``C = C_n 2^e`` with
    ``C_n`` in ``[1, 2)`` and ``b_n = b 2^-e`` (exact). Row ``x`` becomes
    ``t = fl(fl(x - c) b_n)`` and its squared norm ``s~`` is summed in the
    fixed order of ``_lane_sum`` (8 lanes, then a 3-level tree), with at most
    ``d + 2`` roundings per term:
    ``s <= (s~ + A) / (1 - gamma_{d+2})``, ``A <= d 2^-70`` bounding the
    underflow. The clip factor ``f = min(1, fl(fl(C_n / fl(sqrt(s~))) (1 - mu)))``,
    ``mu = 2 (d + 10) u``, gives ``f sqrt(s) <= C_n``; the re-check loop
    verifies it against a rounded-up bound of the norm and provably
    terminates. The row is then scaled by ``f 2^-k`` and rounded to integers:
    the plan's radius lies ``sqrt(d) 2^(K-1)`` inside the mechanism's ``C``
    (:func:`make_grid_plan`), so the rounded row has exact norm at most
    ``C`` (:prf:ref:`fp-thm-grid`). Every step is an element-wise IEEE
    operation or the fixed-order sum, so the integers of a row are the same
    bits whatever the block, the machine or the BLAS.

    **The sum.** The integers are summed exactly (float64 block sums of
    integers below ``2^53``, flushed to Python integers), so the total does
    not depend on the order of the rows or on how they are split.
    """
    if X.shape[0] and _compiled.available():
        return _accumulate_compiled(X, plan, k)
    return _accumulate_numpy(X, plan, k)


def _accumulate_compiled(X: np.ndarray, plan: Any, k: int) -> tuple[np.ndarray, int]:
    """The compiled kernel, then the per-row path for the rows it flagged."""
    upper_factor = float(_norm_upper_bound(np.ones(1), plan.d)[0])
    total, n_clipped, hard_idx = _compiled.accumulate(X, plan, k, upper_factor)
    if hard_idx.size:
        _raise_non_finite(X[hard_idx])
        scale = math.ldexp(1.0, -k)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for i in hard_idx:
                v, clipped = _hard_row(X[i], plan)
                total = total + np.array([int(q) for q in np.rint(v * scale)], dtype=object)
                n_clipped += clipped
    return total, n_clipped


def _accumulate_numpy(X: np.ndarray, plan: Any, k: int) -> tuple[np.ndarray, int]:
    """The NumPy kernel: blocks of rows through :func:`_grid_rows`."""
    n, d = X.shape
    rows = plan.rows * _GRID_BLOCK_FACTOR
    m0 = min(rows, max(n, 1))
    buf = np.empty((m0, d))
    sq_buf = np.empty((m0, d))
    total = np.array([0] * d, dtype=object)
    run = np.zeros(d, dtype=np.int64)
    # |q_ij| < C_n 2^-k + 1: a block sum is below this
    per_block = rows * (2 * math.ldexp(plan.C_n, -k) + 1)
    flush_every = max(1, int(_INT64_SAFE // per_block))
    in_run = 0
    n_clipped = 0
    scale = math.ldexp(1.0, -k)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for start in range(0, n, rows):
            q, clipped, hard_rows = _grid_rows(X[start:start + rows], plan, scale, buf,
                                               sq_buf)
            n_clipped += clipped
            run += np.add.reduce(q, axis=0).astype(np.int64)   # exact: integers < 2^53
            for _, v in hard_rows:
                run += v.astype(np.int64)
            in_run += 1
            if in_run == flush_every:
                total = total + np.array([int(v) for v in run], dtype=object)
                run[:] = 0
                in_run = 0
    total = total + np.array([int(v) for v in run], dtype=object)
    return total, n_clipped


def grid_rows(X: ArrayLike, clip_norm: float, scaling: ArrayLike | None = None,
              center: ArrayLike | None = None, *,
              charge: float = GRID_CHARGE) -> tuple[np.ndarray, int]:
    """Each row's contribution to :func:`grid_clipped_sum`: the clipped row,
    rounded to the grid ``2^K``, as integers (one row per row of ``X``).

    For checking and teaching: the sum of the rows is
    :func:`grid_clipped_sum`'s ``S``, and row ``i`` depends on ``x_i`` and the
    public parameters only. **Not private.**

    Returns
    -------
    Q : numpy.ndarray of float64 integers, shape (n, d)
        The rounded rows in units of ``2^K``.
    K : int
        The grid exponent.

    Examples
    --------
    >>> Q, K = grid_rows([[3.0, 4.0], [0.3, 0.4]], 1.0, charge=2.0 ** -8)
    >>> Q.tolist(), K
    ([[153.0, 204.0], [77.0, 102.0]], -8)
    """
    X = V.as_real_array(X, "X")
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"X must be 2-dimensional with at least one column, got shape {X.shape}")
    C = float(V.check_positive(clip_norm, "clip_norm", scalar=True))
    plan, K, k = _clip_plan(X, C, scaling, center, charge)
    out = np.empty(X.shape)
    sq_buf = np.empty(X.shape)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        q, _, hard_rows = _grid_rows(X, plan, math.ldexp(1.0, -k), out, sq_buf)
    for i, v in hard_rows:
        q[i] = v
    return q, K


#: The relative part of the clip radius given up to the fine grid of the float
#: path: rows are clipped to ``C - sqrt(d) 2^(K-1) >= C (1 - EXACT_CHARGE)`` and
#: rounded to ``2^K``, so each rounded row still has norm at most ``C``. A
#: block's float64 sum of such rows stays exact (entries below
#: ``2 sqrt(d) / charge`` grid units, at most ``2^18 / d`` rows a block).
EXACT_CHARGE = 2.0 ** -32


def clipped_sum(X: ArrayLike, clip_norm: float, scaling: ArrayLike | None = None,
                center: ArrayLike | None = None) -> tuple[np.ndarray, int]:
    r"""Sum of the scaled, centred rows of ``X``, each clipped to norm ``clip_norm``,
    summed exactly.

    Computes ``T = sum_i r_i``, ``r_i`` the row ``x̂_i = (x_i - center) ⊙ scaling``
    clipped to norm ``C (1 - 2^-32)`` and rounded to the fine public grid
    ``2^K`` of ``EXACT_CHARGE`` (so ``||r_i|| <= C`` exactly), with the
    integers summed exactly and the total rounded once to float64 (saturating
    at the largest float). ``T`` is the same float for any order of the rows,
    any split into blocks and on any machine. This is the non-private
    statistic of the Gaussian-data mechanism's float path; the mechanisms add
    their noise to the exact total before rounding.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Real data, finite; never modified.
    clip_norm : float
        The clip radius ``C`` in the scaled space, at least about ``2^-1000``.
    scaling : array_like, shape (d,), optional
        The scaling vector ``b > 0`` (``None``: ``b = 1``).
    center : array_like, shape (d,), optional
        The public centre ``c``, subtracted from every row.

    Returns
    -------
    T : numpy.ndarray, shape (d,)
        The clipped sum in the scaled space.
    n_clipped : int
        How many rows were clipped. This count depends on the private data
        and is **not** differentially private.

    Examples
    --------
    >>> T, k = clipped_sum([[3.0, 4.0], [0.3, 0.4]], 1.0)
    >>> [round(float(t), 8) for t in T], k
    ([0.9, 1.2], 1)
    """
    X = V.check_data_matrix(X, finite=False)   # finiteness is checked in the pass
    C = float(V.check_positive(clip_norm, "clip_norm", scalar=True))
    plan, K, k = _clip_plan(X, C, scaling, center, EXACT_CHARGE)
    S, n_clipped = accumulate_grid(X, plan, k)
    return _exact_to_float(S, K), n_clipped


def _exact_to_float(S: np.ndarray, K: int) -> np.ndarray:
    """``S 2^K`` (Python integers) rounded once per coordinate to float64,
    saturating at the largest float."""
    out = np.empty(len(S))
    for j, s in enumerate(S):
        v = int(s)
        try:
            out[j] = math.ldexp(float(v), K) if abs(v) < 2 ** 53 else \
                float(Fraction(v) * Fraction(2) ** K)
        except OverflowError:
            out[j] = _FLOAT_MAX if v > 0 else -_FLOAT_MAX
        if not math.isfinite(out[j]):
            out[j] = _FLOAT_MAX if v > 0 else -_FLOAT_MAX
    return out


class ClampPlan(NamedTuple):
    """The float path's public set-up of a clamped sum: per coordinate, the
    inner half-width ``h'_j = h_j - g_j / 2`` and the grid ``g_j = 2^G_j``."""
    half: np.ndarray          # h_j, the box's half-widths
    inner: np.ndarray         # h'_j: values are clamped to [-h'_j, h'_j]
    G: np.ndarray             # grid exponents, int64: g_j = 2^G_j <= h_j 2^-32
    mid: np.ndarray           # the box's midpoint, subtracted first (zeros: none)
    lower: np.ndarray         # the box [lower, upper], for the count of rows outside it
    upper: np.ndarray


def make_clamp_plan(half_widths: np.ndarray, mid: np.ndarray | None,
                    lower: np.ndarray | None = None,
                    upper: np.ndarray | None = None) -> ClampPlan:
    """The clamped sum's grid: ``g_j = 2^(E_j - 33)`` where
    ``2^(E_j - 1) <= h_j < 2^E_j``, so ``g_j <= h_j 2^-32``; values clamped to
    ``h'_j = h_j - g_j / 2`` (exact: a multiple of ``h_j``'s last bit) and
    rounded to the grid stay in ``[-h_j, h_j]``. Needs ``h_j >= 2^-1022``.
    ``lower`` and ``upper`` (default ``mid -+ h``) only define which rows
    count as outside the box."""
    h = np.asarray(half_widths, dtype=np.float64)
    E = np.frexp(h)[1].astype(np.int64)
    G = E - 33
    inner = h - np.ldexp(1.0, G - 1)
    m = np.zeros(h.size) if mid is None else np.asarray(mid, dtype=np.float64)
    with np.errstate(over="ignore"):
        lo = m - h if lower is None else np.asarray(lower, dtype=np.float64)
        hi = m + h if upper is None else np.asarray(upper, dtype=np.float64)
    return ClampPlan(h, inner, G, m, lo, hi)


def accumulate_clamped(X: np.ndarray, plan: ClampPlan) -> tuple[np.ndarray, int, int]:
    """The clamped sum on the fine grid, exactly: ``S_j = sum_i
    rint(clamp(fl(x_ij - m_j), h'_j) / g_j)`` (Python integers), the number
    of values clamped and of rows outside ``[lower, upper]`` (neither private).

    Each value's integer is a function of that value and the plan (one
    subtraction, an exact clamp, an exact division by a power of two, and
    rounding to the nearest integer), and ``|q_ij g_j| <= h_j``: replacing a
    row moves coordinate ``j`` of ``sum_i q_ij g_j`` by at most ``2 h_j``,
    exactly the box's sensitivity. Integers below ``2^34`` are summed exactly.
    The compiled kernel (:mod:`dpsum.kernels._compiled`) gives the same
    integers when numba is installed.
    """
    if X.shape[0] and _compiled.available():
        total, n_clamped, outside, bad = _compiled.accumulate_clamped(X, plan)
        if bad:
            raise ValueError("X contains NaN or infinite values")
        return total, n_clamped, outside
    n, d = X.shape
    rows = max(1, min(max(n, 1), _BLOCK_ELEMENTS // d))
    buf = np.empty((rows, d))
    total = np.array([0] * d, dtype=object)
    n_clamped = 0
    outside = 0
    neg_G = -plan.G
    with np.errstate(over="ignore", under="ignore"):
        for start in range(0, n, rows):
            block = X[start:start + rows]
            m = block.shape[0]
            _raise_non_finite(block)
            outside += rows_outside(block, plan.lower, plan.upper)
            t = np.subtract(block, plan.mid, out=buf[:m])     # x - 0 is x exactly
            n_clamped += int(np.count_nonzero((t < -plan.inner) | (t > plan.inner)))
            np.clip(t, -plan.inner, plan.inner, out=t)
            q = np.rint(np.ldexp(t, neg_G))
            # |q| <= 2^33 and at most 2^16 rows: block sums below 2^49, exact
            total = total + np.array([int(v) for v in np.add.reduce(q, axis=0)], dtype=object)
    return total, n_clamped, outside


def clamped_sum(X: ArrayLike, half_widths: ArrayLike) -> tuple[np.ndarray, int]:
    """Sum of the rows of ``X`` with coordinate ``j`` clamped to ``[-h_j, h_j]``,
    summed exactly.

    The per-coordinate clipping of the Elliptical Gaussian mechanism (each row
    lies in a box of side ``Delta_j = 2 h_j``): values are clamped to
    ``h_j (1 - 2^-33)`` or a little more and rounded to a power-of-two grid
    ``g_j <= h_j 2^-32`` (``make_clamp_plan``), the integers summed
    exactly and the total rounded once. The same float for any row order,
    split or machine. ``X`` is a real array of shape (n, d), finite.

    Returns
    -------
    T : numpy.ndarray, shape (d,)
        The clamped sum.
    n_clamped : int
        How many values were clamped. This count depends on the private data
        and is **not** differentially private.

    Examples
    --------
    >>> T, k = clamped_sum([[3.0, -0.1], [0.2, 0.4]], [1.0, 0.25])
    >>> [round(float(t), 8) for t in T], k
    ([1.2, 0.15], 2)
    """
    X = V.check_data_matrix(X, finite=False)   # finiteness is checked in the pass
    d = X.shape[1]
    h = V.check_vector(half_widths, "half_widths", d, positive=True)
    if np.any(h < 2.0 ** -1022):
        raise ValueError("half_widths must be at least 2^-1022 (about 2.2e-308) in every "
                         "coordinate; rescale the data")
    plan = make_clamp_plan(h, None)
    S, n_clamped, _ = accumulate_clamped(X, plan)
    out = np.array([float(Fraction(int(s)) * Fraction(2) ** int(g)) if abs(int(s)) else 0.0
                    for s, g in zip(S, plan.G)])
    return out, n_clamped
