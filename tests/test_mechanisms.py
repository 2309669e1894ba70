"""Mechanisms (Algorithms 1-3, clipping baseline), scalings and closed-form errors.

Monte Carlo tolerances: for R independent releases with per-coordinate noise
standard deviations s_j, the mean of ``(estimate - target)_j / s_j`` is
N(0, 1/R), and the mean of ``||estimate - target||^2`` has standard error
``sqrt(2 sum_j s_j^4 / R)``. Every check allows 5 standard errors (a false
alarm probability below 1e-6 per check).
"""

from __future__ import annotations

import numpy as np
import pytest

import dpsum
from dpsum import errors, scaling
from dpsum.calibration import analytic_sigma, classic_sigma
from dpsum.clipping import clip_radius, clipped_sum
from dpsum.gchisq import GeneralizedChiSquare
from dpsum.mechanisms import (
    clipped_gaussian_mechanism,
    elliptical_gaussian_mechanism,
    gaussian_data_mechanism,
    gaussian_mechanism,
    release_diagnostics,
    laplace_mechanism,
)

EPS, DELTA = 1.0, 1e-6
Z = 5.0  # standard errors allowed in every Monte Carlo check


def _check_unbiased_and_mse(estimates, target, noise_std):
    """Mean equals target and MSE equals sum s_j^2, both within Z standard errors."""
    R = estimates.shape[0]
    z = (estimates - target).mean(axis=0) / (noise_std / np.sqrt(R))
    assert np.max(np.abs(z)) < Z + np.sqrt(2 * np.log(target.size)), z
    sq = np.sum((estimates - target) ** 2, axis=1)
    expected = np.sum(noise_std**2)
    se = np.sqrt(2 * np.sum(noise_std**4) / R)
    assert abs(sq.mean() - expected) < Z * se, (sq.mean(), expected, se)


# --------------------------------------------------------------------- scalings

def test_elliptical_scaling_is_unit_norm_and_theorem_4():
    bounds = np.array([4.0, 1.0, 0.25, 2.0])
    b = scaling.elliptical_scaling(bounds)
    assert np.linalg.norm(b) == pytest.approx(1.0, rel=1e-15)
    np.testing.assert_allclose(b, np.sqrt(bounds / bounds.sum()), rtol=1e-15)


def test_gaussian_data_scaling_satisfies_constraint_10():
    stds = np.array([3.0, 1.0, 0.1])
    b = scaling.gaussian_data_scaling(stds)
    np.testing.assert_allclose(b, 1 / (np.sqrt(stds) * np.sqrt(stds.sum())), rtol=1e-15)
    assert np.sum((b * stds) ** 2) == pytest.approx(1.0, rel=1e-14)


@pytest.mark.parametrize("alpha, reference", [
    (0.0, lambda s: np.ones_like(s)),
    (0.5, scaling.gaussian_data_scaling),
    (1.0, scaling.whitening_scaling),
])
def test_power_scaling_family(alpha, reference):
    stds = np.array([5.0, 2.0, 0.5, 0.01])
    b = scaling.power_scaling(stds, alpha)
    assert np.sum((b * stds) ** 2) == pytest.approx(1.0, rel=1e-13)
    ref = reference(stds)
    np.testing.assert_allclose(b / b[0], ref / ref[0], rtol=1e-12)


@pytest.mark.parametrize("func", [scaling.elliptical_scaling, scaling.gaussian_data_scaling,
                                  scaling.whitening_scaling])
def test_scalings_reject_bad_input(func):
    for bad in ([1.0, 0.0], [1.0, -2.0], [1.0, np.nan], [[1.0]]):
        with pytest.raises(ValueError):
            func(bad)


# --------------------------------------------------------- closed-form errors

def test_elliptical_error_is_equation_6_and_optimal():
    rng = np.random.default_rng(0)
    bounds = rng.uniform(0.1, 5, size=6)
    sopt = analytic_sigma(EPS, DELTA)
    opt = errors.elliptical_noise_error(bounds, EPS, DELTA)
    assert opt == pytest.approx(sopt**2 * np.sum(bounds) ** 2, rel=1e-13)
    for _ in range(50):
        other = errors.elliptical_noise_error(bounds, EPS, DELTA, scaling=rng.uniform(0.1, 1, 6))
        assert other >= opt * (1 - 1e-12)
    ratio = errors.gaussian_sum_error(bounds, EPS, DELTA) / opt
    assert ratio == pytest.approx(errors.elliptical_improvement_ratio(bounds), rel=1e-12)
    assert ratio >= 1 and ratio < bounds.size


def test_improvement_ratio_equality_case():
    assert errors.elliptical_improvement_ratio(np.full(7, 2.5)) == pytest.approx(1.0, rel=1e-15)


def test_gaussian_data_error_is_equation_9():
    stds = np.array([2.0, 1.0, 0.3])
    b = scaling.gaussian_data_scaling(stds)
    C = clip_radius(stds, 1e-4, b)
    sopt = analytic_sigma(EPS, DELTA)
    expected = (2 * C * sopt) ** 2 * np.sum(b**-2.0)
    assert errors.gaussian_data_error(stds, EPS, DELTA, 1e-4) == pytest.approx(expected, rel=1e-13)
    add_remove = errors.gaussian_data_error(stds, EPS, DELTA, 1e-4, neighbouring="add-remove")
    assert add_remove == pytest.approx(expected / 4, rel=1e-13)


def test_isotropic_noise_error():
    assert errors.isotropic_noise_error(2.0, 5) == 20.0
    with pytest.raises(ValueError, match="d must be"):
        errors.isotropic_noise_error(1.0, 0)


# --------------------------------------------------------------- clip radius

def test_clip_radius_is_the_exact_quantile_rounded_up():
    stds = np.array([1.0, 0.5, 0.25, 0.125])
    b = scaling.gaussian_data_scaling(stds)
    p = 1e-9
    C = clip_radius(stds, p, b)
    dist = GeneralizedChiSquare((b * stds) ** 2)
    assert dist.sf(C**2) <= p
    assert dist.sf((C * (1 - 1e-9)) ** 2) > p


def test_clip_radius_equal_weights_matches_chi2():
    from scipy import stats
    d, p = 20, 1e-6
    C = clip_radius(np.ones(d), p)
    assert C**2 == pytest.approx(stats.chi2.isf(p, d), rel=1e-9)


# --------------------------------------------------------------- clipped sum

def test_clipped_sum_matches_the_definition_and_leaves_input_alone():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5000, 7)) * np.array([5, 1, 1, 0.1, 2, 3, 1])
    X0 = X.copy()
    b = rng.uniform(0.2, 2.0, 7)
    c = rng.normal(size=7)
    C = 3.0
    T, k = clipped_sum(X, C, b, c)
    Y = (X0 - c) * b
    norms = np.linalg.norm(Y, axis=1)
    ref = (np.minimum(1, C / norms)[:, None] * Y).sum(axis=0)
    np.testing.assert_allclose(T, ref, rtol=1e-12, atol=1e-9)
    assert k == int(np.sum(norms > C))
    np.testing.assert_array_equal(X, X0)


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e150, 1e200, 1e307])
def test_clipped_rows_never_exceed_C(scale):
    rng = np.random.default_rng(2)
    C = 1.0
    for _ in range(200):
        row = rng.standard_normal((1, 5)) * scale
        T, _ = clipped_sum(row, C)
        assert np.all(np.isfinite(T))
        assert np.linalg.norm(T) <= C


def test_clipped_sum_clips_rows_that_overflow_when_scaled():
    # issue 16: such rows are clipped (to the direction (1, 1)/sqrt(2)), not refused or dropped
    T, k = clipped_sum(np.full((2, 2), 1e308), 1.0, scaling=np.array([10.0, 10.0]))
    np.testing.assert_allclose(T, np.full(2, np.sqrt(2.0)), rtol=1e-14)
    assert k == 2


# --------------------------------------------------------------- mechanisms

def test_gaussian_mechanism_release_fields_and_distribution():
    value = np.array([1.0, -2.0, 3.0])
    rel = gaussian_mechanism(value, epsilon=EPS, delta=DELTA, sensitivity=2.0, rng=0)
    assert rel.noise_std == pytest.approx(np.full(3, 2.0 * analytic_sigma(EPS, DELTA)), rel=1e-15)
    assert rel.scaling is None and rel.clip_norm is None
    classic = gaussian_mechanism(value, epsilon=0.5, delta=DELTA, sensitivity=2.0,
                                 calibration="classic", rng=0)
    assert classic.sigma_opt == pytest.approx(classic_sigma(0.5, DELTA))
    rng = np.random.default_rng(3)
    est = np.array([gaussian_mechanism(value, epsilon=EPS, delta=DELTA, sensitivity=2.0,
                                       rng=rng).estimate for _ in range(2000)])
    _check_unbiased_and_mse(est, value, rel.noise_std)


def test_gaussian_mechanism_keeps_shape_of_scalars_and_matrices():
    assert gaussian_mechanism(3.0, epsilon=1, delta=1e-5, sensitivity=1, rng=0).estimate.shape == ()
    assert gaussian_mechanism(np.ones((2, 3)), epsilon=1, delta=1e-5, sensitivity=1,
                              rng=0).estimate.shape == (2, 3)


def test_elliptical_mechanism_noise_and_error_equation_6():
    rng = np.random.default_rng(4)
    bounds = np.array([8.0, 2.0, 1.0, 0.5])
    X = rng.uniform(-6, 6, size=(300, 4))
    X0 = X.copy()
    rel = elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, widths=bounds, rng=rng)
    diag = release_diagnostics(X, rel)
    np.testing.assert_array_equal(X, X0)
    sopt = analytic_sigma(EPS, DELTA)
    b = scaling.elliptical_scaling(bounds)
    np.testing.assert_allclose(rel.noise_std, sopt * bounds / b, rtol=1e-14)
    assert np.sum(rel.noise_std**2) == pytest.approx(sopt**2 * bounds.sum() ** 2, rel=1e-12)
    target = np.clip(X, -bounds / 2, bounds / 2).sum(axis=0)
    assert diag["clamped_values"] == int(np.sum(np.abs(X) > bounds / 2))
    est = np.array([elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, widths=bounds,
                                                  rng=rng).estimate for _ in range(1500)])
    _check_unbiased_and_mse(est, target, rel.noise_std)


def test_gaussian_data_release_fields_follow_the_formulas():
    rng = np.random.default_rng(5)
    stds = np.array([3.0, 1.0, 0.2])
    X = rng.normal(0, stds, size=(1000, 3))
    rel = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, rng=rng)
    b = scaling.gaussian_data_scaling(stds)
    C = clip_radius(stds, 1 / 1000, b)
    sopt = analytic_sigma(EPS, DELTA)
    np.testing.assert_allclose(rel.scaling, b, rtol=1e-15)
    assert rel.clip_norm == pytest.approx(C, rel=1e-15)
    np.testing.assert_allclose(rel.noise_std, 2 * C * sopt / b, rtol=1e-14)
    assert rel.sensitivity == pytest.approx(2 * C)
    assert rel.expected_squared_error == pytest.approx(
        errors.gaussian_data_error(stds, EPS, DELTA, 1 / 1000), rel=1e-12)
    ar = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, clip_probability=1e-3,
                                 neighbouring="add-remove", rng=rng)
    np.testing.assert_allclose(rel.noise_std, 2 * ar.noise_std, rtol=1e-15)


def test_gaussian_data_mechanism_mean_and_mse():
    rng = np.random.default_rng(6)
    stds = np.array([4.0, 1.0, 0.5, 0.1])
    X = rng.normal(0, stds, size=(400, 4)) * 1.5  # heavier than the model: some rows clip
    b = scaling.gaussian_data_scaling(stds)
    first = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, rng=rng)
    T, k = clipped_sum(X, first.clip_norm, b)
    assert k > 0
    target = T / b
    est = np.array([gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds,
                                            rng=rng).estimate for _ in range(600)])
    _check_unbiased_and_mse(est, target, first.noise_std)


def test_scaling_is_invariant_to_a_constant_factor():
    rng = np.random.default_rng(7)
    stds = np.array([2.0, 1.0, 0.5])
    X = rng.normal(0, stds, size=(200, 3))
    b = np.array([0.3, 1.0, 2.0])
    r1 = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, scaling=b, rng=11)
    r2 = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, scaling=7.5 * b, rng=11)
    np.testing.assert_allclose(r1.noise_std, r2.noise_std, rtol=1e-10)
    np.testing.assert_allclose(r1.estimate, r2.estimate, rtol=1e-9, atol=1e-9)
    assert r2.clip_norm == pytest.approx(7.5 * r1.clip_norm, rel=1e-10)


def test_no_scaling_agrees_with_the_clipping_baseline():
    rng = np.random.default_rng(8)
    stds = np.array([2.0, 1.0, 0.5])
    X = rng.normal(0, stds, size=(300, 3))
    for relation, p in (("replace", None), ("add-remove", 1e-3)):
        r1 = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, scaling="none",
                                     clip_probability=p, neighbouring=relation, rng=12)
        r2 = clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=r1.clip_norm,
                                        neighbouring=relation, rng=12)
        np.testing.assert_array_equal(r1.estimate, r2.estimate)
        np.testing.assert_array_equal(r1.noise_std, r2.noise_std)


def test_fraction_of_clipped_rows_matches_clip_probability():
    rng = np.random.default_rng(9)
    stds = np.array([5.0, 2.0, 1.0, 0.5, 0.1])
    center = np.array([10.0, -3.0, 0.0, 1.0, 2.0])
    n, p = 200_000, 0.01
    X = rng.normal(center, stds, size=(n, 5))
    for scale in ("optimal", "none"):
        rel = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, center=center,
                                      clip_probability=p, scaling=scale, rng=rng)
        diag = release_diagnostics(X, rel)
        se = np.sqrt(n * p * (1 - p))
        assert abs(diag["clipped_rows"] - n * p) < Z * se


def test_center_is_added_back_and_add_remove_sensitivity_covers_it():
    rng = np.random.default_rng(10)
    stds = np.array([1.0, 1.0])
    center = np.array([100.0, -50.0])
    X = rng.normal(center, stds, size=(500, 2))
    rel = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, center=center, rng=1)
    # the estimate is close to the true sum (noise std ~ 2 C sigma_opt / b)
    assert np.all(np.abs(rel.estimate - X.sum(axis=0)) < 6 * rel.noise_std)
    ar = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, center=center,
                                 clip_probability=1e-3, neighbouring="add-remove", rng=1)
    b = ar.scaling
    assert ar.sensitivity == pytest.approx(ar.clip_norm + np.linalg.norm(b * center))
    assert np.all(np.abs(ar.estimate - X.sum(axis=0)) < 6 * ar.noise_std)


# --------------------------------------------------------------- validation

class _Untouchable:
    """An 'array' that fails the test if a mechanism reads it."""

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data were read before the arguments were validated")


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=np.nan), "epsilon"),
    (dict(delta=1.0), "delta"),
    (dict(delta=0.0), "delta"),
    (dict(neighbouring="swap"), "neighbouring"),
])
def test_gaussian_data_mechanism_validates_before_reading_data(kwargs, match):
    args = dict(epsilon=EPS, delta=DELTA, stds=np.ones(2), neighbouring="replace")
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        gaussian_data_mechanism(_Untouchable(), **args)


@pytest.mark.parametrize("kwargs, match", [
    (dict(stds=[1.0, 0.0]), "stds"),
    (dict(stds=[1.0, -1.0]), "stds"),
    (dict(stds=[1.0, 1.0, 1.0]), "stds must have length 2"),
    (dict(center=[0.0, np.inf]), "center"),
    (dict(clip_probability=0.0), "clip_probability"),
    (dict(clip_probability=1.0), "clip_probability"),
    (dict(scaling="best"), "scaling"),
    (dict(scaling=[1.0, 0.0]), "scaling"),
    (dict(neighbouring="add-remove"), "clip_probability must be given"),
])
def test_gaussian_data_mechanism_rejects_bad_arguments(kwargs, match):
    X = np.ones((10, 2))
    args = dict(epsilon=EPS, delta=DELTA, stds=np.ones(2))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        gaussian_data_mechanism(X, **args)


@pytest.mark.parametrize("X, match", [
    (np.array([[1.0, np.nan]]), "NaN"),
    (np.array([[1.0, np.inf]]), "NaN or infinite"),
    (np.ones(3), "2-dimensional"),
    (np.ones((0, 2)), "empty"),
])
def test_mechanisms_reject_bad_data(X, match):
    with pytest.raises(ValueError, match=match):
        gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=np.ones(2),
                                clip_probability=0.1)
    with pytest.raises(ValueError, match=match):
        clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=1.0)
    with pytest.raises(ValueError, match=match):
        elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, widths=np.ones(2))


def test_other_mechanisms_reject_bad_arguments():
    X = np.ones((5, 2))
    with pytest.raises(ValueError, match="widths"):
        elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, widths=[1.0, 0.0])
    with pytest.raises(ValueError, match="widths must have length 2"):
        elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, widths=[1.0])
    with pytest.raises(ValueError, match="clip_norm"):
        clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=-1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_mechanism([1.0], epsilon=EPS, delta=DELTA, sensitivity=0.0)
    with pytest.raises(ValueError, match="calibration"):
        gaussian_mechanism([1.0], epsilon=EPS, delta=DELTA, sensitivity=1.0, calibration="exact")
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_mechanism([1.0], epsilon=2.0, delta=DELTA, sensitivity=1.0, calibration="classic")
    with pytest.raises(ValueError, match="value"):
        gaussian_mechanism([np.nan], epsilon=EPS, delta=DELTA, sensitivity=1.0)
    with pytest.raises(TypeError, match="rng"):
        gaussian_mechanism([1.0], epsilon=EPS, delta=DELTA, sensitivity=1.0, rng="seed")
    with pytest.raises(ValueError, match="n >= 2"):
        gaussian_data_mechanism(np.ones((1, 2)), epsilon=EPS, delta=DELTA, stds=np.ones(2))


def test_laplace_mechanism_release_fields():
    value = np.array([1.0, -2.0, 3.0])
    rel = laplace_mechanism(value, epsilon=0.5, sensitivity=2.0, neighbouring="add-remove", rng=0)
    assert rel.delta == 0.0 and rel.epsilon == 0.5 and rel.mechanism == "laplace"
    assert rel.noise_std == pytest.approx(np.full(3, np.sqrt(2) * 4.0), rel=1e-15)
    assert rel.sensitivity == 2.0 and rel.sigma_opt == pytest.approx(np.sqrt(2) / 0.5)
    assert rel.neighbouring is dpsum.Neighbouring.ADD_REMOVE
    assert rel.expected_squared_error == pytest.approx(3 * 2 * 4.0**2)
    assert laplace_mechanism(3.0, epsilon=1, sensitivity=1, rng=0).estimate.shape == ()
    a = laplace_mechanism(value, epsilon=1, sensitivity=1, rng=5).estimate
    assert np.array_equal(a, laplace_mechanism(value, epsilon=1, sensitivity=1, rng=5).estimate)


def test_laplace_noise_has_the_laplace_distribution_and_mse():
    """DKW: sup |F_n - F| <= sqrt(log(2/a) / (2n)) with probability 1 - a; and the
    squared error has mean 2 d b^2 and variance 20 d b^4 (Laplace fourth moment 24 b^4)."""
    rng = np.random.default_rng(11)
    d, R, b = 4, 20_000, 3.0
    value = np.arange(d, dtype=float)
    noise = np.array([laplace_mechanism(value, epsilon=0.25, sensitivity=0.75,
                                        rng=rng).estimate for _ in range(R // 4)]) - value
    z = np.sort(noise.ravel())
    cdf = np.where(z < 0, 0.5 * np.exp(z / b), 1 - 0.5 * np.exp(-z / b))
    n = z.size
    ks = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
    assert ks < np.sqrt(np.log(2 / 1e-6) / (2 * n))
    sq = np.sum(noise**2, axis=1)
    se = np.sqrt(20 * d * b**4 / sq.size)
    assert abs(sq.mean() - 2 * d * b**2) < Z * se


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(epsilon=0.0, sensitivity=1.0), ValueError, "epsilon"),
    (dict(epsilon=np.inf, sensitivity=1.0), ValueError, "epsilon"),
    (dict(epsilon=[1.0, 2.0], sensitivity=1.0), ValueError, "epsilon"),
    (dict(epsilon=1.0, sensitivity=-1.0), ValueError, "sensitivity"),
    (dict(epsilon=1.0, sensitivity=[1.0, 2.0]), ValueError, "sensitivity"),
    (dict(epsilon=1e-300, sensitivity=1e300), ValueError, "overflows"),
    (dict(epsilon=1.0, sensitivity=1.0, neighbouring="swap"), ValueError, "neighbouring"),
    (dict(epsilon=1.0, sensitivity=1.0, rng="seed"), TypeError, "rng"),
])
def test_laplace_mechanism_rejects_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        laplace_mechanism([1.0, 2.0], **kwargs)
    with pytest.raises(ValueError, match="value"):
        laplace_mechanism([np.nan], epsilon=1.0, sensitivity=1.0)


def test_public_names_are_exported():
    for name in ("gaussian_mechanism", "elliptical_gaussian_mechanism", "gaussian_data_mechanism",
                 "clipped_gaussian_mechanism", "laplace_mechanism", "Release", "GeneralizedChiSquare",
                 "analytic_sigma", "classic_sigma", "gaussian_delta", "gaussian_epsilon",
                 "elliptical_scaling", "gaussian_data_scaling", "clip_radius"):
        assert hasattr(dpsum, name), name
