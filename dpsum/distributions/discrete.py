"""Exact samplers and probability mass functions of the discrete Gaussian and
the discrete Laplace distributions on the integers (Canonne, Kamath and
Steinke 2020), drawn with rational arithmetic.
"""

from __future__ import annotations

import math
import numbers
import os
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V

__all__ = [
    "discrete_gaussian_std",
    "discrete_gaussian",
    "discrete_gaussian_pmf",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "discrete_laplace_std",
]


class _Bits:
    """Uniform integers below ``m``, by rejection from uniform 64-bit words:
    from the operating system's CSPRNG (``rng=None``, read in 32 KiB chunks
    with ``os.urandom``), or reproducibly from a NumPy generator (for
    tests and the book; not cryptographically secure)."""

    _CHUNK = 4096

    def __init__(self, rng: Any) -> None:
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
    """Bernoulli(exp(-num/den)) for ``0 <= num/den <= 1`` (CKS the Gaussian mechanism)."""
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
    exp(-|x| s / t)), CKS the Elliptical Gaussian mechanism, for positive integers ``s`` and ``t``.

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
    """One draw of N_Z(0, sigma^2) with ``sigma^2 = p/q`` (CKS the Gaussian-data mechanism)."""
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
        out = Fraction(float(V.check_positive(value, name, scalar=True)))
    if out <= 0:
        raise ValueError(f"{name} must be > 0")
    return out


def discrete_gaussian(sigma2: float | Fraction, size: int | tuple[int, ...] | None = None,
                      rng: V.RandomLike = None) -> Any:
    """Exact samples of the discrete Gaussian ``N_Z(0, sigma^2)``.

    The pmf is ``exp(-x^2 / (2 sigma^2)) / sum_y exp(-y^2 / (2 sigma^2))`` on the
    integers. Sampling follows Canonne, Kamath and Steinke (2020):
    discrete Laplace proposals accepted with Bernoulli(exp(-gamma)) trials, all
    in exact integer arithmetic, so the output has exactly this distribution
    (given uniform random integers).

    Parameters
    ----------
    sigma2 : float or int
        ``sigma^2 > 0``; a ``fractions.Fraction`` is used as it is, a float is
        converted exactly to a rational.
    size : int, tuple of ints or None
        Output shape; None (the default) draws one sample, returned as a
        Python ``int`` (NumPy's convention).
    rng : None, numpy.random.Generator or int
        ``None`` (the default) draws from the operating system's
        cryptographically secure generator (``os.urandom``).
        A generator or seed gives reproducible, **not secure**, draws.

    Returns
    -------
    int or numpy.ndarray of Python ints (dtype object)

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
    return out[0] if size is None else np.array(out, dtype=object).reshape(shape)


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
    s2 = float(V.check_positive(sigma2, "sigma2", scalar=True))
    xs = np.asarray(V.check_integer(x, "x", None, array=True), dtype=np.float64)
    return np.exp(-xs * xs / (2 * s2) - _log_normaliser(s2))


def discrete_laplace(scale: float | Fraction, size: int | tuple[int, ...] | None = None,
                     rng: V.RandomLike = None) -> Any:
    """Exact samples of the discrete Laplace distribution of scale ``tau``.

    The pmf is ``(1 - r) / (1 + r) r^|x|`` on the integers, ``r = exp(-1/tau)``.
    Sampling follows Canonne, Kamath and Steinke (2020) with
    ``tau = t / s`` in lowest terms, in exact integer arithmetic, so the output
    has exactly this distribution (given uniform random integers).

    Parameters
    ----------
    scale : float, int or fractions.Fraction
        ``tau > 0``; a float is converted exactly to a rational.
    size : int, tuple of ints or None
        Output shape; None (the default) draws one sample, returned as a
        Python ``int``.
    rng : None, numpy.random.Generator or int
        ``None`` (the default) draws from the operating system's
        cryptographically secure generator (``os.urandom``); a generator or
        seed gives reproducible, **not secure**, draws.

    Returns
    -------
    int or numpy.ndarray of Python ints (dtype object)

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
    return out[0] if size is None else np.array(out, dtype=object).reshape(shape)


def discrete_laplace_pmf(x: ArrayLike, scale: float) -> np.ndarray:
    """The pmf ``(1 - r) / (1 + r) r^|x|``, ``r = exp(-1/scale)``, of the
    discrete Laplace distribution at the integers ``x``."""
    tau = float(V.check_positive(scale, "scale", scalar=True))
    xs = np.abs(np.asarray(V.check_integer(x, "x", None, array=True), dtype=np.float64))
    log_norm = math.log(-math.expm1(-1.0 / tau)) - math.log1p(math.exp(-1.0 / tau))
    return np.exp(log_norm - xs / tau)


def discrete_gaussian_std(sigma: float) -> float:
    """Standard deviation of the discrete Gaussian ``N_Z(0, sigma^2)`` with
    scale parameter ``sigma > 0`` (a little below ``sigma`` for small ``sigma``).

    For ``sigma >= 4`` Poisson summation gives
    ``Var = sigma^2 (1 - 4 pi^2 sigma^2 e^{-2 pi^2 sigma^2} + ...)``, equal to
    ``sigma^2`` in double precision; below, the variance is summed over
    ``|y| <= 40 sigma + 40``.

    Examples
    --------
    >>> discrete_gaussian_std(10.0)
    10.0
    >>> 0.5 < discrete_gaussian_std(0.6) < 0.6
    True
    """
    sig = float(V.check_positive(sigma, "sigma", scalar=True))
    if sig >= 4.0:
        return sig
    half = int(40 * sig) + 40
    ys = np.arange(-half, half + 1, dtype=np.float64)
    w = np.exp(-ys * ys / (2 * sig * sig))
    return float(math.sqrt(np.dot(w, ys * ys) / np.sum(w)))


def discrete_laplace_std(scale: float | Fraction) -> float:
    """Standard deviation ``sqrt(2 r) / (1 - r)``, ``r = exp(-1/scale)``, of
    the discrete Laplace distribution (a little below the continuous
    Laplace's ``sqrt(2) scale``)."""
    tau = float(_as_fraction(scale, "scale"))
    return math.sqrt(2.0) * math.exp(-0.5 / tau) / -math.expm1(-1.0 / tau)
