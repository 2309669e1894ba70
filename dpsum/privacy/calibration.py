r"""Calibrating the Gaussian mechanism: classic and analytic (exact) noise levels.

The Gaussian mechanism releases ``f(X) + N(0, sigma^2 I)``. If ``f`` has L2
sensitivity ``Delta`` then, writing ``r = Delta / sigma``, the smallest delta
for which the release is (epsilon, delta)-DP is the *privacy profile*

.. math::

    \delta(\varepsilon) = \Phi(a) - e^{\varepsilon}\,\Phi(b),\qquad
    a = \frac{r}{2} - \frac{\varepsilon}{r},\quad
    b = -\frac{r}{2} - \frac{\varepsilon}{r},

(Balle and Wang 2018; in the book, :prf:ref:`the analytic calibration <gaussian-thm-analytic>`).  This module evaluates that
profile, inverts it in sigma (:func:`analytic_sigma`) and in epsilon
(:func:`gaussian_epsilon`), and also provides the classic Dwork--Roth
calibration (:func:`classic_sigma`, :prf:ref:`the classic calibration <gaussian-thm-classic>`).

Numerical method
----------------
The profile is computed in log space, never as a difference of two values of
``erf``.  With the Mills ratio ``m(x) = Phi(-x) / phi(x)`` one has
``log Phi(t) = -t^2/2 - log sqrt(2 pi) + log m(-t)``, and because
``(b^2 - a^2) / 2 = epsilon`` exactly,

.. math::

    E := \log\Phi(a) - \log\Phi(b) - \varepsilon
       = \log m(-a) - \log m(-b)
       = \int_b^a \Bigl(\frac{\varphi(t)}{\Phi(t)} + t\Bigr)\,dt \;>\; 0,

so that ``log delta = log Phi(a) + log(1 - exp(-E))``.  The epsilon term has
cancelled analytically.  When ``r = a - b <= 1`` the integral is evaluated by
8-point Gauss--Legendre quadrature (the integrand is analytic in a wide strip
around the real axis and positive, so no digits are lost); otherwise ``E`` is
the difference of two logarithms of Mills ratios, which is then at least a
few per cent of their size.  ``phi/Phi + t`` is computed from
``scipy.special.erfcx`` and, for ``t < -10``, from the Laplace continued
fraction of the Mills ratio.  The relative error of the computed delta is
below about 1e-12 wherever delta >= 1e-300 (checked against mpmath in the
test suite).

Both inversions use Newton's method on a logarithmic scale: ``log delta`` is
increasing and concave in ``log(Delta / sigma)`` and decreasing and concave in
``log epsilon`` (checked numerically over the whole supported range), and the
derivatives are closed-form,

.. math::

    \frac{\partial \delta}{\partial \sigma} = -\frac{\Delta}{\sigma^2}\varphi(a),
    \qquad
    \frac{\partial \delta}{\partial \varepsilon} = -e^{\varepsilon}\Phi(b).

Started from a point where ``Phi(a) = delta`` (which is private because
``delta(epsilon) < Phi(a)``), the iterates approach the root monotonically
from the private side.  A bracket guards every step anyway.  The result is
then moved to the private side until the computed ``log delta`` is 1e-12 to
2e-12 below the target (the evaluation error is about 3e-13), checking the
inequality at the returned value exactly as :func:`gaussian_delta` evaluates
it.  In sigma this margin is at most ~2.5e-12 relative for delta <= 0.5.

One kernel
----------
Every public function validates and broadcasts its arguments, then calls the
same vectorised kernel (``_log_delta``, ``_newton_log``, ``_analytic_sigma``,
``_gaussian_epsilon``) on flat arrays; a scalar call is a call on arrays of
length one, so scalars and arrays give bit-for-bit the same answers. Scalar
calls of :func:`analytic_sigma` and :func:`gaussian_epsilon` are memoised
(they are pure functions of public inputs, and simulations repeat them).

Floating-point caveat: these functions compute noise *levels*.  Sampling
Gaussian noise with floating-point arithmetic is not itself protected against
floating-point attacks (Mironov 2012); see the book.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import erf, ndtri

from dpsum import _validation as V
from dpsum._special import LOG_SQRT_2PI, hazard_excess, log1mexp, log_mills, log_ndtr

__all__ = [
    "MAX_CALIBRATION_EPSILON",
    "classic_sigma",
    "gaussian_delta",
    "analytic_sigma",
    "gaussian_epsilon",
]


Float = NDArray[np.float64]


# ---------------------------------------------------------------------------
# constants
# ---------------------------------------------------------------------------
_SQRT1_2 = math.sqrt(0.5)


_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


_QUAD_MAX_WIDTH = 1.0  # use quadrature for E when r = a - b <= this


# Safety margin, in log delta: the returned sigma (or epsilon) is moved to the
# private side until the computed log delta is below log(target) - _VERIFY.
# The computed log delta is accurate to about 3e-13 absolute, so _VERIFY
# leaves a factor of three to spare; _SHIFT is the first move.
_SHIFT = 2e-12


_VERIFY = 1e-12


_STEP_CAP = 1e-3  # largest relative move of the margin step (matters only for delta near 1)


_BUMP = 5e-13  # further step (in log delta) if the check fails; then doubled


_NEWTON_TOL = 1e-14  # stop when a Newton step in log scale is below this ...


_F_TOL = 1e-13  # ... or when |log delta - log target| is below this (plus rounding)


_MAX_ITER = 100


#: Largest epsilon the inversions accept. At the optimum Delta/sigma is about
#: sqrt(2 epsilon), and a = Delta/(2 sigma) - epsilon sigma/Delta is then known
#: only to about sqrt(2 epsilon) * 1e-16 in absolute terms, so beyond ~1e8 no
#: double-precision sigma pins delta down to the accuracy promised here.
MAX_CALIBRATION_EPSILON = 1e8


# ---------------------------------------------------------------------------
# validation and broadcasting
# ---------------------------------------------------------------------------
def _broadcast(**named: Any) -> tuple[list[Float], tuple[int, ...]]:
    """Broadcast validated arguments to flat float64 arrays; report the names
    when shapes clash. Returns the flat arrays and the broadcast shape."""
    values = [np.asarray(v, dtype=np.float64) for v in named.values()]
    try:
        arrays = np.broadcast_arrays(*values)
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in named.items())
        raise ValueError(f"arguments cannot be broadcast together: {shapes}") from None
    return [np.ascontiguousarray(a).ravel() for a in arrays], arrays[0].shape


def _is_scalar(*values: Any) -> bool:
    return all(type(v) is float for v in values)


# ---------------------------------------------------------------------------
# the kernel: flat float64 arrays in, flat arrays out
# ---------------------------------------------------------------------------
def _log_delta(r: Float, eps: Float) -> tuple[Float, Float, Float]:
    """(log delta, a, b) of the Gaussian mechanism with Delta/sigma = r."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        inf = np.isinf(r)
        c = np.where(inf, 0.0, -eps / r)
        h = 0.5 * r
        a = h + c
        b = c - h
        e = np.empty_like(r)
        quad = r <= _QUAD_MAX_WIDTH
        if np.any(quad):
            cq = c[quad, None]
            hq = h[quad, None]
            # an elementwise product and a row sum, not a BLAS matrix-vector
            # product: the result of a row must not depend on how many rows
            # there are (a scalar call and an array call agree bit for bit)
            e[quad] = h[quad] * np.sum(hazard_excess(cq + hq * _GL_X) * _GL_W, axis=1)
        rest = ~quad & ~inf
        if np.any(rest):
            e[rest] = log_mills(-a[rest]) - log_mills(-b[rest])
        e[inf] = np.inf
        logd = log_ndtr(a) + log1mexp(e)
    return logd, a, b


def _not_representable(what: str, arg: str) -> ValueError:
    return ValueError(
        f"the {what} for these arguments is not a positive finite float; "
        f"{arg} is too extreme"
    )


#: The smallest positive normal float. Below it a float has fewer than 53
#: significant bits, so a noise level there cannot be held within the
#: calibration rule (at most 1e-9 relatively above the minimum, never below).
_TINY = float(np.finfo(np.float64).tiny)


def _check_normal_sigma(sigma: Any, arg: str = "sensitivity") -> None:
    """Refuse a noise level that is only representable as a subnormal float."""
    if np.any(np.asarray(sigma) < _TINY):
        raise ValueError(
            f"{arg} is too small for this epsilon and delta: the noise standard deviation "
            "would be below 2.2e-308 (a subnormal float), where it cannot be represented "
            "within 1e-9 of the exact calibration; rescale the data (and the sensitivity)"
        )


def _ftol(target: Float) -> Float:
    """Tolerance on f = log delta - log target: _F_TOL plus a few units in the
    last place of log target (about 1.1e-13 at delta = 1e-300)."""
    return _F_TOL + 1e-15 * np.abs(target)


#: How gaussian_epsilon names its culprit; the callers that take another
#: parameter (gdp_epsilon's mu, composed multipliers) pass their own words.
_SIGMA_TOO_SMALL = "sigma is too small relative to the sensitivity"


def _epsilon_too_large(culprit: str = _SIGMA_TOO_SMALL) -> ValueError:
    return ValueError(
        f"{culprit}: the mechanism is not "
        f"(epsilon, delta)-DP for any epsilon <= {MAX_CALIBRATION_EPSILON:g}, the largest "
        "epsilon gaussian_epsilon resolves"
    )


# Both inversions solve f(x) = log delta(x) - log(target) = 0 for a positive
# x (x = Delta/sigma, or x = epsilon) by Newton's method in log x, where
# fun(x, idx) returns f and its derivative with respect to log x at the
# entries idx.  The private side is f <= 0.  A bracket [private point,
# non-private point] (in log x) catches any step that leaves it, which is then
# replaced by bisection (or, while one end is unknown, by a step of a factor
# e).  Steps are multiplicative, so the iterate keeps full relative precision.
def _newton_log(x: Float, fun: Callable[[Float, NDArray[np.intp]], tuple[Float, Float]],
                ftol: Float, name: str) -> tuple[Float, Float]:
    """Safeguarded Newton in log x on every entry; returns (roots, d f / d log x)."""
    x = x.copy()
    slope = np.empty_like(x)
    priv = np.full_like(x, np.nan)
    nonpriv = np.full_like(x, np.nan)
    active = np.arange(x.size)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for _ in range(_MAX_ITER):
            if active.size == 0:
                return x, slope
            xi = x[active]
            f, g = fun(xi, active)
            p = np.where(f <= 0, xi, priv[active])
            q = np.where(f <= 0, nonpriv[active], xi)
            priv[active], nonpriv[active] = p, q
            slope[active] = g
            step = -f / g
            fin = np.isfinite(step)
            step = np.where(fin, step, 0.0)
            done = (np.abs(step) <= _NEWTON_TOL) | (np.abs(f) <= ftol[active])
            new = xi * np.exp(step)
            both = ~np.isnan(p) & ~np.isnan(q)
            ok = fin & (new > 0) & np.isfinite(new)
            ok &= ~both | ((np.fmin(p, q) < new) & (new < np.fmax(p, q)))
            mid = np.exp(0.5 * (np.log(p) + np.log(q)))
            stuck = both & ~ok & ~done & ((mid == p) | (mid == q))
            away = xi * np.where((g > 0) == (f < 0), math.e, 1.0 / math.e)
            new = np.where(ok | done, new, np.where(both, mid, away))
            new = np.where(stuck, p, new)
            done |= stuck
            x[active] = np.where(fin | ~done, new, xi)
            if not np.all((x[active] > 0) & np.isfinite(x[active])):
                raise _not_representable("solution", name)
            active = active[~done]
    raise RuntimeError(f"{name}: Newton iteration did not converge; please report this")  # pragma: no cover


def _analytic_sigma(eps: Float, delta: Float, sens: Float) -> Float:
    target = np.log(delta)
    z = ndtri(delta)
    with np.errstate(over="ignore", divide="ignore"):
        # Private start: Phi(a) = delta, i.e. r^2/2 - z r - eps = 0, whose positive
        # root z + sqrt(z^2 + 2 eps) is written without cancellation for z < 0.
        root = np.hypot(z, np.sqrt(2.0 * eps))
        r = np.where(z >= 0, z + root, 2.0 * eps / (root - z))
    if not np.all((r > 0) & np.isfinite(r)):
        raise _not_representable("noise level", "epsilon")

    def fun(ri: Float, idx: NDArray[np.intp]) -> tuple[Float, Float]:
        ld, a, _b = _log_delta(ri, eps[idx])
        # d log delta / d log r = r phi(a) / delta
        return ld - target[idx], np.exp(np.log(ri) - 0.5 * a * a - LOG_SQRT_2PI - ld)

    r, g = _newton_log(r, fun, _ftol(target), "epsilon")
    # Shift by _SHIFT in log delta towards privacy, then verify at the
    # returned value exactly as gaussian_delta evaluates it.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        good = g > 0
        gg = np.where(good, g, 1.0)
        r = r * np.where(good, np.exp(-np.minimum(_SHIFT / gg, _STEP_CAP)), 1.0 - _STEP_CAP)
        sigma = sens / r
        bump = np.where(good, np.minimum(_BUMP / gg, _STEP_CAP), _STEP_CAP)
    for _ in range(_MAX_ITER):
        if not np.all((sigma > 0) & np.isfinite(sigma)):
            raise _not_representable("noise level", "epsilon or sensitivity")
        with np.errstate(over="ignore"):
            fail = _log_delta(sens / sigma, eps)[0] - target > -_VERIFY
        if not np.any(fail):
            _check_normal_sigma(sigma)
            return sigma
        sigma = np.where(fail, sigma * (1.0 + bump), sigma)
        bump = 2.0 * bump + 2.2e-16
    raise RuntimeError("analytic_sigma could not verify its result; please report this")  # pragma: no cover


def _gaussian_epsilon(sigma: Float, delta: Float, sens: Float,
                      culprit: str = _SIGMA_TOO_SMALL) -> Float:
    target = np.log(delta)
    with np.errstate(over="ignore"):
        r = sens / sigma
    if np.any(np.isinf(r)):
        raise _epsilon_too_large(culprit)
    # delta(0) = 2 Phi(r/2) - 1 = erf(r / (2 sqrt 2)): already (0, delta)-DP?
    d0 = erf(0.5 * r * _SQRT1_2)
    with np.errstate(divide="ignore"):
        zero = (d0 <= 0) | (target >= np.log(d0) + _VERIFY)
    out = np.zeros_like(r)
    todo = np.flatnonzero(~zero)
    if todo.size == 0:
        return out
    r, target = r[todo], target[todo]
    z = ndtri(delta[todo])
    with np.errstate(over="ignore", invalid="ignore"):
        eps = r * (0.5 * r - z)  # Phi(a) = delta here, so this epsilon is private
    if not np.all(eps <= 10.0 * MAX_CALIBRATION_EPSILON):
        raise _epsilon_too_large(culprit)

    def fun(ei: Float, idx: NDArray[np.intp]) -> tuple[Float, Float]:
        ld, _a, b = _log_delta(r[idx], ei)
        # d log delta / d log eps = -eps e^eps Phi(b) / delta
        return ld - target[idx], -np.exp(np.log(ei) + ei + log_ndtr(b) - ld)

    eps, g = _newton_log(eps, fun, _ftol(target), "sigma")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        good = g < 0
        gg = np.where(good, -g, 1.0)
        eps = eps * np.where(good, np.exp(np.minimum(_SHIFT / gg, _STEP_CAP)), 1.0 + _STEP_CAP)
        bump = np.where(good, np.minimum(_BUMP / gg, _STEP_CAP), _STEP_CAP)
    for _ in range(_MAX_ITER):
        if not np.all(eps <= MAX_CALIBRATION_EPSILON):
            raise _epsilon_too_large(culprit)
        fail = _log_delta(r, eps)[0] - target > -_VERIFY
        if not np.any(fail):
            out[todo] = eps
            return out
        eps = np.where(fail, eps * (1.0 + bump), eps)
        bump = 2.0 * bump + 2.2e-16
    raise RuntimeError("gaussian_epsilon could not verify its result; please report this")  # pragma: no cover


@lru_cache(maxsize=4096)
def _analytic_sigma_scalar(eps: float, delta: float, sens: float) -> float:
    return float(_analytic_sigma(np.array([eps]), np.array([delta]), np.array([sens]))[0])


@lru_cache(maxsize=4096)
def _gaussian_epsilon_scalar(sigma: float, delta: float, sens: float,
                             culprit: str = _SIGMA_TOO_SMALL) -> float:
    return float(_gaussian_epsilon(np.array([sigma]), np.array([delta]), np.array([sens]),
                                   culprit)[0])


# ---------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------
def classic_sigma(epsilon: ArrayLike, delta: ArrayLike, sensitivity: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Noise level of the classic Gaussian mechanism (:prf:ref:`the classic calibration <gaussian-thm-classic>`).

    Returns ``sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon``, the
    calibration of Dwork and Roth (2014, Theorem A.1), which makes the
    Gaussian mechanism (epsilon, delta)-DP for ``0 < epsilon < 1``.

    Parameters
    ----------
    epsilon : float or array_like
        Privacy parameter, ``0 < epsilon < 1``.
    delta : float or array_like
        Privacy parameter in (0, 1).
    sensitivity : float or array_like, default 1.0
        L2 sensitivity ``Delta`` of the released function, > 0 and finite.

    Returns
    -------
    float or numpy.ndarray
        The noise standard deviation; a float when every argument is a scalar.

    Raises
    ------
    ValueError
        If an argument is out of range, in particular for ``epsilon >= 1``:
        the proof of the classic calibration assumes epsilon < 1, and outside it the formula is
        not private (at delta = 1e-3 and epsilon = 10 the true delta is about
        3.4 times the requested one).  Use :func:`analytic_sigma`, which is
        exact for every epsilon and never larger.

    See Also
    --------
    analytic_sigma : the smallest sigma (the analytic calibration).

    Examples
    --------
    >>> round(classic_sigma(0.5, 1e-5), 6)
    9.689611
    >>> classic_sigma(0.5, 1e-5) > analytic_sigma(0.5, 1e-5)
    True
    """
    eps = V.check_epsilon(epsilon)
    dlt = V.check_delta(delta)
    sens = V.check_positive(sensitivity, "sensitivity")
    if np.any(np.asarray(eps) >= 1.0):
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian mechanism, got {V.describe(epsilon)}: "
            "the proof of the classic bound (Dwork and Roth 2014, Theorem A.1) only "
            "covers epsilon < 1, and beyond it the formula can fail to be private "
            "(at delta=1e-3, epsilon=10 its true delta is 3.4 times the requested one). "
            "Use analytic_sigma, which is exact for every epsilon > 0."
        )
    (e, d, s), shape = _broadcast(epsilon=eps, delta=dlt, sensitivity=sens)
    sigma = s * np.sqrt(2.0 * np.log(1.25 / d)) / e
    if not np.all(np.isfinite(sigma)):
        raise _not_representable("noise level", "epsilon, delta or sensitivity")
    _check_normal_sigma(sigma)
    return V.scalar_or_array(sigma.reshape(shape), epsilon, delta, sensitivity)


def gaussian_delta(sigma: ArrayLike, epsilon: ArrayLike, sensitivity: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Exact privacy profile delta(epsilon) of the Gaussian mechanism.

    The privacy profile, for noise standard deviation ``sigma`` and L2
    sensitivity ``Delta``:
    ``Phi(Delta/(2 sigma) - epsilon sigma/Delta)
    - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta)``
    (Balle and Wang 2018; :prf:ref:`the analytic calibration <gaussian-thm-analytic>`).  The mechanism
    is (epsilon, delta)-DP exactly when delta is at least this value.

    Parameters
    ----------
    sigma : float or array_like
        Noise standard deviation, > 0 and finite.
    epsilon : float or array_like
        Privacy parameter, >= 0 and finite (0 is allowed: it is what
        :func:`gaussian_epsilon` returns when the mechanism is already
        (0, delta)-DP).
    sensitivity : float or array_like, default 1.0
        L2 sensitivity, > 0 and finite.

    Returns
    -------
    float or numpy.ndarray
        delta(epsilon) in [0, 1), with a relative error below 1e-9 (in
        practice about 1e-12) wherever it is at least 1e-300; values below
        the float range underflow to 0.

    Notes
    -----
    Computed as ``log Phi(a) + log(1 - exp(-E))`` with
    ``E = log Phi(a) - log Phi(b) - epsilon`` evaluated without cancellation
    (see the module documentation), never as a difference of ``erf`` values.

    Examples
    --------
    >>> round(gaussian_delta(3.730632, 1.0) / 1e-5, 4)
    1.0
    >>> gaussian_delta(2.0, 0.0) == float(erf(0.25 / math.sqrt(2)))
    True
    """
    sig = V.check_positive(sigma, "sigma")
    eps = V.check_epsilon(epsilon, allow_zero=True)
    sens = V.check_positive(sensitivity, "sensitivity")
    (s, e, d), shape = _broadcast(sigma=sig, epsilon=eps, sensitivity=sens)
    with np.errstate(over="ignore"):
        r = d / s
    delta = np.exp(_log_delta(r, e)[0])
    return V.scalar_or_array(delta.reshape(shape), sigma, epsilon, sensitivity)


def analytic_sigma(epsilon: ArrayLike, delta: ArrayLike, sensitivity: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Smallest noise level making the Gaussian mechanism (epsilon, delta)-DP.

    The analytic Gaussian mechanism of Balle and Wang (2018),
    :prf:ref:`the analytic calibration <gaussian-thm-analytic>`: ``sensitivity * sigma_opt`` where ``sigma_opt``
    is the smallest ``sigma > 0`` whose privacy profile (:func:`gaussian_delta`)
    is at most ``delta`` at ``epsilon``.  Valid for every epsilon > 0, and
    never larger than :func:`classic_sigma` where that applies.

    Parameters
    ----------
    epsilon : float or array_like
        Privacy parameter, > 0 and finite.
    delta : float or array_like
        Privacy parameter in (0, 1).
    sensitivity : float or array_like, default 1.0
        L2 sensitivity ``Delta``, > 0 and finite.

    Returns
    -------
    float or numpy.ndarray
        The noise standard deviation.  It is conservative: the profile
        inequality ``gaussian_delta(sigma, epsilon, sensitivity) <= delta`` holds
        at the returned sigma in exact arithmetic, not only in floating point
        (the safety margin exceeds the evaluation error; the tests check it
        with mpmath).  It is tight: for epsilon in [1e-3, 50] and delta in
        [1e-300, 0.5], ``sigma * (1 - 1e-9)`` violates it; in
        practice the excess over the exact minimum is about 1e-12 relative.

    Raises
    ------
    ValueError
        If an argument is out of range, if epsilon exceeds
        ``MAX_CALIBRATION_EPSILON``
        (1e8, beyond which no double-precision sigma resolves the profile to
        this accuracy), or if the answer is not a positive finite float
        (epsilon tiny and delta subnormal, or a sensitivity near 1e308).

    Notes
    -----
    Newton's method on ``log delta`` as a function of ``log(Delta/sigma)``
    (increasing and concave), started at the private point where
    ``Phi(a) = delta``, with the closed-form derivative
    ``d delta / d sigma = -(Delta / sigma^2) phi(a)``; then a margin of about
    1e-12 and a check of the inequality at the returned value.

    Examples
    --------
    >>> round(analytic_sigma(1.0, 1e-5), 6)
    3.730632
    """
    eps = V.check_epsilon(epsilon)
    dlt = V.check_delta(delta)
    sens = V.check_positive(sensitivity, "sensitivity")
    if np.any(np.asarray(eps) > MAX_CALIBRATION_EPSILON):
        shown = f" got {V.describe(eps)}:" if np.ndim(eps) == 0 else ""
        raise ValueError(
            f"epsilon must be <= {MAX_CALIBRATION_EPSILON:g} for analytic_sigma,{shown} beyond "
            "that the noise level cannot be resolved in double precision (and such an "
            "epsilon gives no meaningful privacy)"
        )
    if _is_scalar(eps, dlt, sens):
        return _analytic_sigma_scalar(eps, dlt, sens)
    (e, d, s), shape = _broadcast(epsilon=eps, delta=dlt, sensitivity=sens)
    return V.scalar_or_array(_analytic_sigma(e, d, s).reshape(shape), epsilon, delta, sensitivity)


def gaussian_epsilon(sigma: ArrayLike, delta: ArrayLike, sensitivity: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Smallest epsilon for which the Gaussian mechanism is (epsilon, delta)-DP.

    The inverse in epsilon of :func:`gaussian_delta` (the profile equation
    ``gaussian_delta(sigma, epsilon) = delta`` solved for epsilon at fixed
    sigma and delta).

    Parameters
    ----------
    sigma : float or array_like
        Noise standard deviation, > 0 and finite.
    delta : float or array_like
        Privacy parameter in (0, 1).
    sensitivity : float or array_like, default 1.0
        L2 sensitivity, > 0 and finite.

    Returns
    -------
    float or numpy.ndarray
        epsilon >= 0, conservative: ``gaussian_delta(sigma, epsilon) <= delta``
        holds at the returned value (relative excess about 1e-12 in delta).
        The value is 0.0 when ``delta`` is at least ``delta(0) =
        2 Phi(Delta / (2 sigma)) - 1``: the mechanism is then already
        (0, delta)-DP.

    Raises
    ------
    ValueError
        If an argument is out of range, or if sigma is so small relative to
        the sensitivity that the answer exceeds ``MAX_CALIBRATION_EPSILON`` (1e8).

    Examples
    --------
    >>> eps = gaussian_epsilon(3.730632, 1e-5)
    >>> round(eps, 6), gaussian_delta(3.730632, eps) <= 1e-5
    (1.0, True)
    """
    sig = V.check_positive(sigma, "sigma")
    dlt = V.check_delta(delta)
    sens = V.check_positive(sensitivity, "sensitivity")
    return _gaussian_epsilon_checked(sig, dlt, sens, _SIGMA_TOO_SMALL, (sigma, delta, sensitivity))


def _gaussian_epsilon_checked(sig: Any, dlt: Any, sens: Any, culprit: str,
                              inputs: tuple) -> Any:
    """:func:`gaussian_epsilon` on checked arguments; ``culprit`` names the
    caller's argument when the answer exceeds ``MAX_CALIBRATION_EPSILON``."""
    if _is_scalar(sig, dlt, sens):
        return _gaussian_epsilon_scalar(sig, dlt, sens, culprit)
    (s, d, n), shape = _broadcast(sigma=sig, delta=dlt, sensitivity=sens)
    return V.scalar_or_array(_gaussian_epsilon(s, d, n, culprit).reshape(shape), *inputs)
