"""Worst-case neighbouring pairs for auditing the mechanisms of the package.

An empirical audit (:func:`dpsum.audit.epsilon_lower_bound`) can only find a
violation on the datasets it is given, so each mechanism gets a builder for
the pair of neighbouring datasets on which its privacy loss is largest
(:ref:`audit-pairs`). The builders take the mechanism's own public arguments; the one
for the Gaussian-data mechanism computes the clip radius, scaling and sensitivity with the
mechanism's own set-up (:func:`dpsum.design.gaussian_data_setup`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpsum import _validation as V
from dpsum._lazy import stats
from dpsum.audit.statistics import pair_epsilon
from dpsum.binary import (
    binomial_noise_probability,
    sample_threshold_probability,
    sample_threshold_tau,
)
from dpsum.design.gaussian_data import gaussian_data_setup
from dpsum.privacy.neighbouring import Neighbouring

__all__ = [
    "statistic_pair",
    "replace_one_pair",
    "add_remove_pair",
    "elliptical_pair",
    "clipped_pair",
    "gaussian_data_pair",
    "binary_pair",
    "binary_output_laws",
    "worst_binary_pair",
]


Pair = tuple[np.ndarray, np.ndarray]


def statistic_pair(sensitivity: float, d: int = 1) -> Pair:
    """Two values of a statistic at L2 distance ``sensitivity``: ``0`` and
    ``sensitivity * e_1``, for auditing :func:`~dpsum.mechanisms.gaussian_mechanism`.

    For isotropic Gaussian noise only the distance matters, and the largest
    distance neighbouring datasets can produce is the sensitivity, so this
    pair is worst case (the privacy loss is then exactly the one
    :prf:ref:`the analytic calibration <gaussian-thm-analytic>` accounts for).

    Examples
    --------
    >>> x, y = statistic_pair(2.0, 3)
    >>> x.tolist(), y.tolist()
    ([0.0, 0.0, 0.0], [2.0, 0.0, 0.0])
    """
    s = V.check_positive(sensitivity, "sensitivity", scalar=True)
    dd = V.check_integer(d, "d")
    x = np.zeros(dd)
    y = np.zeros(dd)
    y[0] = s
    return x, y


def _filler(n: int, d: int, center: np.ndarray | None) -> np.ndarray:
    base = np.zeros(d) if center is None else center
    return np.tile(base, (n, 1))


def replace_one_pair(record: ArrayLike, *, n: int = 2, center: ArrayLike | None = None) -> Pair:
    """Replace-one neighbours ``D = [c + v, c, ..., c]`` and ``D' = [c - v, c, ..., c]``.

    ``record`` is ``v`` (relative to ``center`` ``c``, default 0). For a
    mechanism that clips to a ball around ``c``, a record far outside the
    ball and its reflection are clipped to opposite points of the sphere, so
    the sum moves by exactly the sensitivity ``2C``: the worst case.

    Examples
    --------
    >>> X, Y = replace_one_pair([3.0, 4.0], n=2, center=[1.0, 1.0])
    >>> X.tolist(), Y.tolist()
    ([[4.0, 5.0], [1.0, 1.0]], [[-2.0, -3.0], [1.0, 1.0]])
    """
    v = V.check_vector(record, "record")
    nn = V.check_integer(n, "n")
    c = None if center is None else V.check_vector(center, "center", v.size)
    X = _filler(nn, v.size, c)
    Y = X.copy()
    X[0] += v
    Y[0] -= v
    return X, Y


def add_remove_pair(record: ArrayLike, *, n: int = 1, center: ArrayLike | None = None) -> Pair:
    """Add-remove neighbours: ``D`` has ``n`` rows at ``center`` (default 0),
    ``D'`` is ``D`` plus the row ``center + record``.

    Note the order: the larger dataset is the second one, so the upper-tail
    test of :func:`dpsum.audit.epsilon_lower_bound` looks for outputs pushed
    *against* ``record``; the audit runs both tests, so the order does not
    matter.

    Examples
    --------
    >>> X, Y = add_remove_pair([3.0, 4.0], n=1)
    >>> X.tolist(), Y.tolist()
    ([[0.0, 0.0]], [[0.0, 0.0], [3.0, 4.0]])
    """
    v = V.check_vector(record, "record")
    nn = V.check_integer(n, "n")
    c = None if center is None else V.check_vector(center, "center", v.size)
    X = _filler(nn, v.size, c)
    Y = np.vstack([X, (v if c is None else c + v)[None, :]])
    return X, Y


def elliptical_pair(widths: ArrayLike, *, n: int = 1, factor: float = 10.0,
                    coordinates: ArrayLike | None = None) -> Pair:
    """Worst-case replace-one pair for :func:`~dpsum.mechanisms.elliptical_gaussian_mechanism`.

    The changed record is ``factor * Delta / 2`` against ``-factor * Delta / 2``
    (other rows 0): both are clamped to the corners ``+-Delta / 2`` of the box,
    so the clamping is exercised and the sum moves by ``Delta_j`` in every
    coordinate. With diagonal noise ``sigma_j`` the privacy loss depends on
    ``sum_j (Delta_j / sigma_j)^2``, which the corner maximises over the box.
    For the mechanism as specified (``sigma_j = sigma_opt Delta_j / b_j``,
    ``||b|| = 1``) this equals ``1 / sigma_opt^2``: the pair is tight.

    ``coordinates`` restricts the change to some coordinates (e.g. the one
    whose noise is smallest relative to its width, ``argmin sigma_j / Delta_j``);
    such a pair is never worse than the corner, but isolates one coordinate.

    Examples
    --------
    >>> X, Y = elliptical_pair([2.0, 4.0], n=1, factor=3)
    >>> X.tolist(), Y.tolist()
    ([[3.0, 6.0]], [[-3.0, -6.0]])
    """
    width = V.check_vector(widths, "widths", positive=True)
    f = V.check_positive(factor, "factor", scalar=True)
    if f < 1:
        raise ValueError("factor must be >= 1 so that the record reaches the box corner")
    with np.errstate(over="ignore"):
        v = V.representable(f * width / 2.0, "widths (times factor)", "the record factor * widths / 2",
                            "factor * widths must stay below 1.8e308")
    if coordinates is not None:
        idx = np.atleast_1d(np.asarray(coordinates))
        if not np.issubdtype(idx.dtype, np.integer) or np.any(idx < 0) or np.any(idx >= width.size):
            raise ValueError(f"coordinates must be indices in [0, {width.size})")
        mask = np.zeros(width.size, dtype=bool)
        mask[idx] = True
        v = np.where(mask, v, 0.0)
    return replace_one_pair(v, n=n)


def clipped_pair(d: int, clip_norm: float, neighbouring: Neighbouring | str = "replace", *,
                 n: int = 2, factor: float = 100.0) -> Pair:
    """Worst-case pair for :func:`~dpsum.mechanisms.clipped_gaussian_mechanism`.

    A record of norm ``factor * C`` (far outside the clip ball) along
    ``e_1``: replaced by its opposite under replace-one (the clipped sum
    moves by ``2C``), or added under add-remove (it moves by ``C``).

    Examples
    --------
    >>> X, Y = clipped_pair(2, 1.0, "add-remove", n=1, factor=10.0)
    >>> Y.tolist()
    [[0.0, 0.0], [10.0, 0.0]]
    """
    dd = V.check_integer(d, "d")
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    f = V.check_positive(factor, "factor", scalar=True)
    relation = Neighbouring.parse(neighbouring)
    v = np.zeros(dd)
    v[0] = V.representable(f * C, "clip_norm", "the record's norm factor * clip_norm",
                           "factor * clip_norm must be at most 1.8e308")
    if relation is Neighbouring.REPLACE:
        return replace_one_pair(v, n=n)
    return add_remove_pair(v, n=n)


def gaussian_data_pair(stds: ArrayLike, *, center: ArrayLike | None = None,
                       scaling: str | ArrayLike = "scaled",
                       clip_probability: float | None = None,
                       neighbouring: Neighbouring | str = "replace", n: int = 2,
                       factor: float = 100.0) -> Pair:
    """Worst-case pair for :func:`~dpsum.mechanisms.gaussian_data_mechanism`.

    Arguments as for the mechanism (``n`` is the size of the first dataset);
    the scaling ``b``, clip radius ``C`` and sensitivity come from the
    mechanism's own set-up (:func:`dpsum.design.gaussian_data_setup`).
    The changed record ``x`` has scaled, centred version
    ``(x - c) ⊙ b = factor * C * u`` for a unit ``u``, far outside the clip
    ball of radius ``C``:

    - replace-one: ``u = e_1`` and the neighbour holds ``c - (x - c)``; after
      clipping the scaled sum moves by ``2C`` whatever ``u`` is;
    - add-remove: the record is added; its contribution to the scaled sum is
      ``b ⊙ c + C u``, whose norm reaches the sensitivity ``C + ||b ⊙ c||``
      when ``u`` points along ``b ⊙ c`` (``e_1`` when ``c = 0``).

    Examples
    --------
    >>> X, Y = gaussian_data_pair([1.0, 1.0], clip_probability=0.1)
    >>> X.shape, Y.shape, bool(X[0, 0] > 100)
    ((2, 2), (2, 2), True)
    """
    nn = V.check_integer(n, "n")
    f = V.check_positive(factor, "factor", scalar=True)
    setup = gaussian_data_setup(stds, center=center, clip_probability=clip_probability, n=nn,
                                scaling=scaling, neighbouring=neighbouring)
    b, c, C = setup.scaling, setup.center, setup.clip_norm
    u = np.zeros(b.size)
    u[0] = 1.0
    if setup.neighbouring is Neighbouring.ADD_REMOVE and c is not None:
        u = b * c / np.linalg.norm(b * c)
    v = f * C * u / b
    if setup.neighbouring is Neighbouring.REPLACE:
        return replace_one_pair(v, n=nn, center=c)
    return add_remove_pair(v, n=nn, center=c)


def binary_pair(n: int = 1, ones: int = 0) -> Pair:
    """Neighbouring bit vectors for the binary-sum mechanisms of :mod:`dpsum.binary`.

    ``D`` has ``ones + 1`` ones among ``n`` bits and ``D'`` has ``ones`` (its
    first bit is 0 instead of 1); both are boolean arrays. The binary
    mechanisms depend on the data only through the count, so which bit
    changes does not matter, but the count does:

    - randomized response: ``n = 1``, so that the output is one randomized
      bit, whose privacy loss is exactly epsilon;
    - binomial noise: any count (the noise does not depend on it);
    - sample-and-threshold: the count :func:`worst_binary_pair` finds, where
      the exact epsilon at the audited delta is largest; for the correct
      mechanism at (1, 1e-3) that is 51 against 50 ones, not a count just
      above the threshold ``ceil(3 + ln 1000) = 10``, which is almost never
      released.

    Examples
    --------
    >>> x, y = binary_pair(3, 1)
    >>> x.tolist(), y.tolist()
    ([True, True, False], [False, True, False])
    """
    nn = V.check_integer(n, "n")
    ones = V.check_integer(ones, "ones", 0, nn - 1)
    x = np.zeros(nn, dtype=bool)
    x[: ones + 1] = True
    y = x.copy()
    y[0] = False
    return x, y


def binary_output_laws(mechanism: str, n: int, ones: int, *, epsilon: float,
                       delta: float | None = None, p: float | None = None,
                       threshold: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact output laws of a :mod:`dpsum.binary` mechanism on :func:`binary_pair`.

    The first law is that of the released count on ``ones + 1`` ones among
    ``n`` users, the second on ``ones`` ones, over the common support
    ``0, 1, 2, ...`` (the outputs are ordered as the estimates are):

    - ``"randomized response"``: the number of reports equal to 1,
      ``Binomial(k, q) + Binomial(n - k, 1 - q)`` with ``q = e^eps / (1 + e^eps)``;
    - ``"binomial"``: ``k + Binomial(n, p)``, ``p`` the published calibration
      unless given;
    - ``"sample and threshold"``: ``C ~ Binomial(k, p)`` released when
      ``C >= threshold`` (default ``3 + ln(1/delta)``), otherwise 0.

    ``p`` (and ``threshold``) may be set freely, which is how the book builds
    broken variants of a mechanism for audits to catch.
    """
    V.check_choice(mechanism, "mechanism", ("randomized response", "binomial", "sample and threshold"))
    nn = V.check_integer(n, "n")
    ones = V.check_integer(ones, "ones", 0, nn - 1)
    eps = float(V.check_positive(epsilon, "epsilon", scalar=True))
    # the optional parameters are checked whenever given, used or not
    if delta is not None:
        delta = V.check_delta(delta, scalar=True)
    if p is not None:
        p = V.check_probability(p, "p", scalar=True)
    if threshold is not None:
        threshold = V.check_positive(threshold, "threshold", scalar=True)
    counts = (ones + 1, ones)
    if mechanism == "randomized response":
        if eps > 36.0:
            raise ValueError(f"epsilon must be at most 36 for the randomized-response laws: "
                             f"beyond it the keep probability e^eps / (1 + e^eps) rounds to 1 "
                             f"and the laws lose their smallest outcomes, got "
                             f"{V.describe(epsilon)}")
        q = float(special.expit(eps))
        laws = [np.convolve(stats.binom.pmf(np.arange(k + 1), k, q),
                            stats.binom.pmf(np.arange(nn - k + 1), nn - k, 1.0 - q)) for k in counts]
        return laws[0], laws[1]
    if delta is None:
        raise ValueError(f"delta must be given for the {mechanism} mechanism")
    if mechanism == "binomial":
        pp = binomial_noise_probability(nn, eps, delta) if p is None else V.check_probability(
            p, "p", scalar=True)
        noise = stats.binom.pmf(np.arange(nn + 1), nn, float(pp))
        return (np.concatenate([np.zeros(ones + 1), noise]),
                np.concatenate([np.zeros(ones), noise, [0.0]]))
    tau = sample_threshold_tau(delta) if threshold is None else V.check_positive(
        threshold, "threshold", scalar=True)
    pp = sample_threshold_probability(eps, delta) if p is None else V.check_probability(
        p, "p", scalar=True)
    c = np.arange(ones + 2)
    laws = []
    for k in counts:
        pmf = stats.binom.pmf(c, k, float(pp))
        out = np.where(c >= tau, pmf, 0.0)
        out[0] = pmf[c < tau].sum()  # a suppressed count is released as 0
        laws.append(out)
    return laws[0], laws[1]


def worst_binary_pair(mechanism: str, n: int, *, epsilon: float, delta: float | None = None,
                      audit_delta: float | None = None, p: float | None = None,
                      threshold: float | None = None, max_ones: int | None = None
                      ) -> tuple[int, float]:
    """The :func:`binary_pair` with the largest exact epsilon at the audited delta.

    Returns ``(ones, epsilon_exact)``: among the pairs ``ones + 1`` against
    ``ones`` ones (``ones < n``, and ``ones <= max_ones`` if given), the one
    whose exact output laws (:func:`binary_output_laws`) have the largest
    :func:`~dpsum.audit.pair_epsilon` at ``audit_delta`` (default ``delta``, and 0 for
    randomized response). An audit at ``audit_delta`` should use that pair: it
    is where the mechanism comes closest to its claim, or goes furthest
    beyond it. For sample-and-threshold it is not a count near the threshold,
    where a count is almost never released (at ``epsilon = 1``,
    ``delta = 1e-3`` it is 51 against 50 ones); for binomial noise every
    count is the same.
    """
    V.check_choice(mechanism, "mechanism", ("randomized response", "binomial",
                                            "sample and threshold"))
    nn = V.check_integer(n, "n")
    top = nn - 1 if max_ones is None else min(nn - 1, V.check_integer(max_ones, "max_ones", 0))
    if audit_delta is None:
        audit_delta = 0.0 if mechanism == "randomized response" else delta
    if audit_delta is None:
        raise ValueError(f"delta must be given for the {mechanism} mechanism")
    best = (0, -math.inf)
    for ones in range(top + 1):
        laws = binary_output_laws(mechanism, nn, ones, epsilon=epsilon, delta=delta, p=p,
                                  threshold=threshold)
        e = pair_epsilon(*laws, audit_delta)
        if e > best[1]:
            best = (ones, e)
    return best
