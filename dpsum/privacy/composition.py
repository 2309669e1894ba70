"""Composition of private steps: basic and advanced composition, the exact
composition of Gaussian and pure-DP steps, GDP and zCDP (the chapter :ref:`Composition <composition>`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import erf, log_expit, ndtr, ndtri, xlogy

from dpsum import _validation as V
from dpsum._lazy import optimize, stats
from dpsum._validation import check_bool, check_epsilon, check_integer, check_positive
from dpsum.privacy.calibration import (
    _gaussian_epsilon_checked,
    analytic_sigma,
    gaussian_delta,
)
from dpsum.privacy.subsampling import check_sampling_rate, subsampled_gaussian_pld

__all__ = [
    "basic_composition",
    "advanced_composition",
    "MAX_OUTCOMES",
    "compose_gaussian_multipliers",
    "split_gaussian_multiplier",
    "gaussian_composition_delta",
    "gaussian_composition_epsilon",
    "gaussian_profile",
    "gdp_mu",
    "gdp_compose",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_multiplier",
    "zcdp_rho_gaussian",
    "zcdp_rho_pure",
    "zcdp_rho_bounded_range",
    "zcdp_compose",
    "zcdp_gaussian_multiplier",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_rho",
    "mixed_delta",
    "mixed_epsilon",
    "mixed_gaussian_multiplier",
    "PrivacyStep",
    "gaussian_step",
    "subsampled_gaussian_step",
    "pure_step",
    "bounded_range_step",
    "approximate_step",
    "ComposedGuarantee",
    "compose",
]


def basic_composition(epsilons: ArrayLike, deltas: ArrayLike) -> tuple[float, float]:
    """Basic composition: running mechanisms with (eps_i, delta_i) is (sum eps_i, sum delta_i)-DP.

    Dwork and Roth 2014, Theorem 3.16; :prf:ref:`definitions-thm-basic-composition`.

    Examples
    --------
    >>> basic_composition([0.5, 0.25], [1e-6, 2e-6])
    (0.75, 3e-06)
    """
    eps = np.atleast_1d(V.check_epsilon(epsilons, "epsilons"))
    dels = np.atleast_1d(V.check_delta(deltas, "deltas"))
    if eps.shape != dels.shape:
        raise ValueError(
            f"epsilons and deltas must have the same length, got {eps.shape} and {dels.shape}"
        )
    total_delta = math.fsum(dels)
    if total_delta >= 1:
        raise ValueError("the deltas sum to 1 or more: the composed guarantee is void")
    try:
        total_eps = math.fsum(eps)
    except OverflowError:   # fsum raises on an intermediate overflow
        total_eps = math.inf
    if not math.isfinite(total_eps):
        raise ValueError("epsilons sum to more than the largest float: the composed "
                         "epsilon is not a finite number")
    return total_eps, total_delta


def advanced_composition(epsilon: float, delta: float, k: int,
                         delta_prime: float) -> tuple[float, float]:
    """Advanced composition of ``k`` (epsilon, delta)-DP mechanisms.

    Returns ``(eps', k delta + delta')`` with
    ``eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1)``
    (Dwork, Rothblum and Vadhan 2010; Dwork and Roth 2014, Theorem 3.20;
    :prf:ref:`definitions-thm-advanced-composition`). The per-step ``delta``
    may be 0 (composing pure-DP steps, the theorem's most common use);
    ``delta'`` must lie in (0, 1).

    Raises
    ------
    ValueError
        If an argument is out of range, if ``k delta + delta'`` reaches 1 (the
        guarantee is void), or if ``eps'`` exceeds the largest float.

    Examples
    --------
    >>> eps, dlt = advanced_composition(0.01, 1e-9, 1000, 1e-6)
    >>> round(eps, 4), round(dlt, 12)
    (1.7628, 2e-06)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True, allow_zero=True)   # pure-DP steps: delta = 0
    dp = V.check_delta(delta_prime, "delta_prime", scalar=True)
    k = V.check_integer(k, "k")
    delta_total = k * dlt + dp
    if delta_total >= 1:
        raise ValueError("k * delta + delta_prime is 1 or more: the composed guarantee is void")
    if eps > 700.0:
        raise ValueError(f"epsilon = {eps:g} is too large: e^epsilon overflows, and the "
                         "composed epsilon is not a finite float")
    eps_total = math.sqrt(2 * k * -math.log(dp)) * eps + k * eps * math.expm1(eps)
    if not math.isfinite(eps_total):
        raise ValueError("the composed epsilon exceeds the largest float: epsilon or k is "
                         "too large")
    return eps_total, delta_total


#: Largest number of randomized-response outcomes (after grouping equal
#: epsilons binomially) that :func:`mixed_delta` sums over.
MAX_OUTCOMES = 1_000_000


# Relative margin in delta kept by every inversion: the computed delta at the
# returned point is at most target * (1 - _MARGIN).  The profiles are
# evaluated to about 1e-12 relative, so the margin leaves a factor 100 to spare.
_MARGIN = 1e-10


_BISECT_RTOL = 1e-12


_ZCDP_METHODS = ("cks", "standard")

# Largest epsilon zcdp_rho converts: its rho (about epsilon) is searched by
# doubling, which must stay below the largest float.
_MAX_ZCDP_EPSILON = 1e300


# ---------------------------------------------------------------------------
# validation helpers (scalars only; the rules themselves are in dpsum._validation)
# ---------------------------------------------------------------------------
def _positive_scalar(value: Any, name: str) -> float:
    return V.check_positive(value, name, scalar=True)


def _multipliers(values: Any, name: str = "multipliers") -> np.ndarray:
    arr = np.atleast_1d(check_positive(values, name))
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-d sequence")
    return arr


def _method(method: Any) -> str:
    return V.check_choice(method, "method", _ZCDP_METHODS)


#: The composed steps' privacy losses (sums of their epsilons, and the
#: Gaussian profile's argument beside them) must stay finite floats.
_MAX_TOTAL_EPSILON = 1e300


def _pure_steps(epsilons: Any, deltas: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate the epsilons (and optional deltas) of the non-Gaussian steps."""
    if epsilons is None:
        epsilons = ()
    eps = np.asarray(epsilons, dtype=object)
    if eps.size == 0:
        eps = np.zeros(0)
    else:
        eps = np.atleast_1d(check_epsilon(epsilons, "epsilons"))
        if eps.ndim != 1:
            raise ValueError("epsilons must be a 1-d sequence")
        with np.errstate(over="ignore"):
            if not float(np.sum(eps)) <= _MAX_TOTAL_EPSILON:
                raise ValueError(f"epsilons must sum to at most {_MAX_TOTAL_EPSILON:g}: the "
                                 "privacy losses of the composed steps must stay finite floats")
    if deltas is None or (eps.size == 0 and np.size(deltas) == 0):
        dels = np.zeros(eps.shape)  # no other step (compose() of Gaussian steps alone)
    else:
        dels = np.atleast_1d(check_positive(deltas, "deltas", allow_zero=True))
        if dels.shape != eps.shape:
            raise ValueError("epsilons and deltas must have the same length (one delta per "
                             f"epsilon), got {eps.shape} and {dels.shape}")
        if not np.all(dels < 1):
            raise ValueError("deltas must be < 1")
    return eps, dels


# ---------------------------------------------------------------------------
# exact composition of Gaussian mechanisms
# ---------------------------------------------------------------------------
def compose_gaussian_multipliers(multipliers: ArrayLike) -> float:
    r"""The one noise multiplier equivalent to several Gaussian releases.

    ``1/s^2 = sum_i 1/s_i^2`` (:prf:ref:`composition-thm-exact`): the
    privacy loss of release ``i`` is ``N(mu_i^2/2, mu_i^2)`` with
    ``mu_i = 1/s_i``, and independent Gaussian losses add.

    Parameters
    ----------
    multipliers : float or sequence of float
        Noise multipliers ``s_i = sigma_i / Delta_i`` (noise standard deviation
        over L2 sensitivity), each > 0 and finite.

    Returns
    -------
    float
        The composed multiplier ``s``.

    Examples
    --------
    >>> round(compose_gaussian_multipliers([2.0, 2.0, 2.0, 2.0]), 12)  # 1/s^2 = sum 1/s_i^2
    1.0
    """
    s = _multipliers(multipliers)
    # 1/sqrt(sum s_i^-2), written to avoid overflow of s_i^-2 for tiny s_i
    m = float(np.min(s))
    return m / math.sqrt(float(np.sum((m / s) ** 2)))


def split_gaussian_multiplier(multiplier: float, weights: ArrayLike) -> np.ndarray:
    r"""Split one Gaussian budget into several Gaussian steps.

    Step ``i`` gets ``s_i = s / sqrt(w_i)`` with ``w_i`` the weights
    normalised to sum to one, so that
    ``compose_gaussian_multipliers(s_i) == s`` (up to rounding):
    step ``i`` receives the fraction ``w_i`` of ``1/s^2``, of ``mu^2`` and of
    ``rho``.

    Parameters
    ----------
    multiplier : float
        The total noise multiplier ``s`` > 0.
    weights : sequence of float
        Positive weights, one per step.

    Returns
    -------
    numpy.ndarray
        The step multipliers ``s_i``.

    Examples
    --------
    >>> s = split_gaussian_multiplier(1.0, [1.0, 3.0])
    >>> s.round(6).tolist(), round(compose_gaussian_multipliers(s), 12)
    ([2.0, 1.154701], 1.0)
    """
    s = _positive_scalar(multiplier, "multiplier")
    w = np.atleast_1d(check_positive(weights, "weights"))
    if w.ndim != 1:
        raise ValueError("weights must be a 1-d sequence")
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        total = float(np.sum(w))
        if not math.isfinite(total):        # the shares without overflow
            top = float(np.max(w))
            share = (w / top) / float(np.sum(w / top))
        else:
            share = w / total
        out = s / np.sqrt(share)
    return V.representable(out, "weights (with multiplier)", "the split multipliers",
                           "the smallest weight's share of the total must stay a normal "
                           "float and multiplier / sqrt(share) below 1.8e308")


def gaussian_composition_delta(multipliers: ArrayLike, epsilon: ArrayLike) -> float | np.ndarray:
    """Exact delta(epsilon) of several composed Gaussian releases.

    ``gaussian_delta(s, epsilon)`` with ``s`` from
    :func:`compose_gaussian_multipliers` (:prf:ref:`composition-thm-exact`).

    Examples
    --------
    >>> from dpsum.privacy import gaussian_delta
    >>> bool(abs(gaussian_composition_delta([2.0, 2.0], 1.0) / gaussian_delta(2.0 ** 0.5, 1.0) - 1) < 1e-12)
    True
    """
    s = compose_gaussian_multipliers(multipliers)
    return gaussian_delta(s, epsilon)


def gaussian_composition_epsilon(multipliers: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """Exact (smallest) epsilon of several composed Gaussian releases at ``delta``.

    ``gaussian_epsilon(s, delta)`` with ``s`` from
    :func:`compose_gaussian_multipliers` (:prf:ref:`composition-thm-exact`); conservative as that function is.

    Examples
    --------
    >>> eps = gaussian_composition_epsilon([3.0] * 4, 1e-6)
    >>> bool(gaussian_composition_delta([3.0] * 4, eps) <= 1e-6)
    True
    """
    s = compose_gaussian_multipliers(multipliers)
    return _gaussian_epsilon_checked(s, V.check_delta(delta), 1.0,
                                     "multipliers are too small (their composition)",
                                     (multipliers, delta))


def gaussian_profile(multiplier: float, epsilon: ArrayLike) -> float | np.ndarray:
    r"""The Gaussian privacy profile at any real epsilon, negative included.

    For ``epsilon > 0`` this is :func:`dpsum.privacy.gaussian_delta` with
    ``sigma = multiplier`` and unit sensitivity.  For ``epsilon <= 0`` the
    hockey-stick divergence of a symmetric pair satisfies
    ``delta(-e) = 1 - e^{-e} (1 - delta(e))``
    (:prf:ref:`composition-lem-negative`), and ``delta(0) = erf(1/(2 sqrt(2) s))``
    is the total variation distance.  :func:`mixed_delta` needs the negative
    side.

    Parameters
    ----------
    multiplier : float
        Noise multiplier ``s`` > 0.
    epsilon : float or array_like
        Any finite reals.

    Returns
    -------
    float or numpy.ndarray
        ``sup_S P(S) - e^epsilon Q(S)`` for ``P = N(1/s, 1)``, ``Q = N(0, 1)``.

    Examples
    --------
    >>> float(gaussian_profile(1.0, -50.0))  # delta(eps) -> 1 as eps -> -inf
    1.0
    >>> bool(gaussian_profile(1.0, 1.0) < gaussian_profile(1.0, 0.0))
    True
    """
    s = _positive_scalar(multiplier, "multiplier")
    x = np.asarray(V.check_real(epsilon, "epsilon"), dtype=np.float64)   # any finite real
    return _gaussian_profile(s, x) if x.ndim else float(_gaussian_profile(s, x[None])[0])


def _gaussian_profile(s: float | None, x: np.ndarray) -> np.ndarray:
    """Vectorised profile of N(1/s,1) vs N(0,1); ``s=None`` is the identity pair (P = Q)."""
    x = np.atleast_1d(x)
    if s is None:
        return np.maximum(0.0, -np.expm1(np.minimum(x, 0.0)))
    out = np.empty_like(x)
    pos, neg = x > 0, x < 0
    zero = ~pos & ~neg
    if np.any(pos):
        out[pos] = gaussian_delta(s, x[pos])
    if np.any(neg):
        xn = x[neg]
        out[neg] = -np.expm1(xn) + np.exp(xn) * gaussian_delta(s, -xn)
    if np.any(zero):
        out[zero] = erf(0.5 / (s * math.sqrt(2.0)))
    return out


# ---------------------------------------------------------------------------
# Gaussian differential privacy (Dong, Roth, Su)
# ---------------------------------------------------------------------------
def gdp_mu(multiplier: ArrayLike) -> float | np.ndarray:
    """The GDP parameter ``mu = 1/s`` of a Gaussian release with multiplier ``s``.

    A Gaussian mechanism with noise ``s * Delta`` is mu-GDP with ``mu = 1/s``
    (Dong, Roth and Su 2022, Theorem 2.7;
    :prf:ref:`composition-def-gdp`).  Vectorised.

    Examples
    --------
    >>> gdp_mu(4.0)
    0.25
    """
    s = check_positive(multiplier, "multiplier")
    with np.errstate(over="ignore", divide="ignore"):
        mu = 1.0 / np.asarray(s)
    V.representable(mu, "multiplier", "mu = 1 / multiplier",
                    "multiplier must be at least 5.6e-309")
    return V.scalar_or_array(mu, multiplier)


def gdp_compose(mus: ArrayLike) -> float:
    """Composition of mu_i-GDP mechanisms: ``mu = sqrt(sum mu_i^2)``.

    Dong, Roth and Su 2022, Corollary 3.3; :prf:ref:`composition-thm-exact`.

    Examples
    --------
    >>> gdp_compose([0.3, 0.4])
    0.5
    """
    m = _multipliers(mus, "mus")
    top = float(np.max(m))
    return top * math.sqrt(float(np.sum((m / top) ** 2)))


def gdp_delta(mu: ArrayLike, epsilon: ArrayLike) -> float | np.ndarray:
    r"""delta(epsilon) of a mu-GDP mechanism.

    ``Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)`` (Dong, Roth
    and Su 2022, Corollary 2.13), the Gaussian profile of
    :func:`dpsum.privacy.gaussian_delta` with ``sigma = 1/mu``.

    Examples
    --------
    >>> round(float(gdp_delta(1.0, 0.0)), 12)  # 2 Phi(1/2) - 1
    0.382924922548
    """
    m = check_positive(mu, "mu")
    with np.errstate(divide="ignore", over="ignore"):
        sigma = V.representable(1.0 / np.asarray(m, dtype=np.float64), "mu",
                                "the multiplier 1 / mu", "mu must be at least 5.6e-309")
    return gaussian_delta(sigma if np.ndim(m) else float(sigma), epsilon)


def gdp_epsilon(mu: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """Smallest epsilon with a mu-GDP mechanism (epsilon, delta)-DP.

    The inverse of :func:`gdp_delta`; conservative as
    :func:`dpsum.privacy.gaussian_epsilon`.

    Examples
    --------
    >>> eps = gdp_epsilon(0.5, 1e-6)
    >>> bool(gdp_delta(0.5, eps) <= 1e-6)
    True
    """
    m = check_positive(mu, "mu")
    return _gaussian_epsilon_checked(1.0, V.check_delta(delta), m, "mu is too large",
                                     (mu, delta))


def gdp_multiplier(mu: float) -> float:
    """The noise multiplier ``s = 1/mu`` of a mu-GDP Gaussian mechanism.

    Examples
    --------
    >>> gdp_multiplier(0.25)
    4.0
    """
    return V.representable(1.0 / _positive_scalar(mu, "mu"), "mu", "the multiplier 1 / mu",
                           "mu must be at least 5.6e-309")


# ---------------------------------------------------------------------------
# zero-concentrated DP (Bun, Steinke)
# ---------------------------------------------------------------------------
def zcdp_rho_gaussian(multiplier: ArrayLike) -> float | np.ndarray:
    """rho of a Gaussian release: ``1 / (2 s^2)`` (Bun and Steinke 2016, Proposition 1.6).

    Examples
    --------
    >>> zcdp_rho_gaussian(2.0)
    0.125
    """
    s = np.asarray(check_positive(multiplier, "multiplier"))
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        rho = 0.5 / s / s
    V.representable(rho, "multiplier", "rho = 1 / (2 multiplier^2)",
                    "multiplier must be at least 5.3e-155")
    return V.scalar_or_array(rho, multiplier)


def zcdp_rho_pure(epsilon: ArrayLike) -> float | np.ndarray:
    """rho of a pure epsilon-DP mechanism: ``epsilon^2 / 2`` (Bun and Steinke 2016, Proposition 1.4).

    Examples
    --------
    >>> round(zcdp_rho_pure(0.1), 12)
    0.005
    """
    e = np.asarray(check_epsilon(epsilon))
    with np.errstate(over="ignore"):
        rho = 0.5 * e * e
    V.representable(rho, "epsilon", "rho = epsilon^2 / 2", "epsilon must be at most 1.8e154 (its square overflows)")
    return V.scalar_or_array(rho, epsilon)


def zcdp_rho_bounded_range(epsilon: ArrayLike) -> float | np.ndarray:
    """rho of an epsilon-bounded-range mechanism: ``epsilon^2 / 8``.

    A mechanism is epsilon-bounded-range when, for neighbouring datasets, the
    privacy loss of every output lies in an interval of length ``epsilon``.
    The exponential mechanism with parameter ``epsilon`` (weights
    ``exp(epsilon u / (2 Delta_u))``) is one (Durfee and Rogers 2019), and an
    epsilon-bounded-range mechanism is ``epsilon^2/8``-zCDP (Cesar and Rogers
    2021, Lemma 3.2): four times less than :func:`zcdp_rho_pure` charges a
    general epsilon-DP mechanism.
    """
    e = np.asarray(check_epsilon(epsilon))
    with np.errstate(over="ignore"):
        rho = 0.125 * e * e
    V.representable(rho, "epsilon", "rho = epsilon^2 / 8", "epsilon must be at most 3.7e154 (its square overflows)")
    return V.scalar_or_array(rho, epsilon)


def zcdp_compose(rhos: ArrayLike) -> float:
    """Composition in zCDP: the rhos add (Bun and Steinke 2016, Lemma 1.7).

    Examples
    --------
    >>> zcdp_compose([0.125, 0.005])
    0.13
    """
    r = _multipliers(rhos, "rhos")
    with np.errstate(over="ignore"):
        total = float(np.sum(r))
    return V.representable(total, "rhos", "their sum", "the rhos must sum to at most 1.8e308")


def zcdp_gaussian_multiplier(rho: float) -> float:
    """The Gaussian noise multiplier with exactly ``rho``-zCDP: ``s = 1/sqrt(2 rho)``.

    Examples
    --------
    >>> zcdp_gaussian_multiplier(0.125)
    2.0
    """
    return 1.0 / math.sqrt(2.0 * _positive_scalar(rho, "rho"))


def _cks_g(u: Any, rho: float, eps: Any) -> Any:
    """``g(u) = u((u+1) rho - eps) + u log u - (u+1) log(u+1)``: the log of the
    CKS bound at ``alpha = u + 1`` (scalars or arrays; :func:`_cks_log_delta`)."""
    return u * ((u + 1.0) * rho - eps) + xlogy(u, u) - (u + 1.0) * np.log1p(u)


def _cks_dg(u: Any, rho: float, eps: Any) -> Any:
    """``g'(u)`` up to a positive factor: ``(2u+1) rho - eps - log(1 + 1/u)``."""
    return (2.0 * u + 1.0) * rho - eps - np.log1p(1.0 / u)


def _cks_log_delta(rho: float, eps: float) -> float:
    r"""log of the CKS bound min over alpha of
    exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a, with u = a - 1 > 0.

    g(u) = u((u+1) rho - eps) + u log u - (u+1) log(u+1) is convex with
    g'(u) = (2u+1) rho - eps + log(u/(u+1)); any u gives a valid bound, the
    root of g' the best one.
    """
    def g(u: Any) -> Any:
        return _cks_g(u, rho, eps)

    def dg(t: Any) -> Any:  # in t = log u
        return _cks_dg(math.exp(t), rho, eps)

    # the minimiser is near u = eps / (2 rho); in logs, so that a subnormal
    # rho does not overflow, and at most e^700 (any u > 0 gives a valid bound)
    lo = -700.0
    hi = min(700.0, max(math.log(eps) - math.log(2.0 * rho), 0.0) + 2.0)
    if dg(lo) >= 0.0:
        return 0.0  # the bound is trivial (delta = 1)
    while dg(hi) <= 0.0 and hi < 700.0:   # small eps: the minimiser is near 1/sqrt(2 rho)
        hi = min(700.0, hi + 2.0)
    if dg(hi) <= 0.0:
        t = hi       # minimiser beyond e^700 (rho below ~1e-300): a valid bound anyway
    else:
        t = optimize.brentq(dg, lo, hi, xtol=1e-13, rtol=1e-15)
    with np.errstate(over="ignore"):
        value = g(math.exp(t))
    return min(0.0, value) if value == value else -math.inf


def _cks_epsilon(rho: float, delta: float) -> float:
    r"""min over alpha of
    alpha rho + log(1 - 1/alpha) + (log(1/delta) - log alpha) / (alpha - 1).

    With u = alpha - 1 the derivative is rho - (L - log(1+u)) / u^2, L = log(1/delta),
    so the minimiser solves rho u^2 + log(1+u) = L (unique;
    :prf:ref:`composition-prop-cks`).  Every u > 0 gives a valid epsilon.
    """
    L = -math.log(delta)

    def h(t: Any) -> Any:
        u = math.exp(t)
        return rho * u * u + math.log1p(u) - L

    hi = 0.5 * (math.log(L) - math.log(rho)) + 1.0    # in logs: rho may be subnormal
    lo = -700.0
    while h(hi) <= 0.0:  # pragma: no cover
        hi += 1.0
    if h(lo) >= 0.0:  # pragma: no cover - L is at least ~1e-16 here
        return math.inf
    u = math.exp(optimize.brentq(h, lo, hi, xtol=1e-13, rtol=1e-15))
    return (u + 1.0) * rho + math.log(u / (u + 1.0)) + (L - math.log1p(u)) / u


def zcdp_delta(rho: float, epsilon: float, method: str = "cks") -> float:
    r"""A delta such that every rho-zCDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    rho : float
        zCDP parameter > 0.
    epsilon : float
        Target epsilon > 0.
    method : {"cks", "standard"}
        ``"cks"`` (default): the bound of Canonne, Kamath and Steinke (2020,
        Proposition 12), ``inf_alpha exp((alpha-1)(alpha rho - epsilon))
        (1-1/alpha)^alpha / (alpha-1)``, combined with the total-variation
        bound ``sqrt(1 - e^{-rho})`` (Bretagnolle-Huber; the KL divergence is at
        most rho).  ``"standard"``: the inverse of
        ``epsilon = rho + 2 sqrt(rho log(1/delta))`` (Bun and Steinke 2016,
        Proposition 1.3), ``exp(-(epsilon - rho)^2 / (4 rho))`` for
        ``epsilon >= rho``.

    Returns
    -------
    float
        delta in (0, 1].  Never below the exact profile of the Gaussian with
        the same rho (:prf:ref:`composition-prop-cks`).

    Examples
    --------
    >>> bool(zcdp_delta(0.01, 1.0) < zcdp_delta(0.01, 1.0, method="standard"))  # CKS is tighter
    True
    """
    r = _positive_scalar(rho, "rho")
    e = V.check_epsilon(epsilon, scalar=True)
    if _method(method) == "standard":
        if e <= r:
            return 1.0
        return math.exp(-((e - r) ** 2) / (4.0 * r))
    tv = math.sqrt(-math.expm1(-r))
    # conservative in the float range: a delta below it is rounded up to the
    # smallest positive float, never to 0
    return max(5e-324, min(tv, math.exp(_cks_log_delta(r, e))))


def zcdp_epsilon(rho: float, delta: float, method: str = "cks") -> float:
    r"""An epsilon such that every rho-zCDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    rho : float
        zCDP parameter > 0.
    delta : float
        Target delta in (0, 1).
    method : {"cks", "standard"}
        ``"cks"`` (default): ``inf_alpha alpha rho + log(1 - 1/alpha)
        + (log(1/delta) - log alpha)/(alpha - 1)`` (Canonne, Kamath and
        Steinke 2020, Proposition 12 and Corollary 13), found exactly from
        ``rho u^2 + log(1 + u) = log(1/delta)``, ``u = alpha - 1``; 0 when
        ``delta >= sqrt(1 - e^{-rho})``.  ``"standard"``:
        ``rho + 2 sqrt(rho log(1/delta))`` (Bun and Steinke 2016,
        Proposition 1.3).

    Returns
    -------
    float
        epsilon >= 0.  ``"cks"`` is never larger than ``"standard"``.

    Examples
    --------
    >>> eps = zcdp_epsilon(0.01, 1e-6)
    >>> bool(zcdp_delta(0.01, eps) <= 1e-6 * (1 + 1e-9))
    True
    """
    r = _positive_scalar(rho, "rho")
    d = V.check_delta(delta, scalar=True)
    if _method(method) == "standard":
        return r + 2.0 * math.sqrt(r * -math.log(d))
    if d >= math.sqrt(-math.expm1(-r)):
        return 0.0
    return max(0.0, _cks_epsilon(r, d))


def zcdp_rho(epsilon: float, delta: float, method: str = "cks") -> float:
    r"""The largest rho whose conversion (``method``) gives (epsilon, delta)-DP.

    ``"standard"`` inverts ``rho + 2 sqrt(rho L)`` in closed form,
    ``rho = (sqrt(L + epsilon) - sqrt(L))^2`` with ``L = log(1/delta)``;
    ``"cks"`` inverts :func:`zcdp_epsilon` numerically (it is increasing in
    rho) and is never smaller.  Conservative:
    ``zcdp_epsilon(returned rho, delta, method) <= epsilon``.

    Examples
    --------
    >>> rho = zcdp_rho(1.0, 1e-6)
    >>> bool(abs(zcdp_epsilon(rho, 1e-6) - 1.0) < 1e-9)
    True
    """
    e = V.check_epsilon(epsilon, scalar=True)
    d = V.check_delta(delta, scalar=True)
    if e > _MAX_ZCDP_EPSILON:     # rho is about epsilon, and the search doubles it
        raise ValueError(f"epsilon must be at most {_MAX_ZCDP_EPSILON:g} for the conversion to "
                         f"zCDP (rho is about epsilon, searched up to twice it), got {e:g}")
    L = -math.log(d)
    # sqrt(L + e) - sqrt(L) without cancellation
    standard = (e / (math.sqrt(L + e) + math.sqrt(L))) ** 2
    if not standard < math.inf:
        raise ValueError("epsilon is too large: the zCDP parameter rho is not a finite float")
    if not standard >= np.finfo(np.float64).tiny:
        raise ValueError("epsilon is too small for this delta: the zCDP parameter rho, "
                         "about epsilon^2 / (4 ln(1/delta)), is below the normal float range")
    if _method(method) == "standard":
        while standard + 2.0 * math.sqrt(standard * L) > e:  # rounding guard
            standard *= 1.0 - 1e-15
        return standard
    # the CKS epsilon is below the standard one, so its rho is at least `standard`
    lo, hi = standard, 2.0 * standard
    while zcdp_epsilon(hi, d) <= e:
        lo, hi = hi, 2.0 * hi
    return _bisect_log(lambda rho: zcdp_epsilon(rho, d) <= e * (1.0 - 1e-13), lo, hi,
                       ok_at="lo")


# ---------------------------------------------------------------------------
# Gaussian composed with pure (or approximate) DP steps: dominating pairs
# ---------------------------------------------------------------------------
def _outcomes(eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and privacy losses of the product of randomized responses.

    Step ``i`` (an eps_i-DP mechanism) is dominated by randomized response,
    whose privacy loss is ``+eps_i`` with probability ``e^eps_i / (1 + e^eps_i)``
    and ``-eps_i`` otherwise.  Steps with equal epsilon are grouped
    binomially.  Returns flat arrays (p, loss).
    """
    p = np.ones(1)
    loss = np.zeros(1)
    if eps.size == 0:
        return p, loss
    values, counts = np.unique(eps, return_counts=True)
    size = int(np.prod(counts.astype(float) + 1.0))
    if size > MAX_OUTCOMES:
        raise ValueError(
            f"epsilons define {size} distinct outcomes, more than MAX_OUTCOMES = "
            f"{MAX_OUTCOMES}; group steps with equal epsilons")
    for e0, m in zip(values, counts):
        j = np.arange(m + 1)
        pj = np.exp(stats.binom.logpmf(j, m, math.exp(float(log_expit(e0)))))
        lj = (2 * j - m) * e0
        p = np.outer(p, pj).ravel()
        loss = np.add.outer(loss, lj).ravel()
    keep = p > 0
    return p[keep], loss[keep]


def _core_delta(s: float | None, p: np.ndarray, loss: np.ndarray, eps: float) -> float:
    """sum_o P(o) delta_G(eps - L(o)): the composed profile without delta steps."""
    return float(np.dot(p, _gaussian_profile(s, eps - loss)))


def _delta_steps(dels: np.ndarray) -> float:
    """q = 1 - prod(1 - delta_i): the mass of the steps' 'failure' atoms."""
    return float(-np.expm1(np.sum(np.log1p(-dels)))) if dels.size else 0.0


def _mixed_multiplier_arg(multiplier: Any) -> float | None:
    if multiplier is None:
        return None
    return _positive_scalar(multiplier, "multiplier")


def mixed_delta(multiplier: float | None, epsilon: float, *, epsilons: ArrayLike = (),
                deltas: ArrayLike | None = None) -> float:
    r"""Exact delta(epsilon) of a Gaussian release composed with DP steps.

    The composition of a Gaussian mechanism with noise multiplier ``s`` and
    ``k`` steps that are (epsilon_i, delta_i)-DP is dominated by the product
    of the Gaussian pair and the Kairouz-Oh-Viswanath pairs of the steps
    (randomized response when delta_i = 0), and its hockey-stick divergence is

    .. math::

        \delta(\varepsilon) = 1 - \prod_i (1-\delta_i)\Bigl(1 - \sum_o P(o)\,
            \delta_{\mathcal N}(\varepsilon - L(o); s)\Bigr)

    (:prf:ref:`composition-thm-mixed`; Zhu, Dong and Wang 2022,
    Theorem 10 for adaptive composition of dominating pairs).  The bound is
    tight: it is attained when each step is randomized response.

    Parameters
    ----------
    multiplier : float or None
        The Gaussian part's noise multiplier (compose several Gaussian steps
        with :func:`compose_gaussian_multipliers` first); None for no
        Gaussian part.
    epsilon : float
        The epsilon at which delta is evaluated, > 0.
    epsilons : sequence of float
        The epsilon_i > 0 of the other steps (may be empty).
    deltas : sequence of float, optional
        Their delta_i in [0, 1); default all zero (pure DP).

    Returns
    -------
    float
        delta in [0, 1].

    Examples
    --------
    >>> from dpsum.privacy import gaussian_delta
    >>> bool(abs(mixed_delta(2.0, 1.0) / gaussian_delta(2.0, 1.0) - 1) < 1e-12)  # no other step
    True
    """
    s = _mixed_multiplier_arg(multiplier)
    e = V.check_epsilon(epsilon, scalar=True)
    eps_i, dels = _pure_steps(epsilons, deltas)
    p, loss = _outcomes(eps_i)
    q = _delta_steps(dels)
    return q + (1.0 - q) * _core_delta(s, p, loss, e)


def _core_target(delta: float, dels: np.ndarray) -> float:
    q = _delta_steps(dels)
    if q >= delta:
        raise ValueError(
            "the deltas of the non-Gaussian steps already reach the target delta: "
            "no epsilon satisfies it")
    return (delta - q) / (1.0 - q)


def mixed_epsilon(multiplier: float | None, delta: float, *, epsilons: ArrayLike = (),
                  deltas: ArrayLike | None = None) -> float:
    """Smallest epsilon at which a Gaussian release composed with DP steps is (epsilon, delta)-DP.

    The inverse of :func:`mixed_delta` in epsilon (decreasing); conservative:
    ``mixed_delta(multiplier, returned epsilon, ...) <= delta``.  Returns 0.0
    when the composition is already (0, delta)-DP.  Without steps this is
    :func:`dpsum.privacy.gaussian_epsilon`.

    Examples
    --------
    >>> eps = mixed_epsilon(4.0, 1e-6, epsilons=[0.1])
    >>> bool(mixed_delta(4.0, eps, epsilons=[0.1]) <= 1e-6)
    True
    """
    s = _mixed_multiplier_arg(multiplier)
    d = V.check_delta(delta, scalar=True)
    eps_i, dels = _pure_steps(epsilons, deltas)
    if eps_i.size == 0:
        if s is None:
            return 0.0
        return float(_gaussian_epsilon_checked(s, d, 1.0, "multiplier is too small", (s, d)))
    target = _core_target(d, dels)
    p, loss = _outcomes(eps_i)

    def ok(e: Any) -> Any:
        return _core_delta(s, p, loss, e) <= target * (1.0 - _MARGIN)

    if _core_delta(s, p, loss, 0.0) <= target * (1.0 - _MARGIN):
        return 0.0
    # At eps_G(target) + sum eps_i every term is at most target (book, proof of
    # theorem composition-thm-mixed), so this is private up to rounding.
    hi = float(np.sum(eps_i)) + (float(_gaussian_epsilon_checked(
        s, target, 1.0, "multiplier is too small", (s, target))) if s is not None else 0.0)
    step = 1e-12 * max(hi, 1.0)
    while not ok(hi):
        hi += step
        step *= 2.0
    return _bisect_lin(ok, 0.0, hi)


def mixed_gaussian_multiplier(epsilon: float, delta: float, *, epsilons: ArrayLike = (),
                              deltas: ArrayLike | None = None) -> float:
    """Smallest Gaussian noise multiplier whose composition with DP steps is (epsilon, delta)-DP.

    The calibration a pipeline needs: the non-Gaussian steps (quantiles with
    their epsilon_i, say) are fixed, and the Gaussian part gets what is left.
    Without steps this is :func:`dpsum.privacy.analytic_sigma`.
    Conservative: ``mixed_delta(returned, epsilon, ...) <= delta``.

    Raises
    ------
    ValueError
        If the non-Gaussian steps alone already reach delta at epsilon.

    Examples
    --------
    >>> s = mixed_gaussian_multiplier(1.0, 1e-6, epsilons=[0.2])
    >>> bool(mixed_epsilon(s, 1e-6, epsilons=[0.2]) <= 1.0 + 1e-9)
    True
    """
    e = V.check_epsilon(epsilon, scalar=True)
    d = V.check_delta(delta, scalar=True)
    eps_i, dels = _pure_steps(epsilons, deltas)
    if eps_i.size == 0:
        return float(analytic_sigma(e, d))
    target = _core_target(d, dels)
    p, loss = _outcomes(eps_i)
    if _core_delta(None, p, loss, e) >= target * (1.0 - 1e-6):
        raise ValueError(
            "the non-Gaussian steps alone (nearly) reach delta at this epsilon: "
            "no Gaussian noise level is enough; give them a smaller share")

    def ok(s: Any) -> Any:
        return _core_delta(s, p, loss, e) <= target * (1.0 - _MARGIN)

    # Dropping the other steps' outputs is post-processing, so the composition
    # needs at least the noise of the Gaussian part alone.
    lo = float(analytic_sigma(e, target))
    hi = 2.0 * lo
    while not ok(hi):
        lo, hi = hi, 2.0 * hi
    return _bisect_log(ok, lo, hi, ok_at="hi")


# ---------------------------------------------------------------------------
# a Gaussian step, then one of several branches chosen from its output
# ---------------------------------------------------------------------------
#: The prefix's privacy loss is bounded on bins of this width, in standard
#: deviations (:func:`branch_delta`).
BRANCH_STEP = 2e-3

#: ... and below this many standard deviations under its mean.
_BRANCH_LEFT = 10.0


def _cks_delta_grid(rho: float, eps: np.ndarray) -> np.ndarray:
    """The CKS bound of :func:`zcdp_delta` on an array of ``eps``, from above.

    ``g(u)`` of :func:`_cks_log_delta` at a ``u`` found by 100 bisection steps
    on the sign of ``g'`` in ``log u`` (any ``u > 0`` gives a valid bound),
    with the total-variation bound; 1 where ``eps <= 0``."""
    eps = np.asarray(eps, dtype=np.float64)
    out = np.ones_like(eps)
    pos = eps > 0
    e = eps[pos]
    lo = np.full_like(e, -700.0)
    hi = np.minimum(700.0, np.maximum(np.log(e) - math.log(2.0 * rho), 0.0) + 30.0)
    with np.errstate(over="ignore"):
        for _ in range(100):
            t = 0.5 * (lo + hi)
            up = _cks_dg(np.exp(t), rho, e) > 0
            hi = np.where(up, t, hi)
            lo = np.where(up, lo, t)
        g = _cks_g(np.exp(0.5 * (lo + hi)), rho, e)
    bound = np.exp(np.minimum(np.where(np.isnan(g), 0.0, g), 0.0))
    # rounded up to the smallest positive float, never to 0 (as zcdp_delta)
    out[pos] = np.maximum(5e-324, np.minimum(bound, math.sqrt(-math.expm1(-rho))))
    return out


def _branch_grid(mu: float, epsilon: float, tail: float
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """Points ``t_k`` and weights ``w_k`` with
    ``E[phi(epsilon - L)] <= sum_k w_k phi(t_k) + rest`` for every
    nonincreasing ``phi`` with values in ``[0, 1]``, ``L ~ N(mu^2/2, mu^2)``:
    each bin of ``L`` takes ``phi`` at its upper end (where ``phi(epsilon - L)``
    is largest), and the mass above the last bin, ``rest <= tail``, counts 1."""
    right = -float(ndtri(tail))
    z = np.arange(-_BRANCH_LEFT, right + BRANCH_STEP, BRANCH_STEP)
    # bin masses, each from the side of 0 where it is not a difference of
    # numbers near 1
    a, b = z[:-1], z[1:]
    with np.errstate(invalid="ignore"):
        mid = np.where(b <= 0, ndtr(b) - ndtr(a),
                       np.where(a >= 0, ndtr(-a) - ndtr(-b), (0.5 - ndtr(a)) + (0.5 - ndtr(-b))))
    w = np.concatenate(([ndtr(z[0])], mid))
    t = epsilon - (0.5 * mu * mu + mu * z)
    return t, np.maximum(w, 0.0), float(ndtr(-z[-1]))


def _branch_sum(w: np.ndarray, rest: float, phi: np.ndarray) -> float:
    """``sum_k w_k min(1, phi_k) + rest`` of :func:`_branch_grid`'s bins,
    rounded up: a relative 1e-12 covers the float sum of ~1e4 terms."""
    return (float(np.dot(w, np.minimum(phi, 1.0))) + rest) * (1.0 + 1e-12)


def branch_delta(mu: float, epsilon: float, *, gaussian: Any = (), zcdp: Any = (),
                 tail: float = 1e-18) -> float:
    r"""delta(epsilon) of a Gaussian step followed by a branch chosen from its output.

    The mechanism first releases a mu-GDP Gaussian step, then runs one of
    several branches, which one a function of that output: a ``mu_b``-GDP
    Gaussian branch for each ``mu_b`` in ``gaussian``, a ``rho_b``-zCDP one
    for each ``rho_b`` in ``zcdp``. Every branch is ``f``-DP for the convex
    hull of the least of their trade-off functions, whose privacy profile is
    the largest of theirs, so by adaptive composition (Dong, Roth and Su
    2022, Theorem 3.2) the mechanism is ``G_mu ⊗ f``-DP:
    ``delta(epsilon) <= E[phi(epsilon - L)]``, ``L ~ N(mu^2/2, mu^2)`` the
    step's privacy loss and ``phi`` the largest branch profile (the Gaussian
    one exactly, :func:`gdp_delta`; the zCDP one by Canonne, Kamath and
    Steinke, :func:`zcdp_delta`, and 1 at ``epsilon <= 0``) (the appendix's
    :prf:ref:`pipeline-design-prop-branch`). The expectation is bounded from
    above on bins of ``L`` of :data:`BRANCH_STEP` standard deviations, each
    at its upper end (``phi(epsilon - L)`` grows with ``L``), the mass of
    ``L`` beyond ``-ndtri(tail)`` standard deviations counted as 1.

    Parameters
    ----------
    mu : float
        The first step's GDP parameter ``1/s`` (``s`` its noise multiplier), > 0.
    epsilon : float
        Target epsilon >= 0.
    gaussian, zcdp : sequence of float
        The branches' GDP parameters and zCDP parameters (at least one branch).
    tail : float, default 1e-18
        The prefix's privacy loss mass counted as a certain failure.

    Returns
    -------
    float
        An upper bound on delta(epsilon), relatively at most about
        ``BRANCH_STEP mu |dlog phi / depsilon|`` above the expectation.

    Examples
    --------
    >>> # one Gaussian branch: the two Gaussians compose exactly
    >>> bound = branch_delta(0.1, 1.0, gaussian=[0.5])
    >>> exact = gdp_delta(math.hypot(0.1, 0.5), 1.0)
    >>> bool(exact <= bound <= exact * (1 + 1e-3))
    True
    """
    m = _positive_scalar(mu, "mu")
    e = V.check_epsilon(epsilon, allow_zero=True, scalar=True)
    gs = [_positive_scalar(g, "gaussian") for g in np.atleast_1d(np.asarray(gaussian, float))]
    zs = [_positive_scalar(r, "zcdp") for r in np.atleast_1d(np.asarray(zcdp, float))]
    if not gs and not zs:
        raise ValueError("give at least one branch (gaussian or zcdp)")
    tl = V.check_delta(tail, scalar=True)
    t, w, rest = _branch_grid(m, e, tl)
    phi = np.zeros_like(t)
    for g in gs:
        phi = np.maximum(phi, _gaussian_profile(1.0 / g, t))
    for r in zs:
        phi = np.maximum(phi, _cks_delta_grid(r, t))
    return min(1.0, _branch_sum(w, rest, phi))


def branch_gaussian_mu(mu: float, epsilon: float, delta: float, zcdp: float,
                       low: float) -> float | None:
    """The largest ``mu_B`` at which :func:`branch_delta` with one Gaussian
    branch ``mu_B`` and one zCDP branch ``zcdp`` is at most ``delta``.

    Searched between ``low`` (a GDP parameter at which the bound must
    already hold; None when it does not) and the analytic Gaussian's
    ``1/analytic_sigma(epsilon, delta)`` (the Gaussian branch alone, taken
    on every output, could be no stronger), by bisection to a relative
    ``1e-12``; the right tail of the first step's loss is given ``1e-9 delta``.

    Examples
    --------
    >>> mu = 0.01                                   # the first step: rho mu^2 / 2
    >>> other = zcdp_rho(1.0, 1e-5) - mu * mu / 2   # the other branch, zCDP
    >>> mu_b = branch_gaussian_mu(mu, 1.0, 1e-5, other, math.sqrt(2 * other))
    >>> bool(mu_b > 0.99 / analytic_sigma(1.0, 1e-5))   # near the analytic Gaussian's
    True
    """
    m = _positive_scalar(mu, "mu")
    e = V.check_epsilon(epsilon, scalar=True)
    d = V.check_delta(delta, scalar=True)
    r = _positive_scalar(zcdp, "zcdp")
    lo = _positive_scalar(low, "low")
    t, w, rest = _branch_grid(m, e, 1e-9 * d)
    other = _cks_delta_grid(r, t)

    def ok(mu_b: float) -> bool:
        return _branch_sum(w, rest, np.maximum(other, _gaussian_profile(1.0 / mu_b, t))) <= d

    if not ok(lo):
        return None
    hi = 1.0 / float(analytic_sigma(e, d))
    if ok(hi):                          # pragma: no cover - the bound exceeds delta there
        return hi
    return _bisect_log(ok, lo, hi, ok_at="lo")


# ---------------------------------------------------------------------------
# monotone bisection that returns the end satisfying the predicate
# ---------------------------------------------------------------------------
def _bisect_log(ok: Any, lo: float, hi: float, *, ok_at: str) -> float:
    """Bisect in log x until hi/lo - 1 < rtol; return the end where ``ok`` holds.

    ``ok_at="hi"``: ok(x) is false below the threshold and true above it,
    ``ok_at="lo"``: the reverse.  The returned end satisfies ``ok``.
    """
    good, bad = (hi, lo) if ok_at == "hi" else (lo, hi)
    for _ in range(200):
        if abs(good / bad - 1.0) <= _BISECT_RTOL:
            break
        mid = math.sqrt(good * bad)
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def _bisect_lin(ok: Any, bad: float, good: float) -> float:
    """Bisect on [bad, good] (ok false at bad, true at good); return a good point."""
    for _ in range(200):
        if good - bad <= _BISECT_RTOL * max(good, 1e-300):
            break
        mid = 0.5 * (good + bad)
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PrivacyStep(V.Record):
    """One private step of a pipeline, as the accountant sees it.

    Exactly one of ``noise_multiplier`` (a Gaussian release with
    ``sigma = noise_multiplier * Delta_2``) and ``epsilon`` (an
    (epsilon, delta)-DP step, pure when ``delta == 0``) is set.  Build steps
    with :func:`gaussian_step`, :func:`subsampled_gaussian_step`,
    :func:`pure_step`, :func:`bounded_range_step` or :func:`approximate_step`.  ``count`` identical mechanisms (one per
    coordinate, say) form one record.

    Attributes
    ----------
    name : str
        What the step does, e.g. ``"center"`` or ``"sum"``.
    noise_multiplier : float or None
        sigma / L2 sensitivity of a Gaussian step.
    epsilon, delta : float or None, float
        The guarantee of a non-Gaussian step.
    count : int
        How many independent mechanisms with these parameters the step runs.
    bounded_range : bool
        True for an epsilon-bounded-range mechanism (an exponential
        mechanism): pure epsilon-DP and ``epsilon^2/8``-zCDP
        (:func:`zcdp_rho_bounded_range`).
    sampling_rate : float
        For a Gaussian step, the probability ``q`` in (0, 1] with which each
        row enters it (Poisson subsampling, as in DP-SGD); 1 for no
        subsampling. Subsampled steps are accounted under add-remove.

    Examples
    --------
    >>> step = gaussian_step("sum", 3.0)
    >>> step.kind, round(step.rho, 6)
    ('gaussian', 0.055556)
    """

    name: str
    noise_multiplier: float | None = None
    epsilon: float | None = None
    delta: float = 0.0
    count: int = 1
    bounded_range: bool = False
    sampling_rate: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("name must be a non-empty string")
        if (self.noise_multiplier is None) == (self.epsilon is None):
            raise ValueError("give exactly one of noise_multiplier and epsilon")
        if self.noise_multiplier is not None:
            object.__setattr__(self, "noise_multiplier",
                               _positive_scalar(self.noise_multiplier, "noise_multiplier"))
            if V.check_delta(self.delta, allow_zero=True, scalar=True) != 0:
                raise ValueError("a Gaussian step has no delta of its own: delta must be 0")
        else:
            object.__setattr__(self, "epsilon", V.check_epsilon(self.epsilon, scalar=True))
            object.__setattr__(self, "delta", V.check_delta(self.delta, allow_zero=True,
                                                            scalar=True))
        object.__setattr__(self, "count", check_integer(self.count, "count", 1))
        object.__setattr__(self, "bounded_range", check_bool(self.bounded_range, "bounded_range"))
        if self.bounded_range and (self.epsilon is None or self.delta != 0):
            raise ValueError("bounded_range=True (a bounded-range step) is for a pure epsilon-DP "
                             "step: give epsilon and no delta")
        object.__setattr__(self, "sampling_rate", check_sampling_rate(self.sampling_rate))
        if self.sampling_rate < 1.0 and self.noise_multiplier is None:
            raise ValueError("only a Gaussian step can be subsampled (sampling_rate < 1)")

    @property
    def kind(self) -> str:
        """``"gaussian"``, ``"subsampled gaussian"``, ``"pure"``, ``"bounded-range"``
        or ``"approximate"``.

        Examples
        --------
        >>> gaussian_step("a", 1.0).kind, pure_step("b", 0.1).kind
        ('gaussian', 'pure')
        """
        if self.noise_multiplier is not None:
            return "gaussian" if self.sampling_rate == 1.0 else "subsampled gaussian"
        if self.bounded_range:
            return "bounded-range"
        return "pure" if self.delta == 0 else "approximate"

    @property
    def rho(self) -> float | None:
        """The zCDP parameter of all ``count`` mechanisms together, or None for
        an approximate-DP or subsampled step (zCDP does not capture the
        amplification; account those with ``compose(..., method="exact")``).

        Examples
        --------
        >>> gaussian_step("a", 2.0).rho, approximate_step("c", 0.1, 1e-9).rho
        (0.125, None)
        """
        if self.kind == "gaussian":
            assert self.noise_multiplier is not None
            return self.count * float(zcdp_rho_gaussian(self.noise_multiplier))
        if self.kind == "bounded-range":
            assert self.epsilon is not None
            return self.count * float(zcdp_rho_bounded_range(self.epsilon))
        if self.kind == "pure":
            assert self.epsilon is not None
            return self.count * float(zcdp_rho_pure(self.epsilon))
        return None


def gaussian_step(name: str, noise_multiplier: float) -> PrivacyStep:
    """A Gaussian release with ``sigma = noise_multiplier * (L2 sensitivity)``.

    Examples
    --------
    >>> gaussian_step("sum", 2.0).noise_multiplier
    2.0
    """
    return PrivacyStep(name, noise_multiplier=noise_multiplier)


def subsampled_gaussian_step(name: str, noise_multiplier: float, sampling_rate: float,
                             count: int = 1) -> PrivacyStep:
    """``count`` Poisson-subsampled Gaussian steps (DP-SGD's steps): each row enters
    each step with probability ``sampling_rate``, and the step adds Gaussian noise
    of ``noise_multiplier`` times the L2 sensitivity of one row. Add-remove
    neighbouring; :func:`compose` accounts it with the privacy loss distribution
    of :func:`dpsum.privacy.subsampled_gaussian_pld`.

    Examples
    --------
    >>> s = subsampled_gaussian_step("sgd", 1.1, 0.01, count=1000)
    >>> s.kind, s.count
    ('subsampled gaussian', 1000)
    """
    return PrivacyStep(name, noise_multiplier=noise_multiplier, count=count,
                       sampling_rate=sampling_rate)


def pure_step(name: str, epsilon: float) -> PrivacyStep:
    """A pure epsilon-DP step (an exponential-mechanism quantile, a Laplace count).

    Examples
    --------
    >>> pure_step("median", 0.5).epsilon
    0.5
    """
    return PrivacyStep(name, epsilon=epsilon)


def bounded_range_step(name: str, epsilon: float, count: int = 1) -> PrivacyStep:
    """``count`` epsilon-bounded-range mechanisms (exponential-mechanism
    quantiles, one per coordinate, say): each pure epsilon-DP and
    ``epsilon^2/8``-zCDP."""
    return PrivacyStep(name, epsilon=epsilon, count=count, bounded_range=True)


def approximate_step(name: str, epsilon: float, delta: float) -> PrivacyStep:
    """An (epsilon, delta)-DP step accounted by its guarantee alone.

    Examples
    --------
    >>> s = approximate_step("threshold", 0.5, 1e-9)
    >>> s.kind, s.delta
    ('approximate', 1e-09)
    """
    return PrivacyStep(name, epsilon=epsilon, delta=delta)


@dataclass(frozen=True)
class ComposedGuarantee(V.Record):
    """The privacy guarantee of several steps, and how it was computed.

    Every field is public: the steps' budgets and the composed guarantee
    depend on the privacy parameters only, never on the data.

    Attributes
    ----------
    steps : tuple of PrivacyStep
    epsilon, delta : float
        The composed guarantee: the whole is (epsilon, delta)-DP.
    method : str
        ``"exact"`` (dominating pairs: the Gaussian steps composed exactly,
        the others by their randomized-response or Kairouz-Oh-Viswanath pairs),
        ``"pld"`` (subsampled Gaussian steps: the privacy loss distribution,
        exact up to its discretisation),
        ``"zcdp"`` (rhos added, converted by Canonne-Kamath-Steinke),
        ``"zcdp-standard"`` (converted by ``rho + 2 sqrt(rho log(1/delta))``)
        or ``"branch"`` (a Gaussian step, then a branch chosen from its
        output, bounded for the whole mixture of branches by
        ``dpsum.privacy.composition.branch_delta``).
    rho : float or None
        The total zCDP of the steps, None if a step is approximate DP.
    noise_multiplier : float or None
        The one multiplier equivalent to all Gaussian steps, None if there
        are none.

    Examples
    --------
    >>> g = compose([gaussian_step("sum", 3.0), pure_step("count", 0.1)], delta=1e-6)
    >>> g.method, len(g.steps), g.delta
    ('exact', 2, 1e-06)
    """

    steps: tuple
    epsilon: float
    delta: float
    method: str
    rho: float | None = field(default=None)
    noise_multiplier: float | None = field(default=None)

    def as_dict(self) -> dict:
        """A JSON-friendly dictionary of the record.

        Examples
        --------
        >>> g = compose([gaussian_step("a", 3.0)], delta=1e-6)
        >>> sorted(g.as_dict())[:3]
        ['delta', 'epsilon', 'method']
        """
        return {
            "steps": [
                {"name": st.name, "kind": st.kind, "noise_multiplier": st.noise_multiplier,
                 "epsilon": st.epsilon, "delta": st.delta, "count": st.count,
                 "sampling_rate": st.sampling_rate}
                for st in self.steps
            ],
            "epsilon": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "rho": self.rho,
            "noise_multiplier": self.noise_multiplier,
        }


_COMPOSE_METHODS = ("exact", "zcdp", "zcdp-standard")


def compose(steps: Any, *, epsilon: float | None = None, delta: float | None = None,
            method: str = "exact") -> ComposedGuarantee:
    """Compose private steps into one (epsilon, delta) guarantee.

    Give exactly one of ``epsilon`` and ``delta``; the other is computed.

    Parameters
    ----------
    steps : sequence of PrivacyStep
        At least one step.
    epsilon, delta : float, optional
        The fixed parameter of the guarantee.
    method : {"exact", "zcdp", "zcdp-standard"}
        ``"exact"``: :func:`mixed_delta` / :func:`mixed_epsilon` with the
        Gaussian steps merged by :func:`compose_gaussian_multipliers` (tight).
        When some step is subsampled (:func:`subsampled_gaussian_step`), every
        step must be Gaussian and they are composed by their privacy loss
        distribution (:func:`dpsum.privacy.subsampled_gaussian_pld`,
        ``interval`` 1e-4, add-remove); the record's method is then ``"pld"``.
        ``"zcdp"``, ``"zcdp-standard"``: the rhos of the steps added and
        converted by :func:`zcdp_delta` / :func:`zcdp_epsilon`
        (``method="cks"`` and ``"standard"``); not defined for approximate-DP
        steps.

    Returns
    -------
    ComposedGuarantee

    Examples
    --------
    >>> g = compose([gaussian_step("a", 2.0), gaussian_step("b", 2.0)], delta=1e-6)
    >>> bool(abs(g.epsilon - gaussian_composition_epsilon([2.0, 2.0], 1e-6)) < 1e-9)
    True
    """
    if isinstance(steps, PrivacyStep):
        steps = (steps,)
    elif isinstance(steps, (str, bytes)) or not hasattr(steps, "__iter__"):
        raise TypeError("steps must be a sequence of PrivacyStep records (see gaussian_step, "
                        f"pure_step), got {type(steps).__name__}")
    steps = tuple(steps)
    if not steps:
        raise ValueError("steps must not be empty")
    if not all(isinstance(st, PrivacyStep) for st in steps):
        raise TypeError("steps must be PrivacyStep records (see gaussian_step, pure_step)")
    V.check_choice(method, "method", _COMPOSE_METHODS)
    if (epsilon is None) == (delta is None):
        raise ValueError("give exactly one of epsilon and delta")
    if any(st.kind == "subsampled gaussian" for st in steps):
        return _compose_subsampled(steps, epsilon, delta, method)
    gauss = [st.noise_multiplier for st in steps if st.kind == "gaussian"
             for _ in range(st.count)]
    others = [st for st in steps if st.kind != "gaussian" for _ in range(st.count)]
    s = compose_gaussian_multipliers(gauss) if gauss else None
    rhos = [st.rho for st in steps]
    rho = None if any(r is None for r in rhos) else float(sum(rhos))
    if method == "exact":
        # a bounded-range step enters as the pure epsilon-DP step it also is
        # (valid; the zCDP methods use its smaller rho)
        kw = dict(epsilons=[st.epsilon for st in others], deltas=[st.delta for st in others])
        if delta is None:
            eps = V.check_epsilon(epsilon, scalar=True)
            dlt = mixed_delta(s, eps, **kw)
        else:
            dlt = V.check_delta(delta, scalar=True)
            eps = mixed_epsilon(s, dlt, **kw)
    else:
        if rho is None:
            raise ValueError("zCDP accounting needs every step to be Gaussian or pure DP")
        conv = "cks" if method == "zcdp" else "standard"
        if delta is None:
            eps = V.check_epsilon(epsilon, scalar=True)
            dlt = zcdp_delta(rho, eps, conv)
        else:
            dlt = V.check_delta(delta, scalar=True)
            eps = zcdp_epsilon(rho, dlt, conv)
    return ComposedGuarantee(steps=steps, epsilon=float(eps), delta=float(dlt),
                             method=method, rho=rho, noise_multiplier=s)


def _compose_subsampled(steps: tuple, epsilon: float | None, delta: float | None,
                        method: str) -> ComposedGuarantee:
    """:func:`compose` when some step is subsampled: the privacy loss distribution."""
    if method != "exact":
        raise ValueError("subsampled Gaussian steps are accounted with method='exact' only")
    if any(st.noise_multiplier is None for st in steps):
        raise ValueError("steps: a subsampled Gaussian step composes only with Gaussian "
                         "steps (compose the others separately and add the results)")
    pld = subsampled_gaussian_pld([st.noise_multiplier for st in steps],
                                  [st.sampling_rate for st in steps],
                                  [st.count for st in steps])
    if delta is None:
        eps = V.check_epsilon(epsilon, scalar=True)
        dlt = pld.delta(eps)
    else:
        dlt = V.check_delta(delta, scalar=True)
        eps = pld.epsilon(dlt)
    return ComposedGuarantee(steps=steps, epsilon=float(eps), delta=float(dlt),
                             method="pld", rho=None, noise_multiplier=None)
