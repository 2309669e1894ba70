r"""Calibrating the Gaussian mechanism: classic and analytic (exact) noise levels.

The Gaussian mechanism releases ``f(X) + N(0, sigma^2 I)``. If ``f`` has L2
sensitivity ``Delta`` then, writing ``r = Delta / sigma``, the smallest delta
for which the release is (epsilon, delta)-DP is the *privacy profile*

.. math::

    \delta(\varepsilon) = \Phi(a) - e^{\varepsilon}\,\Phi(b),\qquad
    a = \frac{r}{2} - \frac{\varepsilon}{r},\quad
    b = -\frac{r}{2} - \frac{\varepsilon}{r},

the left-hand side of the report's equation (2) (Balle and Wang 2018; the
report's Theorem 3, which takes ``Delta = 1``).  This module evaluates that
profile, inverts it in sigma (:func:`analytic_sigma`) and in epsilon
(:func:`gaussian_epsilon`), and also provides the classic Dwork--Roth
calibration (:func:`classic_sigma`, the report's Theorem 2).

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

Floating-point caveat: these functions compute noise *levels*.  Sampling
Gaussian noise with floating-point arithmetic is not itself protected against
floating-point attacks (Mironov 2012); see the book.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf, erfcx, log_ndtr, ndtri

from dpsum.privacy import check_delta, check_epsilon, check_positive

__all__ = ["classic_sigma", "analytic_sigma", "gaussian_delta", "gaussian_epsilon"]

# ---------------------------------------------------------------------------
# constants
# ---------------------------------------------------------------------------
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_SQRT_PI_2 = 0.5 * math.log(0.5 * math.pi)
_SQRT_PI_2 = math.sqrt(0.5 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
_LOG2 = math.log(2.0)

_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)
_GL_PAIRS = tuple(zip(_GL_X.tolist(), _GL_W.tolist()))
_QUAD_MAX_WIDTH = 1.0  # use quadrature for E when r = a - b <= this
_CF_START = 10.0  # use the continued fraction for phi/Phi + t when -t > this
_CF_DEPTH = 14  # enough for double precision at -t >= 10 (9 suffice at -t >= 20)
_CF_DEPTH_FAR = 9

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

# Largest epsilon the inversions accept.  At the optimum Delta/sigma is about
# sqrt(2 epsilon), and a = Delta/(2 sigma) - epsilon sigma/Delta is then known
# only to about sqrt(2 epsilon) * 1e-16 in absolute terms, so beyond ~1e8 no
# double-precision sigma pins delta down to the accuracy promised here.
EPSILON_MAX = 1e8


# ---------------------------------------------------------------------------
# validation and broadcasting
# ---------------------------------------------------------------------------
# A plain Python float that is already in range is accepted as it is; every
# other value goes through the dpsum.privacy helpers, which convert it or
# raise the error naming the argument.  (The helpers cost ~8 us per call, more
# than the whole scalar computation, hence this shortcut.)
def _epsilon_arg(value, name="epsilon"):
    if type(value) is float and 0.0 < value < math.inf:
        return value
    return check_epsilon(value, name)


def _delta_arg(value, name="delta"):
    if type(value) is float and 0.0 < value < 1.0:
        return value
    return check_delta(value, name)


def _positive_arg(value, name):
    if type(value) is float and 0.0 < value < math.inf:
        return value
    return check_positive(value, name)


def _broadcast(**named):
    """Broadcast validated arguments; report the names when shapes clash."""
    values = list(named.values())
    scalar = all(isinstance(v, float) for v in values)
    if scalar:
        return scalar, values
    try:
        arrays = np.broadcast_arrays(*[np.asarray(v, dtype=np.float64) for v in values])
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in named.items())
        raise ValueError(f"arguments cannot be broadcast together: {shapes}") from None
    return scalar, [np.ascontiguousarray(a).ravel() for a in arrays] + [arrays[0].shape]


# ---------------------------------------------------------------------------
# scalar kernels (pure Python floats: fast for single calls)
# ---------------------------------------------------------------------------
def _hazard_excess_s(t: float) -> float:
    """phi(t)/Phi(t) + t, which is > 0, without cancellation."""
    x = -t
    if x > _CF_START:
        # 1/m(x) - x = 1/(x + 2/(x + 3/(x + ...))) (Laplace's continued fraction)
        tail = x
        for k in range(_CF_DEPTH if x < 20.0 else _CF_DEPTH_FAR, 1, -1):
            tail = x + k / tail
        return 1.0 / tail
    m = _SQRT_PI_2 * float(erfcx(x * _SQRT1_2))
    return 1.0 / m - x  # m = inf for t > ~37 gives phi/Phi = 0, correctly


def _log_mills_s(x: float) -> float:
    """log m(x) = log(Phi(-x) / phi(x))."""
    if x >= 0.0:
        if x == math.inf:
            return -math.inf
        return math.log(float(erfcx(x * _SQRT1_2))) + _LOG_SQRT_PI_2
    return float(log_ndtr(-x)) + 0.5 * x * x + _LOG_SQRT_2PI


def _exp_s(x: float) -> float:
    """math.exp returning inf instead of raising on overflow."""
    return math.exp(x) if x < 709.0 else math.inf


def _log1mexp_s(e: float) -> float:
    """log(1 - exp(-e)) for e >= 0 (-inf at e = 0)."""
    if e <= 0.0:
        return -math.inf
    if e < _LOG2:
        return math.log(-math.expm1(-e))
    return math.log1p(-math.exp(-e))


def _log_delta_s(r: float, eps: float) -> tuple[float, float, float]:
    """(log delta, a, b) of the Gaussian mechanism with Delta/sigma = r."""
    if r == math.inf:
        return 0.0, math.inf, -math.inf
    if r == 0.0:
        return -math.inf, -math.inf, -math.inf
    c = -eps / r
    h = 0.5 * r
    a = h + c
    b = c - h
    if r <= _QUAD_MAX_WIDTH:
        s = 0.0
        for x, w in _GL_PAIRS:
            s += w * _hazard_excess_s(c + h * x)
        e = h * s
    else:
        e = _log_mills_s(-a) - _log_mills_s(-b)
    return float(log_ndtr(a)) + _log1mexp_s(e), a, b


# ---------------------------------------------------------------------------
# array kernels
# ---------------------------------------------------------------------------
def _hazard_excess(t: np.ndarray) -> np.ndarray:
    x = -t
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out = 1.0 / (_SQRT_PI_2 * erfcx(x * _SQRT1_2)) - x
    far = x > _CF_START
    if np.any(far):
        xf = x[far]
        tail = xf.copy()
        for k in range(_CF_DEPTH, 1, -1):
            tail = xf + k / tail
        out[far] = 1.0 / tail
    return out


def _log_mills(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    pos = x >= 0
    with np.errstate(divide="ignore"):
        out[pos] = np.log(erfcx(x[pos] * _SQRT1_2)) + _LOG_SQRT_PI_2
    xn = x[~pos]
    out[~pos] = log_ndtr(-xn) + 0.5 * xn * xn + _LOG_SQRT_2PI
    return out


def _log1mexp(e: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        small = np.log(-np.expm1(-e))
        large = np.log1p(-np.exp(-e))
    out = np.where(e < _LOG2, small, large)
    return np.where(e <= 0, -np.inf, out)


def _log_delta(r: np.ndarray, eps: np.ndarray):
    """Vectorised (log delta, a, b) for flat arrays ``r`` and ``eps``."""
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
            e[quad] = h[quad] * (_hazard_excess(cq + hq * _GL_X) @ _GL_W)
        rest = ~quad & ~inf
        if np.any(rest):
            e[rest] = _log_mills(-a[rest]) - _log_mills(-b[rest])
        e[inf] = np.inf
        logd = log_ndtr(a) + _log1mexp(e)
    return logd, a, b


# ---------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------
def classic_sigma(epsilon, delta, sensitivity=1.0):
    r"""Noise level of the classic Gaussian mechanism (the report's Theorem 2).

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
        Theorem 2's proof assumes epsilon < 1, and outside it the formula is
        not private (at delta = 1e-3 and epsilon = 10 the true delta is about
        3.4 times the requested one).  Use :func:`analytic_sigma`, which is
        exact for every epsilon and never larger.

    See Also
    --------
    analytic_sigma : the smallest sigma (the report's Theorem 3).
    """
    eps = _epsilon_arg(epsilon)
    dlt = _delta_arg(delta)
    sens = _positive_arg(sensitivity, "sensitivity")
    if np.any(np.asarray(eps) >= 1.0):
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian mechanism, got {epsilon!r}: "
            "the proof of the classic bound (Dwork-Roth; the report's Theorem 2) only "
            "covers epsilon < 1, and beyond it the formula can fail to be private "
            "(at delta=1e-3, epsilon=10 its true delta is 3.4 times the requested one). "
            "Use analytic_sigma, which is exact for every epsilon > 0."
        )
    scalar, vals = _broadcast(epsilon=eps, delta=dlt, sensitivity=sens)
    if scalar:
        e, d, s = vals
        return s * math.sqrt(2.0 * math.log(1.25 / d)) / e
    e, d, s, shape = vals
    return (s * np.sqrt(2.0 * np.log(1.25 / d)) / e).reshape(shape)


def gaussian_delta(sigma, epsilon, sensitivity=1.0):
    r"""Exact privacy profile delta(epsilon) of the Gaussian mechanism.

    The left-hand side of the report's equation (2), for noise standard
    deviation ``sigma`` and L2 sensitivity ``Delta``:
    ``Phi(Delta/(2 sigma) - epsilon sigma/Delta)
    - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta)``
    (Balle and Wang 2018; the report's Theorem 3).  The mechanism
    is (epsilon, delta)-DP exactly when delta is at least this value.

    Parameters
    ----------
    sigma : float or array_like
        Noise standard deviation, > 0 and finite.
    epsilon : float or array_like
        Privacy parameter, > 0 and finite.
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
    """
    sig = _positive_arg(sigma, "sigma")
    eps = _epsilon_arg(epsilon)
    sens = _positive_arg(sensitivity, "sensitivity")
    scalar, vals = _broadcast(sigma=sig, epsilon=eps, sensitivity=sens)
    if scalar:
        s, e, d = vals
        return math.exp(_log_delta_s(d / s, e)[0])
    s, e, d, shape = vals
    with np.errstate(over="ignore"):
        r = d / s
    logd = _log_delta(r, e)[0]
    return np.exp(logd).reshape(shape)


def analytic_sigma(epsilon, delta, sensitivity=1.0):
    r"""Smallest noise level making the Gaussian mechanism (epsilon, delta)-DP.

    The analytic Gaussian mechanism of Balle and Wang (2018), the report's
    Theorem 3: ``sensitivity * sigma_opt`` where ``sigma_opt`` is the smallest
    ``sigma > 0`` satisfying equation (2).  Valid for every epsilon > 0, and
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
        The noise standard deviation.  It is conservative: equation (2) holds
        at the returned sigma in exact arithmetic, not only in floating point
        (the safety margin exceeds the evaluation error; the tests check it
        with mpmath).  It is tight: for epsilon in [1e-3, 50] and delta in
        [1e-300, 0.5], ``sigma * (1 - 1e-9)`` violates equation (2); in
        practice the excess over the exact minimum is about 1e-12 relative.

    Raises
    ------
    ValueError
        If an argument is out of range, if epsilon exceeds ``EPSILON_MAX``
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
    eps = _epsilon_arg(epsilon)
    dlt = _delta_arg(delta)
    sens = _positive_arg(sensitivity, "sensitivity")
    if np.any(np.asarray(eps) > EPSILON_MAX):
        raise ValueError(
            f"epsilon must be <= {EPSILON_MAX:g} for analytic_sigma, got {epsilon!r}: beyond "
            "that the noise level cannot be resolved in double precision (and such an "
            "epsilon gives no meaningful privacy)"
        )
    scalar, vals = _broadcast(epsilon=eps, delta=dlt, sensitivity=sens)
    if scalar:
        return _analytic_sigma_s(*vals)
    e, d, s, shape = vals
    return _analytic_sigma_a(e, d, s).reshape(shape)


def gaussian_epsilon(sigma, delta, sensitivity=1.0):
    r"""Smallest epsilon for which the Gaussian mechanism is (epsilon, delta)-DP.

    The inverse in epsilon of :func:`gaussian_delta` (the report's
    equation (2) solved for epsilon at fixed sigma and delta).

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
        the sensitivity that the answer exceeds ``EPSILON_MAX`` (1e8).
    """
    sig = _positive_arg(sigma, "sigma")
    dlt = _delta_arg(delta)
    sens = _positive_arg(sensitivity, "sensitivity")
    scalar, vals = _broadcast(sigma=sig, delta=dlt, sensitivity=sens)
    if scalar:
        return _gaussian_epsilon_s(*vals)
    s, d, n, shape = vals
    return _gaussian_epsilon_a(s, d, n).reshape(shape)


# ---------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------
# Both inversions solve f(x) = log delta(x) - log(target) = 0 for a positive
# x (x = Delta/sigma, or x = epsilon) by Newton's method in log x, where
# fun(x) returns f and its derivative with respect to log x.  The private side
# is f <= 0.  A bracket [private point, non-private point] (in log x) catches
# any step that leaves it, which is then replaced by bisection (or, while one
# end is unknown, by a step of a factor e).  Steps are multiplicative, so the
# iterate keeps full relative precision.


def _not_representable(what: str, arg: str):
    return ValueError(
        f"the {what} for these arguments is not a positive finite float; "
        f"{arg} is too extreme"
    )


def _ftol(target):
    """Tolerance on f = log delta - log target: _F_TOL plus a few units in the
    last place of log target (about 1.1e-13 at delta = 1e-300)."""
    return _F_TOL + 1e-15 * abs(target)


def _epsilon_too_large():
    return ValueError(
        "sigma is too small relative to the sensitivity: the mechanism is not "
        f"(epsilon, delta)-DP for any epsilon <= {EPSILON_MAX:g}, the largest epsilon "
        "gaussian_epsilon resolves"
    )


def _newton_log_s(x: float, fun, ftol: float, name: str) -> tuple[float, float]:
    """Scalar safeguarded Newton in log x; returns (root, d f / d log x)."""
    priv = nonpriv = None  # the last points with f <= 0 and with f > 0
    for _ in range(_MAX_ITER):
        f, g = fun(x)
        if f <= 0.0:
            priv = x
        else:
            nonpriv = x
        step = -f / g if g != 0.0 and math.isfinite(g) else math.nan
        if abs(step) <= _NEWTON_TOL or abs(f) <= ftol:
            return (x * _exp_s(step) if math.isfinite(step) else x), g
        new = x * _exp_s(step) if math.isfinite(step) else math.nan  # keeps full precision
        bracketed = priv is not None and nonpriv is not None
        ok = 0.0 < new < math.inf
        if ok and bracketed:
            ok = min(priv, nonpriv) < new < max(priv, nonpriv)
        if not ok:
            if bracketed:  # bisect in log x
                new = _exp_s(0.5 * (math.log(priv) + math.log(nonpriv)))
                if new == priv or new == nonpriv:  # bracket at float resolution
                    return priv, g
            else:  # a factor e towards the unexplored side
                new = x * (math.e if (g > 0) == (f < 0) else 1.0 / math.e)
        x = new
        if not 0.0 < x < math.inf:
            raise _not_representable("solution", name)
    raise RuntimeError(f"{name}: Newton iteration did not converge; please report this")  # pragma: no cover


def _newton_log_a(x: np.ndarray, fun, ftol, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Array version of :func:`_newton_log_s`; ``fun(x, idx)`` evaluates a subset."""
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


def _sigma_fun_s(eps: float, target: float):
    def fun(r: float):
        ld, a, _b = _log_delta_s(r, eps)
        # d log delta / d log r = r phi(a) / delta
        return ld - target, _exp_s(math.log(r) - 0.5 * a * a - _LOG_SQRT_2PI - ld)

    return fun


def _analytic_sigma_s(eps: float, delta: float, sens: float) -> float:
    target = math.log(delta)
    z = float(ndtri(delta))
    # Private start: Phi(a) = delta, i.e. r^2/2 - z r - eps = 0, whose positive
    # root z + sqrt(z^2 + 2 eps) is written without cancellation for z < 0.
    root = math.hypot(z, math.sqrt(2.0 * eps))
    r = z + root if z >= 0.0 else 2.0 * eps / (root - z)
    if not 0.0 < r < math.inf:
        raise _not_representable("noise level", "epsilon")
    r, g = _newton_log_s(r, _sigma_fun_s(eps, target), _ftol(target), "epsilon")
    # Shift by _SHIFT in log delta towards privacy, then verify at the
    # returned value exactly as gaussian_delta would evaluate it.
    r *= _exp_s(-min(_SHIFT / g, _STEP_CAP)) if g > 0.0 else 1.0 - _STEP_CAP
    sigma = sens / r
    bump = min(_BUMP / g, _STEP_CAP) if g > 0.0 else _STEP_CAP
    for _ in range(_MAX_ITER):
        if not 0.0 < sigma < math.inf:
            raise _not_representable("noise level", "epsilon or sensitivity")
        if _log_delta_s(sens / sigma, eps)[0] - target <= -_VERIFY:
            return sigma
        sigma *= 1.0 + bump
        bump = 2.0 * bump + 2.2e-16
    raise RuntimeError("analytic_sigma could not verify its result; please report this")  # pragma: no cover


def _epsilon_fun_s(r: float, target: float):
    def fun(eps: float):
        ld, _a, b = _log_delta_s(r, eps)
        # d log delta / d log eps = -eps e^eps Phi(b) / delta
        return ld - target, -_exp_s(math.log(eps) + eps + float(log_ndtr(b)) - ld)

    return fun


def _gaussian_epsilon_s(sigma: float, delta: float, sens: float) -> float:
    target = math.log(delta)
    r = sens / sigma
    if r == math.inf:
        raise _epsilon_too_large()
    # delta(0) = 2 Phi(r/2) - 1 = erf(r / (2 sqrt 2)): already (0, delta)-DP?
    d0 = float(erf(0.5 * r * _SQRT1_2))
    if d0 <= 0.0 or target >= math.log(d0) + _VERIFY:
        return 0.0
    z = float(ndtri(delta))
    eps = r * (0.5 * r - z)  # Phi(a) = delta here, so this epsilon is private
    if not eps <= 10.0 * EPSILON_MAX:
        raise _epsilon_too_large()
    eps, g = _newton_log_s(eps, _epsilon_fun_s(r, target), _ftol(target), "sigma")
    eps *= _exp_s(min(-_SHIFT / g, _STEP_CAP)) if g < 0.0 else 1.0 + _STEP_CAP
    bump = min(-_BUMP / g, _STEP_CAP) if g < 0.0 else _STEP_CAP
    for _ in range(_MAX_ITER):
        if not eps <= EPSILON_MAX:
            raise _epsilon_too_large()
        if _log_delta_s(r, eps)[0] - target <= -_VERIFY:
            return eps
        eps *= 1.0 + bump
        bump = 2.0 * bump + 2.2e-16
    raise RuntimeError("gaussian_epsilon could not verify its result; please report this")  # pragma: no cover


def _analytic_sigma_a(eps: np.ndarray, delta: np.ndarray, sens: np.ndarray) -> np.ndarray:
    target = np.log(delta)
    z = ndtri(delta)
    with np.errstate(over="ignore", divide="ignore"):
        root = np.hypot(z, np.sqrt(2.0 * eps))
        r = np.where(z >= 0, z + root, 2.0 * eps / (root - z))
    if not np.all((r > 0) & np.isfinite(r)):
        raise _not_representable("noise level", "epsilon")

    def fun(ri, idx):
        ld, a, _b = _log_delta(ri, eps[idx])
        return ld - target[idx], np.exp(np.log(ri) - 0.5 * a * a - _LOG_SQRT_2PI - ld)

    r, g = _newton_log_a(r, fun, _ftol(target), "epsilon")
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
            return sigma
        sigma = np.where(fail, sigma * (1.0 + bump), sigma)
        bump = 2.0 * bump + 2.2e-16
    raise RuntimeError("analytic_sigma could not verify its result; please report this")  # pragma: no cover


def _gaussian_epsilon_a(sigma: np.ndarray, delta: np.ndarray, sens: np.ndarray) -> np.ndarray:
    target = np.log(delta)
    with np.errstate(over="ignore"):
        r = sens / sigma
    if np.any(np.isinf(r)):
        raise _epsilon_too_large()
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
        eps = r * (0.5 * r - z)
    if not np.all(eps <= 10.0 * EPSILON_MAX):
        raise _epsilon_too_large()

    def fun(ei, idx):
        ld, _a, b = _log_delta(r[idx], ei)
        return ld - target[idx], -np.exp(np.log(ei) + ei + log_ndtr(b) - ld)

    eps, g = _newton_log_a(eps, fun, _ftol(target), "sigma")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        good = g < 0
        gg = np.where(good, -g, 1.0)
        eps = eps * np.where(good, np.exp(np.minimum(_SHIFT / gg, _STEP_CAP)), 1.0 + _STEP_CAP)
        bump = np.where(good, np.minimum(_BUMP / gg, _STEP_CAP), _STEP_CAP)
    for _ in range(_MAX_ITER):
        if not np.all(eps <= EPSILON_MAX):
            raise _epsilon_too_large()
        fail = _log_delta(r, eps)[0] - target > -_VERIFY
        if not np.any(fail):
            out[todo] = eps
            return out
        eps = np.where(fail, eps * (1.0 + bump), eps)
        bump = 2.0 * bump + 2.2e-16
    raise RuntimeError("gaussian_epsilon could not verify its result; please report this")  # pragma: no cover
