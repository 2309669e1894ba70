"""Privacy accounting (dpsum.accounting) against independent references.

The references share no code with dpsum:

- Google's ``dp_accounting`` privacy-loss-distribution (PLD) accountant, whose
  pessimistic discretisation gives an epsilon at or above the exact one, by at
  most about (number of composed PLDs) x (discretisation interval);
- direct numerical integration of the hockey-stick divergence with
  ``scipy.integrate.quad``;
- the closed-form optimal composition of k pure-DP mechanisms (Kairouz, Oh and
  Viswanath 2015, Theorem 3.3);
- mpmath evaluations of the published formulas.
"""

from __future__ import annotations

import json
import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, stats

from dpsum.privacy import composition as A
from dpsum.privacy.calibration import analytic_sigma, gaussian_delta, gaussian_epsilon

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
pld_common = pytest.importorskip("dp_accounting.pld.common")
rdp = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")

INTERVAL = 3e-4  # PLD value discretisation interval


def _pld(s, epsilons=(), deltas=None, laplace=False):
    """PLD of a Gaussian (multiplier s, sensitivity 1) composed with DP steps."""
    out = None
    if s is not None:
        out = pld.from_gaussian_mechanism(s, sensitivity=1.0,
                                          value_discretization_interval=INTERVAL)
    deltas = [0.0] * len(epsilons) if deltas is None else deltas
    for e0, d0 in zip(epsilons, deltas):
        if d0 > 0:
            step = pld.from_privacy_parameters(
                pld_common.DifferentialPrivacyParameters(e0, d0),
                value_discretization_interval=INTERVAL)
        elif laplace:
            step = pld.from_laplace_mechanism(1.0 / e0, sensitivity=1.0,
                                              value_discretization_interval=INTERVAL)
        else:  # binary randomized response with log-odds e0
            step = pld.from_randomized_response(2.0 / (1.0 + math.exp(e0)), 2,
                                                value_discretization_interval=INTERVAL)
        out = step if out is None else out.compose(step)
    return out


# ---------------------------------------------------------------------------
# exact Gaussian composition
# ---------------------------------------------------------------------------
def test_composed_multiplier_formula_and_split_round_trip():
    s = [1.0, 2.0, 4.0]
    assert A.compose_gaussian_multipliers(s) == pytest.approx(1 / math.sqrt(1 + 1 / 4 + 1 / 16),
                                                              rel=1e-15)
    assert A.compose_gaussian_multipliers(3.0) == 3.0
    assert A.compose_gaussian_multipliers([2.0] * 100) == pytest.approx(0.2, rel=1e-14)
    # no overflow of s^-2 for tiny multipliers
    assert A.compose_gaussian_multipliers([1e-200, 1e-200]) == pytest.approx(1e-200 / math.sqrt(2))
    parts = A.split_gaussian_multiplier(1.5, [1, 2, 7])
    assert A.compose_gaussian_multipliers(parts) == pytest.approx(1.5, rel=1e-14)
    assert parts[0] / parts[1] == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize("multipliers", [[1.0, 1.0], [0.8, 3.0, 5.0], [4.0] * 10])
@pytest.mark.parametrize("delta", [1e-3, 1e-9])
def test_gaussian_composition_matches_the_pld_accountant(multipliers, delta):
    ours = A.gaussian_composition_epsilon(multipliers, delta)
    ref = None
    for s in multipliers:
        p = pld.from_gaussian_mechanism(s, value_discretization_interval=INTERVAL)
        ref = p if ref is None else ref.compose(p)
    theirs = ref.get_epsilon_for_delta(delta)
    assert ours <= theirs * (1 + 1e-8)  # the PLD's own rounding is ~1e-9
    assert theirs - ours <= len(multipliers) * INTERVAL + 1e-6
    assert A.gaussian_composition_delta(multipliers, ours) <= delta


def _hockey_stick_quad(mu, eps):
    """sup_S P(S) - e^eps Q(S) for P = N(mu, 1), Q = N(0, 1), by quadrature."""
    # the optimal set is {y > t}, t = eps/mu + mu/2 (any real eps)
    t = eps / mu + mu / 2
    def integrand(y):
        return stats.norm.pdf(y, mu) - math.exp(eps) * stats.norm.pdf(y)
    val, err = integrate.quad(integrand, t, np.inf, epsabs=1e-14, epsrel=1e-12)
    return val


@pytest.mark.parametrize("s", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("eps", [-4.0, -1.0, -0.1, 0.0, 0.2, 1.5])
def test_profile_on_both_sides_of_zero_matches_quadrature(s, eps):
    ours = A.gaussian_profile(s, eps)
    assert ours == pytest.approx(_hockey_stick_quad(1 / s, eps), rel=1e-8, abs=1e-13)


def test_profile_vectorised_and_continuous_at_zero():
    x = np.array([-1e-9, 0.0, 1e-9])
    v = A.gaussian_profile(1.3, x)
    assert v.shape == (3,)
    assert np.ptp(v) < 1e-8
    assert A.gaussian_profile(1.3, 2.0) == gaussian_delta(1.3, 2.0)


# ---------------------------------------------------------------------------
# GDP
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_gdp_delta_is_the_dong_roth_su_formula(mu, eps):
    with mp.workdps(40):
        m, e = mp.mpf(mu), mp.mpf(eps)
        ref = mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)
    assert A.gdp_delta(mu, eps) == pytest.approx(float(ref), rel=1e-10)


def test_gdp_round_trips_and_composition():
    assert A.gdp_mu(0.5) == 2.0
    assert A.gdp_multiplier(A.gdp_mu(0.7)) == pytest.approx(0.7)
    mus = [0.5, 1.0, 2.0]
    assert A.gdp_compose(mus) == pytest.approx(
        1 / A.compose_gaussian_multipliers([1 / m for m in mus]), rel=1e-14)
    e = A.gdp_epsilon(1.2, 1e-6)
    assert A.gdp_delta(1.2, e) <= 1e-6
    assert A.gdp_delta(1.2, e * (1 - 1e-8)) > 1e-6
    assert np.allclose(A.gdp_mu(np.array([1.0, 4.0])), [1.0, 0.25])


# ---------------------------------------------------------------------------
# zCDP
# ---------------------------------------------------------------------------
def test_zcdp_parameters():
    assert A.zcdp_rho_gaussian(2.0) == 0.125
    assert A.zcdp_rho_pure(0.4) == pytest.approx(0.08)
    assert A.zcdp_compose([0.1, 0.2, 0.05]) == pytest.approx(0.35)
    assert A.zcdp_gaussian_multiplier(A.zcdp_rho_gaussian(1.7)) == pytest.approx(1.7)


RHOS = [1e-3, 0.05, 0.5, 2.0, 10.0]
DELTAS = [1e-2, 1e-6, 1e-12]


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_zcdp_conversions_never_below_the_gaussian_profile(rho, delta):
    s = A.zcdp_gaussian_multiplier(rho)
    exact = gaussian_epsilon(s, delta)
    cks = A.zcdp_epsilon(rho, delta)
    std = A.zcdp_epsilon(rho, delta, "standard")
    assert exact <= cks + 1e-12 <= std + 2e-12
    for e in [0.5 * cks, cks, 2 * cks + 0.1]:
        if e > 0:
            assert A.zcdp_delta(rho, e) >= gaussian_delta(s, e) * (1 - 1e-12)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_cks_epsilon_matches_a_fine_order_grid(rho, delta):
    """dp_accounting's RDP conversion (CKS Prop. 12 on a grid of orders) is at
    least ours, which optimises over every order exactly, and close to it."""
    orders = 1.0 + np.geomspace(1e-3, 1e4, 20001)
    theirs, _ = rdp.compute_epsilon(orders, orders * rho, delta)
    ours = A.zcdp_epsilon(rho, delta)
    assert ours <= theirs + 1e-12
    assert theirs - ours <= 1e-5 * max(ours, 1e-3) + 1e-9


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_zcdp_delta_and_epsilon_are_inverse(rho, delta):
    e = A.zcdp_epsilon(rho, delta)
    if e > 0:
        assert A.zcdp_delta(rho, e) == pytest.approx(delta, rel=1e-7)
    e = A.zcdp_epsilon(rho, delta, "standard")
    assert A.zcdp_delta(rho, e, "standard") == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
@pytest.mark.parametrize("method", ["cks", "standard"])
def test_zcdp_rho_round_trip_is_conservative(eps, delta, method):
    rho = A.zcdp_rho(eps, delta, method)
    got = A.zcdp_epsilon(rho, delta, method)
    assert got <= eps
    assert got == pytest.approx(eps, rel=1e-9)
    if method == "cks":
        assert rho >= A.zcdp_rho(eps, delta, "standard")


@pytest.mark.parametrize("eps0", [0.1, 0.5, 1.0, 2.0])
def test_zcdp_conversion_covers_randomized_response(eps0):
    """A pure eps0-DP mechanism is eps0^2/2-zCDP: its exact profile (randomized
    response) must stay below the converted delta."""
    rho = A.zcdp_rho_pure(eps0)
    for e in np.linspace(0.01, eps0, 7):
        rr = A.mixed_delta(None, e, epsilons=[eps0])  # exact RR profile
        assert rr <= A.zcdp_delta(rho, e) * (1 + 1e-12)


# ---------------------------------------------------------------------------
# Gaussian composed with pure and approximate DP steps
# ---------------------------------------------------------------------------
MIXED = [
    (2.0, [0.5]),
    (1.0, [0.1, 0.1, 0.3]),
    (5.0, [1.0, 1.0]),
    (3.0, [0.05] * 20),
    (0.7, [0.2, 0.4, 0.2, 0.4]),
]


@pytest.mark.parametrize("s, epsilons", MIXED)
@pytest.mark.parametrize("delta", [1e-4, 1e-9])
def test_mixed_epsilon_matches_the_pld_accountant(s, epsilons, delta):
    ours = A.mixed_epsilon(s, delta, epsilons=epsilons)
    theirs = _pld(s, epsilons).get_epsilon_for_delta(delta)
    assert ours <= theirs + 1e-9
    assert theirs - ours <= (len(epsilons) + 1) * INTERVAL + 1e-6
    # and the delta at our epsilon agrees with the accountant's delta there
    ref = _pld(s, epsilons).get_delta_for_epsilon(ours)
    assert A.mixed_delta(s, ours, epsilons=epsilons) <= ref * (1 + 1e-9)


@pytest.mark.parametrize("s, epsilons", MIXED)
def test_laplace_steps_are_dominated_by_randomized_response(s, epsilons):
    ours = A.mixed_epsilon(s, 1e-6, epsilons=epsilons)
    laplace = _pld(s, epsilons, laplace=True).get_epsilon_for_delta(1e-6)
    assert laplace <= ours + 1e-9


@pytest.mark.parametrize("eps0, k", [(0.1, 10), (0.5, 7), (1.0, 4)])
def test_pure_composition_matches_kairouz_oh_viswanath(eps0, k):
    """Theorem 3.3 of Kairouz, Oh and Viswanath (2015): k-fold eps0-DP is
    ((k - 2i) eps0, delta_i)-DP with delta_i = sum_{l<i} C(k, l)
    (e^{(k-l) eps0} - e^{(k-2i+l) eps0}) / (1 + e^{eps0})^k, and no better."""
    for i in range(0, (k + 1) // 2):
        e = (k - 2 * i) * eps0
        ref = sum(math.comb(k, l) * (math.exp((k - l) * eps0) - math.exp((k - 2 * i + l) * eps0))
                  for l in range(i)) / (1 + math.exp(eps0)) ** k
        assert A.mixed_delta(None, e, epsilons=[eps0] * k) == pytest.approx(ref, rel=1e-12,
                                                                            abs=1e-300)


@pytest.mark.parametrize("steps", [[(0.5, 1e-7)], [(0.2, 1e-8), (0.3, 0.0), (0.2, 1e-8)]])
def test_approximate_steps_match_the_pld_accountant(steps):
    eps_i = [e for e, _ in steps]
    del_i = [d for _, d in steps]
    ours = A.mixed_epsilon(2.0, 1e-5, epsilons=eps_i, deltas=del_i)
    theirs = _pld(2.0, eps_i, del_i).get_epsilon_for_delta(1e-5)
    assert ours <= theirs + 1e-9
    assert theirs - ours <= (len(steps) + 1) * INTERVAL + 1e-6


def test_mixed_reduces_to_the_gaussian_and_is_monotone():
    assert A.mixed_epsilon(1.5, 1e-6) == gaussian_epsilon(1.5, 1e-6)
    assert A.mixed_delta(1.5, 1.0) == pytest.approx(gaussian_delta(1.5, 1.0), rel=1e-15)
    assert A.mixed_gaussian_multiplier(1.0, 1e-6) == analytic_sigma(1.0, 1e-6)
    # composing more never helps (post-processing drops a step's output)
    base = A.mixed_delta(1.5, 1.0)
    more = A.mixed_delta(1.5, 1.0, epsilons=[0.1])
    most = A.mixed_delta(1.5, 1.0, epsilons=[0.1, 0.1])
    assert base < more < most
    # and it is never worse than basic composition of the Gaussian's own epsilon
    eg = gaussian_epsilon(1.5, 1e-6)
    assert A.mixed_epsilon(1.5, 1e-6, epsilons=[0.1, 0.2]) <= eg + 0.3


@pytest.mark.parametrize("epsilon, delta, epsilons", [
    (1.0, 1e-6, [0.1, 0.1]),
    (0.5, 1e-8, [0.05, 0.05, 0.1]),
    (4.0, 1e-5, [1.0]),
    (1.0, 0.05, [0.25] * 5),  # the steps' epsilons add up past the target
])
def test_mixed_multiplier_round_trip_and_minimality(epsilon, delta, epsilons):
    s = A.mixed_gaussian_multiplier(epsilon, delta, epsilons=epsilons)
    assert A.mixed_delta(s, epsilon, epsilons=epsilons) <= delta
    assert A.mixed_delta(s * (1 - 1e-9), epsilon, epsilons=epsilons) > delta * (1 - 2e-10)
    assert s >= analytic_sigma(epsilon, delta)
    assert A.mixed_epsilon(s, delta, epsilons=epsilons) == pytest.approx(epsilon, rel=1e-8)


def test_mixed_multiplier_refuses_an_exhausted_budget():
    with pytest.raises(ValueError, match="non-Gaussian steps"):
        A.mixed_gaussian_multiplier(1.0, 1e-6, epsilons=[0.6, 0.6])
    with pytest.raises(ValueError, match="deltas"):
        A.mixed_epsilon(1.0, 1e-6, epsilons=[0.1], deltas=[1e-5])


def test_too_many_outcomes_is_refused():
    with pytest.raises(ValueError, match="MAX_OUTCOMES"):
        A.mixed_delta(1.0, 1.0, epsilons=np.linspace(0.1, 0.2, 25))


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------
def test_steps_and_composed_guarantee():
    steps = [A.gaussian_step("sum", 3.0), A.gaussian_step("count", 6.0),
             A.pure_step("center", 0.1), A.pure_step("scale", 0.1)]
    assert [st.kind for st in steps] == ["gaussian", "gaussian", "pure", "pure"]
    g = A.compose(steps, delta=1e-6)
    s = A.compose_gaussian_multipliers([3.0, 6.0])
    assert g.noise_multiplier == pytest.approx(s)
    assert g.epsilon == A.mixed_epsilon(s, 1e-6, epsilons=[0.1, 0.1])
    assert g.rho == pytest.approx(1 / 18 + 1 / 72 + 0.01)
    assert g.method == "exact"
    z = A.compose(steps, delta=1e-6, method="zcdp")
    zs = A.compose(steps, delta=1e-6, method="zcdp-standard")
    assert g.epsilon < z.epsilon < zs.epsilon
    assert z.epsilon == A.zcdp_epsilon(g.rho, 1e-6)
    back = A.compose(steps, epsilon=g.epsilon)
    assert back.delta == pytest.approx(1e-6, rel=1e-8)
    json.dumps(g.as_dict())
    with pytest.raises(AttributeError):
        g.epsilon = 0.0  # frozen


def test_approximate_step_has_no_rho():
    st = A.approximate_step("stable", 0.5, 1e-9)
    assert st.kind == "approximate" and st.rho is None
    with pytest.raises(ValueError, match="zCDP"):
        A.compose([st], delta=1e-6, method="zcdp")
    g = A.compose([st, A.gaussian_step("sum", 2.0)], delta=1e-6)
    assert g.rho is None and g.epsilon > 0


@pytest.mark.parametrize("call, match", [
    (lambda: A.PrivacyStep("x"), "exactly one"),
    (lambda: A.PrivacyStep("x", noise_multiplier=1.0, epsilon=1.0), "exactly one"),
    (lambda: A.PrivacyStep("", epsilon=1.0), "name"),
    (lambda: A.gaussian_step("x", -1.0), "noise_multiplier"),
    (lambda: A.pure_step("x", 0.0), "epsilon"),
    (lambda: A.approximate_step("x", 1.0, 1.0), "delta"),
    (lambda: A.PrivacyStep("x", noise_multiplier=1.0, delta=1e-6), "delta"),
    (lambda: A.compose([], delta=1e-6), "steps"),
    (lambda: A.compose([A.pure_step("x", 1.0)]), "exactly one"),
    (lambda: A.compose([A.pure_step("x", 1.0)], delta=1e-6, method="rdp"), "method"),
    (lambda: A.compose(["x"], delta=1e-6), "PrivacyStep"),
    (lambda: A.compose_gaussian_multipliers([1.0, 0.0]), "multipliers"),
    (lambda: A.compose_gaussian_multipliers([]), "multipliers"),
    (lambda: A.split_gaussian_multiplier(1.0, [1.0, -1.0]), "weights"),
    (lambda: A.gdp_delta(-1.0, 1.0), "mu"),
    (lambda: A.gdp_epsilon(1.0, 2.0), "delta"),
    (lambda: A.zcdp_epsilon(0.0, 1e-6), "rho"),
    (lambda: A.zcdp_epsilon(1.0, 1e-6, method="best"), "method"),
    (lambda: A.zcdp_delta(1.0, math.nan), "epsilon"),
    (lambda: A.zcdp_rho(1.0, 0.0), "delta"),
    (lambda: A.zcdp_rho_pure(-1.0), "epsilon"),
    (lambda: A.mixed_delta(1.0, 1.0, epsilons=[0.1, -0.1]), "epsilons"),
    (lambda: A.mixed_delta(1.0, 1.0, epsilons=[0.1], deltas=[0.1, 0.1]), "deltas"),
    (lambda: A.mixed_delta(1.0, 1.0, epsilons=[0.1], deltas=[1.0]), "deltas"),
    (lambda: A.mixed_delta("1", 1.0), "multiplier"),
    (lambda: A.mixed_epsilon(1.0, [1e-6, 1e-5]), "delta"),
    (lambda: A.gaussian_profile(1.0, math.inf), "epsilon"),
])
def test_bad_arguments_are_named(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_compose_of_gaussian_steps_alone():
    """No non-Gaussian step: the exact composition is the composed Gaussian."""
    from dpsum.privacy.composition import compose, gaussian_composition_epsilon, gaussian_step
    g = compose([gaussian_step("a", 2.0), gaussian_step("b", 3.0)], delta=1e-6)
    assert g.epsilon == pytest.approx(gaussian_composition_epsilon([2.0, 3.0], 1e-6), rel=1e-12)

# ---------------------------------------------------------------------------
# bounded-range steps (exponential mechanisms)
# ---------------------------------------------------------------------------
def _renyi(p, q, alpha):
    """Renyi divergence of order alpha between two discrete distributions."""
    from scipy.special import logsumexp
    return float(logsumexp(alpha * np.log(p) + (1 - alpha) * np.log(q)) / (alpha - 1))


@pytest.mark.parametrize("eps", [0.05, 0.5, 2.0])
def test_exponential_mechanism_is_eps_squared_over_8_zcdp(eps):
    # brute force: exponential mechanisms on two neighbouring utility vectors
    # (|u - u'| <= 1, weights exp(eps u / 2)); their Renyi divergence of every
    # order stays below alpha * eps^2 / 8, the zCDP bound of the bounded-range
    # property, while the pure-DP bound eps^2 / 2 is four times looser
    gen = np.random.default_rng(3)
    rho = A.zcdp_rho_bounded_range(eps)
    assert rho == pytest.approx(eps ** 2 / 8) and rho == pytest.approx(A.zcdp_rho_pure(eps) / 4)
    worst = 0.0
    for trial in range(200):
        k = int(gen.integers(2, 12))
        u = gen.normal(size=k) * 3
        shift = gen.choice([-1.0, 0.0, 1.0], size=k) if trial % 2 else (np.arange(k) < k // 2) * 1.0
        p = np.exp(eps * u / 2); p /= p.sum()
        q = np.exp(eps * (u + shift) / 2); q /= q.sum()
        for alpha in (1.01, 1.5, 2.0, 4.0, 16.0, 64.0):
            ratio = _renyi(p, q, alpha) / alpha
            assert ratio <= rho * (1 + 1e-9)
            worst = max(worst, ratio)
    assert worst > 0.5 * rho  # the bound is nearly attained, not vacuous


def test_bounded_range_steps_count_and_compose():
    st = A.bounded_range_step("center", 0.02, count=64)
    assert st.kind == "bounded-range" and st.count == 64
    assert st.rho == pytest.approx(64 * 0.02 ** 2 / 8)
    g = A.gaussian_step("sum", 4.0)
    z = A.compose([st, g], delta=1e-6, method="zcdp")
    assert z.rho == pytest.approx(st.rho + A.zcdp_rho_gaussian(4.0))
    assert z.epsilon == A.zcdp_epsilon(z.rho, 1e-6)
    # the exact method treats it as 64 pure steps: the same as 64 records
    e1 = A.compose([st, g], delta=1e-6)
    e2 = A.compose([A.pure_step("c", 0.02)] * 64 + [g], delta=1e-6)
    assert e1.epsilon == pytest.approx(e2.epsilon, rel=1e-12)
    # count on a Gaussian step is that many releases composed exactly
    g3 = A.compose([A.PrivacyStep("sum", noise_multiplier=4.0, count=3)], delta=1e-6)
    assert g3.noise_multiplier == pytest.approx(4.0 / math.sqrt(3))
    assert json.loads(json.dumps(z.as_dict()))["steps"][0]["count"] == 64


@pytest.mark.parametrize("call, match", [
    (lambda: A.bounded_range_step("x", 0.0), "epsilon"),
    (lambda: A.bounded_range_step("x", 0.1, count=0), "count"),
    (lambda: A.bounded_range_step("x", 0.1, count=1.5), "count"),
    (lambda: A.PrivacyStep("x", noise_multiplier=1.0, bounded_range=True), "bounded-range"),
    (lambda: A.PrivacyStep("x", epsilon=1.0, delta=1e-6, bounded_range=True), "bounded-range"),
    (lambda: A.PrivacyStep("x", epsilon=1.0, bounded_range=1), "bounded_range"),
    (lambda: A.zcdp_rho_bounded_range(-1.0), "epsilon"),
])
def test_bounded_range_argument_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
