"""Binary sums: randomized response, additive binomial noise and sample-and-threshold.

Each of ``n`` users holds a bit ``x_i`` in ``{0, 1}`` and the analyst wants the
count ``k = sum_i x_i`` (the chapter :ref:`Binary sums <ch-binary>`). Three mechanisms are implemented, each with
its privacy condition, its estimator of ``k`` and the closed-form bias and
variance of that estimator:

* :func:`randomized_response` -- every user reports their bit, flipped with
  probability ``1 / (1 + e^epsilon)`` (Warner 1965; the fair-coin scheme, a
  truthful answer with probability 3/4, is ``epsilon = ln 3``). Pure ``epsilon``-DP, unbiased
  estimator, variance ``n e^eps / (e^eps - 1)^2``.
* :func:`binomial_noise_mechanism` -- the count plus ``Binomial(n, p)`` noise
  with ``p = 50 ln(2/delta) / (epsilon^2 n)``, valid for
  ``n >= 100 ln(2/delta) / epsilon^2`` and ``epsilon <= 1`` (Ghazi et al. 2021;
  Balcer and Cheu 2020). Unbiased estimator ``output - n p``.
* :func:`sample_and_threshold` -- each user is sampled with probability
  ``p = epsilon / tau``, ``tau = 3 + ln(1/delta)`` (natural logarithm), and the
  sampled count is released only when it reaches ``tau`` (Bharadwaj and Cormode
  2022). Estimator ``released / p``, biased by the threshold; its exact bias and
  variance are finite sums over the binomial distribution.

These are mechanisms for bits that never reach one curator: randomized
response is local (each user randomizes their own bit), binomial noise and
sample-and-threshold suit distributed or shuffle settings. When the bits are
held by one curator, a central count is far more accurate: the count changes
by at most 1 between neighbours, so
``dpsum.laplace_mechanism([bits.sum()], epsilon=eps, sensitivity=1,
secure=True)`` releases it with exact discrete Laplace noise of standard
deviation about ``sqrt(2) / eps`` and exact intervals, where binomial noise at
the same epsilon has a standard deviation of about ``sqrt(50 ln(2/delta)) /
eps`` (at epsilon = 1 and delta = 1e-6, some 17 times larger).

Privacy refers to the replace-one relation of the book (``n`` is public): two
datasets differ in one user's bit, so the true count moves by at most one.
Sample-and-threshold is also private under add-remove (an added user with a 0
bit changes nothing).

The package also computes the *exact* privacy profile of the two
approximate-DP mechanisms (:func:`binomial_privacy_delta`,
:func:`sample_threshold_privacy_delta`), which the book uses to show how much
slack the published conditions leave.

.. note::
   The per-user coins of the three mechanisms are independent, so every released
   count has a binomial law that depends on the data only through ``k``; the
   mechanisms draw that count in one call, which is exact in distribution and
   fast enough for the book's simulations. :func:`randomized_response_reports`
   returns the per-user reports of the local randomizer when those are wanted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpsum import _validation as V
from dpsum._enums import _StrEnum
from dpsum._units import unit_bits
from dpsum._lazy import stats
from dpsum._validation import RandomLike
from dpsum.privacy.neighbouring import Neighbouring
from dpsum.session import ONE_OFF, ApproximateEvent, PureEvent, as_session
from dpsum.session import charge as charge_session

__all__ = [
    "BinaryRelease",
    "BinaryMechanism",
    "randomized_response",
    "randomized_response_reports",
    "randomized_response_epsilon",
    "randomized_response_estimate",
    "randomized_response_variance",
    "binomial_noise_mechanism",
    "binomial_min_users",
    "binomial_estimate",
    "binomial_variance",
    "sample_and_threshold",
    "sample_threshold_estimate",
    "sample_threshold_bias",
    "sample_threshold_variance",
    "binary_mse",
]

#: Largest epsilon the published conditions of the binomial mechanism and of
#: sample-and-threshold allow (both papers state ``epsilon <= 1``); the
#: mechanisms refuse larger values. The book's proofs reach
#: further (:prf:ref:`binary-prop-binomial-range`, :prf:ref:`binary-prop-st-range`): the binomial argument holds for every ``epsilon <= sqrt(5)``
#: (:data:`BINOMIAL_PROOF_EPSILON`; it needs ``epsilon / (2 sqrt 5) + 1/mu <=
#: tanh(epsilon / 2)``, not the stronger ``epsilon / sqrt 5 <= tanh(epsilon / 2)``,
#: which fails beyond 1.204), and the sample-and-threshold argument holds
#: exactly for ``epsilon <= 3/(e-1) + W0(-3/(e-1) exp(-3/(e-1))) = 1.24138...``
#: (:data:`SAMPLE_THRESHOLD_PROOF_EPSILON`, where ``(1 - e^-eps)/eps`` falls to
#: ``(e - 1)/3``).
MAX_EPSILON = 1.0

#: Largest epsilon covered by the book's proof of the binomial mechanism:
#: ``sqrt(5)``, where its Chernoff step (``alpha = epsilon / sqrt 5 <= 1``) ends.
BINOMIAL_PROOF_EPSILON = math.sqrt(5.0)

#: Largest epsilon covered by the book's proof of sample-and-threshold: the
#: root of ``(1 - e^-eps) / eps = (e - 1) / 3``, in closed form
#: ``3/(e-1) + W0(-3/(e-1) exp(-3/(e-1)))`` with the Lambert W function.
SAMPLE_THRESHOLD_PROOF_EPSILON = float(
    3.0 / math.expm1(1.0)
    + special.lambertw(-3.0 / math.expm1(1.0) * math.exp(-3.0 / math.expm1(1.0))).real)

#: Keep probability of the fair-coin randomized response: truthful with probability 1/2, otherwise a second fair coin, so the
#: true answer is reported with probability 3/4 (``epsilon = ln 3``).
WARNER_KEEP_PROBABILITY = 0.75


class BinaryMechanism(_StrEnum):
    """Which binary-sum mechanism produced a :class:`BinaryRelease` (a ``str``
    enum: ``release.mechanism == "binomial"`` still holds).

    Examples
    --------
    >>> BinaryMechanism("binomial") is BinaryMechanism.BINOMIAL
    True
    """

    RANDOMIZED_RESPONSE = "randomized response"
    BINOMIAL = "binomial"
    SAMPLE_AND_THRESHOLD = "sample and threshold"


# ---------------------------------------------------------------------------
# validation helpers


def _check_int(value: Any, name: str, *, minimum: int = 0) -> Any:
    """An integer or an array of integers ``>= minimum`` (the package's integer rule)."""
    return V.check_integer(value, name, minimum, array=True)


def _check_epsilon_covered(epsilon: float, mechanism: str) -> None:
    if epsilon > MAX_EPSILON:
        raise ValueError(
            f"epsilon must be <= {MAX_EPSILON:g} for the {mechanism}: its privacy proof "
            f"covers epsilon in (0, 1] only, got {V.describe(epsilon)}"
        )


# ---------------------------------------------------------------------------
# the release record


@dataclass(frozen=True)
class BinaryRelease(V.Record):
    """What a binary-sum mechanism releases, with the public parameters it used.

    Every field is the private output, the estimate computed from it, or a
    function of public inputs (``n``, ``epsilon``, ``delta``) only.

    Attributes
    ----------
    estimate : float
        The estimate of the count ``k`` computed from ``output`` (unbiased for
        randomized response and binomial noise; biased towards 0 by the
        threshold for sample-and-threshold).
    output : int
        The raw private output: the number of 1-reports (randomized response),
        the noisy count ``k + Binomial(n, p)`` (binomial noise), or the sampled
        count if it reached the threshold and 0 otherwise (sample-and-threshold).
    n : int or None
        The number of users: public under replace-one, None under add-remove
        (where it is private and not recorded).
    epsilon, delta : float
        The privacy guarantee (``delta = 0`` for randomized response).
    mechanism : BinaryMechanism
        ``"randomized response"``, ``"binomial"`` or ``"sample and threshold"``
        (a ``str`` enum).
    probability : float
        The mechanism's coin: the keep probability ``e^eps / (1 + e^eps)`` of
        randomized response, the noise probability ``p`` of the binomial
        mechanism, or the sampling probability ``p`` of sample-and-threshold.
    threshold : float or None
        The threshold ``tau`` of sample-and-threshold (the count is released
        when it is ``>= tau``, i.e. ``>= ceil(tau)``), None otherwise.
    neighbouring : dpsum.privacy.Neighbouring
        The neighbouring relation of the guarantee: replace-one, or add-remove
        for :func:`sample_and_threshold` asked for it (then ``n`` is None).
    accounting : str
        The session ledger entry that accounts the release, or ``"one-off"``.

    Examples
    --------
    >>> r = randomized_response([1, 0, 1, 1], epsilon=1.0, rng=0)
    >>> r.mechanism, r.n, r.delta
    (<BinaryMechanism.RANDOMIZED_RESPONSE: 'randomized response'>, 4, 0.0)
    """

    estimate: float
    output: int
    n: int | None
    epsilon: float
    delta: float
    mechanism: BinaryMechanism
    probability: float
    threshold: float | None
    neighbouring: Neighbouring = Neighbouring.REPLACE
    accounting: str = ONE_OFF

    def __post_init__(self) -> None:
        object.__setattr__(self, "mechanism", BinaryMechanism.parse(self.mechanism, "mechanism"))
        object.__setattr__(self, "estimate", V.record_scalar(self.estimate, "estimate"))
        object.__setattr__(self, "output", V.record_scalar(self.output, "output", low=0,
                                                           integer=True))
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring))
        # n is public under replace-one only: recorded there, never under add-remove
        addrm = self.neighbouring is Neighbouring.ADD_REMOVE
        if addrm and self.n is not None:
            raise ValueError("n must be None under add-remove neighbouring (the number of "
                             "users is private there)")
        if addrm and self.mechanism is not BinaryMechanism.SAMPLE_AND_THRESHOLD:
            raise ValueError("neighbouring must be replace-one for this mechanism: its "
                             "estimate needs the public number of users n")
        object.__setattr__(self, "n", V.record_scalar(self.n, "n", low=1, integer=True,
                                                      optional=addrm))
        object.__setattr__(self, "epsilon", V.check_epsilon(self.epsilon, scalar=True))
        object.__setattr__(self, "delta", V.check_delta(self.delta, allow_zero=True,
                                                        scalar=True))
        object.__setattr__(self, "probability", V.record_scalar(self.probability, "probability",
                                                                low=0.0, high=1.0))
        object.__setattr__(self, "threshold", V.record_scalar(self.threshold, "threshold",
                                                              low=0.0, optional=True))
        if not isinstance(self.accounting, str):
            raise TypeError(f"accounting must be a str, got {V.describe(self.accounting)}")

    @property
    def released(self) -> bool:
        """False only when sample-and-threshold suppressed the count.

        Examples
        --------
        >>> sample_and_threshold([1] * 3, epsilon=1.0, delta=1e-3, rng=0).released
        False
        """
        if self.mechanism is not BinaryMechanism.SAMPLE_AND_THRESHOLD:
            return True
        return self.output > 0

    def bias(self, k: ArrayLike) -> float | np.ndarray:
        """Bias ``E[estimate] - k`` of the estimator when the true count is ``k``.

        Examples
        --------
        >>> r = sample_and_threshold([1] * 100 + [0] * 900, epsilon=1.0, delta=1e-3, rng=0)
        >>> round(float(r.bias(100)), 6) < 0, r.bias(3)  # below the threshold: always suppressed
        (True, -3.0)
        """
        return _bias(self.mechanism, self.n, k, self.probability, self.threshold)

    def variance(self, k: ArrayLike) -> float | np.ndarray:
        """Variance of the estimator when the true count is ``k`` (closed form).

        Examples
        --------
        >>> r = binomial_noise_mechanism([0, 1] * 1000, epsilon=1.0, delta=1e-3, rng=0)
        >>> round(r.variance(5), 6) == round(2000 * r.probability * (1 - r.probability), 6)
        True
        """
        return _variance(self.mechanism, self.n, k, self.probability, self.threshold)

    def mean_squared_error(self, k: ArrayLike) -> float | np.ndarray:
        """``bias(k)^2 + variance(k)``: the expected squared error for true count ``k``.

        Examples
        --------
        >>> r = randomized_response([0, 1] * 50, epsilon=1.0, rng=0)
        >>> r.mean_squared_error(50) == r.variance(50)  # unbiased
        True
        """
        b = self.bias(k)
        return b * b + self.variance(k)


def _check_k(k: Any, n: Any) -> Any:
    kk = _check_int(k, "k")
    if n is not None and np.any(np.asarray(kk) > n):
        raise ValueError(f"k must be at most n = {n}, got {V.describe(k)}")
    return kk


def _unbiased(k: Any, p: float, threshold: float | None) -> Any:
    """Zero bias (randomized response and binomial noise)."""
    return V.scalar_or_array(np.zeros(np.shape(k)), k)


def _rr_variance(n: int, k: Any, q: float) -> Any:
    """Randomized response with keep probability q: each report is Bernoulli
    with variance q (1 - q), and the estimator divides by 2 q - 1."""
    return V.scalar_or_array(np.full(np.shape(k), n * q * (1.0 - q) / (2.0 * q - 1.0) ** 2), k)


def _binomial_variance(n: int, k: Any, p: float) -> Any:
    return V.scalar_or_array(np.full(np.shape(k), n * p * (1.0 - p)), k)


# bias(k, p, threshold) and variance(n, k, p, threshold) of each estimator
_BIAS = {
    BinaryMechanism.RANDOMIZED_RESPONSE: _unbiased,
    BinaryMechanism.BINOMIAL: _unbiased,
    BinaryMechanism.SAMPLE_AND_THRESHOLD: lambda k, p, t: _st_bias(k, p, t),
}
_VARIANCE = {
    BinaryMechanism.RANDOMIZED_RESPONSE: lambda n, k, p, t: _rr_variance(n, k, p),
    BinaryMechanism.BINOMIAL: lambda n, k, p, t: _binomial_variance(n, k, p),
    BinaryMechanism.SAMPLE_AND_THRESHOLD: lambda n, k, p, t: _st_variance(k, p, t),
}


def _bias(mechanism: BinaryMechanism, n: int | None, k: Any, p: float,
          threshold: float | None) -> Any:
    return _BIAS[mechanism](_check_k(k, n), p, threshold)


def _variance(mechanism: BinaryMechanism, n: int | None, k: Any, p: float,
              threshold: float | None) -> Any:
    return _VARIANCE[mechanism](n, _check_k(k, n), p, threshold)


# ---------------------------------------------------------------------------
# randomized response


def randomized_response_keep_probability(epsilon: ArrayLike) -> float | np.ndarray:
    """Probability ``e^eps / (1 + e^eps)`` that epsilon-randomized response
    reports the true bit (:ref:`definitions-randomized-response`).

    The likelihood ratio of a report under the two values of a user's bit is
    ``q / (1 - q) = e^eps``, so the reports are epsilon-DP (local model).
    Vectorised over ``epsilon``.

    Examples
    --------
    >>> randomized_response_keep_probability(np.log(3))
    0.75
    """
    eps = V.check_epsilon(epsilon)
    q = special.expit(eps)
    return V.scalar_or_array(q)


def randomized_response_epsilon(keep_probability: ArrayLike) -> float | np.ndarray:
    """The epsilon of randomized response that keeps the bit with probability
    ``keep_probability`` in (1/2, 1): ``ln(q / (1 - q))``.

    Warner's fair-coin scheme keeps the answer with probability 3/4
    (:data:`WARNER_KEEP_PROBABILITY`), hence ``epsilon = ln 3``.

    Examples
    --------
    >>> bool(abs(randomized_response_epsilon(WARNER_KEEP_PROBABILITY) - np.log(3)) < 1e-15)
    True
    """
    q = V.check_probability(keep_probability, "keep_probability")
    if not np.all(np.asarray(q) > 0.5):
        raise ValueError(
            f"keep_probability must exceed 1/2 (otherwise the reports carry no "
            f"information or invert it), got {V.describe(keep_probability)}"
        )
    eps = special.logit(q)
    return V.scalar_or_array(eps)


def randomized_response_reports(bits: ArrayLike, *, epsilon: float,
                                rng: RandomLike = None, session: Any = None) -> np.ndarray:
    """The local randomizer: each user's report, their bit flipped with
    probability ``1 / (1 + e^eps)``.

    Returns a boolean array of the same length as ``bits``; the input is not
    modified. Each report is epsilon-DP with respect to its user's bit, so
    the reports together are epsilon-DP (replace-one): with a ``session`` it
    is charged as a pure ``epsilon`` event before the bits are read.

    Examples
    --------
    >>> randomized_response_reports([1, 0, 1], epsilon=50.0, rng=0).tolist()  # epsilon this large keeps every bit
    [True, False, True]
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    gen = V.check_rng(rng)
    charge_session(as_session(session), PureEvent(eps), mechanism="randomized_response_reports",
                   parameters={"epsilon": eps}, neighbouring=Neighbouring.REPLACE)
    x = V.check_bits(bits)
    flip = gen.random(x.shape[0]) < _flip_threshold(eps)   # rounded up: see randomized_response
    return x ^ flip


def randomized_response_estimate(output: ArrayLike, n: int, *, epsilon: float) -> float | np.ndarray:
    """Unbiased estimator of the count from the number of 1-reports.

    With keep probability ``q``, ``E[output] = q k + (1 - q)(n - k)``, so
    ``k_hat = (output - (1 - q) n) / (2 q - 1)``. For ``epsilon = ln 3``
    (``q = 3/4``, the fair-coin scheme) this is ``2 n_obs - n / 2``.

    Examples
    --------
    >>> round(randomized_response_estimate(55, 100, epsilon=np.log(3)), 9)  # 2 n_obs - n / 2
    60.0
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    nn = _check_int(n, "n", minimum=1)
    out = _check_int(output, "output")             # a released count of 1-reports
    if np.ndim(nn):
        raise ValueError("n must be a scalar here")
    _check_estimable(eps, nn)
    if np.any(out < 0) or np.any(out > nn):
        raise ValueError(f"output must lie in [0, n], got {V.describe(output)}")
    # 1 - q = expit(-eps) and 2 q - 1 = tanh(eps / 2)
    est = (out - special.expit(-eps) * nn) / math.tanh(eps / 2.0)
    return V.scalar_or_array(est)


def randomized_response_variance(n: ArrayLike, epsilon: ArrayLike) -> float | np.ndarray:
    """Variance of the randomized-response estimator of the count:
    ``n e^eps / (e^eps - 1)^2 = n / (4 sinh^2(eps / 2))``, whatever ``k`` is.

    Vectorised over ``n`` and ``epsilon``.

    Examples
    --------
    >>> round(randomized_response_variance(100, np.log(3)), 9)  # n e^eps / (e^eps - 1)^2
    75.0
    """
    nn = _check_int(n, "n", minimum=1)
    eps = V.check_epsilon(epsilon)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        # (sqrt(n) / (2 sinh(eps/2)))^2: no subnormal intermediate for small eps
        half = np.asarray(eps) / 2.0
        value = (np.sqrt(np.asarray(nn, dtype=float)) / (2.0 * np.sinh(half))) ** 2
    if not np.all(np.isfinite(value)) or np.any(half < np.finfo(np.float64).tiny):
        raise ValueError("epsilon is too small: the variance n / (4 sinh^2(epsilon / 2)) "
                         "is not a finite float")
    return V.scalar_or_array(value)


#: Flip probabilities are rounded up by this relative amount before sampling
#: (more than the few units in the last place of ``expit``'s error).
_FLIP_ROUND_UP = 2.0 ** -48
_CHUNK = 1 << 20


def _flip_threshold(eps: float) -> float:
    """The threshold ``f >= 1 / (1 + e^eps)`` compared with ``U`` in ``U < f``
    (at most 1/2, at least ``2^-53`` so that a flip stays possible)."""
    f = float(special.expit(-eps)) * (1.0 + _FLIP_ROUND_UP)
    return min(0.5, max(f, 2.0 ** -53))


def _count_below(gen: np.random.Generator, m: int, f: float) -> int:
    """The number of ``m`` uniforms on the ``2^-53`` grid that are ``< f``:
    Binomial(m, ceil(f 2^53) 2^-53) exactly."""
    count = 0
    for start in range(0, m, _CHUNK):
        size = min(_CHUNK, m - start)
        count += int(np.count_nonzero(gen.random(size) < f))
    return count


def _exact_flip_probability(epsilon: float) -> float:
    """The exact flip probability ``p' = ceil(f 2^53) 2^-53`` that
    :func:`randomized_response` uses for ``epsilon`` (see its Notes); the
    effective epsilon ``ln((1 - p') / p')`` is at most ``epsilon``.

    Examples
    --------
    >>> _exact_flip_probability(40.0) == 2.0 ** -53
    True
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    f = _flip_threshold(eps)
    return math.ldexp(math.ceil(math.ldexp(f, 53)), -53)


def _check_estimable(eps: float, n: int) -> None:
    """Refuse an epsilon for which the unbiased estimate of the count,
    ``(output - n / (1 + e^eps)) / tanh(eps / 2)``, is not a finite float."""
    denom = math.tanh(eps / 2.0)
    if eps < 4.0 * np.finfo(np.float64).tiny or not n / denom < math.inf:
        raise ValueError("epsilon is too small: the estimate of the count, of magnitude "
                         "up to n / tanh(epsilon / 2), is not a finite float")


def randomized_response(bits: ArrayLike, *, epsilon: float,
                        rng: RandomLike = None, session: Any = None) -> BinaryRelease:
    """Epsilon-randomized response (Warner 1965), aggregated.

    Every user reports their bit with probability ``q = e^eps / (1 + e^eps)``
    and its complement otherwise; the release is the number of 1-reports and
    the unbiased estimate :func:`randomized_response_estimate`. Pure
    ``epsilon``-DP for any ``epsilon > 0`` (the reports themselves are, so their
    count is by post-processing). ``epsilon = ln 3`` is the fair-coin scheme.

    Parameters
    ----------
    bits : array_like
        1-d array of 0/1 integers or booleans, one per user.
    epsilon : float
        Privacy parameter, > 0.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    session : dpsum.session.Session, optional
        The analysis's budget: checked (refused if the release does not fit)
        before the bits are read, charged before the noise is drawn. Without
        one the release is a one-off (its record's ``accounting`` says so).

    Returns
    -------
    BinaryRelease
        ``output`` is the number of 1-reports, ``probability`` the keep
        probability, ``delta`` is 0.

    Notes
    -----
    **Sampled exactly, never less private than asked.** Each report is drawn
    from its own uniform ``U`` on the grid ``{j 2^-53}`` (NumPy's
    ``Generator.random``), flipped when ``U < f`` with ``f`` the flip
    probability ``1 / (1 + e^eps)`` rounded *up* (a relative ``2^-48``
    above the computed value, which covers its rounding error). The exact
    flip probability is then ``p' = ceil(f 2^53) 2^-53 >= 1 / (1 + e^eps)``
    and ``p' <= 1/2``, so the effective epsilon ``ln((1 - p') / p')`` is at
    most ``epsilon``: equal to it up to a relative ``1e-14`` for moderate
    ``epsilon``, and at most ``ln(2^53 - 1) = 36.7`` however large
    ``epsilon`` is (a 1 is reported as 0 with probability at least
    ``2^-53``). The count is not drawn as two binomials: NumPy's binomial
    sampler rounds its probability (``1 - p`` in floating point), which made
    the effective epsilon of ``epsilon = 36`` about 36.04 and of
    ``epsilon >= 37`` infinite. The cost is one uniform per user.

    Raises
    ------
    ValueError
        If ``epsilon`` is so small that the estimate ``n / tanh(epsilon / 2)``
        is not a finite float (``epsilon`` below about ``2 n / 1.8e308``).

    Examples
    --------
    >>> r = randomized_response([1, 0] * 500, epsilon=2.0, rng=0)
    >>> r.output <= 1000, round(r.probability, 6)
    (True, 0.880797)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    sess = as_session(session)
    event = PureEvent(eps)
    if sess is not None:
        sess.check(event, neighbouring=Neighbouring.REPLACE)
    x = V.check_bits(bits)
    gen = V.check_rng(rng)
    n = int(x.shape[0])
    _check_estimable(eps, n)
    k = int(np.count_nonzero(x))
    q = float(special.expit(eps))
    flip = _flip_threshold(eps)
    params = {"epsilon": eps, "n": n}
    tag = charge_session(sess, event, mechanism="randomized_response", parameters=params,
                         neighbouring=Neighbouring.REPLACE)
    # ones kept plus zeros flipped, each report from its own uniform on the
    # 2^-53 grid (see the docstring): the law of the count of the reports
    output = (k - _count_below(gen, k, flip)) + _count_below(gen, n - k, flip)
    return BinaryRelease(
        estimate=float(randomized_response_estimate(output, n, epsilon=eps)),
        output=output,
        n=n,
        epsilon=eps,
        delta=0.0,
        mechanism=BinaryMechanism.RANDOMIZED_RESPONSE,
        probability=q,
        threshold=None,
        accounting=tag,
    )


# ---------------------------------------------------------------------------
# additive binomial noise


def binomial_min_users(epsilon: ArrayLike, delta: ArrayLike) -> int | np.ndarray:
    """Smallest number of users the binomial mechanism accepts:
    ``ceil(100 ln(2/delta) / epsilon^2)``, where ``p`` reaches 1/2.

    Vectorised over ``epsilon`` and ``delta`` (returns an int for scalars).
    The condition is the one under which the binomial mechanism is private
    (:prf:ref:`binary-thm-binomial`); it does not depend on
    ``epsilon <= 1``, which the mechanism checks separately.

    Examples
    --------
    >>> binomial_min_users(1.0, 1e-6)
    1451
    """
    eps = V.check_epsilon(epsilon)
    dlt = V.check_delta(delta)
    with np.errstate(over="ignore", divide="ignore"):
        value = np.ceil(100.0 * np.log(2.0 / np.asarray(dlt)) / np.asarray(eps) ** 2)
    if not np.all(value < 2.0**63):
        raise ValueError("epsilon is too small: the number of users the binomial mechanism "
                         "needs, 100 ln(2/delta) / epsilon^2, exceeds any integer count")
    if value.ndim == 0:
        return int(value)
    return value.astype(np.int64)


def binomial_noise_probability(n: int, epsilon: float, delta: float) -> float:
    """Noise probability ``p = 50 ln(2/delta) / (epsilon^2 n)`` of the binomial
    mechanism; raises if ``n`` is below :func:`binomial_min_users` (``p > 1/2``).

    Examples
    --------
    >>> round(binomial_noise_probability(10_000, 1.0, 1e-6), 6)
    0.072543
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    nn = _check_int(n, "n", minimum=1)
    if np.ndim(nn):
        raise ValueError("n must be a scalar here")
    n_min = binomial_min_users(eps, dlt)
    if nn < n_min:
        raise ValueError(
            f"n must be at least 100 ln(2/delta) / epsilon^2 = {n_min} for the binomial "
            f"mechanism (so that p <= 1/2), got n = {nn}"
        )
    return 50.0 * math.log(2.0 / dlt) / (eps * eps * nn)


def binomial_conditions_hold(n: int, epsilon: float, delta: float,
                             p: float | None = None) -> bool:
    """Whether the binomial mechanism with these parameters is covered by its
    privacy proof: ``epsilon <= 1``, ``p <= 1/2`` and
    ``p >= 50 ln(2/delta) / (epsilon^2 n)`` (``p`` defaults to that minimum, so
    the default case is ``n >= 100 ln(2/delta) / epsilon^2``).

    Examples
    --------
    >>> binomial_conditions_hold(10_000, 1.0, 1e-6), binomial_conditions_hold(100, 1.0, 1e-6)
    (True, False)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    nn = _check_int(n, "n", minimum=1)
    p_min = 50.0 * math.log(2.0 / dlt) / eps / eps / nn     # inf for a subnormal epsilon
    pp = p_min if p is None else V.check_probability(p, "p")
    return bool(eps <= MAX_EPSILON and pp <= 0.5 and pp >= p_min)


def binomial_estimate(output: ArrayLike, n: int, p: float) -> float | np.ndarray:
    """Unbiased estimator ``output - n p`` of the count under binomial noise.

    Examples
    --------
    >>> binomial_estimate(130, 1000, 0.1)
    30.0
    """
    nn = _check_int(n, "n", minimum=1)
    pp = V.check_probability(p, "p")
    out = _check_int(output, "output")             # a released count: an integer >= 0
    est = out - nn * pp
    return V.scalar_or_array(est)


def binomial_variance(n: int, epsilon: float, delta: float, p: float | None = None) -> float:
    """Variance ``n p (1 - p)`` of the binomial estimator, whatever ``k`` is.

    With the default ``p = 50 ln(2/delta) / (epsilon^2 n)`` this is ``(50 ln(2/delta) / epsilon^2)(1 - p)``: the
    least noise is at the smallest admissible ``n`` (``p = 1/2``) and it grows
    towards ``50 ln(2/delta) / epsilon^2`` as ``n`` grows.

    Examples
    --------
    >>> round(binomial_variance(10_000, 1.0, 1e-6), 6)
    672.8076
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    nn = _check_int(n, "n", minimum=1)
    if np.ndim(nn):
        raise ValueError("n must be a scalar here")
    pp = binomial_noise_probability(nn, eps, dlt) if p is None else V.check_probability(p, "p")
    return nn * pp * (1.0 - pp)


def binomial_privacy_delta(n: int, p: float, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of adding ``Binomial(n, p)`` noise to a count.

    The tight privacy profile of ``k + Z``, ``Z ~ Binomial(n, p)``, for counts
    differing by one: the larger of the two hockey-stick divergences
    ``sum_z max(0, P(Z = z) - e^eps P(Z = z - 1))`` and
    ``sum_z max(0, P(Z = z - 1) - e^eps P(Z = z))``. The ratio
    ``P(Z = z) / P(Z = z - 1) = (n - z + 1) p / (z (1 - p))`` decreases in ``z``,
    so each sum runs over one tail and is a difference of two binomial tail
    probabilities. Valid for any ``p`` in (0, 1) (the proof's ``p <= 1/2`` is
    not needed here).

    Examples
    --------
    >>> delta = binomial_privacy_delta(10_000, binomial_noise_probability(10_000, 1.0, 1e-6), 1.0)
    >>> bool(delta <= 1e-6)  # the published calibration is private, with room to spare
    True
    """
    nn = _check_int(n, "n", minimum=1)
    pp = V.check_probability(p, "p")
    eps = V.check_epsilon(epsilon, scalar=True)
    if np.ndim(nn) or np.ndim(pp):
        raise ValueError("n and p must be scalars")
    # e^-eps rather than e^eps in the cut points (no overflow for a huge
    # epsilon), and e^eps P(...) as exp(eps + log P(...)) (inf only when the
    # term is beyond 1, where the difference is negative: delta 0 there)
    inv = math.exp(-eps)
    dist = stats.binom(nn, pp)

    def times_e(log_prob: float) -> float:
        with np.errstate(over="ignore"):
            return float(np.exp(eps + log_prob))

    # lower tail: z < (n + 1) p / (p + e^eps (1 - p)) has ratio > e^eps
    x_a = (nn + 1) * pp * inv / (pp * inv + (1.0 - pp))
    z_a = max(math.ceil(x_a) - 1, 0)       # z = 0 always: P(Z = -1) = 0
    delta_a = float(dist.cdf(z_a) - times_e(dist.logcdf(z_a - 1)))
    # upper tail: z > (n + 1) p e^eps / (1 - p + p e^eps) has ratio < e^-eps
    x_b = (nn + 1) * pp / ((1.0 - pp) * inv + pp)
    z_b = min(math.floor(x_b) + 1, nn + 1)   # z = n + 1 always: P(Z = n + 1) = 0
    delta_b = float(dist.sf(z_b - 2) - times_e(dist.logsf(z_b - 1)))
    return max(0.0, delta_a, delta_b)


def binomial_noise_mechanism(bits: ArrayLike, *, epsilon: float, delta: float,
                             p: float | None = None, rng: RandomLike = None,
                             session: Any = None, privacy_unit: Any = None,
                             max_rows: int | None = None,
                             per_unit: str | None = None) -> BinaryRelease:
    """Additive binomial noise: release ``k + Z``, ``Z ~ Binomial(n, p)``.

    In the shuffle model every user sends their bit and, with probability
    ``p``, one extra 1-message; the shuffler hides who sent what, so the
    analyst sees ``k + Binomial(n, p)`` (Ghazi et al. 2021; Balcer and Cheu
    2020). The calibration ``p = 50 ln(2/delta) / (epsilon^2 n)`` gives
    (epsilon, delta)-DP when ``p <= 1/2`` (``n >= 100 ln(2/delta) / epsilon^2``,
    :func:`binomial_min_users`) and ``epsilon <= 1``
    (:prf:ref:`binary-thm-binomial`; the proof's Chernoff step needs
    ``epsilon / (2 sqrt 5) + 1/mu <= tanh(epsilon / 2)``, which holds up to
    ``epsilon = sqrt 5``, :prf:ref:`binary-prop-binomial-range`). The estimate ``output - n p`` is unbiased
    with variance ``n p (1 - p)``.

    Parameters
    ----------
    bits : array_like
        1-d array of 0/1 integers or booleans, one per user.
    epsilon : float
        In (0, 1].
    delta : float
        In (0, 1).
    p : float, optional
        A larger noise probability, at most 1/2 (more noise, still private).
        Defaults to the smallest one, ``50 ln(2/delta) / (epsilon^2 n)``.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    session : dpsum.session.Session, optional
        The analysis's budget: checked (refused if the release does not fit)
        before the bits are read, charged before the noise is drawn. Without
        one the release is a one-off (its record's ``accounting`` says so).
    privacy_unit : array_like, shape (len(bits),), optional
        Protect each **privacy unit** (a person with several bits, one per row) instead
        of each bit: one integer or string id per bit. Each unit keeps at most
        ``max_rows`` of its bits (chosen at random by keyed hash, the key drawn from
        ``rng``; the same choice on any order) and becomes **one bit** (``per_unit``);
        the mechanism then counts units, and its neighbouring relation is over units.
        ``n`` is the number of units.
    max_rows : int, optional
        Bits kept per unit (``>= 1``); required with ``privacy_unit``.
    per_unit : {"any", "mean"}, optional
        How a unit's kept bits become its one bit: ``"any"`` (the default) is 1 when one
        of them is 1, so the count is the number of units with the property; ``"mean"``
        is 1 with probability the mean of its kept bits (a randomized rounding drawn
        from ``rng``), so the count is unbiased for the sum of the units' means. A
        unit's *sum* of bits is not offered: it moves the count by up to ``max_rows``,
        and this mechanism's proof allows one.

    Returns
    -------
    BinaryRelease

    Examples
    --------
    >>> bits = [0, 1] * 2000
    >>> r = binomial_noise_mechanism(bits, epsilon=1.0, delta=1e-3, rng=0)
    >>> r.mechanism, round(r.probability, 6)
    (<BinaryMechanism.BINOMIAL: 'binomial'>, 0.095011)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    _check_epsilon_covered(eps, "binomial mechanism")
    units = unit_bits(bits, privacy_unit, max_rows, per_unit)
    sess = as_session(session)
    event = ApproximateEvent(eps, dlt)
    if sess is not None:
        sess.check(event, neighbouring=Neighbouring.REPLACE)
    x = V.check_bits(bits)
    gen = V.check_rng(rng)
    x = units.collapse_bits(x, gen)
    n = int(x.shape[0])
    p_min = binomial_noise_probability(n, eps, dlt)
    if p is None:
        pp = p_min
    else:
        pp = V.check_probability(p, "p")
        if np.ndim(pp):
            raise ValueError("p must be a scalar")
        if pp > 0.5:
            raise ValueError(f"p must be at most 1/2 for the binomial mechanism, got {V.describe(p)}")
        if pp < p_min:
            raise ValueError(
                f"p must be at least 50 ln(2/delta) / (epsilon^2 n) = {p_min:.6g}, got {V.describe(p)}"
            )
    k = int(np.count_nonzero(x))
    params = {"epsilon": eps, "delta": dlt, "n": n, "p": pp}
    tag = charge_session(sess, event, mechanism="binomial_noise_mechanism", parameters=params,
                         neighbouring=Neighbouring.REPLACE)
    output = k + int(gen.binomial(n, pp))
    return BinaryRelease(
        estimate=float(binomial_estimate(output, n, pp)),
        output=output,
        n=n,
        epsilon=eps,
        delta=dlt,
        mechanism=BinaryMechanism.BINOMIAL,
        probability=pp,
        threshold=None,
        accounting=tag,
    )


# ---------------------------------------------------------------------------
# sample and threshold


def sample_threshold_tau(delta: ArrayLike) -> float | np.ndarray:
    """Threshold ``tau = 3 + ln(1/delta)`` of sample-and-threshold.

    The logarithm is natural: the bad event is bounded by a Chernoff bound
    ``exp(-tau h)``, and ``exp(-(tau - 3)) = delta`` needs ``tau - 3 = ln(1/delta)``
    (:prf:ref:`binary-thm-st`). Vectorised over ``delta``.

    Examples
    --------
    >>> round(sample_threshold_tau(1e-3), 6)  # 3 + ln 1000
    9.907755
    """
    dlt = V.check_delta(delta)
    return 3.0 - np.log(dlt) if np.ndim(dlt) else 3.0 - math.log(dlt)


def sample_threshold_probability(epsilon: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """Sampling probability ``p = epsilon / tau`` with ``tau = 3 + ln(1/delta)``.

    It does not depend on ``n``. Vectorised over ``epsilon`` and ``delta``.

    Examples
    --------
    >>> round(sample_threshold_probability(1.0, 1e-3), 6)
    0.100931
    """
    eps = V.check_epsilon(epsilon)
    return eps / sample_threshold_tau(delta)


def sample_threshold_conditions_hold(epsilon: float, delta: float, p: float | None = None,
                                     threshold: float | None = None) -> bool:
    """Whether sample-and-threshold with sampling probability ``p`` and threshold
    ``threshold`` is covered by the privacy proof of the book: ``epsilon <= 1``,
    ``threshold >= 3 + ln(1/delta)`` and ``p <= epsilon / threshold``.
    Defaults: ``threshold = 3 + ln(1/delta)`` and ``p = epsilon / threshold``.

    Examples
    --------
    >>> sample_threshold_conditions_hold(1.0, 1e-3), sample_threshold_conditions_hold(1.0, 1e-3, p=0.5)
    (True, False)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    tau_min = sample_threshold_tau(dlt)
    tau = tau_min if threshold is None else V.check_positive(threshold, "threshold")
    pp = eps / tau if p is None else V.check_probability(p, "p")
    return bool(eps <= MAX_EPSILON and tau >= tau_min and pp <= eps / tau)


def sample_threshold_estimate(output: ArrayLike, p: float) -> float | np.ndarray:
    """Estimator ``output / p`` of the count (``0`` when the count was suppressed).

    Examples
    --------
    >>> sample_threshold_estimate(30, 0.1)
    300.0
    """
    pp = V.check_probability(p, "p")
    out = _check_int(output, "output")             # a released count: an integer >= 0
    with np.errstate(over="ignore"):
        est = np.asarray(out) / pp
    V.representable(est, "p", "the estimate output / p", "p is too small for this output")
    return V.scalar_or_array(est, output, p)


def _st_parameters(epsilon: Any, delta: Any, p: Any, threshold: Any) -> Any:
    """The (p, tau) of sample-and-threshold, defaults filled in (not checked
    against the privacy conditions: the closed forms hold for any p and tau)."""
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    tau = sample_threshold_tau(dlt) if threshold is None else V.check_positive(threshold, "threshold")
    pp = _default_p(eps, tau) if p is None else V.check_probability(p, "p")
    return pp, tau


def _default_p(eps: float, tau: Any) -> float:
    """The default sampling probability ``epsilon / threshold``, refused (naming
    epsilon) when it underflows to 0."""
    pp = eps / tau
    if not pp > 0:
        raise ValueError(f"epsilon is too small for sample-and-threshold: the sampling "
                         f"probability epsilon / threshold underflows to 0, got "
                         f"{V.describe(eps)}")
    return pp


def _int_threshold(tau: float) -> int:
    """Smallest integer count that reaches ``tau``."""
    return int(math.ceil(tau))


def _st_release_probability(k: Any, p: Any, tau: Any) -> Any:
    t = _int_threshold(tau)
    return stats.binom.sf(t - 1, k, p)


def _st_bias(k: Any, p: Any, tau: Any) -> Any:
    """Exact bias of ``C 1{C >= t} / p`` with ``C ~ Binomial(k, p)``.

    ``E[C 1{C >= t}] = k p P(Binomial(k-1, p) >= t-1)``, so the bias is
    ``-k P(Binomial(k-1, p) <= t-2)``; it is ``-k`` when ``k < t``.
    """
    t = _int_threshold(tau)
    kk = np.asarray(k, dtype=np.int64)
    km1 = np.maximum(kk - 1, 0)
    b1 = stats.binom.cdf(t - 2, km1, p)
    out = np.where(kk < t, -kk.astype(float), -kk * b1) + 0.0  # no negative zero
    return V.scalar_or_array(out)


def _st_variance(k: Any, p: Any, tau: Any) -> Any:
    """Exact variance of ``C 1{C >= t} / p`` with ``C ~ Binomial(k, p)``.

    With ``A1 = P(Bin(k-1, p) >= t-1)`` and ``A2 = P(Bin(k-2, p) >= t-2)``:
    ``E[Y] = k A1`` and ``E[Y^2] = k (k-1) A2 + k A1 / p``, so
    ``Var = k^2 (A2 - A1^2) + k (A1 / p - A2)``. ``A2 - A1^2`` equals
    ``2 B1 - B2 - B1^2`` with ``B = 1 - A``; the form with the smaller tail is
    used so that nothing cancels. Zero when ``k < t`` (always suppressed).
    """
    t = _int_threshold(tau)
    kk = np.asarray(k, dtype=np.int64)
    kf = kk.astype(float)
    km1 = np.maximum(kk - 1, 0)
    km2 = np.maximum(kk - 2, 0)
    a1 = stats.binom.sf(t - 2, km1, p)
    b1 = stats.binom.cdf(t - 2, km1, p)
    a2 = stats.binom.sf(t - 3, km2, p)
    b2 = stats.binom.cdf(t - 3, km2, p)
    spread = np.where(b1 <= 0.5, 2.0 * b1 - b2 - b1 * b1, a2 - a1 * a1)
    var = kf * kf * spread + kf * (a1 / p - a2)
    var = np.where(kk < t, 0.0, np.maximum(var, 0.0))
    return V.scalar_or_array(var)


def sample_threshold_release_probability(k: ArrayLike, epsilon: float, delta: float, *,
                                         p: float | None = None,
                                         threshold: float | None = None) -> float | np.ndarray:
    """Probability ``P(Binomial(k, p) >= tau)`` that the count is released.

    Vectorised over ``k``. Defaults as in :func:`sample_and_threshold`.

    Examples
    --------
    >>> [round(float(v), 6) for v in sample_threshold_release_probability([5, 200], 1.0, 1e-3)]
    [0.0, 0.996871]
    """
    kk = _check_int(k, "k")
    pp, tau = _st_parameters(epsilon, delta, p, threshold)
    value = _st_release_probability(kk, pp, tau)
    return V.scalar_or_array(value)


def sample_threshold_bias(k: ArrayLike, epsilon: float, delta: float, *, p: float | None = None,
                          threshold: float | None = None) -> float | np.ndarray:
    """Exact bias ``E[k_hat] - k = -k P(Binomial(k-1, p) <= ceil(tau) - 2)`` of the
    sample-and-threshold estimator (``-k`` when ``k < ceil(tau)``).

    It equals ``-(1/p) sum_{c < tau} c P(Binomial(k, p) = c)``: the mass the
    threshold removes. Vectorised over ``k``.

    Examples
    --------
    >>> sample_threshold_bias(5, 1.0, 1e-3)  # always suppressed: the bias is -k
    -5.0
    """
    kk = _check_int(k, "k")
    pp, tau = _st_parameters(epsilon, delta, p, threshold)
    return _st_bias(kk, pp, tau)


def sample_threshold_variance(k: ArrayLike, epsilon: float, delta: float, *,
                              p: float | None = None,
                              threshold: float | None = None) -> float | np.ndarray:
    """Exact variance of the sample-and-threshold estimator for true count ``k``.

    ``Var = (1/p^2) sum_{c >= tau} c^2 b(c) - (E k_hat)^2`` with ``b`` the
    ``Binomial(k, p)`` pmf, evaluated through binomial tails (see the module
    source). Without the threshold it would be ``k (1 - p) / p``. Vectorised
    over ``k``.

    Examples
    --------
    >>> sample_threshold_variance(5, 1.0, 1e-3)
    0.0
    """
    kk = _check_int(k, "k")
    pp, tau = _st_parameters(epsilon, delta, p, threshold)
    return _st_variance(kk, pp, tau)


def sample_threshold_privacy_delta(p: float, threshold: float, epsilon: float, *,
                                   max_count: int = 2_000_000) -> float:
    """Exact ``delta(epsilon)`` of sample-and-threshold, maximised over the count.

    For true counts ``k`` and ``k + 1`` the outputs are the sampled count
    ``c >= t = ceil(threshold)`` or the suppressed value 0. In the direction
    (k, k+1) every likelihood ratio is at most ``1 / (1 - p)``, so this
    function requires ``ln(1 / (1 - p)) <= epsilon`` and that direction adds
    nothing. In the other direction the ratio
    ``(k + 1)(1 - p) / (k + 1 - c)`` exceeds ``e^eps`` exactly when
    ``c > (k + 1) g`` with ``g = 1 - (1 - p) e^-eps``, so
    ``delta_k = P(Bin(k+1, p) >= m) - e^eps P(Bin(k, p) >= m)`` with
    ``m = max(t, floor((k+1) g) + 1)``. The supremum over ``k`` is taken over
    ``k <= K`` with ``K`` chosen so that the Chernoff bound
    ``exp(-(K + 1) KL(g || p))`` on every later term is below ``1e-304``, or
    ``K = max_count``; the returned value is the larger of the maximum and that
    tail bound, hence an upper bound that is exact whenever the tail is
    negligible.

    Examples
    --------
    >>> p = sample_threshold_probability(1.0, 1e-3)
    >>> bool(sample_threshold_privacy_delta(p, sample_threshold_tau(1e-3), 1.0) <= 1e-3)
    True
    """
    pp = V.check_probability(p, "p")
    tau = V.check_positive(threshold, "threshold")
    eps = V.check_epsilon(epsilon, scalar=True)
    if np.ndim(pp) or np.ndim(tau):
        raise ValueError("p and threshold must be scalars")
    if -math.log1p(-pp) > eps:
        raise ValueError(
            f"p must satisfy ln(1/(1-p)) <= epsilon (the privacy loss of a suppressed or "
            f"smaller count), got p = {V.describe(p)} with epsilon = {V.describe(epsilon)}"
        )
    max_k = _check_int(max_count, "max_count", minimum=1)
    if eps > 700.0:
        raise ValueError(f"epsilon must be at most 700 here (e^epsilon weighs the terms of "
                         f"delta and overflows beyond it), got {V.describe(epsilon)}")
    t = _int_threshold(tau)
    g = -math.expm1(-eps) + pp * math.exp(-eps)
    kl = g * math.log(g / pp) + (1.0 - g) * math.log((1.0 - g) / (1.0 - pp))
    big_k = int(min(max_k, math.ceil(700.0 / kl)))
    k = np.arange(big_k + 1)
    m = np.maximum(t, np.floor((k + 1) * g) + 1)
    terms = stats.binom.sf(m - 1, k + 1, pp) - math.exp(eps) * stats.binom.sf(m - 1, k, pp)
    tail = math.exp(-(big_k + 1) * kl)
    return float(max(0.0, float(np.max(terms)), tail))


def sample_and_threshold(bits: ArrayLike, *, epsilon: float, delta: float,
                         p: float | None = None, threshold: float | None = None,
                         neighbouring: Neighbouring | str = "replace",
                         rng: RandomLike = None, session: Any = None,
                         privacy_unit: Any = None, max_rows: int | None = None,
                         per_unit: str | None = None) -> BinaryRelease:
    """Sample-and-threshold (Bharadwaj and Cormode 2022) for a binary sum.

    Each user is sampled independently with probability ``p`` (default
    ``epsilon / tau``); the count ``C`` of sampled ones is released only if it
    reaches ``tau`` (default ``3 + ln(1/delta)``, natural logarithm), otherwise
    0 is released. Since ``C >= tau >= 3`` whenever it is released, 0 means
    "suppressed" and carries no more information than a suppression flag. The
    estimate ``C / p`` is biased towards 0 by the threshold; the exact bias and
    variance are :func:`sample_threshold_bias` and
    :func:`sample_threshold_variance`.

    Privacy (:prf:ref:`binary-thm-st`): (epsilon, delta)-DP for ``epsilon <= 1``,
    ``threshold >= 3 + ln(1/delta)`` and ``p <= epsilon / threshold``, under
    replace-one and add-remove alike.

    Parameters
    ----------
    bits : array_like
        1-d array of 0/1 integers or booleans, one per user.
    epsilon : float
        In (0, 1].
    delta : float
        In (0, 1).
    p : float, optional
        Sampling probability, at most ``epsilon / threshold``.
    threshold : float, optional
        Release threshold, at least ``3 + ln(1/delta)``.
    neighbouring : {"replace", "add-remove"}
        The relation the record states. The guarantee holds under both (only
        the ones are sampled, and a user's bit moves the count by at most
        one); under add-remove the number of users is private, so the record
        leaves ``n`` out (None) and no bits at all is data like any other.
    rng : numpy.random.Generator, int or None
        Source of randomness.
    session, privacy_unit, max_rows, per_unit
        As for :func:`binomial_noise_mechanism`: the session is checked
        before the bits are read; with ``privacy_unit`` each unit keeps at
        most ``max_rows`` bits and becomes one bit (``"any"`` or ``"mean"``),
        and the relation is over units.

    Returns
    -------
    BinaryRelease

    Examples
    --------
    >>> r = sample_and_threshold([1] * 200 + [0] * 800, epsilon=1.0, delta=1e-3, rng=0)
    >>> r.released, round(r.threshold, 6)
    (True, 9.907755)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    _check_epsilon_covered(eps, "sample-and-threshold mechanism")
    units = unit_bits(bits, privacy_unit, max_rows, per_unit)
    tau_min = sample_threshold_tau(dlt)
    if threshold is None:
        tau = tau_min
    else:
        tau = V.check_positive(threshold, "threshold")
        if np.ndim(tau):
            raise ValueError("threshold must be a scalar")
        if tau < tau_min:
            raise ValueError(
                f"threshold must be at least 3 + ln(1/delta) = {tau_min:.6g}, got {V.describe(threshold)}"
            )
    if p is None:
        pp = _default_p(eps, tau)
    else:
        pp = V.check_probability(p, "p")
        if np.ndim(pp):
            raise ValueError("p must be a scalar")
        if pp > eps / tau:
            raise ValueError(
                f"p must be at most epsilon / threshold = {eps / tau:.6g} (threshold "
                f"{'given' if threshold is not None else 'from delta: 3 + ln(1/delta)'}), "
                f"got {V.describe(p)}"
            )
    sess = as_session(session)
    event = ApproximateEvent(eps, dlt)
    if sess is not None:
        sess.check(event, neighbouring=None)
    relation = Neighbouring.parse(neighbouring)
    addrm = relation is Neighbouring.ADD_REMOVE
    x = V.check_bits(bits, empty=addrm)
    gen = V.check_rng(rng)
    x = units.collapse_bits(x, gen)
    k = int(np.count_nonzero(x))
    params = {"epsilon": eps, "delta": dlt, "p": pp, "threshold": float(tau)}
    tag = charge_session(sess, event, mechanism="sample_and_threshold", parameters=params,
                         neighbouring=None)
    sampled = int(gen.binomial(k, pp))
    output = sampled if sampled >= tau else 0
    return BinaryRelease(
        estimate=float(sample_threshold_estimate(output, pp)),
        output=output,
        n=None if addrm else int(x.shape[0]),
        epsilon=eps,
        delta=dlt,
        mechanism=BinaryMechanism.SAMPLE_AND_THRESHOLD,
        probability=pp,
        threshold=float(tau),
        accounting=tag,
        neighbouring=relation,
    )


# ---------------------------------------------------------------------------
# comparison


def binary_mse(mechanism: BinaryMechanism | str, *, n: ArrayLike, k: ArrayLike,
               epsilon: float, delta: float) -> float | np.ndarray:
    """Closed-form expected squared error of a mechanism's estimate of ``k``.

    ``"randomized response"``: ``n e^eps / (e^eps - 1)^2``;
    ``"binomial"``: ``n p (1 - p)`` with the default ``p``, and ``inf`` where
    ``n < 100 ln(2/delta) / epsilon^2`` (the mechanism is not available);
    ``"sample and threshold"``: ``bias^2 + variance`` (depends on ``k`` only).
    Vectorised over ``n`` and ``k`` (broadcast); ``epsilon`` and ``delta`` are
    scalars, and the two approximate-DP mechanisms need ``epsilon <= 1``.

    Examples
    --------
    >>> round(binary_mse("randomized response", n=100, k=30, epsilon=1.0, delta=1e-6), 6)
    92.067359
    >>> binary_mse("binomial", n=10, k=3, epsilon=1.0, delta=1e-6)  # too few users
    inf
    """
    which = BinaryMechanism.parse(mechanism, "mechanism")
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    nn = np.asarray(_check_int(n, "n", minimum=1))
    kk = np.asarray(_check_int(k, "k"))
    nn, kk = np.broadcast_arrays(nn, kk)
    if np.any(kk > nn):
        raise ValueError("k must be at most n")
    if which is BinaryMechanism.RANDOMIZED_RESPONSE:
        out = randomized_response_variance(nn, eps)      # refuses a subnormal epsilon
    elif which is BinaryMechanism.BINOMIAL:
        _check_epsilon_covered(eps, "binomial mechanism")
        mu = 50.0 * math.log(2.0 / dlt) / (eps * eps)  # n p, fixed by (eps, delta)
        n_min = binomial_min_users(eps, dlt)
        with np.errstate(divide="ignore"):
            out = np.where(nn >= n_min, mu * (1.0 - mu / nn.astype(float)), np.inf)
    else:
        _check_epsilon_covered(eps, "sample-and-threshold mechanism")
        pp, tau = _st_parameters(eps, dlt, None, None)
        bias = np.asarray(_st_bias(kk, pp, tau))
        out = bias * bias + np.asarray(_st_variance(kk, pp, tau))
    out = np.asarray(out, dtype=float)
    return cast("float | np.ndarray", V.scalar_or_array(out))


def _count_tails(release: BinaryRelease, k: int, y: int) -> tuple[float, float]:
    """``(Pr_k[Y <= y], Pr_k[Y >= y])`` for the released count ``Y`` when the true count is ``k``."""
    n, p = release.n, release.probability
    if release.mechanism == "binomial":  # Y = k + Binomial(n, p)
        return float(stats.binom.cdf(y - k, n, p)), float(stats.binom.sf(y - k - 1, n, p))
    if release.mechanism == "randomized response":  # Y = Binomial(k, q) + Binomial(n - k, 1 - q)
        assert n is not None          # public for randomized response
        a = np.arange(k + 1)
        pa = stats.binom.pmf(a, k, p)
        le = float(np.dot(pa, stats.binom.cdf(y - a, n - k, 1.0 - p)))
        ge = float(np.dot(pa, stats.binom.sf(y - a - 1, n - k, 1.0 - p)))
        return min(le, 1.0), min(ge, 1.0)
    # sample-and-threshold: S ~ Binomial(k, p), Y = S if S >= t else 0
    t = math.ceil(float(cast(float, release.threshold)) - 1e-9)
    if y < t:  # suppressed: the lowest outcome
        return float(stats.binom.cdf(t - 1, k, p)), 1.0
    return float(stats.binom.cdf(y, k, p)), float(stats.binom.sf(y - 1, k, p))


def count_interval(release: BinaryRelease, beta: float) -> tuple[int, int]:
    r"""Exact ``(1 - beta)`` confidence interval for the true count ``k`` of a binary sum.

    For each mechanism the released count ``Y`` has a known law given ``k``
    (randomized response: ``Binomial(k, q) + Binomial(n - k, 1 - q)``;
    binomial noise: ``k + Binomial(n, p)``; sample-and-threshold:
    ``Binomial(k, p)`` suppressed below the threshold), stochastically
    increasing in ``k``. The interval is every ``k`` in ``{0, ..., n}`` for
    which neither tail at the observed ``y`` is at most ``beta / 2``, the
    Clopper-Pearson construction, or the nearest end of ``{0, ..., n}`` when
    that set is empty (an output improbable under every ``k``). It covers the
    true ``k`` with probability at least ``1 - beta`` for every ``k``
    (:prf:ref:`accuracy-thm-binary`).

    Parameters
    ----------
    release : BinaryRelease
        A release of :func:`~dpsum.binary.randomized_response`,
        :func:`~dpsum.binary.binomial_noise_mechanism` or
        :func:`~dpsum.binary.sample_and_threshold`.
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    (int, int)
        ``lower <= k <= upper`` with probability at least ``1 - beta``.

    Examples
    --------
    >>> import dpsum
    >>> bits = np.r_[np.ones(30, dtype=int), np.zeros(70, dtype=int)]
    >>> lo, hi = count_interval(dpsum.randomized_response(bits, epsilon=2.0, rng=0), 0.1)
    >>> (lo, hi), lo <= 30 <= hi
    ((19, 33), True)
    """
    if not isinstance(release, BinaryRelease):
        raise TypeError(f"release must be a BinaryRelease, got {type(release).__name__}")
    half = float(V.check_probability(beta, "beta", scalar=True)) / 2.0
    y = int(release.output)
    if release.n is not None:
        n = int(release.n)
    else:
        # add-remove (sample-and-threshold): no public n bounds k; Pr_k[Y <= y]
        # falls to 0 as k grows, so a finite public cap holds the interval
        n = 1
        while _count_tails(release, n, y)[0] > half:
            n *= 2

    def first(pred: Any) -> int:
        """Smallest k in [0, n + 1] with pred(k) true, for pred monotone false -> true."""
        lo, hi = -1, n + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if pred(mid):
                hi = mid
            else:
                lo = mid
        return hi

    lower = first(lambda k: _count_tails(release, k, y)[1] > half)  # Pr_k[Y >= y] increases in k
    upper = first(lambda k: _count_tails(release, k, y)[0] <= half) - 1  # Pr_k[Y <= y] decreases
    # An output improbable under every k leaves one condition false for all k; the
    # set is then empty, and the nearest end of {0, ..., n} is returned instead
    # (adding points to a confidence set never lowers its coverage).
    lower, upper = min(lower, n), max(upper, 0)
    if lower > upper:  # cannot happen here (one more 1-bit moves Y by at most one
        lower, upper = upper, lower  # outcome), and widening keeps the coverage
    return int(lower), int(upper)
