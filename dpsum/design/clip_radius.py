"""The exact clip radius: the smallest radius that a scaled Gaussian row exceeds
with probability at most p_C (:ref:`gaussian-data-clip-radius`).
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.distributions.gchisq import GeneralizedChiSquare

__all__ = [
    "CLIP_RADIUS_MARGIN",
    "clip_radius",
]


#: Relative amount by which the clip radius is rounded up, so that the
#: exceedance probability at the returned ``C`` is at most ``p_C`` despite the
#: last-digit error of the quantile.
CLIP_RADIUS_MARGIN = 1e-12


def clip_radius(stds: ArrayLike, clip_probability: float, scaling: ArrayLike | None = None) -> float:
    """The clip radius ``C`` of the Gaussian-data mechanism for centred Gaussian data.

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
