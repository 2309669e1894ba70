"""The floating-point clipping kernel: the clipped (or clamped) sum of rows.

The Gaussian-data mechanism clips every scaled record ``x̂_i = (x_i - c) ⊙ b`` to the ball of
radius ``C`` and sums. ``C`` is the smallest radius whose exceedance
probability under the public model ``x_i ~ N(c, diag(sigma^2))`` is at most
``p_C``; since ``||x̂||^2 = sum_j (b_j sigma_j)^2 Z_j^2`` is a generalized
chi-square, ``C = sqrt(isf(p_C))`` (:func:`dpsum.design.clip_radius`).

The clipped sum (:func:`clipped_sum`) is correct over the whole float64 range:
every row is centred before it enters the sum, squared norms are formed in
units where ``C`` lies in ``[1, 2)`` (a power-of-two rescaling, exact), rows
whose intermediate values overflow are clipped through a per-row power-of-two
normalisation instead of being dropped, and each row's contribution has exact
(real-number) norm at most ``C``. The rounding analysis is in the docstring of
:func:`clipped_sum` and in the chapter
:ref:`Floating-point attacks and the grid path <fp-clipping>`
(:prf:ref:`fp-thm-row`). The input is never modified.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.kernels._rows import (
    _BLOCK_ELEMENTS,
    _GROUP_BLOCKS,
    ClipPlan,
    _clip_factors,
    _hard_row,
    _raise_non_finite,
    _squared_norms,
    make_clip_plan,
    rounding_gamma,
)

__all__ = [
    "PairwiseSum",
    "sum_rounding_bound",
    "clipped_sum",
    "accumulate_clipped",
    "clamped_sum",
]




class PairwiseSum:
    """Pairwise (binary-counter) accumulation of block sums: a term passes
    through at most ``ceil(log2(blocks)) + 1`` additions."""

    def __init__(self, d: int):
        self._levels: list[np.ndarray | None] = []
        self._d = d

    def add(self, v: np.ndarray) -> None:
        level = 0
        while level < len(self._levels) and self._levels[level] is not None:
            v = self._levels[level] + v
            self._levels[level] = None
            level += 1
        if level == len(self._levels):
            self._levels.append(v)
        else:
            self._levels[level] = v

    def total(self) -> np.ndarray:
        out = np.zeros(self._d)
        for v in self._levels:
            if v is not None:
                out = out + v
        return out


def sum_rounding_bound(n_rows: int, d: int) -> float:
    """Relative bound ``rho`` on the rounding of :func:`clipped_sum`.

    For rows whose exact contributions ``r_i`` (each of norm at most ``C``)
    are summed by :func:`clipped_sum`, the computed sum ``T`` satisfies
    ``||T - sum_i r_i|| <= rho C`` with
    ``rho = gamma_L n + sqrt(d) 2^-70``, ``L = 2m + G + ceil(log2(groups)) + 5``,
    ``m`` the rows per block and ``G`` the blocks per group: every term passes
    through at most ``m - 1`` additions and one product inside a block's
    matrix-vector product, at most ``G`` additions of block sums into their
    group's sum, one conversion to scaled units, the pairwise accumulation of
    the groups and of the overflowing rows (at most ``n`` terms in all), and the
    final power-of-two rescaling (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2002, eq. 4.4, applied per coordinate and summed
    with the triangle inequality). The ``2^-70`` term covers underflow in the
    final rescaling (``C >= 2^-1000``).

    Parameters
    ----------
    n_rows : int
        Number of rows summed (public under replace-one neighbouring).
    d : int
        Number of columns.

    Returns
    -------
    float
        ``rho``; a mechanism charges it by clipping at ``C / (1 + rho)``.

    Examples
    --------
    >>> bool(sum_rounding_bound(10**6, 100) < 1e-6), bool(sum_rounding_bound(10**3, 100) < sum_rounding_bound(10**6, 100))
    (True, True)
    """
    n_rows = V.check_integer(n_rows, "n_rows", 0)
    d = V.check_integer(d, "d", 1)
    m = max(1, _BLOCK_ELEMENTS // d)
    blocks = max(1, -(-n_rows // m))
    groups = -(-blocks // _GROUP_BLOCKS)
    L = 2 * m + _GROUP_BLOCKS + math.ceil(math.log2(n_rows + groups + 1)) + 5
    return rounding_gamma(L) * n_rows + math.sqrt(d) * 2.0 ** -70


def clipped_sum(X: ArrayLike, clip_norm: float, scaling: ArrayLike | None = None,
                center: ArrayLike | None = None) -> tuple[np.ndarray, int]:
    r"""Sum of the scaled, centred rows of ``X``, each clipped to norm ``clip_norm``.

    Computes ``T = sum_i min(1, C / ||x̂_i||) x̂_i`` with
    ``x̂_i = (x_i - center) ⊙ scaling`` — the loop of the Gaussian-data mechanism — in one pass
    over ``X``, block by block, without a scaled copy of ``X``.

    **Guarantee** (:prf:ref:`fp-thm-row`). Row ``i``
    contributes an exact real vector ``r_i`` that depends on ``x_i`` and the
    public parameters only, with ``||r_i|| <= C`` exactly, ``r_i = x̂_i`` up to
    rounding when ``||x̂_i|| < C (1 - mu)``, and ``r_i = f_i x̂_i`` up to
    rounding otherwise; rows that overflow are clipped, never dropped. The
    returned ``T`` satisfies ``||T - sum_i r_i|| <= rho C`` with ``rho`` from
    :func:`sum_rounding_bound`. Hence for replace-one neighbours
    ``||T(X) - T(X')|| <= 2C (1 + rho)``, and clipping at ``C / (1 + rho)``
    makes the computed sum move by at most ``2C``.

    **Proof sketch.** Let ``C = C_n 2^e`` with ``C_n`` in ``[1, 2)`` and
    ``b_n = b 2^-e`` (exact). With ``t = fl(x - c)``, the squared norm
    ``s = sum_j t_j^2 b_nj^2`` is computed with at most ``d + 2`` roundings per
    term, so ``s <= (s~ + A) / (1 - gamma_{d+2})`` with ``A`` bounding the
    underflow errors (``A <= d 2^-70``, negligible against ``C_n^2 >= 1``).
    A row with ``s~ <= tau = C_n^2 (1 - mu) - A`` (rounded down),
    ``mu = 2 (d + 10) u``, therefore has ``s <= C_n^2``. A row with
    ``s~ > tau`` gets ``f = fl(fl(C_n / fl(sqrt(s~))) (1 - mu))``; then
    ``f sqrt(s) <= C_n (1 - mu) (1 + u)^3 (1 + u + gamma_{d+2}/2 + A) <= C_n``.
    The re-check loop verifies this against a rounded-up bound of the norm
    and provably terminates (``_shrink_until_bounded``). Rows whose
    intermediate values overflow take a per-row power-of-two normalisation
    (``h = x/2 - c/2``, scaled by ``2^-E``) and the same test.

    **Timing.** The running time grows with the number of clipped rows (the
    clip factors are computed only for them), so it reveals that count; use
    the grid path (:func:`dpsum.kernels.grid_clipped_sum`), whose work does not
    depend on the data, when timing is observable.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Real data (converted to float64 if needed); finiteness is checked
        here, in the same pass, before anything is returned. ``X`` is never
        modified.
    clip_norm : float
        The clip radius ``C`` in the scaled space, at least ``2^-1000``.
    scaling : numpy.ndarray, shape (d,), optional
        The scaling vector ``b > 0`` (``None``: ``b = 1``), with ``b_j / C`` in
        ``[2^-1021, 2^1021]``.
    center : numpy.ndarray, shape (d,), optional
        The public center ``c``, subtracted from every row before it enters
        the sum.

    Returns
    -------
    T : numpy.ndarray, shape (d,)
        The clipped sum in the scaled space.
    n_clipped : int
        How many rows were clipped. This count depends on the private data
        and is **not** differentially private.

    Raises
    ------
    ValueError
        If ``X`` is not a non-empty 2-d array, ``scaling`` or ``center`` is
        not a vector of length ``d``, ``X`` holds NaN or infinite values, the
        parameters lie outside the kernel's domain, or the sum itself
        overflows float64.
    TypeError
        If an argument is not numeric.

    Examples
    --------
    >>> T, k = clipped_sum([[3.0, 4.0], [0.3, 0.4]], 1.0)
    >>> [round(float(t), 12) for t in T], k
    ([0.9, 1.2], 1)
    """
    X = V.check_data_matrix(X, finite=False)  # finiteness is checked in the pass below
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    n, d = X.shape
    b = np.ones(d) if scaling is None else V.check_vector(scaling, "scaling", d, positive=True)
    c = None if center is None else V.check_vector(center, "center", d)
    if c is not None and not np.any(c):
        c = None
    plan = make_clip_plan(float(C), b, c, d)
    acc, n_clipped = accumulate_clipped(X, plan)
    with np.errstate(over="ignore", under="ignore"):
        T = np.ldexp(acc.total(), plan.e)
    if not np.all(np.isfinite(T)):
        raise ValueError("the clipped sum overflows float64: n * clip_norm is too large")
    return T, n_clipped


def accumulate_clipped(X: np.ndarray, plan: ClipPlan) -> tuple[PairwiseSum, int]:
    """The kernel: a pure function of (rows, public plan) returning a pairwise
    accumulator of block sums in normalised scaled units and the clipped count."""
    n, d = X.shape
    rows = plan.rows
    buf = np.empty((min(rows, max(n, 1)), d))
    sq_buf = None if plan.fast and plan.isotropic else np.empty_like(buf)
    ones = np.ones(buf.shape[0])
    acc = PairwiseSum(d)
    n_clipped = 0
    run = np.zeros(d)                        # the current group's sum (base units)
    in_run = 0
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for start in range(0, n, rows):
            block = X[start:start + rows]
            base, sq = _squared_norms(block, plan, buf, sq_buf)
            if sq.max() <= plan.tau:                # all rows finite and unclipped
                run += ones[:sq.shape[0]] @ base
            else:
                hard = ~np.isfinite(sq)
                if hard.any():                      # NaN/inf data, or overflow
                    _raise_non_finite(block[hard])
                    for i in np.flatnonzero(hard):
                        contribution, clipped = _hard_row(block[i], plan)
                        acc.add(contribution)
                        n_clipped += clipped
                    base, sq = base[~hard], sq[~hard]
                over = sq > plan.tau
                idx = np.flatnonzero(over)
                factor = np.ones(sq.shape[0])
                factor[idx] = _clip_factors(sq[idx], plan)
                run += factor @ base
                n_clipped += idx.size
            in_run += 1
            if in_run == _GROUP_BLOCKS:
                acc.add(run * plan.b_n if plan.fast else run)
                run = np.zeros(d)
                in_run = 0
    if in_run:
        acc.add(run * plan.b_n if plan.fast else run)
    return acc, n_clipped


def clamped_sum(X: ArrayLike, half_widths: ArrayLike) -> tuple[np.ndarray, int]:
    """Sum of the rows of ``X`` with coordinate ``j`` clamped to ``[-h_j, h_j]``.

    The per-coordinate clipping of the Elliptical Gaussian mechanism (each row lies in
    a box of side ``Delta_j = 2 h_j``), computed block by block in one pass.
    Clamping is exact in floating point, so every row's contribution lies in
    the box exactly; the block sums are accumulated pairwise, so the rounding
    of the sum is at most ``gamma_L sum_i |clamp(x_i)|`` per coordinate with
    ``L`` as in :func:`sum_rounding_bound`. ``X`` is a real array of shape
    (n, d); its finiteness is checked here before anything is returned. ``X``
    is never modified.

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
    >>> [round(float(t), 12) for t in T], k
    ([1.2, 0.15], 2)
    """
    X = V.check_data_matrix(X, finite=False)  # finiteness is checked in the pass below
    n, d = X.shape
    half_widths = V.check_vector(half_widths, "half_widths", d, positive=True)
    rows = max(1, min(n, _BLOCK_ELEMENTS // d))
    buffer = np.empty((rows, d))
    ones = np.ones(rows)
    acc = PairwiseSum(d)
    n_clamped = 0
    for start in range(0, n, rows):
        block = X[start:start + rows]
        m = block.shape[0]
        tmp = buffer[:m]
        _raise_non_finite(block)  # clamping would turn inf into a finite value
        np.clip(block, -half_widths, half_widths, out=tmp)
        n_clamped += int(np.count_nonzero(tmp != block))
        acc.add(ones[:m] @ tmp)
    return acc.total(), n_clamped
