"""The noisy group sums formed exactly and rounded once, fast (private to
:mod:`dpsum.tables`).

A group's exact sum is an integer ``S`` in units of the grid ``2^K`` and its
noise a float ``z = m 2^e`` (``m`` an integer); their sum ``S 2^K + z`` is
the integer ``N = S 2^(K-L) + m 2^(e-L)`` times ``2^L``, ``L = min(K, e)``,
and :func:`round_scaled` rounds ``N 2^L`` to the nearest float (ties to
even), saturating at the largest float: the value
:func:`dpsum.kernels._exact.noisy_estimate` computes with fractions, in
integer arithmetic (a test checks they agree bit for bit).
"""

from __future__ import annotations

import math

__all__ = ["noisy_grid_sum", "round_scaled"]

_FLOAT_MAX = 1.7976931348623157e308


def round_scaled(N: int, L: int) -> float:
    """``N 2^L`` rounded to the nearest float (ties to even), saturated at
    ``+-M`` (``M`` the largest float)."""
    if N == 0:
        return 0.0
    sign = -1.0 if N < 0 else 1.0
    a = -N if N < 0 else N
    b = a.bit_length()
    top = b - 1 + L                          # a 2^L lies in [2^top, 2^(top+1))
    if top > 1023:
        return sign * _FLOAT_MAX
    keep = 53 if top >= -1022 else 53 - (-1022 - top)
    if keep <= 0:
        # below half the smallest subnormal, or exactly half (ties to even: 0)
        if keep == 0 and a > 1 << (b - 1):
            return sign * math.ldexp(1.0, -1074)
        return sign * 0.0
    shift = b - keep
    if shift > 0:
        q, r = divmod(a, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        e = L + shift
    else:
        q, e = a, L
    try:
        return sign * math.ldexp(float(q), e)
    except OverflowError:                    # rounded up past the largest float
        return sign * _FLOAT_MAX


def noisy_grid_sum(S: int, K: int, z: float) -> float:
    """``S 2^K + z`` rounded once (``S`` an integer, ``z`` a finite float)."""
    if z == 0.0:
        return round_scaled(int(S), K)
    m, e = math.frexp(z)
    mi, ei = int(m * (1 << 53)), e - 53      # z = mi 2^ei exactly
    L = min(K, ei)
    return round_scaled((int(S) << (K - L)) + (mi << (ei - L)), L)
