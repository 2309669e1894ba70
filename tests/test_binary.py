"""Binary sums: randomized response, additive binomial noise, sample-and-threshold.

Simulation tests use fixed seeds and accept a deviation of at most 5 standard
errors, where the standard error is computed from the number of repetitions
(and, for variances, from the sample's fourth central moment).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from dpsum import binary as B

REPS = 4000


def _bits(n: int, k: int, *, dtype=np.int64) -> np.ndarray:
    x = np.zeros(n, dtype=dtype)
    x[:k] = 1
    return x


def _simulate(mechanism, bits, reps=REPS, seed=0, **kwargs) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([mechanism(bits, rng=rng, **kwargs).estimate for _ in range(reps)])


def _assert_mean(sample: np.ndarray, expected: float, sd: float) -> None:
    # 5 standard errors of the mean, with the closed-form standard deviation
    se = sd / math.sqrt(sample.size)
    assert abs(sample.mean() - expected) <= 5 * se, (sample.mean(), expected, se)


def _assert_variance(sample: np.ndarray, expected: float) -> None:
    # 5 standard errors of the sample variance: se^2 = (m4 - s^4) / R
    centred = sample - sample.mean()
    s2 = np.mean(centred**2)
    m4 = np.mean(centred**4)
    se = math.sqrt(max(m4 - s2 * s2, 0.0) / sample.size)
    assert abs(sample.var(ddof=1) - expected) <= 5 * se, (sample.var(ddof=1), expected, se)


# ---------------------------------------------------------------------------
# validation


MECHANISMS = [
    (B.randomized_response, {"epsilon": 0.5}),
    (B.binomial_noise_mechanism, {"epsilon": 1.0, "delta": 1e-3}),
    (B.sample_and_threshold, {"epsilon": 1.0, "delta": 1e-3}),
]


@pytest.mark.parametrize("mech,kw", MECHANISMS)
@pytest.mark.parametrize("bad", [[0, 1, 2], [0, -1, 1], np.array([[0, 1], [1, 0]])])
def test_bits_must_be_one_dimensional_zeros_and_ones(mech, kw, bad):
    with pytest.raises(ValueError, match="bits"):
        mech(bad, rng=0, **kw)


@pytest.mark.parametrize("mech,kw", MECHANISMS)
@pytest.mark.parametrize("bad", [[0.0, 1.0], "0101", None, 1, [1, "a"]])
def test_bits_must_be_integers_or_booleans(mech, kw, bad):
    with pytest.raises(TypeError, match="bits"):
        mech(bad, rng=0, **kw)


@pytest.mark.parametrize("mech,kw", MECHANISMS)
def test_bits_must_not_be_empty(mech, kw):
    with pytest.raises(ValueError, match="bits"):
        mech(np.array([], dtype=int), rng=0, **kw)


@pytest.mark.parametrize("mech,kw", MECHANISMS)
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_epsilon_is_validated(mech, kw, bad):
    with pytest.raises(ValueError, match="epsilon"):
        mech(_bits(2000, 10), rng=0, **{**kw, "epsilon": bad})


@pytest.mark.parametrize("mech", [B.binomial_noise_mechanism, B.sample_and_threshold])
@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, float("nan")])
def test_delta_is_validated(mech, bad):
    with pytest.raises(ValueError, match="delta"):
        mech(_bits(20000, 10), epsilon=1.0, delta=bad, rng=0)


@pytest.mark.parametrize("mech", [B.binomial_noise_mechanism, B.sample_and_threshold])
def test_epsilon_above_one_is_refused_by_the_approximate_mechanisms(mech):
    with pytest.raises(ValueError, match=r"epsilon must be <= 1"):
        mech(_bits(100000, 10), epsilon=1.01, delta=1e-3, rng=0)


@pytest.mark.parametrize("mech,kw", MECHANISMS)
def test_rng_is_validated(mech, kw):
    with pytest.raises(TypeError, match="rng"):
        mech(_bits(2000, 10), rng="seed", **kw)


@pytest.mark.parametrize("mech,kw", MECHANISMS)
def test_input_is_not_modified_and_seed_reproduces(mech, kw):
    x = _bits(2000, 700)
    copy = x.copy()
    a = mech(x, rng=7, **kw)
    b = mech(x, rng=7, **kw)
    np.testing.assert_array_equal(x, copy)
    assert a == b


@pytest.mark.parametrize("mech,kw", MECHANISMS)
def test_booleans_and_integers_give_the_same_release(mech, kw):
    x = _bits(2000, 700)
    assert mech(x, rng=3, **kw) == mech(x.astype(bool), rng=3, **kw) == mech(x.tolist(), rng=3, **kw)


def test_release_is_frozen():
    rel = B.randomized_response([0, 1, 1], epsilon=1.0, rng=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rel.estimate = 0.0


# ---------------------------------------------------------------------------
# randomized response


def test_warner_fair_coin_is_epsilon_ln3():
    # truthful with prob 1/2, else a fair coin: P(yes | 1) = 3/4, P(yes | 0) = 1/4
    p_yes_1 = 0.5 + 0.5 * 0.5
    p_yes_0 = 0.5 * 0.5
    assert p_yes_1 == B.WARNER_KEEP_PROBABILITY
    assert math.isclose(math.log(p_yes_1 / p_yes_0), math.log(3))
    assert math.isclose(B.randomized_response_epsilon(0.75), math.log(3), rel_tol=1e-15)
    assert math.isclose(B.randomized_response_keep_probability(math.log(3)), 0.75, rel_tol=1e-15)


def test_seed_estimator_is_the_general_one_at_ln3():
    n = 1000
    for n_obs in (0, 250, 613, 1000):
        assert math.isclose(B.randomized_response_estimate(n_obs, n, epsilon=math.log(3)),
                            2 * n_obs - n / 2, abs_tol=1e-9)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_randomized_response_likelihood_ratio_is_e_to_the_epsilon(eps):
    q = B.randomized_response_keep_probability(eps)
    assert math.isclose(q / (1 - q), math.exp(eps), rel_tol=1e-12)


@pytest.mark.parametrize("bad", [0.5, 0.3, 1.0, 0.0])
def test_randomized_response_epsilon_needs_keep_probability_above_half(bad):
    with pytest.raises(ValueError, match="keep_probability"):
        B.randomized_response_epsilon(bad)


def test_randomized_response_variance_closed_form():
    eps = 0.8
    assert math.isclose(B.randomized_response_variance(100, eps),
                        100 * math.exp(eps) / math.expm1(eps) ** 2, rel_tol=1e-12)


@pytest.mark.parametrize("k", [0, 120, 500])
def test_randomized_response_is_unbiased_with_closed_form_variance(k):
    n, eps = 500, 0.7
    sample = _simulate(B.randomized_response, _bits(n, k), epsilon=eps, seed=k)
    var = B.randomized_response_variance(n, eps)
    _assert_mean(sample, k, math.sqrt(var))
    _assert_variance(sample, var)
    rel = B.randomized_response(_bits(n, k), epsilon=eps, rng=1)
    assert rel.bias(k) == 0.0 and math.isclose(rel.variance(k), var, rel_tol=1e-12)
    assert rel.delta == 0.0 and rel.threshold is None and rel.released


def test_randomized_response_reports_flip_at_the_right_rate():
    n, eps = 200_000, 1.0
    x = _bits(n, n // 4)
    reports = B.randomized_response_reports(x, epsilon=eps, rng=11)
    flip = 1 - B.randomized_response_keep_probability(eps)
    for mask in (x == 1, x == 0):
        m = int(mask.sum())
        observed = np.mean(reports[mask] != x[mask].astype(bool))
        # 5 binomial standard errors
        assert abs(observed - flip) <= 5 * math.sqrt(flip * (1 - flip) / m)


# ---------------------------------------------------------------------------
# additive binomial noise


def test_binomial_minimum_users_and_noise_probability():
    eps, delta = 0.5, 1e-6
    n_min = B.binomial_min_users(eps, delta)
    assert n_min == math.ceil(100 * math.log(2 / delta) / eps**2)
    p = B.binomial_noise_probability(n_min, eps, delta)
    assert 0.49 < p <= 0.5
    assert math.isclose(B.binomial_noise_probability(10 * n_min, eps, delta), p / 10, rel_tol=1e-12)
    with pytest.raises(ValueError, match="n must be at least"):
        B.binomial_noise_probability(n_min - 1, eps, delta)
    np.testing.assert_array_equal(B.binomial_min_users([1.0, 0.5], 1e-6),
                                  [math.ceil(100 * math.log(2e6)), n_min])


def test_binomial_refuses_too_few_users_and_bad_p():
    eps, delta = 1.0, 1e-3
    n_min = B.binomial_min_users(eps, delta)
    with pytest.raises(ValueError, match="n must be at least"):
        B.binomial_noise_mechanism(_bits(n_min - 1, 3), epsilon=eps, delta=delta, rng=0)
    x = _bits(n_min, 3)
    with pytest.raises(ValueError, match="p must be at most 1/2"):
        B.binomial_noise_mechanism(x, epsilon=eps, delta=delta, p=0.6, rng=0)
    with pytest.raises(ValueError, match="p must be at least"):
        B.binomial_noise_mechanism(_bits(4 * n_min, 3), epsilon=eps, delta=delta, p=0.05, rng=0)


def test_binomial_conditions():
    eps, delta = 1.0, 1e-3
    n_min = B.binomial_min_users(eps, delta)
    assert B.binomial_conditions_hold(n_min, eps, delta)
    assert not B.binomial_conditions_hold(n_min - 1, eps, delta)
    assert not B.binomial_conditions_hold(10 * n_min, 1.2, delta)
    assert B.binomial_conditions_hold(10 * n_min, eps, delta, p=0.3)
    assert not B.binomial_conditions_hold(10 * n_min, eps, delta, p=0.01)


@pytest.mark.parametrize("n_factor,k_frac", [(1, 0.0), (1, 0.5), (3, 0.02)])
def test_binomial_is_unbiased_with_closed_form_variance(n_factor, k_frac):
    eps, delta = 1.0, 1e-3
    n = n_factor * B.binomial_min_users(eps, delta)
    k = int(k_frac * n)
    sample = _simulate(B.binomial_noise_mechanism, _bits(n, k), epsilon=eps, delta=delta,
                       seed=n + k)
    var = B.binomial_variance(n, eps, delta)
    p = B.binomial_noise_probability(n, eps, delta)
    assert math.isclose(var, n * p * (1 - p), rel_tol=1e-12)
    _assert_mean(sample, k, math.sqrt(var))
    _assert_variance(sample, var)
    assert math.isclose(B.binary_mse("binomial", n=n, k=k, epsilon=eps, delta=delta), var,
                        rel_tol=1e-12)


def test_binomial_variance_is_smallest_at_the_minimum_number_of_users():
    eps, delta = 0.5, 1e-6
    n_min = B.binomial_min_users(eps, delta)
    mu = 50 * math.log(2 / delta) / eps**2
    variances = [B.binomial_variance(f * n_min, eps, delta) for f in (1, 2, 10, 1000)]
    assert all(a < b for a, b in zip(variances, variances[1:]))
    # n p = mu is fixed by (epsilon, delta): variance mu (1 - p), about mu / 2 at n_min
    assert math.isclose(variances[0], mu * (1 - mu / n_min), rel_tol=1e-12)
    assert variances[0] < 0.501 * mu and 0.99 * mu < variances[-1] < mu


def test_binomial_exact_delta_matches_brute_force():
    for n, p, eps in [(10, 0.3, 0.5), (50, 0.5, 0.2), (200, 0.05, 1.0), (7, 0.9, 0.3)]:
        z = np.arange(-1, n + 2)
        pz = stats.binom.pmf(z, n, p)
        pz1 = stats.binom.pmf(z - 1, n, p)
        brute = max(np.sum(np.maximum(0, pz - math.exp(eps) * pz1)),
                    np.sum(np.maximum(0, pz1 - math.exp(eps) * pz)))
        assert math.isclose(B.binomial_privacy_delta(n, p, eps), brute, rel_tol=1e-9, abs_tol=1e-15)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6])
def test_binomial_calibration_is_private_exactly(eps, delta):
    n_min = B.binomial_min_users(eps, delta)
    for n in (n_min, 10 * n_min):
        p = B.binomial_noise_probability(n, eps, delta)
        assert B.binomial_privacy_delta(n, p, eps) <= delta


def test_binomial_exact_delta_is_large_for_too_little_noise():
    # a handful of noise users cannot hide one bit at epsilon = 0.1
    assert B.binomial_privacy_delta(20, 0.5, 0.1) > 0.1


# ---------------------------------------------------------------------------
# sample and threshold


def test_threshold_uses_the_natural_logarithm():
    assert math.isclose(B.sample_threshold_tau(math.exp(-5.0)), 8.0, rel_tol=1e-15)
    assert math.isclose(B.sample_threshold_probability(0.4, math.exp(-5.0)), 0.05, rel_tol=1e-14)


def test_sample_threshold_conditions():
    eps, delta = 1.0, 1e-6
    tau = B.sample_threshold_tau(delta)
    assert B.sample_threshold_conditions_hold(eps, delta)
    assert B.sample_threshold_conditions_hold(eps, delta, p=0.5 * eps / tau)
    assert not B.sample_threshold_conditions_hold(eps, delta, p=1.1 * eps / tau)
    assert not B.sample_threshold_conditions_hold(eps, delta, threshold=tau - 1)
    assert not B.sample_threshold_conditions_hold(1.5, delta)


def test_sample_threshold_refuses_bad_threshold_and_p():
    x = _bits(1000, 500)
    with pytest.raises(ValueError, match="threshold must be at least"):
        B.sample_and_threshold(x, epsilon=1.0, delta=1e-3, threshold=5.0, rng=0)
    with pytest.raises(ValueError, match="p must be at most"):
        B.sample_and_threshold(x, epsilon=1.0, delta=1e-3, p=0.2, rng=0)
    with pytest.raises(ValueError, match="threshold"):
        B.sample_and_threshold(x, epsilon=1.0, delta=1e-3, threshold=-1.0, rng=0)


@pytest.mark.parametrize("k", [0, 5, 9, 10, 11, 40, 99, 100, 250, 1000, 5000])
def test_sample_threshold_bias_and_variance_match_direct_sums(k):
    eps, delta = 1.0, 1e-3
    p = B.sample_threshold_probability(eps, delta)
    t = math.ceil(B.sample_threshold_tau(delta))
    c = np.arange(k + 1)
    pmf = stats.binom.pmf(c, k, p)
    y = np.where(c >= t, c / p, 0.0)
    mean = np.sum(pmf * y)
    var = np.sum(pmf * (y - mean) ** 2)
    bias_direct = -np.sum(pmf[c < t] * c[c < t]) / p
    assert math.isclose(mean - k, bias_direct, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(B.sample_threshold_bias(k, eps, delta), bias_direct,
                        rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(B.sample_threshold_variance(k, eps, delta), var,
                        rel_tol=1e-8, abs_tol=1e-9)


def test_sample_threshold_closed_forms_are_vectorised_and_limit_correctly():
    eps, delta = 1.0, 1e-3
    p = B.sample_threshold_probability(eps, delta)
    ks = np.array([0, 3, 50, 10**6])
    bias = B.sample_threshold_bias(ks, eps, delta)
    var = B.sample_threshold_variance(ks, eps, delta)
    assert bias[0] == 0 and bias[1] == -3 and var[0] == var[1] == 0
    # far above the threshold: no bias, variance k (1 - p) / p
    assert abs(bias[-1]) < 1e-12
    assert math.isclose(var[-1], 1e6 * (1 - p) / p, rel_tol=1e-9)
    assert B.sample_threshold_release_probability(ks, eps, delta)[0] == 0.0


@pytest.mark.parametrize("k", [60, 100, 400])
def test_sample_threshold_closed_form_bias_and_variance_by_simulation(k):
    # epsilon = 1, delta = 1e-3: tau = 9.91, p = 0.101; k = 60 is mostly
    # suppressed, k = 100 is released about half the time, k = 400 almost always
    eps, delta = 1.0, 1e-3
    sample = _simulate(B.sample_and_threshold, _bits(5000, k), epsilon=eps, delta=delta, seed=k)
    bias = B.sample_threshold_bias(k, eps, delta)
    var = B.sample_threshold_variance(k, eps, delta)
    _assert_mean(sample, k + bias, math.sqrt(var))
    _assert_variance(sample, var)
    p_release = B.sample_threshold_release_probability(k, eps, delta)
    released = np.mean(sample > 0)
    assert abs(released - p_release) <= 5 * math.sqrt(p_release * (1 - p_release) / REPS) + 1e-12


def test_sample_threshold_release_semantics():
    eps, delta = 1.0, 1e-3
    rng = np.random.default_rng(5)
    x = _bits(2000, 100)
    seen_released = seen_suppressed = False
    for _ in range(200):
        rel = B.sample_and_threshold(x, epsilon=eps, delta=delta, rng=rng)
        assert rel.mechanism == "sample and threshold" and rel.n == 2000
        if rel.released:
            seen_released = True
            assert rel.output >= rel.threshold and rel.estimate == rel.output / rel.probability
        else:
            seen_suppressed = True
            assert rel.output == 0 and rel.estimate == 0.0
    assert seen_released and seen_suppressed


def test_sample_threshold_exact_delta_matches_brute_force():
    def brute(p, tau, eps, count):
        t, best = math.ceil(tau), 0.0
        for k in range(count):
            c = np.arange(k + 2)
            pk, pk1 = stats.binom.pmf(c, k, p), stats.binom.pmf(c, k + 1, p)
            for a, b in ((pk1, pk), (pk, pk1)):
                d = max(0.0, a[:t].sum() - math.exp(eps) * b[:t].sum())
                d += np.sum(np.maximum(0.0, a[t:] - math.exp(eps) * b[t:]))
                best = max(best, d)
        return best

    for p, tau, eps in [(0.2, 4.5, 1.0), (0.1, 3.0, 0.5), (0.3, 5.2, 2.0)]:
        assert math.isclose(B.sample_threshold_privacy_delta(p, tau, eps), brute(p, tau, eps, 300),
                            rel_tol=1e-9)


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0])
@pytest.mark.parametrize("delta", [0.5, 1e-2, 1e-8])
def test_sample_threshold_calibration_is_private_exactly(eps, delta):
    p = B.sample_threshold_probability(eps, delta)
    tau = B.sample_threshold_tau(delta)
    assert B.sample_threshold_privacy_delta(p, tau, eps) <= delta


def test_sample_threshold_is_not_private_for_large_epsilon():
    # outside the proven range the same recipe fails: epsilon = 4, delta = 0.1
    eps, delta = 4.0, 0.1
    p = eps / B.sample_threshold_tau(delta)
    assert B.sample_threshold_privacy_delta(p, B.sample_threshold_tau(delta), eps) > delta


def test_sample_threshold_exact_delta_refuses_unbounded_reverse_loss():
    with pytest.raises(ValueError, match="ln\\(1/\\(1-p\\)\\)"):
        B.sample_threshold_privacy_delta(0.5, 5.0, 0.5)


# ---------------------------------------------------------------------------
# comparison


def test_binary_mse_agrees_with_releases_and_marks_unavailable_binomial():
    eps, delta = 1.0, 1e-6
    n_min = B.binomial_min_users(eps, delta)
    n = np.array([100, n_min, 10 * n_min])
    mse = B.binary_mse("binomial", n=n, k=50, epsilon=eps, delta=delta)
    assert np.isinf(mse[0]) and np.all(np.isfinite(mse[1:])) and mse[1] < mse[2]
    x = _bits(3000, 400)
    for mech, name, kw in [(B.randomized_response, "randomized response", {}),
                           (B.sample_and_threshold, "sample and threshold", {"delta": delta})]:
        rel = mech(x, epsilon=eps, rng=0, **kw)
        assert math.isclose(B.binary_mse(name, n=3000, k=400, epsilon=eps, delta=delta),
                            rel.mean_squared_error(400), rel_tol=1e-12)


def test_binary_mse_validates():
    with pytest.raises(ValueError, match="mechanism"):
        B.binary_mse("laplace", n=10, k=1, epsilon=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="k must be at most n"):
        B.binary_mse("randomized response", n=10, k=11, epsilon=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="epsilon must be <= 1"):
        B.binary_mse("sample and threshold", n=10, k=1, epsilon=2.0, delta=1e-3)
    with pytest.raises(ValueError, match="k must be at most"):
        B.randomized_response([0, 1], epsilon=1.0, rng=0).variance(3)


def test_binomial_min_users_with_a_tiny_epsilon_is_a_clear_error():
    with pytest.raises(ValueError, match="epsilon is too small"):
        B.binomial_min_users(1e-300, 1e-6)
    with pytest.raises(ValueError, match="epsilon is too small"):
        B.binomial_min_users([1.0, 1e-300], 1e-6)
    assert B.binomial_min_users(1e-3, 1e-6) == math.ceil(100 * math.log(2e6) / 1e-6)


@pytest.mark.parametrize("mech", [B.binomial_noise_mechanism, B.sample_and_threshold])
def test_delta_none_names_delta(mech):
    with pytest.raises(TypeError, match="delta"):
        mech(_bits(20000, 10), epsilon=1.0, delta=None, rng=0)


def test_integer_arguments_follow_the_package_rule():
    # whole floats are integers, fractions and booleans are not
    assert B.randomized_response_variance(100.0, 1.0) == B.randomized_response_variance(100, 1.0)
    with pytest.raises(ValueError, match="n must be a whole number"):
        B.randomized_response_variance(100.5, 1.0)
    with pytest.raises(TypeError, match="n must be an integer, not a boolean"):
        B.randomized_response_variance(True, 1.0)


# ---------------------------------------------------------------------------
# how far the privacy arguments reach (book chapter 7)


def test_sample_threshold_proof_epsilon_is_the_root_of_the_proofs_condition():
    """The argument works exactly while c(eps) = (1 - e^-eps)/eps >= (e - 1)/3;
    the constant is that root, and the proof's bound exp(-tau h(c tau)) meets
    delta = exp(-(tau - 3)) with equality at tau = e / c there."""
    eps = B.SAMPLE_THRESHOLD_PROOF_EPSILON
    c = -math.expm1(-eps) / eps
    assert c == pytest.approx(math.expm1(1.0) / 3, rel=1e-14)
    assert 1.2413 < eps < 1.2414
    for e, sign in ((eps * (1 - 1e-6), 1), (eps * (1 + 1e-6), -1)):
        c_e = -math.expm1(-e) / e
        tau = math.e / c_e
        margin = tau * (math.log(c_e * tau) - 1 + 1 / (c_e * tau)) - (tau - 3)
        assert sign * margin > 0


def test_binomial_proof_epsilon_and_its_inclusion_condition():
    """The binomial argument needs eps / (2 sqrt 5) + 1/mu <= tanh(eps / 2),
    with mu = 50 ln(2/delta) / eps^2 > 50 ln 2 / eps^2; it holds up to
    BINOMIAL_PROOF_EPSILON = sqrt 5 for every delta < 1, while the stronger
    eps / sqrt 5 <= tanh(eps / 2) fails beyond about 1.204."""
    assert B.BINOMIAL_PROOF_EPSILON == pytest.approx(math.sqrt(5), rel=1e-15)
    eps = np.linspace(1e-3, B.BINOMIAL_PROOF_EPSILON, 2001)
    for delta in (0.999, 0.5, 1e-6):
        mu = 50 * math.log(2 / delta) / eps**2
        assert np.all(eps / (2 * math.sqrt(5)) + 1 / mu <= np.tanh(eps / 2))
    assert math.tanh(1.21 / 2) < 1.21 / math.sqrt(5) and math.tanh(1.0 / 2) > 1.0 / math.sqrt(5)


def test_max_epsilon_is_still_the_published_condition():
    assert B.MAX_EPSILON == 1.0 < B.SAMPLE_THRESHOLD_PROOF_EPSILON < B.BINOMIAL_PROOF_EPSILON
    with pytest.raises(ValueError, match="epsilon"):
        B.sample_and_threshold(np.ones(20, dtype=bool), epsilon=1.1, delta=1e-3, rng=0)
