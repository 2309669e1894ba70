"""Empirical privacy auditing: a statistically valid lower bound on epsilon.

A mechanism ``M`` is (epsilon, delta)-differentially private when, for every
pair of neighbouring datasets ``D, D'`` and every set ``S`` of outputs,

.. math::  \\Pr[M(D) \\in S] \\le e^{\\varepsilon} \\Pr[M(D') \\in S] + \\delta .

Run ``M`` many times on ``D`` and on ``D'``, fix an event ``S`` in advance,
and count how often each output lands in ``S``. An exact binomial confidence
interval (Clopper and Pearson 1934) gives a lower bound ``p_lo`` on
``p = Pr[M(D) in S]`` and an upper bound ``q_hi`` on ``q = Pr[M(D') in S]``;
if both hold, every epsilon the mechanism can honestly claim satisfies
``epsilon >= ln((p_lo - delta) / q_hi)``. A value above the claimed epsilon is
statistical proof, at the chosen confidence, that the claim is false
(book chapter 8, following Jagielski, Ullman and Oprea 2020).

What an audit cannot do: it only ever gives a *lower* bound, so passing an
audit proves nothing; it sees only the events it tests (here, half-spaces of
a one-dimensional projection), the datasets it is given, and the outputs as
arrays of numbers, so attacks on the floating-point representation of the
noise (Mironov 2012) or on running time are out of its reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

from . import _validation as V
from ._validation import RandomLike
from ._deprecation import moved_attributes

__all__ = [
    "AuditResult",
    "epsilon_lower_bound",
    "batched_gaussian_release",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_from_counts",
    "audit_power",
    "discrete_audit_power",
    "pair_delta",
    "precision_event",
    "precision_epsilon_lower_bound",
    "pair_epsilon",
    "AuditSimulation",
    "simulate_audits",
    "two_point_rejection_probability",
    "discrete_law_release",
    "BATCHED_SAMPLERS",
    "refused_attributes",
]

#: Number of tests :func:`epsilon_lower_bound` runs (upper tail with the
#: datasets in one order, lower tail with them in the other). Each test uses
#: two one-sided Clopper-Pearson bounds, so each bound gets ``alpha / 4``.
N_TESTS = 2

# thresholds the pilot tries per test (its choice affects power, not validity)
_MAX_CANDIDATES = 400


# ----------------------------------------------------------------- statistics

def _check_alpha(alpha) -> float:
    return V.check_probability(alpha, "alpha", scalar=True)


def _check_count(k, n, name: str):
    return V.check_count(k, n, name)


def _cp_lower(k, n: int, level: float):
    """Clopper-Pearson lower bound for real-valued k in [0, n] (no validation)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(level, np.maximum(k, 1e-300), n - k + 1)
    return np.where(k <= 0, 0.0, out)


def _cp_upper(k, n: int, level: float):
    """Clopper-Pearson upper bound for real-valued k in [0, n] (no validation)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = stats.beta.isf(level, k + 1, np.maximum(n - k, 1e-300))
    return np.where(k >= n, 1.0, out)


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


def _epsilon_bound(p_lo, q_hi, delta: float):
    """``max(0, ln((p_lo - delta) / q_hi))``, 0 when ``p_lo <= delta``."""
    p_lo = np.asarray(p_lo, dtype=np.float64)
    q_hi = np.asarray(q_hi, dtype=np.float64)
    num = p_lo - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.log(num / q_hi)
    return np.where((num > 0) & (q_hi > 0), np.maximum(val, 0.0), 0.0)


def _check_delta_audit(delta) -> float:
    # delta = 0 is legitimate here: pure epsilon-DP mechanisms are audited too
    return V.check_delta(delta, allow_zero=True, scalar=True)


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
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True))
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


def _check_laws(first, second):
    P = V.check_finite_array(first, "first", ndim=1)
    Q = V.check_finite_array(second, "second", ndim=1)
    if P.shape != Q.shape:
        raise ValueError(f"first and second must have the same length, got {P.size} and {Q.size}")
    for arr, name in ((P, "first"), (Q, "second")):
        if np.any(arr < 0) or abs(arr.sum() - 1.0) > 1e-9:
            raise ValueError(f"{name} must be a probability vector (non-negative, summing to 1)")
    return P, Q


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
    e = math.exp(float(V.check_positive(epsilon, "epsilon", allow_zero=True)))
    return float(max(np.sum(np.maximum(P - e * Q, 0.0)), np.sum(np.maximum(Q - e * P, 0.0))))


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
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True))
    # an event can prove a violation only if p - delta > e^eps q; a margin of
    # 2 keeps the candidates that are close
    useful = (p > d) & (p - d > 0.5 * math.exp(eps) * q)
    if not np.any(useful):
        return 0.0
    return float(np.max(audit_power(p[useful], q[useful], n_samples, epsilon=eps, delta=d,
                                    alpha=alpha)))


def pair_epsilon(first, second, delta: float) -> float:
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
        return math.inf  # the remaining delta sits on outputs one law cannot produce
    f = lambda e: pair_delta(P, Q, e) - d  # noqa: E731  (decreasing in e)
    return float(optimize.brentq(f, 0.0, top, xtol=1e-13, rtol=1e-12))


# ----------------------------------------------------------------- the audit

@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`epsilon_lower_bound`.

    Attributes
    ----------
    epsilon_lower_bound : float
        The lower bound; it exceeds the true epsilon of the mechanism (at the
        given delta) with probability at most ``alpha``. 0 means no evidence.
    tail : str
        The test that achieved it: ``"upper"`` (event ``<w, y> > threshold``,
        ``dataset`` is the first dataset) or ``"lower"`` (event
        ``<w, y> < threshold``, ``neighbour`` is the first dataset).
    threshold : float
        The rejection threshold of that test.
    direction : numpy.ndarray
        The unit projection direction ``w`` (flattened output space).
    counts : tuple of int
        How many of the ``n_samples`` main-run releases fell in the winning
        test's event, on ``dataset`` and on ``neighbour``, in that order.
    p_lower, q_upper : float
        The Clopper-Pearson bounds of the winning test (first and second
        dataset of the test).
    test_bounds : tuple of float
        The bound of each test, ``(upper, lower)``.
    n_samples, n_pilot : int
        Releases per dataset in the main and the pilot run.
    alpha, delta : float
        Total error probability and the delta of the claim being audited.

    Examples
    --------
    >>> rel = lambda x, rng: x + rng.normal()
    >>> res = epsilon_lower_bound(rel, 0.0, 1.0, delta=0.0, n_samples=2000, rng=0)
    >>> res.tail in ("upper", "lower"), res.n_samples, res.counts[0] >= 0
    (True, 2000, True)
    """

    epsilon_lower_bound: float
    tail: str
    threshold: float
    direction: np.ndarray
    counts: tuple[int, int]
    p_lower: float
    q_upper: float
    test_bounds: tuple[float, float]
    n_samples: int
    n_pilot: int
    alpha: float
    delta: float


def _as_output(value) -> np.ndarray:
    """A release's output as a float array: a :class:`Release` gives its estimate."""
    est = getattr(value, "estimate", value)
    arr = np.asarray(est)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or arr.dtype == np.bool_):
        raise TypeError(f"release must return a numeric array, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def _sample(release, dataset, m: int, gen, batched: bool, shape) -> np.ndarray:
    """``m`` releases on ``dataset`` as an ``(m, k)`` float array."""
    if batched:
        out = _as_output(release(dataset, gen, size=m))
        if out.ndim == 0 or out.shape[0] != m:
            raise ValueError(
                f"a batched release must return an array whose first axis has length "
                f"size = {m}, got shape {out.shape}")
        out = out.reshape(m, -1)
    else:
        first = _as_output(release(dataset, gen))
        out = np.empty((m, first.size))
        out[0] = first.ravel()
        for i in range(1, m):
            y = _as_output(release(dataset, gen))
            if y.size != first.size:
                raise ValueError("release returned outputs of different sizes")
            out[i] = y.ravel()
    if out.shape[1] == 0:
        raise ValueError("release returned an empty output: there is nothing to audit")
    if shape is not None and out.shape[1] != shape:
        raise ValueError(
            f"release returned outputs of size {out.shape[1]} on one dataset and "
            f"{shape} on the other")
    if not np.all(np.isfinite(out)):
        raise ValueError("release returned NaN or infinite values")
    return out


def _pilot_direction(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean difference scaled by pooled per-coordinate variance, unit norm.

    For Gaussian noise with a diagonal covariance this is the direction of
    the likelihood-ratio test (Fisher's discriminant with a diagonal
    covariance). A coordinate that never varies but differs between the
    datasets separates them perfectly; the direction is then along such
    coordinates alone.
    """
    diff = a.mean(axis=0) - b.mean(axis=0)
    var = 0.5 * (a.var(axis=0) + b.var(axis=0))
    exact = (var == 0) & (diff != 0)
    if np.any(exact):
        w = np.where(exact, np.sign(diff), 0.0)
    else:
        w = np.divide(diff, var, out=np.zeros_like(diff), where=var > 0)
    norm = np.linalg.norm(w)
    if not np.isfinite(norm) or norm == 0:
        w = np.zeros_like(diff)
        w[0] = 1.0
        return w
    return w / norm


def _best_threshold(first: np.ndarray, second: np.ndarray, n: int, level: float,
                    delta: float, upper: bool) -> float:
    """The pilot threshold whose event ``> t`` (upper) or ``< t`` promises the
    largest bound when the main run has ``n`` releases per dataset.

    The anticipated counts are the pilot frequencies, with half a count added
    to each side so that a tail the pilot never reached is not taken to be
    empty, scaled to ``n``. Only power depends on this choice: the main run's
    counts are independent of it.
    """
    m1, m2 = first.size, second.size
    s1, s2 = np.sort(first), np.sort(second)
    cand = np.unique(np.concatenate([first, second]))
    if cand.size > _MAX_CANDIDATES:
        # keep every extreme value and thin out the bulk: ranks spaced
        # geometrically from the tail the event looks at
        ranks = np.unique(np.geomspace(1, cand.size, _MAX_CANDIDATES).astype(np.int64))
        cand = cand[cand.size - ranks] if upper else cand[ranks - 1]
    if upper:
        c1 = m1 - np.searchsorted(s1, cand, side="right")
        c2 = m2 - np.searchsorted(s2, cand, side="right")
    else:
        c1 = np.searchsorted(s1, cand, side="left")
        c2 = np.searchsorted(s2, cand, side="left")
    k1 = n * (c1 + 0.5) / (m1 + 1)
    k2 = n * (c2 + 0.5) / (m2 + 1)
    p_lo = _cp_lower(k1, n, level)
    q_hi = _cp_upper(k2, n, level)
    num = p_lo - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(num > 0, np.log(num / q_hi), -np.inf)
    if not np.any(np.isfinite(score)):
        # no threshold promises evidence: take the one with the most excess mass
        score = num - q_hi
    return float(cand[int(np.argmax(score))])


def epsilon_lower_bound(release: Callable[..., Any], dataset: Any, neighbour: Any, *,
                        delta: float, n_samples: int, rng: RandomLike = None,
                        alpha: float = 1e-3, n_pilot: int | None = None,
                        direction: ArrayLike | None = None,
                        batched: bool = False) -> AuditResult:
    """Audit a mechanism: a lower bound on its epsilon from releases on two neighbours.

    The procedure (book chapter 8):

    1. **Pilot run.** ``n_pilot`` releases on each dataset choose a unit
       direction ``w`` (the difference of the pilot means divided
       coordinate-wise by the pooled pilot variance, unless ``direction`` is
       given) and two thresholds: ``t_up`` for the event ``<w, y> > t_up``,
       which should be likelier on ``dataset``, and ``t_lo`` for
       ``<w, y> < t_lo``, likelier on ``neighbour``. Each threshold maximises
       the bound the main run would give if the pilot frequencies were exact.
    2. **Main run.** ``n_samples`` fresh releases on each dataset. For the
       upper test, ``k_D`` and ``k_D'`` releases fall in the event; with the
       one-sided Clopper-Pearson bounds (Clopper and Pearson 1934)
       ``p_lo <= Pr[M(D) in S]`` and ``q_hi >= Pr[M(D') in S]`` the test
       gives ``max(0, ln((p_lo - delta) / q_hi))``. The lower test is the
       same with the roles of the datasets exchanged, which is the other
       half of the definition of differential privacy.
    3. The result is the larger of the two.

    **Why it is valid.** The direction and thresholds depend on the pilot
    only, so given the pilot the main-run counts are binomial with fixed
    event probabilities. Each of the four Clopper-Pearson bounds fails with
    probability at most ``alpha / 4`` (a Bonferroni split over the two
    tests and their two bounds), so with probability at least ``1 - alpha``
    all four hold simultaneously. On that event, if ``M`` is
    (epsilon, delta)-DP then ``p_lo - delta <= p - delta <= e^epsilon q
    <= e^epsilon q_hi`` for both tests, so the result is at most epsilon.
    Hence ``Pr[result > epsilon] <= alpha`` for every epsilon the mechanism
    truly satisfies at this delta, whatever the datasets, the pilot, or the
    number of samples. The guard cases are built in: a zero count gives a
    positive ``q_hi = 1 - (alpha/4)^(1/n)``, and ``p_lo <= delta`` gives 0.

    **What it cannot show.** The result is only a lower bound: a mechanism
    whose result is below its claim has not been shown private. Only
    half-space events of one projection of the output are tested, on the
    datasets given (choose a worst-case pair: see
    :func:`dpsum.pairs.replace_one_pair` and friends), and outputs are read as
    numbers, so floating-point attacks on the noise (Mironov 2012) and timing
    side channels are not examined.

    Parameters
    ----------
    release : callable
        ``release(dataset, rng)`` returns one output: an array of any fixed
        shape, a scalar, or a :class:`~dpsum.release.Release` (whose
        ``estimate`` is used). With ``batched=True`` it is called as
        ``release(dataset, rng, size=m)`` and must return ``m`` independent
        outputs stacked along the first axis.
    dataset, neighbour : object
        The two neighbouring datasets, passed to ``release`` unchanged.
    delta : float
        The delta of the claim being audited, in [0, 1).
    n_samples : int
        Releases per dataset in the main run (>= 10).
    rng : numpy.random.Generator, int or None
        Passed to every call of ``release``.
    alpha : float
        Probability that the bound exceeds the true epsilon, in (0, 1).
    n_pilot : int, optional
        Releases per dataset in the pilot run; default
        ``max(200, n_samples // 5)``.
    direction : array_like, optional
        A fixed projection direction (flattened output space); skips the
        pilot's direction estimate but not its choice of thresholds.
    batched : bool
        Whether ``release`` accepts ``size`` (see above).

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> from dpsum.mechanisms import gaussian_mechanism
    >>> rel = lambda v, rng: gaussian_mechanism(v, epsilon=1.0, delta=1e-3, sensitivity=1.0, rng=rng)
    >>> res = epsilon_lower_bound(rel, 0.0, 1.0, delta=1e-3, n_samples=5000, rng=0)
    >>> res.epsilon_lower_bound <= 1.0  # a correct mechanism: no evidence above its claim
    True
    """
    V.check_callable(release, "release", "release(dataset, rng)")
    d = _check_delta_audit(delta)
    n = V.check_integer(n_samples, "n_samples", 10)
    a = _check_alpha(alpha)
    m = max(200, n // 5) if n_pilot is None else V.check_integer(n_pilot, "n_pilot", 10)
    batched = V.check_bool(batched, "batched")
    w = None
    if direction is not None:
        w = V.check_vector(direction, "direction")
        norm = np.linalg.norm(w)
        if norm == 0:
            raise ValueError("direction must not be the zero vector")
        w = w / norm
    gen = V.check_rng(rng)
    level = a / (2 * N_TESTS)

    # 1. pilot
    a0 = _sample(release, dataset, m, gen, batched, None if w is None else w.size)
    b0 = _sample(release, neighbour, m, gen, batched, a0.shape[1])
    if w is None:
        w = _pilot_direction(a0, b0)
    a0p, b0p = a0 @ w, b0 @ w
    t_up = _best_threshold(a0p, b0p, n, level, d, upper=True)
    t_lo = _best_threshold(b0p, a0p, n, level, d, upper=False)
    del a0, b0

    # 2. main run
    a1 = _sample(release, dataset, n, gen, batched, w.size) @ w
    b1 = _sample(release, neighbour, n, gen, batched, w.size) @ w
    up = (int(np.count_nonzero(a1 > t_up)), int(np.count_nonzero(b1 > t_up)))
    lo = (int(np.count_nonzero(b1 < t_lo)), int(np.count_nonzero(a1 < t_lo)))

    # 3. bounds
    results = []
    for first, second in (up, lo):
        p_lo = float(_cp_lower(first, n, level))
        q_hi = float(_cp_upper(second, n, level))
        results.append((float(_epsilon_bound(p_lo, q_hi, d)), p_lo, q_hi))
    best = 0 if results[0][0] >= results[1][0] else 1
    eps_lb, p_lo, q_hi = results[best]
    return AuditResult(
        epsilon_lower_bound=eps_lb,
        tail="upper" if best == 0 else "lower",
        threshold=t_up if best == 0 else t_lo,
        direction=w,
        counts=up if best == 0 else (lo[1], lo[0]),
        p_lower=p_lo,
        q_upper=q_hi,
        test_bounds=(results[0][0], results[1][0]),
        n_samples=n,
        n_pilot=m,
        alpha=a,
        delta=d,
    )


@dataclass(frozen=True)
class AuditSimulation:
    """How often independent audits prove a violation: :func:`simulate_audits`.

    Attributes
    ----------
    bounds : numpy.ndarray
        The epsilon lower bound of every audit, in the order they ran.
    epsilon : float
        The claim tested: an audit *rejects* it when its bound exceeds it.
    n_samples, n_pilot : int
        Releases per dataset in each audit's main run and pilot.
    alpha : float
        The error probability of each audit.
    """

    bounds: np.ndarray
    epsilon: float
    n_samples: int
    n_pilot: int
    alpha: float

    @property
    def runs(self) -> int:
        """Number of audits."""
        return int(self.bounds.size)

    @property
    def rejections(self) -> int:
        """Number of audits whose bound exceeds ``epsilon``."""
        return int(np.count_nonzero(self.bounds > self.epsilon))

    @property
    def rate(self) -> float:
        """The fraction of audits that reject: the estimated power against a
        mechanism that violates ``epsilon``, or the false-alarm rate of one
        that satisfies it."""
        return self.rejections / self.runs

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided Clopper-Pearson interval for the rejection probability,
        with coverage at least ``level``."""
        a = (1.0 - _check_alpha(level)) / 2.0
        return (float(_cp_lower(self.rejections, self.runs, a)),
                float(_cp_upper(self.rejections, self.runs, a)))


def simulate_audits(release: Callable, dataset, neighbour, *, epsilon: float, delta: float,
                    n_samples: int, runs: int, rng=None, alpha: float = 1e-3,
                    n_pilot: int | None = None, direction=None,
                    batched: bool = False) -> AuditSimulation:
    """Run ``runs`` independent audits, pilot included, and count rejections.

    Each audit is :func:`epsilon_lower_bound` exactly as a user would run it
    (its own pilot, its own main run, fresh randomness from ``rng``), so the
    fraction of audits whose bound exceeds ``epsilon`` estimates the power of
    the procedure as run against a mechanism that violates ``epsilon``, or its
    false-alarm rate on one that satisfies it. :func:`audit_power` gives the
    power of one test at a fixed threshold (an oracle that knows the best
    event); the pilot's noisy choice of threshold makes the real power lower,
    and only a simulation measures by how much (book chapter 8).

    Parameters
    ----------
    release, dataset, neighbour, delta, n_samples, alpha, n_pilot, direction, batched
        As for :func:`epsilon_lower_bound`.
    epsilon : float
        The claim under test (>= 0).
    runs : int
        Number of independent audits (>= 1).
    rng : numpy.random.Generator, int or None
        Source of every audit's randomness.

    Returns
    -------
    AuditSimulation
    """
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True, scalar=True))
    r = V.check_integer(runs, "runs")
    gen = V.check_rng(rng)
    results = [epsilon_lower_bound(release, dataset, neighbour, delta=delta, n_samples=n_samples,
                                   rng=gen, alpha=alpha, n_pilot=n_pilot, direction=direction,
                                   batched=batched)
               for _ in range(r)]
    last = results[-1]
    return AuditSimulation(bounds=np.array([res.epsilon_lower_bound for res in results]),
                           epsilon=eps, n_samples=last.n_samples, n_pilot=last.n_pilot,
                           alpha=last.alpha)


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


def discrete_law_release(first, second) -> Callable:
    """A batched release that samples two discrete output laws exactly.

    ``first`` and ``second`` are probability vectors over the outputs
    ``0, 1, 2, ...`` (for example from :func:`~dpsum.pairs.binary_output_laws`). The
    returned ``release(dataset, rng, size)`` draws ``size`` outputs from
    ``first`` when ``dataset`` is 1 and from ``second`` when it is 0; pass it
    to :func:`epsilon_lower_bound` or :func:`simulate_audits` with the pair
    ``(1, 0)`` and ``batched=True``. The power of an audit depends on a
    mechanism only through these laws, so this is how the book measures the
    power of audits of the binary mechanisms, whose real code draws one
    release per call.
    """
    P, Q = _check_laws(first, second)
    cdfs = {1: np.cumsum(P), 0: np.cumsum(Q)}

    def release(dataset, rng, size):
        if dataset not in (0, 1):
            raise ValueError("dataset must be 1 (the first law) or 0 (the second)")
        cdf = cdfs[int(dataset)]
        u = V.check_rng(rng).random(V.check_integer(size, "size")) * cdf[-1]
        return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1).astype(np.float64)

    return release


# ------------------------------------------------------------- batched releases

#: The only sampling methods of ``numpy.random.Generator`` that
#: :func:`batched_gaussian_release` batches: both take a ``size`` and draw
#: independent values, so an extra leading axis turns one call into many.
BATCHED_SAMPLERS = frozenset({"normal", "standard_normal"})


def refused_attributes(generator_class: type = np.random.Generator) -> frozenset[str]:
    """The public attributes of ``generator_class`` that the batched path refuses.

    Every public name of the class except :data:`BATCHED_SAMPLERS`: the
    other samplers (one draw would be shared by the whole batch), ``spawn``,
    and ``bit_generator`` (from which a release could build a generator that
    is not batched). The set is read from the class, not from a fixed list,
    so a sampler that a future NumPy adds is refused too: the batched path
    fails closed.
    """
    return frozenset(name for name in dir(generator_class)
                     if not name.startswith("_") and name not in BATCHED_SAMPLERS)


class _BatchGenerator(np.random.Generator):
    """A Generator whose Gaussian draws carry an extra leading batch axis.

    It shares the bit generator of its parent, so drawing from it advances
    the parent's stream. ``normal(loc, scale, size)`` returns
    ``normal(loc, scale, (m,) + size)``: the same numbers, in the same order,
    as ``m`` successive calls with ``size``.
    """

    def __init__(self, parent: np.random.Generator, batch: int):
        super().__init__(parent.bit_generator)
        self._batch = batch

    def __repr__(self) -> str:
        return f"<batched Generator, batch size {self._batch}>"

    __str__ = __repr__

    def _shape(self, size):
        if size is None:
            return (self._batch,)
        return (self._batch,) + tuple(np.atleast_1d(np.asarray(size, dtype=np.int64)).tolist())

    def normal(self, loc=0.0, scale=1.0, size=None):
        if size is None and (np.ndim(loc) or np.ndim(scale)):
            size = np.broadcast_shapes(np.shape(loc), np.shape(scale))
        return super().normal(loc, scale, size=self._shape(size))

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        if out is not None:
            raise TypeError("the batched path does not support standard_normal(out=...)")
        return super().standard_normal(size=self._shape(size), dtype=dtype)


def _refusal(name: str) -> TypeError:
    return TypeError(
        f"this release uses Generator.{name}, which batched_gaussian_release cannot "
        "batch (it batches only normal and standard_normal); audit it with batched=False")


def _refuse(name: str):
    def method(self, *args, **kwargs):
        raise _refusal(name)
    method.__name__ = name
    return method


def _refuse_attribute(name: str):
    def getter(self):
        raise _refusal(name)
    return property(getter)


for _name in refused_attributes():
    _attr = getattr(np.random.Generator, _name)
    setattr(_BatchGenerator, _name, _refuse(_name) if callable(_attr) else _refuse_attribute(_name))
del _name, _attr


def batched_gaussian_release(release: Callable) -> Callable:
    """Run a Gaussian mechanism ``size`` times in one call, with the real code.

    ``release(dataset, rng)`` must draw all its randomness with
    ``rng.normal`` or ``rng.standard_normal`` and combine the noise with the
    rest of its computation elementwise, which holds for every mechanism of
    :mod:`dpsum.mechanisms`. The returned callable
    ``batched(dataset, rng, size)`` calls ``release`` once with a generator
    whose Gaussian draws have an extra leading axis of length ``size``, so
    that broadcasting turns the one call into ``size`` independent releases
    (its outputs, stacked). Pass it to :func:`epsilon_lower_bound` with
    ``batched=True``.

    Because the batched draws consume the random stream in the same order as
    ``size`` successive calls would, the batched outputs are *bitwise equal*
    to the unbatched ones from the same seed; the test suite checks this for
    every mechanism it audits this way. A release that uses any other public
    attribute of the generator (the set :func:`refused_attributes` reads from
    ``numpy.random.Generator``, so it includes samplers added in the future)
    raises ``TypeError``; one that reduces over its noise is caught by the
    shape check (the output's first axis must be ``size``).

    Examples
    --------
    >>> from dpsum.mechanisms import gaussian_mechanism
    >>> rel = lambda v, rng: gaussian_mechanism(v, epsilon=1.0, delta=1e-3, sensitivity=1.0, rng=rng)
    >>> many = batched_gaussian_release(rel)(np.zeros(2), np.random.default_rng(0), 5)
    >>> many.shape
    (5, 2)
    """
    V.check_callable(release, "release", "release(dataset, rng)")

    def batched(dataset, rng, size):
        m = V.check_integer(size, "size")
        gen = _BatchGenerator(V.check_rng(rng), m)
        out = _as_output(release(dataset, gen))
        if out.ndim == 0 or out.shape[0] != m:
            raise ValueError(
                "the release did not broadcast over the batch axis of its noise "
                f"(output shape {out.shape} for size {m}); audit it with batched=False")
        return out

    setattr(batched, "__wrapped__", release)
    return batched


# The worst-case neighbouring pairs moved to dpsum.pairs; the old names still
# work with a DeprecationWarning.
__getattr__ = moved_attributes(__name__, {
    name: f"dpsum.pairs:{name}"
    for name in ("statistic_pair", "replace_one_pair", "add_remove_pair", "elliptical_pair",
                 "clipped_pair", "gaussian_data_pair", "binary_pair")
})


# ------------------------------------------------ the precision distinguisher

def precision_event(outputs: np.ndarray, sensitivity: float, bits: int = 6) -> np.ndarray:
    """The low-order-bit event of the precision attack, for each output.

    An output ``y`` is in the event when ``|y| < Delta 2^-bits`` and ``y`` is an
    exact multiple of ``ulp(Delta) / 2``. On the floating-point path a release
    of the statistic ``Delta`` is ``fl(Delta + z)``: near zero the exact sum
    ``Delta + z`` is a multiple of ``ulp(Delta) / 2`` (its terms are), so it
    is always in the event there, while a release of ``0`` is ``z`` itself,
    whose bits below ``ulp(Delta) / 2`` are free, so it is in the event only
    about ``2^(1-bits)`` of the time. A release on the grid ``2^K`` with
    ``2^K >= ulp(Delta)`` puts every output in the event alike.

    Parameters
    ----------
    outputs : array_like
        Scalar releases (one per sample).
    sensitivity : float
        ``Delta``, the value the second dataset's statistic takes.
    bits : int
        How close to zero the event looks (``|y| < Delta 2^-bits``).

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> d = 1.0  # ulp(1) / 2 = 2^-53
    >>> precision_event(np.array([2.0**-20, 2.0**-20 + 2.0**-60, 0.5]), d).tolist()
    [True, False, False]
    """
    y = V.check_real(outputs, "outputs")
    D = V.check_positive(sensitivity, "sensitivity", scalar=True)
    j = V.check_integer(bits, "bits", minimum=1, maximum=50)
    y = np.asarray(y, dtype=np.float64)
    quantum = np.spacing(D) / 2
    return (np.abs(y) < math.ldexp(D, -j)) & (np.mod(y, quantum) == 0)


def precision_epsilon_lower_bound(first: np.ndarray, second: np.ndarray, *,
                                  sensitivity: float, delta: float, bits: int = 6,
                                  alpha: float = 0.05) -> tuple[float, tuple[int, int]]:
    """A lower bound on epsilon from the precision event (issue 16).

    ``first`` are releases of a mechanism on the dataset whose statistic is
    ``Delta`` and ``second`` on its neighbour whose statistic is ``0``; the
    event is :func:`precision_event`. The bound is that of
    :func:`epsilon_from_counts`: it exceeds the mechanism's true epsilon (at
    ``delta``) with probability at most ``alpha``. The event is fixed before
    the samples are drawn, so one test is run and no pilot is needed.

    Returns
    -------
    (float, (int, int))
        The bound and the two event counts.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = 1.0 + rng.normal(0.0, 4.0, 200_000)
    >>> b = 0.0 + rng.normal(0.0, 4.0, 200_000)
    >>> eps, counts = precision_epsilon_lower_bound(a, b, sensitivity=1.0, delta=1e-5)
    >>> eps > 1.0
    True
    """
    a = np.ravel(V.check_real(first, "first"))
    b = np.ravel(V.check_real(second, "second"))
    if a.size != b.size or a.size == 0:
        raise ValueError("first and second must hold the same, nonzero number of samples")
    k1 = int(np.count_nonzero(precision_event(a, sensitivity, bits)))
    k2 = int(np.count_nonzero(precision_event(b, sensitivity, bits)))
    return epsilon_from_counts(k1, k2, a.size, delta=delta, alpha=alpha), (k1, k2)
