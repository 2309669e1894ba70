"""A Gaussian step, then one of several branches chosen from its output
(appendix A3, ``pipeline-design-prop-branch``; ``branch_delta`` and
``branch_gaussian_mu`` of :mod:`dpsum.privacy.composition`).

The bound is checked against the exact composition where there is one
branch, against the exact privacy profile of toy mechanisms that choose
between two Gaussian branches by any threshold on the first output (the
bound must hold for every rule), and its search for the largest Gaussian
branch against its own definition.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpsum.privacy import analytic_sigma, gdp_delta, zcdp_delta, zcdp_rho
from dpsum.privacy.composition import (_cks_delta_grid, branch_delta,
                                       branch_gaussian_mu)


@pytest.mark.parametrize("mu, mu_b, eps", [(0.1, 0.5, 1.0), (0.01, 0.27, 1.0),
                                           (0.3, 0.3, 0.5), (0.001, 1.0, 2.0),
                                           (0.05, 2.0, 0.0)])
def test_one_gaussian_branch_is_the_exact_composition(mu, mu_b, eps):
    exact = gdp_delta(math.hypot(mu, mu_b), eps)
    bound = branch_delta(mu, eps, gaussian=[mu_b])
    # from above, and within the bins' width
    assert exact <= bound <= exact * (1 + 2e-3)


def _toy_delta(mu: float, mu_a: float, mu_b: float, tau: float, eps: float) -> float:
    """The exact delta(eps) of: y ~ N(m, 1/mu^2) with m = 0 or 1 on the two
    neighbours; branch A (a mu_a-GDP Gaussian) when y > tau, else branch B,
    both orders of the neighbours. Integrated over y."""
    s = 1.0 / mu

    def order(m_p: float, m_q: float) -> float:
        def inner(y: float) -> float:
            t = eps - (stats.norm.logpdf(y, m_p, s) - stats.norm.logpdf(y, m_q, s))
            g = mu_a if y > tau else mu_b
            # below 0: H_{e^t} = 1 - e^t + e^t H_{e^-t} of the same (symmetric) pair
            prof = gdp_delta(g, t) if t >= 0 else -math.expm1(t) + math.exp(t) * gdp_delta(g, -t)
            return stats.norm.pdf(y, m_p, s) * prof
        lo, hi = min(m_p, m_q) - 12 * s, max(m_p, m_q) + 12 * s
        pts = [tau] if lo < tau < hi else None
        return integrate.quad(inner, lo, hi, points=pts, limit=400, epsabs=1e-14,
                              epsrel=1e-10)[0]
    return max(order(0.0, 1.0), order(1.0, 0.0))


@pytest.mark.parametrize("tau", [-5.0, 0.0, 0.5, 1.0, 3.0])
def test_the_bound_holds_whatever_rule_chooses_the_branch(tau):
    # a first step strong enough for the choice to matter
    mu, mu_a, mu_b, eps = 0.8, 0.6, 1.2, 1.0
    bound = branch_delta(mu, eps, gaussian=[mu_a, mu_b])
    exact = _toy_delta(mu, mu_a, mu_b, tau, eps)
    assert exact <= bound
    # the rule that always takes the stronger branch attains it
    if tau == -5.0:     # y > -5 almost surely: branch A, the weaker one
        assert exact < 0.9 * bound
    always_b = gdp_delta(math.hypot(mu, mu_b), eps)
    assert bound <= always_b * (1 + 2e-3)


def test_the_cks_grid_is_zcdp_delta_from_above():
    for rho in (1e-4, 0.03, 1.0, 30.0):
        eps = np.array([1e-3, 0.05, 0.5, 1.0, 4.0, 20.0, 200.0])
        grid = _cks_delta_grid(rho, eps)
        for e, g in zip(eps, grid):
            want = zcdp_delta(rho, float(e))
            assert want * (1 - 1e-12) <= g <= want * (1 + 1e-6), (rho, e)
    assert _cks_delta_grid(0.1, np.array([0.0, -1.0])).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("eps, dlt", [(1.0, 1e-5), (0.25, 1e-6), (4.0, 1e-9)])
@pytest.mark.parametrize("share", [5e-4, 0.01, 0.15])
def test_the_largest_gaussian_branch(eps, dlt, share):
    rho = zcdp_rho(eps, dlt)
    mu = math.sqrt(2 * share * rho)
    other = (1 - share) * rho
    low = math.sqrt(2 * other)                  # the zCDP calibration of the same share
    mu_b = branch_gaussian_mu(mu, eps, dlt, other, low)
    assert mu_b is not None and low < mu_b < 1 / analytic_sigma(eps, dlt)

    def bound(m):
        return branch_delta(mu, eps, gaussian=[m], zcdp=[other], tail=1e-9 * dlt)
    assert bound(mu_b) <= dlt < bound(mu_b * (1 + 1e-6))
    # the other paths' bound alone fits: the rest of delta is the box's
    assert branch_delta(mu, eps, zcdp=[other], tail=1e-9 * dlt) < dlt
    # with a small first step the box is within 1 % of the analytic Gaussian's
    if share <= 0.01:
        assert mu_b * analytic_sigma(eps, dlt) > 0.99


def test_no_gaussian_branch_where_the_bound_fails_at_the_lower_end():
    rho = zcdp_rho(1.0, 1e-5)
    # every other path at twice the budget: no Gaussian branch can fit
    assert branch_gaussian_mu(0.01, 1.0, 1e-5, 2 * rho, 0.01) is None


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="branch"):
        branch_delta(0.1, 1.0)
    with pytest.raises(ValueError, match="mu"):
        branch_delta(-0.1, 1.0, gaussian=[0.5])
    with pytest.raises(ValueError, match="zcdp"):
        branch_delta(0.1, 1.0, zcdp=[float("nan")])
    with pytest.raises(ValueError, match="epsilon"):
        branch_delta(0.1, -1.0, gaussian=[0.5])
