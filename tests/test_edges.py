"""Regression tests of issue 26 ("No leak at the edges"), first part: argument
rules, exact randomized response, composition and calibration at the edges of
the float range, and no NaN or infinity where a finite answer exists.

Each test failed before its fix.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

import dpsum
from dpsum import _validation as V
from dpsum import binary, distributions, kernels, pipeline, privacy, release
from dpsum.distributions import GeneralizedChiSquare
from dpsum.privacy import calibration, composition
from dpsum.release import discrete_noise

SECRET = "271828.1828"


# ------------------------------------------------------------ no data echoed
@pytest.mark.parametrize("data", [SECRET, SECRET.encode(), [[SECRET]], np.array([SECRET])])
def test_data_given_as_text_is_never_echoed(data):
    calls = [
        lambda: dpsum.gaussian_mechanism(data, epsilon=1.0, delta=1e-6, sensitivity=1.0),
        lambda: V.check_data_matrix(data),
        lambda: V.check_finite_array(data, "value"),
        lambda: V.check_bits(data),
        lambda: binary.randomized_response(data, epsilon=1.0, rng=0),
        lambda: pipeline.private_center(data, epsilon=1.0, lower=0, upper=1, rng=0),
        lambda: discrete_noise.secure_gaussian(data, sensitivity=1.0, epsilon=1.0, delta=1e-6, rng=0),
        lambda: kernels.round_to_grid(data, 0),
    ]
    for call in calls:
        with pytest.raises((TypeError, ValueError)) as info:
            call()
        assert "271828" not in str(info.value)


def test_parameters_given_as_text_are_described_by_type_only():
    with pytest.raises(TypeError, match="epsilon must be .* got str") as info:
        V.check_epsilon(SECRET)
    assert "271828" not in str(info.value)
    assert V.describe(SECRET) == "a str" and V.describe(b"1") == "a bytes"
    assert V.describe(object()) == "a object" and V.describe(1.5) == "1.5"


# ------------------------------------------------------------ masked arrays
def test_masked_arrays_are_refused_everywhere_data_or_parameters_enter():
    masked = np.ma.array([1.0, 1e6], mask=[0, 1])
    with pytest.raises(TypeError, match="value must not be a numpy masked array"):
        dpsum.gaussian_mechanism(masked, epsilon=1.0, delta=1e-6, sensitivity=1.0, rng=0)
    with pytest.raises(TypeError, match="bits must not be a numpy masked array"):
        binary.randomized_response(np.ma.array([1, 0], mask=[0, 1]), epsilon=1.0, rng=0)
    with pytest.raises(TypeError, match="X must not be a numpy masked array"):
        V.check_data_matrix(np.ma.array([[1.0, 2.0]], mask=[[0, 1]]))
    with pytest.raises(TypeError, match="stds must not be a numpy masked array"):
        V.check_vector(masked, "stds")
    with pytest.raises(TypeError, match="k must not be a numpy masked array"):
        V.check_integer(np.ma.array([1, 2], mask=[0, 1]), "k", 0, array=True)
    with pytest.raises(TypeError, match="epsilon must not be a numpy masked array"):
        calibration.analytic_sigma(np.ma.array([1.0, 2.0], mask=[0, 1]), 1e-6)


# ----------------------------------------------------------------- integers
def test_counts_beyond_int64_get_a_clear_error():
    with pytest.raises(ValueError, match="n must be an integer of magnitude below 2\\^63"):
        binary.randomized_response_variance(2**70, 1.0)
    with pytest.raises(ValueError, match="n must be an integer of magnitude below 2\\^63"):
        binary.binomial_estimate(3, 2**70, 0.1)
    with pytest.raises(ValueError, match="k must be an integer of magnitude below 2\\^63"):
        V.check_integer([1, 2**70], "k", 0, array=True)
    # as a real number 2**70 is fine
    assert V.check_positive(2**70, "sensitivity") == 2.0**70
    np.testing.assert_array_equal(V.as_real_array([2**70, 1], "w"), [2.0**70, 1.0])


# ---------------------------------------------------------------------- rng
def test_one_rng_rule_seed_sequence_everywhere():
    seq = np.random.SeedSequence(0)
    a = distributions.discrete_gaussian(4.0, size=5, rng=np.random.SeedSequence(0))
    b = distributions.discrete_gaussian(4.0, size=5, rng=np.random.default_rng(np.random.SeedSequence(0)))
    assert a.tolist() == b.tolist()
    distributions.discrete_laplace(2.0, size=2, rng=seq)
    discrete_noise.secure_gaussian([1.0], sensitivity=1.0, epsilon=1.0, delta=1e-6, rng=seq)
    for bad in (1.5, "0", True, np.random.RandomState(0)):
        with pytest.raises(TypeError, match="rng"):
            distributions.discrete_gaussian(4.0, size=1, rng=bad)
    with pytest.raises(ValueError, match="rng"):
        distributions.discrete_gaussian(4.0, size=1, rng=-1)
    assert V.check_secure_rng(None) is None


# ---------------------------------------------------------- grid helpers
def test_grid_samplers_and_helpers_check_their_arguments():
    with pytest.raises(ValueError, match="size"):
        distributions.discrete_gaussian(4.0, size=-1, rng=0)
    with pytest.raises(TypeError, match="size"):
        distributions.discrete_gaussian(4.0, size=True, rng=0)
    with pytest.raises(ValueError, match="size"):
        distributions.discrete_laplace(4.0, size=(2, -1), rng=0)
    with pytest.raises(ValueError, match="K must be a whole number"):
        kernels.round_to_grid([0.3], 2.5)
    with pytest.raises(ValueError, match="d must be a positive integer"):
        kernels.grid_exponent(1.0, 0)
    with pytest.raises(ValueError, match="charge"):
        kernels.grid_exponent(1.0, 1, charge=0.7)
    # sigma negligible against the sensitivity: the trivial guarantee, no ZeroDivisionError
    assert privacy.discrete_gaussian_delta(1e-300, 1.0) == 1.0
    assert 0.0 < privacy.discrete_gaussian_delta(1e300, 1.0) < 1e-300


def test_grid_exponent_is_exact_for_subnormal_and_huge_radii():
    for C, d in [(5e-324, 1), (1e-310, 7), (1.0, 4), (1e308, 10**6), (3.0, 2)]:
        K = kernels.grid_exponent(C, d)
        # sqrt(d) 2^(K-1) <= charge C < sqrt(d) 2^K, in exact arithmetic
        lhs = Fraction(math.sqrt(d)) * Fraction(2) ** (K - 1)
        assert lhs <= Fraction(kernels.GRID_CHARGE) * Fraction(C) < 2 * lhs


def test_secure_path_refuses_a_subnormal_grid_and_names_the_argument():
    with pytest.raises(ValueError, match="sensitivity is too small for the grid path"):
        discrete_noise.secure_gaussian([1.0], sensitivity=5e-324, epsilon=1.0, delta=1e-6, rng=0)
    with pytest.raises(ValueError, match="sensitivity is too small for the grid path"):
        discrete_noise.secure_laplace([1.0], sensitivity=5e-324, epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="epsilon is too small"):
        privacy.discrete_gaussian_sigma(1e-300, 1e-6)


# -------------------------------------------------------------- calibration
def test_subnormal_noise_levels_are_refused_naming_the_sensitivity():
    for f in (calibration.analytic_sigma, lambda e, d, s: calibration.classic_sigma(0.5, d, s)):
        with pytest.raises(ValueError, match="sensitivity is too small"):
            f(1.0, 1e-6, 5e-324)
    with pytest.raises(ValueError, match="sensitivity is too small"):
        privacy.discrete_gaussian_sigma(1.0, 1e-6, 5e-324)
    # the smallest normal noise levels are still served, within the rule
    s = calibration.analytic_sigma(1.0, 1e-6, 1e-307)
    assert s == pytest.approx(1e-307 * calibration.analytic_sigma(1.0, 1e-6), rel=1e-12)


# ------------------------------------------------------ randomized response
@pytest.mark.parametrize("eps", [1e-10, 0.5, 1.0, 10.0, 30.0, 36.0, 37.0, 50.0, 800.0])
def test_randomized_response_effective_epsilon_never_exceeds_epsilon(eps):
    p = binary._exact_flip_probability(eps)
    assert 0 < p <= 0.5 and p * 2**53 == int(p * 2**53)     # on the 2^-53 grid
    ratio = (1 - Fraction(p)) / Fraction(p)                 # e^(effective epsilon)
    with localcontext() as ctx:
        ctx.prec = 80
        assert Decimal(ratio.numerator) / Decimal(ratio.denominator) <= Decimal(eps).exp()
    effective = math.log(float(ratio))
    assert effective <= eps
    if eps <= 10:
        assert effective == pytest.approx(eps, rel=1e-9)
    assert effective <= math.log(2**53 - 1) + 1e-12


def test_randomized_response_draws_each_report_against_the_exact_threshold():
    bits = np.array([1] * 700 + [0] * 300)
    for eps in (0.7, 3.0, 40.0):
        rel = binary.randomized_response(bits, epsilon=eps, rng=11)
        gen = np.random.default_rng(11)
        f = binary._flip_threshold(eps)
        kept = 700 - int(np.count_nonzero(gen.random(700) < f))
        flipped = int(np.count_nonzero(gen.random(300) < f))
        assert rel.output == kept + flipped
        # U < f on the 2^-53 grid has probability ceil(f 2^53) 2^-53 exactly
        assert math.ceil(math.ldexp(f, 53)) == binary._exact_flip_probability(eps) * 2**53


def test_randomized_response_at_tiny_epsilon_refuses_instead_of_infinity():
    for eps in (5e-324, 1e-310):
        with pytest.raises(ValueError, match="epsilon is too small"):
            binary.randomized_response([1, 0, 1], epsilon=eps, rng=0)
        with pytest.raises(ValueError, match="epsilon is too small"):
            binary.randomized_response_estimate(1, 3, epsilon=eps)
        with pytest.raises(ValueError, match="epsilon is too small"):
            binary.randomized_response_variance(3, eps)
    v = binary.randomized_response_variance(1, 1e-154)      # sinh^2 would be subnormal
    assert v == pytest.approx(1e308, rel=1e-12)
    assert math.isfinite(binary.randomized_response([1, 0], epsilon=1e-300, rng=0).estimate)


# -------------------------------------------------------------- composition
def test_advanced_composition_accepts_pure_dp_steps():
    eps, dlt = privacy.advanced_composition(0.1, 0.0, 100, 1e-6)
    assert dlt == 1e-6
    assert eps == pytest.approx(math.sqrt(200 * math.log(1e6)) * 0.1
                                + 100 * 0.1 * math.expm1(0.1), rel=1e-14)


def test_composition_overflow_and_bad_steps_get_clear_errors():
    with pytest.raises(ValueError, match="epsilons sum to more than the largest float"):
        privacy.basic_composition([1e308, 1e308], [1e-6, 1e-6])
    for bad in (None, 3, "gaussian"):
        with pytest.raises(TypeError, match="steps must be a sequence of PrivacyStep"):
            composition.compose(bad, delta=1e-6)


@pytest.mark.parametrize("rho", [5e-324, 1e-310, 1e-200, 1e-12, 1e-5])
@pytest.mark.parametrize("eps", [1e-150, 1e-8, 1.0])
def test_zcdp_delta_at_tiny_rho_and_epsilon(rho, eps):
    d = composition.zcdp_delta(rho, eps)
    assert 0 < d <= math.sqrt(-math.expm1(-rho)) or d == 5e-324
    # consistent with the inverse conversion where it is informative
    if 1e-300 < d < 0.5:
        e2 = composition.zcdp_epsilon(rho, d * (1 + 1e-9))
        assert e2 <= eps * (1 + 1e-6) + 1e-12


def test_discrete_gaussian_calibration_at_tiny_epsilon_terminates_and_holds():
    for eps in (1e-20, 1e-150):
        sigma = privacy.discrete_gaussian_sigma(eps, 1e-6)
        assert privacy.discrete_gaussian_delta(sigma, eps) <= 1e-6


# ------------------------------------------------------- no NaN, no infinity
def test_confidence_intervals_at_a_subnormal_beta_are_finite():
    rel = dpsum.gaussian_mechanism([10.0, 20.0], epsilon=1.0, delta=1e-6, sensitivity=1.0, rng=0)
    for simultaneous in (False, True):
        lo, hi = release.confidence_intervals(rel, 5e-324, simultaneous=simultaneous)
        assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    lo, hi = release.confidence_intervals(rel, 5e-324)
    # z with 2 Phi(-z) = 5e-324 is 38.4854...
    np.testing.assert_allclose((hi - lo) / (2 * rel.noise_std), 38.48540833556734, rtol=1e-12)
    lo2, hi2 = release.confidence_intervals(rel, 5e-324, simultaneous=True)
    assert np.all(hi2 - lo2 >= hi - lo)


def test_saddlepoint_isf_near_one_is_the_exact_quantile():
    X = GeneralizedChiSquare(np.array([1.0, 0.5]))
    for p in (1 - 1e-16, 0.45):
        q = X.saddlepoint_isf(p)
        assert math.isfinite(q) and q == pytest.approx(float(X.isf(p)), rel=1e-12)


def test_private_center_refuses_a_domain_too_narrow_for_its_scale():
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="too narrow"):
        pipeline.private_center(X, epsilon=1.0, lower=0, upper=5e-324, rng=0)
    c = pipeline.private_center(X, epsilon=1.0, lower=0, upper=1e-290, rng=0)
    assert np.all(np.isfinite(c)) and np.all((0 <= c) & (c <= 1e-290))
