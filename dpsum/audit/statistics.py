"""The statistics of a privacy audit: Clopper-Pearson bounds, the epsilon a pair
of counts certifies, and the power of the test (the chapter
:ref:`Checking privacy empirically <ch-auditing>`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum._lazy import optimize, stats
from dpsum.audit._checks import (
    _check_alpha,
    _check_count,
    _check_delta_audit,
    _check_laws,
    _cp_lower,
    _cp_upper,
    _epsilon_bound,
)

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_from_counts",
    "audit_power",
    "pair_delta",
    "discrete_audit_power",
    "pair_epsilon",
    "two_point_rejection_probability",
]


#: Number of tests :func:`epsilon_lower_bound` runs (upper tail with the
#: datasets in one order, lower tail with them in the other). Each test uses
#: two one-sided Clopper-Pearson bounds, so each bound gets ``alpha / 4``.
N_TESTS = 2


def clopper_pearson_lower(k: ArrayLike, n: int, alpha: float) -> float | np.ndarray:
    """One-sided exact lower confidence bound on a binomial proportion.

    The Clopper-Pearson bound: ``p_lo`` is the ``alpha`` quantile of
    ``Beta(k, n - k + 1)`` (0 when ``k = 0``). For every true ``p``,
    ``Pr[p_lo > p] <= alpha`` when ``k ~ Binomial(n, p)``: inverting the
    binomial tail test is conservative, never anti-conservative.

    Parameters
    ----------
    k : int or numpy.ndarray
        Number of successes, ``0 <= k <= n`` (an integer array gives one
        bound per entry).
    n : int
        Number of trials, ``>= 1``.
    alpha : float
        Error probability of the bound, in (0, 1).

    Examples
    --------
    >>> clopper_pearson_lower(0, 10, 0.05), round(clopper_pearson_lower(10, 10, 0.05), 6)  # alpha^(1/n)
    (0.0, 0.741134)
    """
    n = V.check_integer(n, "n")
    a = _check_alpha(alpha)
    kk = _check_count(k, n, "k")
    out = _cp_lower(kk, n, a)
    return V.scalar_or_array(out)


def clopper_pearson_upper(k: ArrayLike, n: int, alpha: float) -> float | np.ndarray:
    """One-sided exact upper confidence bound on a binomial proportion.

    ``p_hi`` is the ``1 - alpha`` quantile of ``Beta(k + 1, n - k)`` (1 when
    ``k = n``); ``Pr[p_hi < p] <= alpha``. With ``k = 0`` it equals
    ``1 - alpha^(1/n)``, strictly positive, so a ratio with ``p_hi`` in the
    denominator is always finite.

    Examples
    --------
    >>> round(clopper_pearson_upper(0, 10, 0.05), 6), clopper_pearson_upper(10, 10, 0.05)  # 1 - alpha^(1/n)
    (0.258866, 1.0)
    """
    n = V.check_integer(n, "n")
    a = _check_alpha(alpha)
    kk = _check_count(k, n, "k")
    out = _cp_upper(kk, n, a)
    return V.scalar_or_array(out)


def epsilon_from_counts(k_first: int, k_second: int, n_samples: int, *, delta: float,
                        alpha: float) -> float:
    """The lower bound on epsilon of one fixed event, from its counts.

    ``k_first`` of ``n_samples`` releases on the first dataset and
    ``k_second`` of ``n_samples`` on the second fell in the event ``S``.
    With ``p_lo`` and ``q_hi`` the one-sided Clopper-Pearson bounds at level
    ``alpha / 2`` each, returns ``max(0, ln((p_lo - delta) / q_hi))``; 0 means
    no evidence (``p_lo <= delta``). If the mechanism is (epsilon, delta)-DP,
    the returned value exceeds epsilon with probability at most ``alpha``.

    Examples
    --------
    >>> round(epsilon_from_counts(900, 100, 1000, delta=0.0, alpha=0.05), 6)
    1.989706
    >>> epsilon_from_counts(500, 500, 1000, delta=0.0, alpha=0.05)
    0.0
    """
    n = V.check_integer(n_samples, "n_samples")
    a = _check_alpha(alpha)
    d = _check_delta_audit(delta)
    k1 = _check_count(k_first, n, "k_first")
    k2 = _check_count(k_second, n, "k_second")
    if np.ndim(k1) or np.ndim(k2):
        raise ValueError("k_first and k_second must be scalars")
    return float(_epsilon_bound(_cp_lower(k1, n, a / 2), _cp_upper(k2, n, a / 2), d))


def audit_power(p: ArrayLike, q: ArrayLike, n_samples: int, *, epsilon: float, delta: float,
                alpha: float = 1e-3, n_tests: int = N_TESTS) -> float | np.ndarray:
    """Probability that one threshold test proves a violation of ``epsilon``.

    The test's event has probability ``p`` on its first dataset and ``q`` on
    its second, and each of its two Clopper-Pearson bounds is taken at level
    ``alpha / (2 n_tests)`` as in :func:`epsilon_lower_bound`. Returns the
    exact probability, over ``k1 ~ Binomial(n, p)`` and
    ``k2 ~ Binomial(n, q)``, that ``ln((p_lo - delta) / q_hi) > epsilon``.
    :func:`epsilon_lower_bound` reports the best of its tests, so when the
    pilot picks this event the audit's power is at least this value.

    The sum over ``k2`` is a binomial tail: ``q_hi(k2) < t`` exactly when
    ``BinomCDF(k2; n, t) < level``, so the ``k2`` that prove the violation are
    those below a binomial quantile.

    Parameters
    ----------
    p, q : float or array_like
        Event probabilities in [0, 1]; arrays are broadcast and one power is
        returned per pair (take the maximum to get the best threshold).
    n_samples : int
        Releases per dataset.
    epsilon : float
        The claimed epsilon (>= 0).
    delta : float
        The claimed delta, in [0, 1).
    alpha, n_tests :
        As in :func:`epsilon_lower_bound` (two tests).

    Examples
    --------
    >>> round(audit_power(0.5, 0.05, 2000, epsilon=1.0, delta=0.0), 6)
    1.0
    """
    n = V.check_integer(n_samples, "n_samples")
    level = _check_alpha(alpha) / (2 * V.check_integer(n_tests, "n_tests"))
    pa = V.check_finite_array(p, "p")
    qa = V.check_finite_array(q, "q")
    if np.any((pa < 0) | (pa > 1)) or np.any((qa < 0) | (qa > 1)):
        raise ValueError("p and q must be probabilities in [0, 1]")
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True, scalar=True))
    d = _check_delta_audit(delta)
    pa, qa = np.broadcast_arrays(pa, qa)
    out = np.array([_power_one(float(pi), float(qi), n, eps, d, level)
                    for pi, qi in zip(pa.ravel(), qa.ravel())]).reshape(pa.shape)
    return V.scalar_or_array(out)


def _power_one(p: float, q: float, n: int, eps: float, d: float, level: float) -> float:
    if p <= d:
        return 0.0  # p_lo <= p <= delta: the test can never give evidence
    lo = int(stats.binom.ppf(1e-14, n, p))
    hi = int(stats.binom.isf(1e-14, n, p))
    k1 = np.arange(max(lo, 0), min(hi, n) + 1)
    target = (_cp_lower(k1, n, level) - d) * math.exp(-eps)
    ok = target > 0
    if not np.any(ok):
        return 0.0
    k1, target = k1[ok], target[ok]
    # largest k2 with q_hi(k2) < target: one below the level-quantile of Bin(n, target)
    k2_max = stats.binom.ppf(level, n, target) - 1
    total = np.sum(stats.binom.pmf(k1, n, p) * stats.binom.cdf(k2_max, n, q))
    return float(min(max(total, 0.0), 1.0))


def pair_delta(first: ArrayLike, second: ArrayLike, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of one pair of discrete output laws.

    ``first`` and ``second`` are the probability vectors of a mechanism's
    output on two neighbouring datasets, over a common support. The smallest
    delta with ``P(S) <= e^eps Q(S) + delta`` and ``Q(S) <= e^eps P(S) + delta``
    for every set ``S`` is the larger of the two hockey-stick divergences
    ``sum_y max(0, P(y) - e^eps Q(y))`` and the same with ``P`` and ``Q``
    exchanged.

    Examples
    --------
    >>> round(pair_delta([0.75, 0.25], [0.25, 0.75], np.log(3)), 12)  # randomized response, epsilon = ln 3
    0.0
    """
    P, Q = _check_laws(first, second)
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True, scalar=True))

    e = math.exp(eps) if eps <= 700.0 else math.inf

    def side(A: np.ndarray, B: np.ndarray) -> float:
        # beyond e^700, e^eps B(y) as exp(eps + log B(y)): no overflow, and
        # an output B cannot produce (B = 0) keeps its mass
        if e < math.inf:
            scaled = e * B
        else:
            with np.errstate(divide="ignore", over="ignore"):
                scaled = np.exp(eps + np.log(B))
        return float(np.sum(np.maximum(A - scaled, 0.0)))
    return max(side(P, Q), side(Q, P))


def discrete_audit_power(first: ArrayLike, second: ArrayLike, n_samples: int, *,
                         epsilon: float, delta: float,
                         alpha: float = 1e-3) -> float:
    """Power of the best threshold test for two discrete output laws.

    ``first`` and ``second`` are probability vectors over a common *ordered*
    support (for example the counts 0, 1, ..., m). The candidate events are
    those :func:`epsilon_lower_bound` uses on a one-dimensional output: an
    upper tail ``{Y >= y}`` with ``first`` as the first dataset and a lower
    tail ``{Y <= y}`` with ``second`` as the first dataset. Returns the
    largest :func:`audit_power` over these events: the probability that an
    audit with ``n_samples`` releases per dataset proves a violation of
    ``epsilon`` when its pilot picks the best threshold.

    Examples
    --------
    >>> round(discrete_audit_power([0.1, 0.9], [0.9, 0.1], 1000, epsilon=1.0, delta=0.0), 6)
    1.0
    """
    P, Q = _check_laws(first, second)
    sfP, sfQ = np.cumsum(P[::-1])[::-1], np.cumsum(Q[::-1])[::-1]
    p = np.minimum(np.concatenate([sfP, np.cumsum(Q)]), 1.0)
    q = np.minimum(np.concatenate([sfQ, np.cumsum(P)]), 1.0)
    d = _check_delta_audit(delta)
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True, scalar=True))
    # an event can prove a violation only if p - delta > e^eps q; a margin of
    # 2 keeps the candidates that are close
    with np.errstate(divide="ignore", over="ignore"):
        useful = (p > d) & (p - d > 0.5 * np.exp(eps + np.log(q)))
    if not np.any(useful):
        return 0.0
    return float(np.max(audit_power(p[useful], q[useful], n_samples, epsilon=eps, delta=d,
                                    alpha=alpha)))


def pair_epsilon(first: Any, second: Any, delta: float) -> float:
    """Exact ``epsilon(delta)`` of one pair of discrete output laws.

    The smallest ``epsilon >= 0`` with :func:`pair_delta` at most ``delta``:
    the privacy the pair actually has at ``delta``. ``inf`` when no epsilon
    suffices (an output possible under one law and impossible under the
    other carries more than ``delta``).
    """
    P, Q = _check_laws(first, second)
    d = _check_delta_audit(delta)
    if pair_delta(P, Q, 0.0) <= d:
        return 0.0
    both = (P > 0) & (Q > 0)
    top = float(np.max(np.abs(np.log(P[both] / Q[both])))) if np.any(both) else 0.0
    if pair_delta(P, Q, top) > d:
        # at the largest log-ratio the delta is 0 up to the rounding of the
        # ratios (delta = 0 asks for exactly that): a hair above it
        top = top * (1.0 + 1e-12) + 1e-15
        if pair_delta(P, Q, top) > d:
            return math.inf  # the remaining delta sits on outputs one law cannot produce
    f = lambda e: pair_delta(P, Q, e) - d  # noqa: E731  (decreasing in e)
    return float(optimize.brentq(f, 0.0, top, xtol=1e-13, rtol=1e-12))


def two_point_rejection_probability(p: float, q: float, n_samples: int, *, epsilon: float,
                                    delta: float, alpha: float = 1e-3) -> float:
    """Exact probability that an audit of a mechanism with two outputs rejects ``epsilon``.

    The mechanism outputs 1 with probability ``p`` on the first dataset and
    ``q`` on the second (one randomized bit, say). With such outputs the
    pilot has one sensible choice, the events "output 1" for the upper test
    and "output 0" for the lower test, and the audit rejects ``epsilon`` when
    either test's bound exceeds it. The main-run counts ``k1 ~ Bin(n, p)`` and
    ``k2 ~ Bin(n, q)`` of ones decide both tests (the lower test counts
    ``n - k2`` and ``n - k1`` zeros), so the probability is a finite double
    sum, computed exactly here. At the mechanism's true epsilon it is the
    audit's exact false-alarm probability, which
    :func:`epsilon_lower_bound` promises to keep below ``alpha``.
    """
    n = V.check_integer(n_samples, "n_samples")
    for value, name in ((p, "p"), (q, "q")):
        V.check_probability(value, name, scalar=True)
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True, scalar=True))
    d = _check_delta_audit(delta)
    level = _check_alpha(alpha) / (2 * N_TESTS)
    k = np.arange(n + 1)
    lo, hi = _cp_lower(k, n, level), _cp_upper(k, n, level)
    bound = lambda a, b: _epsilon_bound(a, b, d)  # noqa: E731
    upper = bound(lo[:, None], hi[None, :]) > eps            # k1 ones on D, k2 on D'
    lower = bound(lo[None, ::-1], hi[::-1, None]) > eps      # n - k2 zeros on D', n - k1 on D
    pmf1, pmf2 = stats.binom.pmf(k, n, float(p)), stats.binom.pmf(k, n, float(q))
    return float(min(max(pmf1 @ (upper | lower) @ pmf2, 0.0), 1.0))
