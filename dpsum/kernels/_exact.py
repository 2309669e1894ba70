"""Exact arithmetic for the float path under add-remove neighbouring: the
sensitivity bound rounded up, and the noisy statistic rounded once.

Under add-remove the number of rows ``n`` is private, so no rounding charge
may be computed from it, and a floating-point sum of ``n`` rows carries an
error that grows with ``n`` (at least one rounding of a total of magnitude up
to ``n C``; the chapter :ref:`Floating point <fp-sum-rounding>`). The float path therefore does not sum in floating point there:
each clipped row is rounded to a fine public grid (:data:`EXACT_CHARGE`, the
grid kernel of :mod:`dpsum.kernels.grid`), the rows are summed exactly in
integers, the noise is added to the exact statistic in rational arithmetic,
and the result is rounded to a float once (:func:`noisy_estimate`). Every
step before the noise is exact or a function of one row, and every step
after it is a function of the noisy value: no rounding, overflow or
exception depends on ``n``. Private to the package (the accumulators of
:mod:`dpsum.release` use it; the pipeline's steps go through them).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

import numpy as np

from dpsum import _validation as V

_FLOAT_MAX = V.FLOAT_MAX
_MAX = Fraction(_FLOAT_MAX)


def to_float(q: Fraction) -> float:
    """The rational ``q`` rounded to the nearest float (ties to even),
    saturated at ``+-M`` (``M`` the largest float) instead of overflowing.

    Saturation ``s(t) = min(M, max(-M, t))`` is monotone, so rounding after it
    is a function of ``q`` alone: applied to a noisy value it is
    post-processing.
    """
    if q >= _MAX:
        return _FLOAT_MAX
    if q <= -_MAX:
        return -_FLOAT_MAX
    return float(q)          # correctly rounded (Fraction.__float__ divides exactly)


def _ratio(v: Fraction | int | float | tuple[int, int]) -> tuple[int, int]:
    """``v`` as (numerator, denominator > 0), exactly (a pair is taken as it is)."""
    if isinstance(v, tuple):
        return v
    if isinstance(v, Fraction):
        return v.numerator, v.denominator
    if isinstance(v, int):
        return v, 1
    return float(v).as_integer_ratio()


def dyadic_sum(count: int, exponent: int, rows: int = 0, mid: tuple[int, int] = (0, 1)
               ) -> tuple[int, int]:
    """``count 2^exponent + rows p / q`` as (numerator, denominator), exactly,
    for ``mid = (p, q)`` with ``q`` a power of two (a float's
    ``as_integer_ratio``): the clamped sum's exact statistic, in integers
    (``count 2^exponent`` alone by default)."""
    a, da = (count << exponent, 1) if exponent >= 0 else (count, 1 << -exponent)
    p, q = mid
    den = max(da, q)
    return a * (den // da) + rows * p * (den // q), den


def noisy_estimate(statistic: Iterable[Fraction | int | tuple[int, int]], noise: np.ndarray,
                   scaling: np.ndarray | None = None) -> np.ndarray:
    """``(statistic + noise) / scaling``, computed exactly and rounded once per
    coordinate (saturating, :func:`to_float`).

    ``statistic`` has ``d`` exact entries (fractions or integers); ``noise``
    has shape ``(..., d)`` (leading axes: several draws, as the audit's
    batched releases make), and so has the result. The result is a function
    of the exact noisy value ``statistic + noise`` (``scaling`` is public), so
    whatever its rounding does is post-processing of the Gaussian mechanism
    on the exact statistic.

    Each coordinate is the integer quotient ``N / D`` of the exact value:
    Python's integer true division is correctly rounded, as
    ``float(Fraction)`` is, and raises ``OverflowError`` exactly when the
    rounded value would not be finite (``|N / D| >= M + ulp(M)/2``), where
    :func:`to_float` saturates; a value in ``[M, M + ulp(M)/2)`` rounds to
    ``M`` either way. So the bits are :func:`to_float`'s, from one division
    of integers per value instead of fraction arithmetic.
    """
    z = np.asarray(noise, dtype=np.float64)
    stat = [_ratio(s) for s in statistic]
    d = len(stat)
    inv = [(1, 1)] * d if scaling is None else \
        [float(b).as_integer_ratio() for b in np.ravel(scaling)]
    # (p_s / q_s + p_z / q_z) q_b / p_b = (p_s q_b q_z + p_z q_s q_b) / (q_s p_b q_z)
    coef = [(ps * qb, qs * qb, qs * pb) for (ps, qs), (pb, qb) in zip(stat, inv)]
    flat = z.reshape(-1, d)
    out = np.empty(flat.shape)
    for i, row in enumerate(flat.tolist()):
        for j, ((a, c, e), v) in enumerate(zip(coef, row)):
            pz, qz = v.as_integer_ratio()
            num = a * qz + pz * c
            try:
                out[i, j] = num / (e * qz)        # correctly rounded
            except OverflowError:                 # beyond M + ulp/2: saturate
                out[i, j] = _FLOAT_MAX if num > 0 else -_FLOAT_MAX
    return out.reshape(z.shape)

