"""The precision attack on floating-point outputs (:ref:`fp-attack`).
"""

from __future__ import annotations

import math

import numpy as np

from dpsum import _validation as V
from dpsum.audit.statistics import epsilon_from_counts

__all__ = [
    "precision_event",
    "precision_epsilon_lower_bound",
]


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
    """A lower bound on epsilon from the precision event (:prf:ref:`fp-def-event`).

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
