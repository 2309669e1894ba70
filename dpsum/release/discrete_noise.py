"""Discrete noise on the grid 2^K: the release step of the grid path
(the chapter :ref:`Floating-point attacks and the grid path <ch-floating-point>`).
"""

from __future__ import annotations

from typing import Any

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.distributions.discrete import (
    discrete_gaussian,
    discrete_laplace,
    discrete_laplace_std,
)
from dpsum.kernels.grid import grid_exponent, round_to_grid
from dpsum.privacy.discrete import discrete_gaussian_sigma

__all__ = [
    "grid_gaussian_noise",
    "secure_gaussian",
    "secure_laplace",
]


_FLOAT_MAX = V.FLOAT_MAX


def grid_gaussian_noise(S: ArrayLike, K: int, sensitivity: float, *, epsilon: float,
                        delta: float, rng: V.RandomLike = None) -> tuple[np.ndarray, float]:
    """Add discrete Gaussian noise to an integer sum on the grid ``2^K``.

    ``S`` (Python integers, units of ``2^K``) has L2 sensitivity at most
    ``sensitivity / 2^K``; the noise ``N_Z(0, sigma^2)`` per coordinate, with
    ``sigma`` from :func:`dpsum.privacy.discrete_gaussian_sigma`, makes ``S + Z``
    ``(epsilon, delta)``-DP. Returns ``S + Z`` (Python integers) and the noise
    standard-deviation parameter ``sigma 2^K`` in the units of the statistic.
    ``rng=None`` draws from the operating system's secure generator.

    Examples
    --------
    >>> Y, sigma = grid_gaussian_noise(np.array([0, 0]), 0, 1.0, epsilon=1.0, delta=1e-6, rng=0)
    >>> len(Y), bool(sigma > 1)
    (2, True)
    """
    sens = float(V.check_positive(sensitivity, "sensitivity", scalar=True))
    k_exp = V.check_integer(K, "K", None)
    eps, dlt = V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)
    gen = V.check_secure_rng(rng)
    with np.errstate(over="ignore", under="ignore"):
        grid_sens = sens * 2.0 ** -max(min(k_exp, 2100), -2100)
    if not 0.0 < grid_sens < math.inf:
        raise ValueError("sensitivity / 2^K is not a positive finite float: K is out of range "
                         "for this sensitivity")
    sigma = discrete_gaussian_sigma(eps, dlt, grid_sens)
    if math.frexp(sigma)[1] + k_exp > 1024:
        raise ValueError("sensitivity is too large for this epsilon and delta: the noise "
                         "standard deviation sigma 2^K exceeds the largest float")
    if isinstance(S, np.ndarray) and S.dtype == object:     # Python integers, any size
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in S.flat):
            raise TypeError("S must hold integers (the sum in units of 2^K)")
    else:
        S = V.check_integer(S, "S", None, array=True)
    S = np.asarray(S, dtype=object)
    Z = discrete_gaussian(Fraction(sigma) ** 2, size=S.shape, rng=gen)
    return S + Z, math.ldexp(sigma, k_exp)


def secure_gaussian(value: ArrayLike, *, sensitivity: float, epsilon: float, delta: float,
                    rng: V.RandomLike = None, before_noise: Any = None
                    ) -> tuple[np.ndarray, int, float]:
    """The Gaussian mechanism on the grid: a precomputed statistic released with exact
    discrete Gaussian noise.

    The statistic (L2 sensitivity ``Delta``) is rounded to the grid ``2^K``,
    ``K = grid_exponent(Delta, d)``; two neighbouring statistics round to
    integer vectors at L2 distance at most ``Delta / 2^K + sqrt(d)`` (each
    rounding moves a vector by at most ``sqrt(d) / 2``), and the noise is
    calibrated to that integer sensitivity. The output is
    ``(round(value / 2^K) + Z) 2^K`` with ``Z ~ N_Z(0, sigma^2)`` per coordinate.

    ``before_noise``, if given, is called with the noise multiplier
    ``sigma / Delta_grid`` (the discrete Gaussian's scale over the integer
    sensitivity: ``1 / (2 m^2)``-zCDP) once every public argument is checked,
    before the value is read and the noise drawn (a session charges it there).

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
    gen = V.check_secure_rng(rng)
    x = V.as_real_array(value, "value")          # type and shape only: public
    d = max(1, x.size)
    K = grid_exponent(sens, d)
    _check_grid_exponent(K, "sensitivity")
    grid_sens = math.ldexp(sens, -K) + math.sqrt(d)
    sigma = discrete_gaussian_sigma(epsilon, delta, grid_sens)   # refusals before the data
    if math.frexp(sigma)[1] + K > 1024:       # sigma 2^K, the noise in the value's units
        raise ValueError("sensitivity is too large for this epsilon and delta: the noise "
                         "standard deviation exceeds the largest float (1.8e308)")
    if before_noise is not None:
        before_noise(sigma / grid_sens)
    if not np.all(np.isfinite(x)):
        raise ValueError("value contains NaN or infinite values")
    q = round_to_grid(x, K)
    Y, _ = grid_gaussian_noise(q, 0, grid_sens, epsilon=epsilon, delta=delta, rng=gen)
    estimate = _from_grid(Y, K).reshape(x.shape)
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

    **Guarantee** (:prf:ref:`fp-thm-discrete-laplace`). For neighbouring datasets,
    ``|rint(a) - rint(b)| <= |a - b| + 1`` in every coordinate, so the integer
    vectors ``q, q'`` satisfy ``||q - q'||_1 <= Delta_1 / 2^K + d`` and, being
    integers, ``||q - q'||_1 <= D``. For every integer vector ``y``,
    ``P[q + Z = y] / P[q' + Z = y] = prod_j exp((|y_j - q'_j| - |y_j - q_j|)
    epsilon / D) <= exp(epsilon ||q - q'||_1 / D) <= exp(epsilon)``: the
    integer release is ``epsilon``-DP with ``delta = 0``, and the returned
    floats are a deterministic function of it (post-processing). The noise
    is sampled exactly (:func:`dpsum.distributions.discrete_laplace`), from the operating system's
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
    sens = float(V.check_positive(sensitivity, "sensitivity", scalar=True))
    eps = float(V.check_epsilon(epsilon, scalar=True))
    gen = V.check_secure_rng(rng)
    x = V.as_real_array(value, "value")          # type and shape only: public
    d = max(1, x.size)
    K = grid_exponent(sens, d * d)          # L1: sqrt(d^2) 2^(K-1) = d 2^(K-1)
    _check_grid_exponent(K, "sensitivity")
    D = math.floor(math.ldexp(sens, -K)) + d    # exact: a power-of-two rescaling
    scale = Fraction(D) / Fraction(eps)
    try:
        with np.errstate(over="ignore"):
            noise_std = float(np.ldexp(discrete_laplace_std(scale), K))
    except OverflowError:                        # the scale itself beyond the float range
        noise_std = math.inf
    if not noise_std < _FLOAT_MAX:
        raise ValueError("sensitivity / epsilon is too large: the noise's standard "
                         "deviation is not a finite float")
    x = V.check_finite_array(value, "value")
    q = round_to_grid(x, K)
    Y = q + discrete_laplace(scale, size=x.shape, rng=gen)
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
