"""The privacy of the discrete Gaussian: its (epsilon, delta) profile and the
scale that calibrates it (:ref:`fp-discrete-gaussian`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpsum import _validation as V
from dpsum.distributions.discrete import discrete_gaussian_pmf
from dpsum.privacy.composition import zcdp_delta, zcdp_rho

_TINY = float(np.finfo(np.float64).tiny)   # smallest normal float

__all__ = [
    "discrete_gaussian_delta",
    "discrete_gaussian_delta_exact_1d",
    "discrete_gaussian_sigma",
]


def discrete_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """A guaranteed ``delta`` for the multivariate discrete Gaussian.

    Adding independent ``N_Z(0, sigma^2)`` noise to each coordinate of an
    integer vector whose L2 sensitivity is at most ``Delta`` is
    ``rho = Delta^2 / (2 sigma^2)``-zCDP (CKS Theorem 14), hence
    ``(epsilon, delta)``-DP with ``delta`` from the conversion of CKS
    Proposition 12, optimised over the Renyi order
    (:func:`dpsum.privacy.zcdp_delta`, returned).
    This bound is slightly above the continuous Gaussian's exact ``delta``.

    Examples
    --------
    >>> bool(discrete_gaussian_delta(4.0, 1.0) < 1e-1)
    True
    """
    s = float(V.check_positive(sigma, "sigma", scalar=True))
    eps = float(V.check_positive(epsilon, "epsilon", scalar=True))
    sens = float(V.check_positive(sensitivity, "sensitivity", scalar=True))
    with np.errstate(over="ignore", under="ignore"):
        ratio = sens / s
        rho = 0.5 * ratio * ratio
    if not rho < math.inf:
        return 1.0          # sigma negligible against the sensitivity: no guarantee
    # rho below the float range: the bound is increasing in rho, so the
    # smallest positive float gives a valid (tiny) delta
    return float(zcdp_delta(max(rho, 5e-324), eps, method="cks"))


def discrete_gaussian_delta_exact_1d(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """The exact ``delta(epsilon)`` of the one-dimensional discrete Gaussian
    with integer sensitivity (CKS Theorem 7): ``Pr[Y > epsilon sigma^2/Delta -
    Delta/2] - e^epsilon Pr[Y > epsilon sigma^2/Delta + Delta/2]``, ``Y ~
    N_Z(0, sigma^2)``; computed by summing the pmf (for checks).

    Examples
    --------
    >>> d1 = discrete_gaussian_delta_exact_1d(16.0, 1.0, 1)
    >>> bool(0 < d1 <= discrete_gaussian_delta(4.0, 1.0))
    True
    """
    s2 = float(V.check_positive(sigma2, "sigma2", scalar=True))
    eps = float(V.check_epsilon(epsilon, scalar=True))
    D = V.check_integer(sensitivity, "sensitivity", 1)
    span = eps * s2 / D + D + 60 * math.sqrt(s2) + 10
    if not span < 1e7:
        raise ValueError("sigma2, epsilon or sensitivity is too large for this check, which "
                         "sums the pmf over about epsilon sigma2 / sensitivity + 60 sigma terms")
    hi = int(math.ceil(span))
    ys = np.arange(-hi, hi + 1)
    pmf = discrete_gaussian_pmf(ys, s2)
    a = eps * s2 / D
    return float(pmf[ys > a - D / 2].sum() - math.exp(eps) * pmf[ys > a + D / 2].sum())


@lru_cache(maxsize=256)
def _unit_sigma(eps: float, dlt: float) -> float:
    sigma = 1.0 / math.sqrt(2 * zcdp_rho(eps, dlt, method="cks")) * (1 + 1e-12)
    step = 1e-10
    while discrete_gaussian_delta(sigma, eps) > dlt:     # confirm the forward check
        sigma *= 1 + step
        step *= 2.0                                      # a few passes at most
    return sigma


def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest ``sigma`` (to a relative 1e-9, rounded up) for which
    :func:`discrete_gaussian_delta` is at most ``delta``.

    Examples
    --------
    >>> from dpsum import analytic_sigma
    >>> 1.0 < discrete_gaussian_sigma(1.0, 1e-6) / analytic_sigma(1.0, 1e-6) < 1.2
    True
    """
    eps, dlt = V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)
    sens = float(V.check_positive(sensitivity, "sensitivity", scalar=True))
    with np.errstate(over="ignore"):
        sigma = _unit_sigma(float(eps), float(dlt)) * sens
    if not sigma < math.inf:
        raise ValueError("sensitivity is too large for this epsilon and delta: the noise "
                         "scale is not a finite float")
    if sigma < _TINY:
        raise ValueError("sensitivity is too small for this epsilon and delta: the noise "
                         "scale would be a subnormal float (below 2.2e-308), which cannot "
                         "hold the calibration to within 1e-9; rescale the statistic")
    return sigma
