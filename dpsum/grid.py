"""The grid path: clipped sums on a grid 2^K, exact integer accumulation and
exact discrete Gaussian noise (book chapter on floating-point attacks).

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
   and Steinke 2020, Algorithm 3), drawn with rational arithmetic from a
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
import numbers
import os
from fractions import Fraction
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike
from . import clipping
from .accounting import zcdp_delta, zcdp_rho
from . import _validation as V

__all__ = [
    "GRID_CHARGE",
    "grid_exponent",
    "grid_clipped_sum",
    "grid_clamped_sum",
    "grid_gaussian_noise",
    "round_to_grid",
    "secure_gaussian",
    "secure_laplace",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "discrete_laplace_std",
    "discrete_gaussian",
    "discrete_gaussian_pmf",
    "discrete_gaussian_delta",
    "discrete_gaussian_delta_exact_1d",
    "discrete_gaussian_sigma",
]

#: Relative amount of the clip radius given up to grid rounding:
#: ``sqrt(d) 2^(K-1) <= GRID_CHARGE * C``.
GRID_CHARGE = 2.0 ** -20

_U = 2.0 ** -53
_FLOAT_MAX = np.finfo(np.float64).max
_TINY = float(np.finfo(np.float64).tiny)   # smallest normal float
# int64 block sums are flushed to Python integers before they could overflow
_INT64_SAFE = 2 ** 62
#: The grid kernel's blocks hold this many times the rows of the float
#: kernel's (2^18 values): its per-block work on the row vectors (clip factors
#: for every row, the re-check) is amortised over more data. A block's float
#: sum stays exact: at most 2^18 / d rows of integers below sqrt(d) 2^21.
_GRID_BLOCK_FACTOR = 4


# ----------------------------------------------------------------- the grid

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
    C = float(V.check_positive(clip_norm, "clip_norm"))
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
    return K


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
    x = V.as_real_array(value, "value")
    if not np.all(np.isfinite(x)):
        raise ValueError("value contains NaN or infinite values")
    K = V.check_integer(K, "K", None)
    with np.errstate(under="ignore", over="ignore"):
        q = np.clip(np.rint(np.ldexp(x, -K)), -_FLOAT_MAX, _FLOAT_MAX)
    return np.array([int(v) for v in q.ravel()], dtype=object).reshape(x.shape)


def grid_clipped_sum(X: np.ndarray, clip_norm: float, scaling: ArrayLike | None = None,
                     center: ArrayLike | None = None, *,
                     charge: float = GRID_CHARGE) -> tuple[np.ndarray, int, int]:
    """Algorithm 3's clipped sum on the grid ``2^K``, summed exactly in integers.

    Each row ``x̂_i = (x_i - c) ⊙ b`` is clipped to ``C_in = C - sqrt(d) 2^(K-1)``
    (rounded down) with the kernel of :func:`dpsum.clipping.clipped_sum`, then
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
        The relative part of ``C`` given up to rounding (:data:`GRID_CHARGE`).

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
    C = float(V.check_positive(clip_norm, "clip_norm"))
    X = V.as_real_array(X, "X")
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"X must be 2-dimensional with at least one column, got shape {X.shape}")
    n, d = X.shape
    b = np.ones(d) if scaling is None else V.check_vector(scaling, "scaling", d, positive=True)
    c = None if center is None else V.check_vector(center, "center", d)
    if c is not None and not np.any(c):
        c = None
    plan, K, k = _grid_plan(C, b, c, d, charge)
    S, n_clipped = _grid_accumulate(X, plan, k)
    return S, K, n_clipped


def _grid_plan(C: float, b: np.ndarray, c: np.ndarray | None, d: int,
               charge: float = GRID_CHARGE) -> tuple:
    """The grid kernel's public set-up: the clipping plan for the inner radius
    ``C - sqrt(d) 2^(K-1)``, the grid exponent ``K`` and ``k = K - e`` (the
    grid exponent in the plan's normalised units). Shared by
    :func:`grid_clipped_sum` and the mergeable accumulators
    (:mod:`dpsum.accumulator`)."""
    K = grid_exponent(C, d, charge)
    C_in = (C - math.sqrt(d) * math.ldexp(1.0, K - 1)) * (1 - 8 * _U)
    plan = clipping._make_plan(C_in, b, c, d)
    plan = plan._replace(fast=False)             # always form t ⊙ b_n: it is rounded
    return plan, K, K - plan.e                   # k: grid exponent in normalised units


def grid_clamped_sum(X: ArrayLike, half_widths: ArrayLike, unit: ArrayLike, K: int
                     ) -> tuple[np.ndarray, int]:
    """Algorithm 2's clamped sum on a grid, summed exactly in integers.

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
    scale = np.ldexp(1.0 / V.check_vector(unit, "unit", d, positive=True), -int(K))
    if not np.all(np.isfinite(scale)) or np.any(np.abs(h * scale) >= 2.0 ** 40):
        raise ValueError("the grid is too fine for these widths: choose a larger K")
    rows = max(1, clipping._BLOCK_ELEMENTS // d)
    m0 = min(rows, max(n, 1))
    buf = np.empty((m0, d))
    ones = np.ones(m0)
    total = np.array([0] * d, dtype=object)
    n_clamped = 0
    for start in range(0, n, rows):
        block = X[start:start + rows]
        m = block.shape[0]
        clipping._raise_non_finite(block)
        t = np.clip(block, -h, h, out=buf[:m])
        n_clamped += int(np.count_nonzero(t != block))
        t *= scale
        np.rint(t, out=t)
        total = total + np.array([int(v) for v in ones[:m] @ t], dtype=object)
    return total, n_clamped


def _grid_factors(sq: np.ndarray, plan) -> np.ndarray:
    """Clip factors for every row of a block by one formula,
    ``f = min(1, fl(fl(C_n / fl(sqrt(sq))) (1 - mu)))``, with the re-check of
    :func:`dpsum.clipping._shrink_until_bounded` on every row.

    A row with ``f = 1`` has ``sqrt(sq) <= C_n (1 - mu)``, so its exact squared
    norm is at most ``(C_n^2 (1 - mu)^2 + A) / (1 - gamma_{d+2}) <= C_n^2``; a
    row with ``f < 1`` has ``sq >= 1/2`` and the bound of
    :func:`dpsum.clipping.clipped_sum` applies. No branch depends on the data.
    """
    with np.errstate(divide="ignore"):
        nu = np.sqrt(sq)
        f = np.minimum(1.0, plan.C_n / nu * plan.shrink)
    return clipping._shrink_until_bounded(f, clipping._norm_upper_bound(nu, plan.d), plan.C_n)


def _grid_accumulate(X: np.ndarray, plan, k: int) -> tuple[np.ndarray, int]:
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
                base, sq = clipping._squared_norms(block, plan, buf, sq_buf)
            hard = not sq.max() < np.inf                 # NaN or inf somewhere
            if hard:
                finite = np.isfinite(sq)
                clipping._raise_non_finite(block[~finite])
                sq = np.where(finite, sq, 0.0)
                base[~finite] = 0.0
            f = _grid_factors(sq, plan)
            n_clipped += int(np.count_nonzero(f < 1.0))
            base *= (f * scale)[:, None]
            np.rint(base, out=base)
            run += (ones[:m] @ base).astype(np.int64)    # exact: integers below 2^53
            if hard:
                for i in np.flatnonzero(~finite):
                    v, clipped = clipping._hard_row(block[i], plan)
                    run += np.rint(v * scale).astype(np.int64)
                    n_clipped += clipped
            in_run += 1
            if in_run == flush_every:
                total = total + np.array([int(v) for v in run], dtype=object)
                run[:] = 0
                in_run = 0
    total = total + np.array([int(v) for v in run], dtype=object)
    return total, n_clipped


def grid_gaussian_noise(S: ArrayLike, K: int, sensitivity: float, *, epsilon: float,
                        delta: float, rng: V.RandomLike = None) -> tuple[np.ndarray, float]:
    """Add discrete Gaussian noise to an integer sum on the grid ``2^K``.

    ``S`` (Python integers, units of ``2^K``) has L2 sensitivity at most
    ``sensitivity / 2^K``; the noise ``N_Z(0, sigma^2)`` per coordinate, with
    ``sigma`` from :func:`discrete_gaussian_sigma`, makes ``S + Z``
    ``(epsilon, delta)``-DP. Returns ``S + Z`` (Python integers) and the noise
    standard-deviation parameter ``sigma 2^K`` in the units of the statistic.
    ``rng=None`` draws from the operating system's secure generator.

    Examples
    --------
    >>> Y, sigma = grid_gaussian_noise(np.array([0, 0]), 0, 1.0, epsilon=1.0, delta=1e-6, rng=0)
    >>> len(Y), bool(sigma > 1)
    (2, True)
    """
    sens = float(V.check_positive(sensitivity, "sensitivity"))
    eps, dlt = V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)
    sigma = discrete_gaussian_sigma(eps, dlt, math.ldexp(sens, -K))
    S = np.asarray(S, dtype=object)
    Z = discrete_gaussian(Fraction(sigma) ** 2, size=S.shape, rng=rng)
    return S + Z, math.ldexp(sigma, K)


def secure_gaussian(value: ArrayLike, *, sensitivity: float, epsilon: float, delta: float,
                    rng: V.RandomLike = None) -> tuple[np.ndarray, int, float]:
    """Algorithm 1 on the grid: a precomputed statistic released with exact
    discrete Gaussian noise.

    The statistic (L2 sensitivity ``Delta``) is rounded to the grid ``2^K``,
    ``K = grid_exponent(Delta, d)``; two neighbouring statistics round to
    integer vectors at L2 distance at most ``Delta / 2^K + sqrt(d)`` (each
    rounding moves a vector by at most ``sqrt(d) / 2``), and the noise is
    calibrated to that integer sensitivity. The output is
    ``(round(value / 2^K) + Z) 2^K`` with ``Z ~ N_Z(0, sigma^2)`` per coordinate.

    Returns
    -------
    estimate : numpy.ndarray
        The release, every entry an integer multiple of ``2^K``.
    K : int
        The grid exponent (public).
    noise_std : float
        The discrete Gaussian's scale ``sigma 2^K`` in the units of ``value``.

    Examples
    --------
    >>> y, K, sigma = secure_gaussian([1.0, 2.0], sensitivity=1.0, epsilon=1.0, delta=1e-6, rng=0)
    >>> all(float(v / 2.0 ** K).is_integer() for v in y)  # on the grid 2^K
    True
    """
    sens = float(V.check_positive(sensitivity, "sensitivity", scalar=True))
    V.check_epsilon(epsilon, scalar=True)
    V.check_delta(delta, scalar=True)
    x = V.as_real_array(value, "value")
    if not np.all(np.isfinite(x)):
        raise ValueError("value contains NaN or infinite values")
    d = max(1, x.size)
    K = grid_exponent(sens, d)
    _check_grid_exponent(K, "sensitivity")
    q = round_to_grid(x, K)
    grid_sens = math.ldexp(sens, -K) + math.sqrt(d)
    Y, _ = grid_gaussian_noise(q, 0, grid_sens, epsilon=epsilon, delta=delta, rng=rng)
    estimate = _from_grid(Y, K).reshape(x.shape)
    sigma = discrete_gaussian_sigma(epsilon, delta, grid_sens)
    return estimate, K, math.ldexp(sigma, K)


def secure_laplace(value: ArrayLike, *, sensitivity: float, epsilon: float,
                   rng: V.RandomLike = None) -> tuple[np.ndarray, int, int, float]:
    """The Laplace mechanism on the grid: a precomputed statistic released
    with exact discrete Laplace noise, ``epsilon``-DP (pure).

    The statistic ``x`` (``d`` entries, L1 sensitivity ``Delta_1``) is rounded
    to the grid ``2^K``, ``q = rint(x / 2^K)``, with ``K`` the largest integer
    such that ``d 2^(K-1) <= GRID_CHARGE * Delta_1`` (public). The output is
    ``(q + Z) 2^K`` with ``Z_j`` i.i.d. discrete Laplace of scale
    ``D / epsilon``, ``D = floor(Delta_1 / 2^K) + d``.

    **Guarantee** (book, chapter on floating-point attacks, theorem
    ``fp-thm-discrete-laplace``). For neighbouring datasets,
    ``|rint(a) - rint(b)| <= |a - b| + 1`` in every coordinate, so the integer
    vectors ``q, q'`` satisfy ``||q - q'||_1 <= Delta_1 / 2^K + d`` and, being
    integers, ``||q - q'||_1 <= D``. For every integer vector ``y``,
    ``P[q + Z = y] / P[q' + Z = y] = prod_j exp((|y_j - q'_j| - |y_j - q_j|)
    epsilon / D) <= exp(epsilon ||q - q'||_1 / D) <= exp(epsilon)``: the
    integer release is ``epsilon``-DP with ``delta = 0``, and the returned
    floats are a deterministic function of it (post-processing). The noise
    is sampled exactly (:func:`discrete_laplace`), from the operating system's
    secure generator when ``rng`` is None. The rounding costs a relative
    ``d 2^K / Delta_1 <= 2 GRID_CHARGE`` of the sensitivity.

    Returns
    -------
    estimate : numpy.ndarray
        The release, shape of ``value``, every entry an integer multiple of ``2^K``.
    K : int
        The grid exponent (public).
    D : int
        The integer L1 sensitivity on the grid.
    noise_std : float
        The standard deviation of each coordinate's noise, in the units of ``value``.

    Examples
    --------
    >>> est, K, D, std = secure_laplace([10.0, -3.0], sensitivity=1.0, epsilon=1.0, rng=0)
    >>> K, D, all(float(v / 2.0**K).is_integer() for v in est)
    (-20, 1048578, True)
    """
    x = V.check_finite_array(value, "value")
    sens = float(V.check_positive(sensitivity, "sensitivity"))
    eps = float(V.check_epsilon(epsilon, scalar=True))
    d = max(1, x.size)
    K = grid_exponent(sens, d * d)          # L1: sqrt(d^2) 2^(K-1) = d 2^(K-1)
    _check_grid_exponent(K, "sensitivity")
    q = round_to_grid(x, K)
    D = math.floor(math.ldexp(sens, -K)) + d    # exact: a power-of-two rescaling
    scale = Fraction(D) / Fraction(eps)
    with np.errstate(over="ignore"):
        noise_std = float(np.ldexp(discrete_laplace_std(scale), K))
    if not noise_std < _FLOAT_MAX:
        raise ValueError("sensitivity / epsilon is too large: the noise's standard "
                         "deviation is not a finite float")
    Y = q + discrete_laplace(scale, size=x.shape, rng=rng)
    return _from_grid(Y, K), K, D, noise_std


#: The grid path needs its grid 2^K to be a normal float (so that every
#: released value is exactly an integer multiple of it).
_MIN_GRID_EXPONENT = -1022


def _check_grid_exponent(K: int, name: str) -> None:
    if K < _MIN_GRID_EXPONENT:
        raise ValueError(f"{name} is too small for the grid path: its grid 2^K would be "
                         "below the normal float range (about 2.2e-308); rescale the statistic")


def _from_grid(Y: np.ndarray, K: int) -> np.ndarray:
    """The floats ``Y 2^K`` for an object array of Python integers ``Y``,
    correctly rounded; beyond the float range, ``+-inf`` (a deterministic
    function of ``Y``: post-processing)."""
    flat = []
    for v in np.ravel(Y):
        v = int(v)
        try:   # int / int and int -> float are correctly rounded in Python
            flat.append(float(v << K) if K >= 0 else v / (1 << -K))
        except OverflowError:
            flat.append(math.inf if v > 0 else -math.inf)
    return np.array(flat, dtype=np.float64).reshape(np.shape(Y))


# ------------------------------------------------------ the discrete Gaussian

class _Bits:
    """Uniform integers below ``m``, by rejection from uniform 64-bit words:
    from the operating system's CSPRNG (``rng=None``, read in 32 KiB chunks
    with ``os.urandom``), or reproducibly from a NumPy generator (for
    tests and the book; not cryptographically secure)."""

    _CHUNK = 4096

    def __init__(self, rng):
        self._gen = V.check_secure_rng(rng)    # the one rng rule; None: os.urandom
        self.secure = self._gen is None
        self._words: list[int] = []

    def _word(self) -> int:
        if not self._words:
            if self._gen is None:
                raw = np.frombuffer(os.urandom(8 * self._CHUNK), dtype=np.uint64)
            else:
                raw = self._gen.integers(0, 2**64, size=self._CHUNK, dtype=np.uint64)
            self._words = raw.tolist()
        return self._words.pop()

    def below(self, m: int) -> int:
        bits = (m - 1).bit_length()
        if bits == 0:
            return 0
        words = -(-bits // 64)
        drop = 64 * words - bits
        while True:                                      # rejection sampling
            r = 0
            for _ in range(words):
                r = (r << 64) | self._word()
            r >>= drop
            if r < m:
                return r


def _bernoulli(num: int, den: int, bits: _Bits) -> bool:
    """Bernoulli(num / den), exactly."""
    return bits.below(den) < num


def _bernoulli_exp_unit(num: int, den: int, bits: _Bits) -> bool:
    """Bernoulli(exp(-num/den)) for ``0 <= num/den <= 1`` (CKS Algorithm 1)."""
    k = 1
    while _bernoulli(num, den * k, bits):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(num: int, den: int, bits: _Bits) -> bool:
    """Bernoulli(exp(-num/den)) for any ``num/den >= 0``."""
    whole = num // den
    for _ in range(whole):
        if not _bernoulli_exp_unit(1, 1, bits):
            return False
    return _bernoulli_exp_unit(num - whole * den, den, bits)


def _discrete_laplace(t: int, bits: _Bits, s: int = 1) -> int:
    """Discrete Laplace with scale ``t / s`` (pmf proportional to
    exp(-|x| s / t)), CKS Algorithm 2, for positive integers ``s`` and ``t``.

    ``u + t v`` (``u`` uniform below ``t`` accepted with probability
    ``exp(-u/t)``, ``v`` geometric with ratio ``exp(-1)``) is geometric with
    ratio ``exp(-1/t)``; its floor division by ``s`` is geometric with ratio
    ``exp(-s/t)``; a random sign with ``-0`` rejected makes it two-sided.
    """
    while True:
        u = bits.below(t)
        if not _bernoulli_exp(u, t, bits):
            continue
        v = 0
        while _bernoulli_exp_unit(1, 1, bits):
            v += 1
        y = (u + t * v) // s
        negative = bits.below(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _discrete_gaussian_one(p: int, q: int, bits: _Bits) -> int:
    """One draw of N_Z(0, sigma^2) with ``sigma^2 = p/q`` (CKS Algorithm 3)."""
    t = math.isqrt(p // q) + 1                       # floor(sigma) + 1
    while True:
        y = _discrete_laplace(t, bits)
        # gamma = (|y| - sigma^2/t)^2 / (2 sigma^2) = (|y| q t - p)^2 / (2 p q t^2)
        num = (abs(y) * q * t - p) ** 2
        if _bernoulli_exp(num, 2 * p * q * t * t, bits):
            return y


def _shape(size: object) -> tuple[int, ...]:
    """An output shape from ``size`` (an int >= 0 or a tuple of them; not a bool)."""
    checked = V.check_size(size, "size")
    if checked is None:
        return ()
    return (checked,) if isinstance(checked, int) else checked


def _as_fraction(value: float | Fraction, name: str = "sigma2") -> Fraction:
    """A positive parameter as an exact rational (a float converts exactly)."""
    if isinstance(value, Fraction):
        out = value
    elif isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        out = Fraction(int(value))
    else:
        out = Fraction(float(V.check_positive(value, name)))
    if out <= 0:
        raise ValueError(f"{name} must be > 0")
    return out


def discrete_gaussian(sigma2: float | Fraction, size: int | tuple[int, ...] = (),
                      rng: V.RandomLike = None) -> np.ndarray:
    """Exact samples of the discrete Gaussian ``N_Z(0, sigma^2)``.

    The pmf is ``exp(-x^2 / (2 sigma^2)) / sum_y exp(-y^2 / (2 sigma^2))`` on the
    integers. Sampling follows Canonne, Kamath and Steinke (2020, Algorithm 3):
    discrete Laplace proposals accepted with Bernoulli(exp(-gamma)) trials, all
    in exact integer arithmetic, so the output has exactly this distribution
    (given uniform random integers).

    Parameters
    ----------
    sigma2 : float or int
        ``sigma^2 > 0``; a ``fractions.Fraction`` is used as it is, a float is
        converted exactly to a rational.
    size : int or tuple of ints
        Output shape.
    rng : None, numpy.random.Generator or int
        ``None`` (the default) draws from the operating system's
        cryptographically secure generator (``os.urandom``).
        A generator or seed gives reproducible, **not secure**, draws.

    Returns
    -------
    numpy.ndarray of Python ints (dtype object)

    Examples
    --------
    >>> x = discrete_gaussian(4.0, size=3, rng=0)
    >>> x.shape, all(isinstance(v, int) for v in x)
    ((3,), True)

    Examples
    --------
    >>> z = discrete_gaussian(4.0, size=1000, rng=0)
    >>> z.shape, bool(abs(z.mean()) < 0.5)
    ((1000,), True)
    """
    s2 = _as_fraction(sigma2)
    bits = _Bits(rng)
    shape = _shape(size)
    count = math.prod(shape)
    out = [_discrete_gaussian_one(s2.numerator, s2.denominator, bits) for _ in range(count)]
    return np.array(out, dtype=object).reshape(shape)


def _log_normaliser(sigma2: float) -> float:
    """log sum_y exp(-y^2 / (2 sigma^2)), to double precision."""
    sigma = math.sqrt(sigma2)
    if sigma2 >= 4.0:
        # Poisson summation: sigma sqrt(2 pi) (1 + 2 sum_k exp(-2 pi^2 sigma^2 k^2))
        tail = sum(math.exp(-2 * math.pi ** 2 * sigma2 * k * k) for k in range(1, 4))
        return math.log(sigma * math.sqrt(2 * math.pi)) + math.log1p(2 * tail)
    ys = np.arange(-40, 41)
    return float(np.log(np.sum(np.exp(-ys * ys / (2 * sigma2)))))


def discrete_gaussian_pmf(x: ArrayLike, sigma2: float) -> np.ndarray:
    """The pmf of ``N_Z(0, sigma^2)`` at the integers ``x``.

    Examples
    --------
    >>> p = discrete_gaussian_pmf(np.arange(-50, 51), 4.0)
    >>> round(float(p.sum()), 12), bool(p[50] == p.max())
    (1.0, True)
    """
    s2 = float(V.check_positive(sigma2, "sigma2"))
    xs = np.asarray(x, dtype=np.float64)
    return np.exp(-xs * xs / (2 * s2) - _log_normaliser(s2))


def discrete_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """A guaranteed ``delta`` for the multivariate discrete Gaussian.

    Adding independent ``N_Z(0, sigma^2)`` noise to each coordinate of an
    integer vector whose L2 sensitivity is at most ``Delta`` is
    ``rho = Delta^2 / (2 sigma^2)``-zCDP (CKS Theorem 14), hence
    ``(epsilon, delta)``-DP with ``delta`` from the conversion of CKS
    Proposition 12, optimised over the Renyi order
    (:func:`dpsum.accounting.zcdp_delta`, returned).
    This bound is slightly above the continuous Gaussian's exact ``delta``.

    Examples
    --------
    >>> bool(discrete_gaussian_delta(4.0, 1.0) < 1e-1)
    True
    """
    s = float(V.check_positive(sigma, "sigma", scalar=True))
    eps = float(V.check_positive(epsilon, "epsilon", scalar=True))
    sens = float(V.check_positive(sensitivity, "sensitivity", scalar=True))
    with np.errstate(over="ignore", under="ignore"):
        ratio = sens / s
        rho = 0.5 * ratio * ratio
    if not rho < math.inf:
        return 1.0          # sigma negligible against the sensitivity: no guarantee
    # rho below the float range: the bound is increasing in rho, so the
    # smallest positive float gives a valid (tiny) delta
    return float(zcdp_delta(max(rho, 5e-324), eps, method="cks"))


def discrete_gaussian_delta_exact_1d(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """The exact ``delta(epsilon)`` of the one-dimensional discrete Gaussian
    with integer sensitivity (CKS Theorem 7): ``Pr[Y > epsilon sigma^2/Delta -
    Delta/2] - e^epsilon Pr[Y > epsilon sigma^2/Delta + Delta/2]``, ``Y ~
    N_Z(0, sigma^2)``; computed by summing the pmf (for checks).

    Examples
    --------
    >>> d1 = discrete_gaussian_delta_exact_1d(16.0, 1.0, 1)
    >>> bool(0 < d1 <= discrete_gaussian_delta(4.0, 1.0))
    True
    """
    s2 = float(sigma2)
    eps = float(epsilon)
    D = int(sensitivity)
    hi = int(math.ceil(eps * s2 / D + D + 60 * math.sqrt(s2) + 10))
    ys = np.arange(-hi, hi + 1)
    pmf = discrete_gaussian_pmf(ys, s2)
    a = eps * s2 / D
    return float(pmf[ys > a - D / 2].sum() - math.exp(eps) * pmf[ys > a + D / 2].sum())


@lru_cache(maxsize=256)
def _unit_sigma(eps: float, dlt: float) -> float:
    sigma = 1.0 / math.sqrt(2 * zcdp_rho(eps, dlt, method="cks")) * (1 + 1e-12)
    step = 1e-10
    while discrete_gaussian_delta(sigma, eps) > dlt:     # confirm the forward check
        sigma *= 1 + step
        step *= 2.0                                      # a few passes at most
    return sigma


def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest ``sigma`` (to a relative 1e-9, rounded up) for which
    :func:`discrete_gaussian_delta` is at most ``delta``.

    Examples
    --------
    >>> from dpsum import analytic_sigma
    >>> 1.0 < discrete_gaussian_sigma(1.0, 1e-6) / analytic_sigma(1.0, 1e-6) < 1.2
    True
    """
    eps, dlt = V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)
    sens = float(V.check_positive(sensitivity, "sensitivity", scalar=True))
    with np.errstate(over="ignore"):
        sigma = _unit_sigma(float(eps), float(dlt)) * sens
    if not sigma < math.inf:
        raise ValueError("sensitivity is too large for this epsilon and delta: the noise "
                         "scale is not a finite float")
    if sigma < _TINY:
        raise ValueError("sensitivity is too small for this epsilon and delta: the noise "
                         "scale would be a subnormal float (below 2.2e-308), which cannot "
                         "hold the calibration to within 1e-9; rescale the statistic")
    return sigma


# ------------------------------------------------------- the discrete Laplace

def discrete_laplace(scale: float | Fraction, size: int | tuple[int, ...] = (),
                     rng: V.RandomLike = None) -> np.ndarray:
    """Exact samples of the discrete Laplace distribution of scale ``tau``.

    The pmf is ``(1 - r) / (1 + r) r^|x|`` on the integers, ``r = exp(-1/tau)``.
    Sampling follows Canonne, Kamath and Steinke (2020, Algorithm 2) with
    ``tau = t / s`` in lowest terms, in exact integer arithmetic, so the output
    has exactly this distribution (given uniform random integers).

    Parameters
    ----------
    scale : float, int or fractions.Fraction
        ``tau > 0``; a float is converted exactly to a rational.
    size : int or tuple of ints
        Output shape.
    rng : None, numpy.random.Generator or int
        ``None`` (the default) draws from the operating system's
        cryptographically secure generator (``os.urandom``); a generator or
        seed gives reproducible, **not secure**, draws.

    Returns
    -------
    numpy.ndarray of Python ints (dtype object)

    Examples
    --------
    >>> x = discrete_laplace(2.5, size=4, rng=0)
    >>> x.shape, all(isinstance(v, int) for v in x)
    ((4,), True)
    """
    tau = _as_fraction(scale, "scale")
    bits = _Bits(rng)
    shape = _shape(size)
    t, s = tau.numerator, tau.denominator
    out = [_discrete_laplace(t, bits, s) for _ in range(math.prod(shape))]
    return np.array(out, dtype=object).reshape(shape)


def discrete_laplace_pmf(x: ArrayLike, scale: float) -> np.ndarray:
    """The pmf ``(1 - r) / (1 + r) r^|x|``, ``r = exp(-1/scale)``, of the
    discrete Laplace distribution at the integers ``x``."""
    tau = float(V.check_positive(scale, "scale"))
    xs = np.abs(np.asarray(x, dtype=np.float64))
    log_norm = math.log(-math.expm1(-1.0 / tau)) - math.log1p(math.exp(-1.0 / tau))
    return np.exp(log_norm - xs / tau)


def discrete_laplace_std(scale: float | Fraction) -> float:
    """Standard deviation ``sqrt(2 r) / (1 - r)``, ``r = exp(-1/scale)``, of
    the discrete Laplace distribution (a little below the continuous
    Laplace's ``sqrt(2) scale``)."""
    tau = float(_as_fraction(scale, "scale"))
    return math.sqrt(2.0) * math.exp(-0.5 / tau) / -math.expm1(-1.0 / tau)
