"""Private group discovery: Gaussian thresholding of unit counts.

When the groups are not public, even the *list* of groups with data is
private: a group that only one person belongs to reveals that person. The
mechanism releases a group only if its noisy unit count
``N_g + N(0, sigma^2)`` exceeds a threshold ``tau`` (Gaussian thresholding,
the Gaussian form of the partition selection of Korolova, Kenthapadi, Mishra
and Ntoulas 2009; Desfontaines, Voss, Gipson and Mandayam 2022 survey
partition selection and give the optimal mechanism for one group per unit;
Wilkins, Kifer, Zhang and Karrer 2024 analyse the Gaussian version exactly).

**Why it is private, with ``k = max_groups`` groups per unit** (add-remove
neighbours). Let ``D`` hold one more unit than ``D'``. Every group of ``D'``
is a group of ``D``; the groups only ``D`` has hold that unit alone, so
their count is exactly 1, and there are at most ``k`` of them. Let ``A`` be
the event that none of them passes the threshold:
``Pr[not A] = 1 - Phi((tau - 1) / sigma)^k =: delta_tau`` (the noises are
independent). Write ``M_c`` for the release restricted to the groups ``D``
and ``D'`` share: the Gaussian mechanism on their counts (and sums), which
move by the unit's bounded contribution, so ``M_c`` is
``(epsilon, delta_G)``-DP. ``M(D') = M_c(D')`` and, on ``A``,
``M(D) = M_c(D)``. Hence, for every event ``E``,

- ``Pr[M(D) in E] <= Pr[M_c(D) in E] + delta_tau
  <= e^epsilon Pr[M(D') in E] + delta_G + delta_tau``;
- ``Pr[M(D) in E] >= Pr[M_c(D) in E] (1 - delta_tau)`` (``A`` is
  independent of ``M_c``), so ``Pr[M(D') in E] - e^epsilon Pr[M(D) in E]``
  is at most ``delta_G(epsilon + ln(1 - delta_tau))``, the Gaussian profile
  at a smaller epsilon; the profile falls with slope ``e^epsilon Phi(b) <= 1``
  in epsilon, so this is at most ``delta_G + delta_tau / (1 - delta_tau)``.

The threshold is therefore set so that ``delta_tau / (1 - delta_tau)`` is the
selection's share of ``delta`` (:data:`SELECTION_DELTA_SHARE`). The bound
needs the ``L0`` bound ``k`` (it enters ``delta_tau`` through the power) and
the ``L_inf`` bound 1 on each group's count change (a group of one unit has
count exactly 1); both hold by construction of :mod:`dpsum.tables.units`.
The optimal mechanism of Desfontaines et al. assumes ``k = 1``; for
``k > 1`` they compose it ``k`` times, which the Gaussian form avoids.

This is the standard analysis (Wilkins et al. 2024 show it is slightly
loose and give the exact profile); it is the one used here, with
``delta_tau`` a fixed share of the caller's ``delta``.
"""

from __future__ import annotations

import math

from scipy.special import ndtri

from dpsum import _validation as V
from dpsum._special import log_ndtr

__all__ = ["SELECTION_DELTA_SHARE", "selection_threshold", "selection_delta",
           "threshold_for_share"]

#: Share of ``delta`` given to the thresholding (the rest goes to the Gaussian noise).
SELECTION_DELTA_SHARE = 0.5


def selection_delta(threshold: float, sigma: float, max_groups: int) -> float:
    """``1 - Phi((tau - 1) / sigma)^k``: the probability that at least one of
    ``k`` groups holding one unit alone passes the threshold ``tau``.

    Examples
    --------
    >>> f"{selection_delta(5.0, 1.0, 1):.3e}"
    '3.167e-05'
    """
    tau = float(V.check_real(threshold, "threshold", scalar=True))
    s = float(V.check_positive(sigma, "sigma", scalar=True))
    k = V.check_integer(max_groups, "max_groups")
    log_p = float(log_ndtr(-(tau - 1.0) / s))            # log Pr[1 + Z > tau]
    p = math.exp(log_p)
    return -math.expm1(k * math.log1p(-p)) if p < 1.0 else 1.0


def selection_threshold(sigma: float, max_groups: int, delta: float) -> float:
    """The smallest threshold (to a few ulps) with
    ``selection_delta(tau, sigma, max_groups) <= delta``.

    ``tau = 1 + sigma Phi^-1((1 - delta)^(1/k))``, evaluated from the upper
    tail ``x = 1 - (1 - delta)^(1/k)`` (no cancellation), then moved up until
    :func:`selection_delta` (accurate to about 1e-14 relatively) is below
    ``delta (1 - 2^-36)``.

    Examples
    --------
    >>> tau = selection_threshold(2.0, 4, 1e-6)
    >>> selection_delta(tau, 2.0, 4) <= 1e-6
    True
    """
    s = float(V.check_positive(sigma, "sigma", scalar=True))
    k = V.check_integer(max_groups, "max_groups")
    d = float(V.check_open_interval(delta, "delta", 0.0, 1.0, scalar=True))
    x = -math.expm1(math.log1p(-d) / k)          # per-group tail probability
    if not x > 0.0:
        raise ValueError("delta is too small for this max_groups: the per-group tail "
                         "probability delta / max_groups underflows")
    tau = 1.0 + s * float(-ndtri(x))
    if not math.isfinite(tau):
        raise ValueError("the selection threshold overflows: sigma is too large (or delta "
                         "too small)")
    step = abs(tau) * 2.0 ** -50 + s * 2.0 ** -50
    target = d * (1.0 - 2.0 ** -36)              # a margin for the evaluation's rounding
    while selection_delta(tau, s, k) > target:
        tau += step
        step *= 2.0
    return tau


def threshold_for_share(sigma: float, max_groups: int, delta_share: float) -> float:
    """The threshold whose ``delta_tau`` satisfies
    ``delta_tau / (1 - delta_tau) <= delta_share`` (both directions of the
    neighbouring relation, see the module notes): :func:`selection_threshold`
    at ``delta_share / (1 + delta_share)``.

    Examples
    --------
    >>> tau = threshold_for_share(2.0, 4, 1e-6)
    >>> p = selection_delta(tau, 2.0, 4)
    >>> p / (1 - p) <= 1e-6
    True
    """
    share = float(V.check_open_interval(delta_share, "delta_share", 0.0, 1.0, scalar=True))
    k = V.check_integer(max_groups, "max_groups")
    if not -math.expm1(math.log1p(-share / (1.0 + share)) / k) > 0.0:
        raise ValueError("delta_share is too small for this max_groups: the per-group tail "
                         "probability underflows")
    return selection_threshold(sigma, k, share / (1.0 + share))
