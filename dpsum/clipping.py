"""Clipping: the exact clip radius of Algorithm 3 and the clipped sum of rows.

Algorithm 3 clips every scaled record ``x̂_i = (x_i - c) ⊙ b`` to the ball of
radius ``C`` and sums. ``C`` is the smallest radius whose exceedance
probability under the public model ``x_i ~ N(c, diag(sigma^2))`` is at most
``p_C``; since ``||x̂||^2 = sum_j (b_j sigma_j)^2 Z_j^2`` is a generalized
chi-square, ``C = sqrt(isf(p_C))`` (book chapter 4).

The clipped sum is computed in row blocks that fit in cache, so that neither
a scaled copy of the data nor a per-row temporary of full length is formed.
The input is never modified.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as V
from .gchisq import GeneralizedChiSquare

__all__ = ["clip_radius", "clipped_sum", "clamped_sum", "CLIP_RADIUS_MARGIN"]

#: Relative amount by which the clip radius is rounded up, so that the
#: exceedance probability at the returned ``C`` is at most ``p_C`` despite the
#: last-digit error of the quantile.
CLIP_RADIUS_MARGIN = 1e-12

# about 256 KiB of float64 per block: fits in L2 cache on current CPUs
_BLOCK_ELEMENTS = 1 << 15


def _row_norms(rows: np.ndarray, sq: np.ndarray) -> np.ndarray:
    """Euclidean norms of ``rows`` given their squared norms ``sq``, recomputed
    with a per-row scale factor where the squares overflowed."""
    norms = np.sqrt(sq)
    bad = ~np.isfinite(norms)
    if bad.any():
        scale = np.max(np.abs(rows[bad]), axis=1)
        norms[bad] = scale * np.sqrt(np.einsum("ij,ij->i", rows[bad] / scale[:, None],
                                                rows[bad] / scale[:, None]))
    return norms


def _raise_non_finite(block: np.ndarray) -> None:
    """Raise the data-validation error if ``block`` holds NaN or inf."""
    if not np.all(np.isfinite(block)):
        raise ValueError("X contains NaN or infinite values")


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
    radius = math.ldexp(_clip_radius_relative(weights, p), top)
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


def clipped_sum(X: ArrayLike, clip_norm: float, scaling: ArrayLike | None = None,
                center: ArrayLike | None = None) -> tuple[np.ndarray, int]:
    """Sum of the scaled, centred rows of ``X``, each clipped to norm ``clip_norm``.

    Computes ``T = sum_i min(1, C / ||x̂_i||) x̂_i`` with
    ``x̂_i = (x_i - center) ⊙ scaling`` — the loop of Algorithm 3 — in one
    pass over ``X``, block by block: the squared norms come from a
    matrix-vector product with ``scaling**2`` and the sum from one with the
    clip factors, so no scaled copy of ``X`` is formed. A clipped row is
    shrunk by the rounding-error bound of its norm and re-checked, so that its
    norm does not exceed ``C`` after rounding.

    ``X`` is a real array of shape (n, d) (converted to float64 if needed);
    its finiteness is checked here, in the same pass, before anything is
    returned. ``X`` is never modified. ``scaling`` and ``center`` are vectors
    of length ``d`` (``scaling`` positive).

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
        not a vector of length ``d``, ``X`` holds NaN or infinite values, or
        ``X`` overflows when centred and scaled.
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
    if center is not None:
        center = V.check_vector(center, "center", d)
    weights = b * b
    rows = max(1, min(n, _BLOCK_ELEMENTS // d))
    buffer = np.empty((rows, d))
    ones = np.ones(rows)
    total = np.zeros(d)          # sum_i f_i x_i
    weight_sum = 0.0             # sum_i f_i
    n_clipped = 0
    shrink = 1.0 - 2 * (d + 2) * np.finfo(float).eps
    # rows whose computed norm is within the rounding bound of C are clipped
    # too, so an unclipped row's exact norm is at most C as well
    C2 = (C * shrink) ** 2
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
        for start in range(0, n, rows):
            block = X[start:start + rows]
            m = block.shape[0]
            tmp = buffer[:m]
            if center is None:
                np.square(block, out=tmp)
            else:
                np.subtract(block, center, out=tmp)
                np.square(tmp, out=tmp)
            sq = tmp @ weights
            over = sq > C2  # NaN compares False: checked separately below
            if not over.any():
                if not np.isfinite(sq.sum()):
                    _raise_non_finite(block)
                total += ones[:m] @ block
                weight_sum += m
                continue
            if not np.isfinite(sq[~over].sum()):
                _raise_non_finite(block)
            idx = np.flatnonzero(over)
            deviation = block[idx] if center is None else block[idx] - center
            scaled = deviation * b
            if not np.all(np.isfinite(scaled)):
                _raise_non_finite(block)
                raise ValueError("X overflows when centred and scaled: rescale the data")
            factor = ones[:m].copy()
            # C / ||x̂|| shrunk by the rounding-error bound of a d-term Euclidean
            # norm, (d + 2) u (Higham, Accuracy and Stability, section 3.1), so
            # that the exact norm of the clipped floating-point row is at most C
            factor[idx] = C / _row_norms(scaled, sq[idx]) * shrink
            clipped = scaled * factor[idx, None]
            norms = _row_norms(clipped, np.einsum("ij,ij->i", clipped, clipped))
            while np.any(norms > C):  # re-check after rounding; rarely if ever taken
                worse = norms > C
                factor[idx[worse]] *= 1.0 - 4 * np.finfo(float).eps
                clipped[worse] = scaled[worse] * factor[idx[worse], None]
                norms[worse] = _row_norms(clipped[worse],
                                          np.einsum("ij,ij->i", clipped[worse], clipped[worse]))
            n_clipped += idx.size
            total += factor @ block
            weight_sum += float(factor.sum())
    if center is not None:
        total = total - center * weight_sum
    return total * b, n_clipped


def clamped_sum(X: ArrayLike, half_widths: ArrayLike) -> tuple[np.ndarray, int]:
    """Sum of the rows of ``X`` with coordinate ``j`` clamped to ``[-h_j, h_j]``.

    The per-coordinate clipping of Algorithm 2 (equation (3): each row lies in
    a box of side ``Delta_j = 2 h_j``), computed block by block in one pass.
    ``X`` is a real array of shape (n, d); its finiteness is checked here
    before anything is returned. ``X`` is never modified.

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
    total = np.zeros(d)
    n_clamped = 0
    for start in range(0, n, rows):
        block = X[start:start + rows]
        m = block.shape[0]
        tmp = buffer[:m]
        _raise_non_finite(block)  # clamping would turn inf into a finite value
        np.clip(block, -half_widths, half_widths, out=tmp)
        n_clamped += int(np.count_nonzero(tmp != block))
        total += ones[:m] @ tmp
    return total, n_clamped
