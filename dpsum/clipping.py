"""Clipping: the exact clip radius of Algorithm 3 and the clipped sum of rows.

Algorithm 3 clips every scaled record ``x̂_i = (x_i - c) ⊙ b`` to the ball of
radius ``C`` and sums. ``C`` is the smallest radius whose exceedance
probability under the public model ``x_i ~ N(c, diag(sigma^2))`` is at most
``p_C``; since ``||x̂||^2 = sum_j (b_j sigma_j)^2 Z_j^2`` is a generalized
chi-square, ``C = sqrt(isf(p_C))`` (book chapter 4).

The clipped sum (:func:`clipped_sum`) is correct over the whole float64 range:
every row is centred before it enters the sum, squared norms are formed in
units where ``C`` lies in ``[1, 2)`` (a power-of-two rescaling, exact), rows
whose intermediate values overflow are clipped through a per-row power-of-two
normalisation instead of being dropped, and each row's contribution has exact
(real-number) norm at most ``C``. The rounding analysis is in the docstring of
:func:`clipped_sum` and in the book chapter on floating-point attacks
(``book/15_floating_point``). The input is never modified.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as V
from .gchisq import GeneralizedChiSquare

__all__ = ["clip_radius", "clipped_sum", "clamped_sum", "sum_rounding_bound",
           "CLIP_RADIUS_MARGIN"]

#: Relative amount by which the clip radius is rounded up, so that the
#: exceedance probability at the returned ``C`` is at most ``p_C`` despite the
#: last-digit error of the quantile.
CLIP_RADIUS_MARGIN = 1e-12



def clip_radius(stds: ArrayLike, clip_probability: float, scaling: ArrayLike | None = None) -> float:
    """The clip radius ``C`` of Algorithm 3 for centred Gaussian data.

    ``C`` is the smallest radius with ``Pr[||x ⊙ b|| > C] <= p_C`` for
    ``x ~ N(0, diag(stds^2))``, computed from the generalized chi-square
    quantile ``C^2 = isf(p_C)`` with weights ``(b_j sigma_j)^2`` and rounded
    up by a relative ``CLIP_RADIUS_MARGIN``.

    The weights are first divided by the largest one, rounded to a power of
    two (an exact operation), so standard deviations anywhere in the float
    range work: ``C`` is computed in units of that power of two and scaled
    back. A relative weight that underflows (below about 1e-308 of the
    largest) is replaced by the smallest normal float, which can only raise
    the radius: the result stays an upper bound.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations, all > 0.
    clip_probability : float
        The target probability ``p_C`` of clipping a record, in (0, 1).
    scaling : array_like, shape (d,), optional
        The scaling vector ``b`` (all > 0); ``None`` means ``b = 1``.

    Returns
    -------
    float
        The clip radius ``C`` in the scaled space.

    Raises
    ------
    ValueError
        If an argument is out of range, or ``b * stds`` or ``C`` is not a
        finite positive float.

    Examples
    --------
    >>> from scipy import stats
    >>> C = clip_radius([1.0, 1.0, 1.0], 1e-6)
    >>> bool(abs(C**2 / stats.chi2.isf(1e-6, 3) - 1) < 1e-11)
    True
    """
    stds_ = V.check_vector(stds, "stds", positive=True)
    p = V.check_probability(clip_probability, "clip_probability", scalar=True)
    b = None if scaling is None else V.check_vector(scaling, "scaling", stds_.size, positive=True)
    mantissa, exponent = np.frexp(stds_)
    if b is not None:
        mb, eb = np.frexp(b)
        mantissa, exponent = mantissa * mb, exponent + eb
    # s = b * stds = mantissa * 2**exponent with mantissa in [1/4, 1): the
    # relative scales s / 2**top are exact up to underflow
    top = int(np.max(exponent))
    rel = np.ldexp(mantissa, exponent - top)
    weights = np.maximum(rel * rel, np.finfo(np.float64).tiny)
    try:
        radius = math.ldexp(_clip_radius_relative(weights, p), top)
    except OverflowError:
        radius = math.inf
    if not 0.0 < radius < math.inf:
        raise ValueError("the clip radius for these stds and scaling is not a finite positive "
                         "float: rescale stds or scaling")
    return radius


class _RadiusCache:
    """Memory-bounded memo of relative clip radii, keyed by a digest of the weights.

    The quantile is a pure function of public inputs, and repeated releases
    with one model (simulations, audits) ask for it again and again. The key
    is ``(d, p, blake2b(weights))``: 32 bytes of digest instead of the 8 d
    bytes of the weights themselves, so the cache holds at most
    ``_MAX_ENTRIES`` small tuples whatever ``d`` is.
    """

    _MAX_ENTRIES = 512

    def __init__(self) -> None:
        self._store: OrderedDict[tuple[int, float, bytes], float] = OrderedDict()

    @staticmethod
    def key(weights: np.ndarray, p: float) -> tuple[int, float, bytes]:
        digest = hashlib.blake2b(np.ascontiguousarray(weights).tobytes(), digest_size=32)
        return weights.size, p, digest.digest()

    def get(self, key: tuple[int, float, bytes]) -> float | None:
        value = self._store.get(key)
        if value is not None:
            self._store.move_to_end(key)
        return value

    def put(self, key: tuple[int, float, bytes], value: float) -> None:
        self._store[key] = value
        self._store.move_to_end(key)
        while len(self._store) > self._MAX_ENTRIES:
            self._store.popitem(last=False)

    def clear(self) -> None:
        self._store.clear()


_RADIUS_CACHE = _RadiusCache()


def _clip_radius_relative(weights: np.ndarray, p: float) -> float:
    """``sqrt(isf(p))`` of the weights, rounded up by ``CLIP_RADIUS_MARGIN``; memoised."""
    key = _RADIUS_CACHE.key(weights, p)
    radius = _RADIUS_CACHE.get(key)
    if radius is None:
        c2 = float(GeneralizedChiSquare(weights).isf(p))
        radius = float(np.sqrt(c2) * (1.0 + CLIP_RADIUS_MARGIN))
        _RADIUS_CACHE.put(key, radius)
    return radius


# ---------------------------------------------------------------------------
# The clipped sum over the whole float64 range
#
# Notation (book chapter on floating-point attacks): u = 2^-53 is the unit
# roundoff, gamma_k = k u / (1 - k u). Write C = C_n 2^e with C_n in [1, 2)
# and b_n = b 2^-e (exact: a power-of-two rescaling), so that a row's
# "normalised" scaled deviation is t ⊙ b_n with t = fl(x - c), and the row is
# unclipped exactly when ||t ⊙ b_n|| <= C_n. Every floating-point operation
# returns fl(a o b) = (a o b)(1 + delta) + eta with |delta| <= u and
# |eta| <= 2^-1075 (eta is nonzero only on underflow, and only for products);
# in normalised units all underflow errors together stay below _ABS_SLACK,
# negligible against C_n^2 >= 1.

_U = 2.0 ** -53
# about 512 KiB of float64 per block: fits in L2 cache on current CPUs
_BLOCK_ELEMENTS = 1 << 16
# block sums are added in groups of this many blocks, then pairwise
_GROUP_BLOCKS = 32
# the kernel's domain: C >= 2^-1000 and b_j / C (up to powers of two) in these ranges
_MIN_CLIP_EXP, _MAX_CLIP_EXP = -1000, 1023
_MAX_WEIGHT_EXP = 1021       # b_n must be a normal float: 2^-1021 <= b_n <= 2^1021
_FAST_WEIGHT_EXP = 1000      # squared weights b_n^2 in [2^-1000, 2^1000]: fast path


def _gamma(k: float) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``: the relative error bound of ``k``
    rounded operations."""
    ku = k * _U
    if ku >= 0.5:
        return math.inf
    return ku / (1.0 - ku)


class _Plan(NamedTuple):
    """Everything the kernel precomputes from the public parameters."""
    d: int
    e: int                  # C = C_n 2^e
    C_n: float              # in [1, 2)
    b_n: np.ndarray         # b 2^-e, normal floats
    w_n: np.ndarray         # b_n^2 (fast path only)
    isotropic: bool         # all b equal: the squared norm needs no weights
    fast: bool              # squared norms from t^2 @ w_n without under/overflow risk
    shrink: float           # 1 - mu: clip factors are multiplied by it
    tau: float              # rows with computed squared norm <= tau are unclipped
    center: np.ndarray | None
    rows: int               # rows per block


def _margin(d: int) -> float:
    """Relative margin ``mu = 2 (d + 10) u`` that absorbs the rounding of a
    ``d``-term squared norm, its square root, the clip factor and the product
    with it (proof in :func:`clipped_sum`)."""
    return 2.0 * (d + 10) * _U


def _abs_slack(d: int) -> float:
    """Bound on all underflow errors of one squared norm in normalised units."""
    return d * 2.0 ** -70


def _make_plan(C: float, b: np.ndarray, center: np.ndarray | None, d: int) -> _Plan:
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
    w_exp = 2 * b_exp
    fast = bool(np.all(w_exp >= -_FAST_WEIGHT_EXP) and np.all(w_exp <= _FAST_WEIGHT_EXP))
    w_n = b_n * b_n if fast else b_n
    mu = _margin(d)
    tau = (C_n * C_n * (1.0 - mu) - _abs_slack(d)) * (1.0 - 8 * _U)
    isotropic = bool(np.all(b == b[0]))
    rows = max(1, _BLOCK_ELEMENTS // d)
    return _Plan(d, e, C_n, b_n, w_n, isotropic, fast, 1.0 - mu, tau, center, rows)


def _clip_factors(sq: np.ndarray, plan: _Plan) -> np.ndarray:
    """Clip factors ``f = (1 - mu) C_n / sqrt(sq)`` for rows with ``sq > tau``,
    re-checked against the rigorous upper bound of the row's norm."""
    nu = np.sqrt(sq)
    f = plan.C_n / nu * plan.shrink
    return _shrink_until_bounded(f, _norm_upper_bound(nu, plan.d), plan.C_n)


def _norm_upper_bound(nu: np.ndarray, d: int) -> np.ndarray:
    """Upper bound on the exact norm of a row whose computed norm is
    ``nu = fl(sqrt(s~))`` with ``s~ >= 1/16``: the exact squared norm is at
    most ``(s~ + A) / (1 - gamma_{d+2}) <= s~ (1 + 16 A) / (1 - gamma_{d+2})``
    and ``sqrt(s~) <= nu / (1 - u) <= nu (1 + 2u)``; the factor ``1 + 8u``
    covers the rounding of this bound's own computation."""
    factor = (1.0 + 2 * _U) * math.sqrt((1.0 + 16 * _abs_slack(d)) / (1.0 - _gamma(d + 2)))
    return nu * (factor * (1.0 + 8 * _U))


#: Upper limit on the re-check iterations; the proof in :func:`clipped_sum`
#: shows that the first check already passes.
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


def _hard_row(x: np.ndarray, plan: _Plan) -> tuple[np.ndarray, bool]:
    """Contribution (normalised scaled units) of a row whose deviation or
    squared norm overflowed, and whether it was clipped.

    The deviation is formed as ``h = x/2 - c/2`` (finite for finite inputs) and
    normalised by a power of two ``2^E`` chosen from the exponents of ``h`` and
    ``b_n`` so that the largest entry of ``v = (h 2^-E) ⊙ b_n`` lies in
    ``[1/4, 1)``; the row is ``v 2^(E+1)`` and its contribution is ``v 2^(E+1)``
    if that has norm at most ``C_n``, else ``phi v`` with
    ``||phi v|| <= C_n`` (the same bound as for ordinary rows).
    """
    h = x * 0.5 if plan.center is None else x * 0.5 - plan.center * 0.5
    nz = h != 0
    if not nz.any():
        return np.zeros(plan.d), False
    exps = np.frexp(h[nz])[1] + np.frexp(plan.b_n[nz])[1]
    E = int(exps.max())
    with np.errstate(under="ignore"):
        v = np.ldexp(h, -E) * plan.b_n
        sq = float(v @ v)            # >= 1/16: no overflow, underflow negligible
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


class _PairwiseSum:
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
    return _gamma(L) * n_rows + math.sqrt(d) * 2.0 ** -70


def _raise_non_finite(block: np.ndarray) -> None:
    """Raise the data-validation error if ``block`` holds NaN or inf."""
    if not np.all(np.isfinite(block)):
        raise ValueError("X contains NaN or infinite values")


def clipped_sum(X: ArrayLike, clip_norm: float, scaling: ArrayLike | None = None,
                center: ArrayLike | None = None) -> tuple[np.ndarray, int]:
    r"""Sum of the scaled, centred rows of ``X``, each clipped to norm ``clip_norm``.

    Computes ``T = sum_i min(1, C / ||x̂_i||) x̂_i`` with
    ``x̂_i = (x_i - center) ⊙ scaling`` — the loop of Algorithm 3 — in one pass
    over ``X``, block by block, without a scaled copy of ``X``.

    **Guarantee (book, chapter on floating-point attacks).** Row ``i``
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
    the grid path (:func:`dpsum.grid.grid_clipped_sum`), whose work does not
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
    plan = _make_plan(float(C), b, c, d)
    acc, n_clipped = _accumulate(X, plan)
    with np.errstate(over="ignore", under="ignore"):
        T = np.ldexp(acc.total(), plan.e)
    if not np.all(np.isfinite(T)):
        raise ValueError("the clipped sum overflows float64: n * clip_norm is too large")
    return T, n_clipped


def _squared_norms(block: np.ndarray, plan: _Plan, buf: np.ndarray,
                   sq_buf: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The rows' computed squared norms in normalised scaled units, and the
    matrix whose rows the clip factors multiply: the centred rows ``t``
    (fast path, data units) or ``t ⊙ b_n`` (normalised scaled units)."""
    m = block.shape[0]
    t = block if plan.center is None else np.subtract(block, plan.center, out=buf[:m])
    if not plan.fast:                       # weights too extreme to square
        assert sq_buf is not None
        base = np.multiply(t, plan.b_n, out=sq_buf[:m])
        return base, np.einsum("ij,ij->i", base, base)
    if plan.isotropic:
        sq = np.einsum("ij,ij->i", t, t)
        sq *= plan.w_n[0]
        return t, sq
    assert sq_buf is not None
    return t, np.square(t, out=sq_buf[:m]) @ plan.w_n


def _accumulate(X: np.ndarray, plan: _Plan) -> tuple[_PairwiseSum, int]:
    """The kernel: a pure function of (rows, public plan) returning a pairwise
    accumulator of block sums in normalised scaled units and the clipped count."""
    n, d = X.shape
    rows = plan.rows
    buf = np.empty((min(rows, max(n, 1)), d))
    sq_buf = None if plan.fast and plan.isotropic else np.empty_like(buf)
    ones = np.ones(buf.shape[0])
    acc = _PairwiseSum(d)
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

    The per-coordinate clipping of Algorithm 2 (equation (3): each row lies in
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
    acc = _PairwiseSum(d)
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
