r"""Log-space special functions, with one sign convention, and exact upward
rounding (:func:`sqrt_up`, :func:`norm_plus`), used by the whole package.

Privacy profiles and tail probabilities range from 1 down to 1e-300 and below,
so :mod:`dpsum` computes them as logarithms and never subtracts two numbers
close to each other. The helpers below are the only place where that is done;
:mod:`dpsum.privacy.calibration`, :mod:`dpsum.distributions.gchisq` and the rest of :mod:`dpsum.privacy` call
them.

Sign convention: arguments are the *magnitudes* that occur in the formulas.
:func:`log1mexp` takes ``x >= 0`` and returns ``log(1 - e^{-x})``; a caller
holding a log-probability ``a <= 0`` writes ``log1mexp(-a)`` for
``log(1 - e^a)``.

All functions accept floats or arrays and return float64 arrays (0-d for
scalar input); they never warn.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import erfcx
from scipy.special import log_ndtr as _log_ndtr

__all__ = [
    "norm_plus", "sqrt_up",
    "LOG_SQRT_2PI",
    "log1mexp",
    "log_expm1",
    "log_add",
    "log_sub",
    "log_ndtr",
    "log_mills",
    "hazard_excess",
    "log1p_complex",
]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_SQRT_PI_2 = 0.5 * math.log(0.5 * math.pi)
_SQRT_PI_2 = math.sqrt(0.5 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
_LOG2 = math.log(2.0)

# Laplace's continued fraction for the Mills ratio is used where -t exceeds
# _CF_START; _CF_DEPTH terms give double precision there.
_CF_START = 10.0
_CF_DEPTH = 14

Float = NDArray[np.float64]


def log1mexp(x: ArrayLike) -> Float:
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate everywhere (``-inf`` at 0).

    Maechler's two branches: ``log(-expm1(-x))`` for ``x < log 2`` and
    ``log1p(-exp(-x))`` beyond, so neither loses digits.

    >>> round(float(log1mexp(1e-20)), 12)
    -46.051701859881
    >>> float(log1mexp(50.0))
    -1.9287498479639178e-22
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        small = np.log(-np.expm1(-x))
        large = np.log1p(-np.exp(-x))
    out = np.where(x < _LOG2, small, large)
    return np.where(x <= 0, -np.inf, out)


def log_expm1(x: ArrayLike) -> Float:
    """``log(exp(x) - 1)`` for ``x > 0`` without overflow: ``x + log1mexp(x)``.

    >>> float(log_expm1(1000.0))
    1000.0
    >>> float(log_expm1(1e-10))
    -23.025850929890456
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        small = np.log(np.expm1(np.minimum(x, 700.0)))
    return np.where(x < 1.0, small, x + log1mexp(x))


def log_add(a: ArrayLike, b: ArrayLike) -> Float:
    """``log(exp(a) + exp(b))`` without overflow or underflow.

    >>> float(log_add(-1000.0, -1000.0))
    -999.3068528194401
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    hi = np.maximum(a, b)
    lo = np.minimum(a, b)
    with np.errstate(invalid="ignore"):
        out = hi + np.log1p(np.exp(lo - hi))
    return np.where(np.isneginf(hi), -np.inf, out)


def log_sub(a: ArrayLike, b: ArrayLike) -> Float:
    """``log(exp(a) - exp(b))`` for ``a >= b``: ``a + log1mexp(a - b)``.

    >>> float(log_sub(0.0, -1e-30))
    -69.07755278982137
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        gap = a - b
    return np.where(np.isneginf(b), a, a + log1mexp(gap))


def log_ndtr(x: ArrayLike) -> Float:
    """``log Phi(x)``, the log of the standard normal distribution function.

    A thin wrapper of :func:`scipy.special.log_ndtr` (accurate in both tails),
    so that every module takes it from here.

    >>> round(float(log_ndtr(-40.0)), 6)
    -804.608442
    """
    return np.asarray(_log_ndtr(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def log_mills(x: ArrayLike) -> Float:
    """``log m(x)`` with ``m(x) = Phi(-x) / phi(x)``, the Mills ratio.

    For ``x >= 0`` from ``erfcx`` (no underflow however large ``x``); below 0
    from ``log_ndtr``, where ``Phi(-x) >= 1/2``.

    >>> round(float(log_mills(0.0)), 12) == round(0.5 * math.log(math.pi / 2), 12)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x >= 0
    with np.errstate(divide="ignore"):
        out[pos] = np.log(erfcx(x[pos] * _SQRT1_2)) + _LOG_SQRT_PI_2
    xn = x[~pos]
    out[~pos] = _log_ndtr(-xn) + 0.5 * xn * xn + LOG_SQRT_2PI
    return out


def hazard_excess(t: ArrayLike) -> Float:
    """``phi(t) / Phi(t) + t``, which is positive, without cancellation.

    It is ``1/m(-t) - (-t)``; for ``-t > 10`` the difference is taken inside
    Laplace's continued fraction ``1/m(x) - x = 1/(x + 2/(x + 3/(x + ...)))``.

    >>> round(float(hazard_excess(-1e3)) * 1e3, 12)
    0.99999800001
    """
    t = np.asarray(t, dtype=np.float64)
    x = -t
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out = np.asarray(1.0 / (_SQRT_PI_2 * erfcx(x * _SQRT1_2)) - x, dtype=np.float64)
    far = x > _CF_START
    if np.any(far):
        xf = x[far]
        tail = xf.copy()
        for k in range(_CF_DEPTH, 1, -1):
            tail = xf + k / tail
        out[far] = 1.0 / tail
    return out


def log1p_complex(a: ArrayLike, b: ArrayLike) -> tuple[Float, Float]:
    """Real and imaginary parts of ``log(1 + a + i b)``, accurate for small ``a``, ``b``.

    >>> re, im = log1p_complex(1e-20, 0.0)
    >>> float(re)
    1e-20
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    re = 0.5 * np.log1p(a * (2.0 + a) + b * b)
    im = np.arctan2(b, 1.0 + a)
    return re, im


# ------------------------------------------------ exact upward rounding

def sqrt_up(Q: Fraction) -> float:
    """The smallest float ``t >= sqrt(Q)`` (``inf`` beyond the float range),
    from a float estimate scaled by a power of four (so that neither ``Q`` nor
    its root underflows) and an exact check."""
    if Q == 0:
        return 0.0
    k = (Q.denominator.bit_length() - Q.numerator.bit_length()) // 2   # Q 4^k near 1
    scaled = Q * Fraction(4) ** k if k >= 0 else Q / Fraction(4) ** -k
    try:
        t = math.ldexp(math.sqrt(float(scaled)), -k)
    except OverflowError:
        return math.inf
    while math.isfinite(t) and Fraction(t) ** 2 < Q:
        t = math.nextafter(t, math.inf)
    while t > 0 and Fraction(math.nextafter(t, 0.0)) ** 2 >= Q:
        t = math.nextafter(t, 0.0)
    return t


def norm_plus(C: float, offset: Iterable[Fraction] | None = None) -> float:
    """The smallest float ``s >= C + ||offset||``, decided in exact arithmetic.

    ``offset`` holds exact rationals (for the Gaussian-data mechanism under
    add-remove: ``b_j c_j``, the shift every added row brings). The root is
    bounded above by a float checked exactly (:func:`sqrt_up`), the sum
    rounded up and then lowered while the exact condition ``s >= C`` and
    ``(s - C)^2 >= sum_j offset_j^2`` still holds; ``inf`` when the bound
    exceeds the float range. A few steps of one float each, whatever the
    magnitudes.
    """
    if offset is None:
        return float(C)
    Q = sum((Fraction(v) ** 2 for v in offset), Fraction(0))
    if Q == 0:
        return float(C)
    t = sqrt_up(Q)
    if not math.isfinite(t):
        return math.inf
    fc = Fraction(C)

    def enough(s: float) -> bool:
        return Fraction(s) >= fc and (Fraction(s) - fc) ** 2 >= Q

    s = C + t
    while math.isfinite(s) and Fraction(s) < fc + Fraction(t):
        s = math.nextafter(s, math.inf)
    if not math.isfinite(s):
        return math.inf
    while enough(math.nextafter(s, 0.0)):
        s = math.nextafter(s, 0.0)
    return s
