"""Mechanisms (the three vector mechanisms, clipping baseline), scalings and closed-form errors.

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
from dpsum.accuracy import expected as errors
from dpsum.design import scaling
from dpsum.privacy.calibration import analytic_sigma, classic_sigma
from dpsum.design.clip_radius import clip_radius
from dpsum.kernels.grid import clipped_sum
from dpsum.distributions.gchisq import GeneralizedChiSquare
from dpsum.mechanisms import clipped_gaussian_mechanism, elliptical_gaussian_mechanism, gaussian_data_mechanism, gaussian_mechanism, laplace_mechanism, release_diagnostics

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
    rel = elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-0.5 * np.asarray(bounds), upper=0.5 * np.asarray(bounds), rng=rng)
    diag = release_diagnostics(X, rel)
    np.testing.assert_array_equal(X, X0)
    sopt = analytic_sigma(EPS, DELTA)
    b = scaling.elliptical_scaling(bounds)
    np.testing.assert_allclose(rel.noise_std, sopt * bounds / b, rtol=1e-14)   # exact sum
    assert np.sum(rel.noise_std**2) == pytest.approx(sopt**2 * bounds.sum() ** 2, rel=1e-8)
    target = np.clip(X, -bounds / 2, bounds / 2).sum(axis=0)
    assert diag["clamped_values"] == int(np.sum(np.abs(X) > bounds / 2))
    est = np.array([elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-0.5 * np.asarray(bounds), upper=0.5 * np.asarray(bounds),
                                                  rng=rng).estimate for _ in range(1500)])
    _check_unbiased_and_mse(est, target, rel.noise_std)


def test_gaussian_data_release_fields_follow_the_formulas():
    rng = np.random.default_rng(5)
    stds = np.array([3.0, 1.0, 0.2])
    X = rng.normal(0, stds, size=(1000, 3))
    rel = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, rng=rng, center=0)
    b = scaling.gaussian_data_scaling(stds)
    C = clip_radius(stds, 1 / 1000, b)
    sopt = analytic_sigma(EPS, DELTA)
    np.testing.assert_allclose(rel.scaling, b, rtol=1e-15)
    assert rel.clip_norm == pytest.approx(C, rel=1e-15)
    # the sum is exact: the sensitivity is 2C, with no rounding charge
    np.testing.assert_allclose(rel.noise_std, 2 * C * sopt / b, rtol=1e-14)
    assert rel.sensitivity == 2 * C
    assert rel.expected_squared_error == pytest.approx(
        errors.gaussian_data_error(stds, EPS, DELTA, 1 / 1000), rel=1e-12)
    ar = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, clip_probability=1e-3,
                                 neighbouring="add-remove", rng=rng, center=0)
    np.testing.assert_allclose(rel.noise_std, 2 * ar.noise_std, rtol=1e-15)


def test_gaussian_data_mechanism_mean_and_mse():
    rng = np.random.default_rng(6)
    stds = np.array([4.0, 1.0, 0.5, 0.1])
    X = rng.normal(0, stds, size=(400, 4)) * 1.5  # heavier than the model: some rows clip
    b = scaling.gaussian_data_scaling(stds)
    first = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, rng=rng, center=0)
    T, k = clipped_sum(X, first.clip_norm, b)
    assert k > 0
    target = T / b
    est = np.array([gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds,
                                            rng=rng, center=0).estimate for _ in range(600)])
    _check_unbiased_and_mse(est, target, first.noise_std)


def test_scaling_is_invariant_to_a_constant_factor():
    rng = np.random.default_rng(7)
    stds = np.array([2.0, 1.0, 0.5])
    X = rng.normal(0, stds, size=(200, 3))
    b = np.array([0.3, 1.0, 2.0])
    r1 = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, scaling=b, rng=11, center=0)
    r2 = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, scaling=7.5 * b, rng=11, center=0)
    np.testing.assert_allclose(r1.noise_std, r2.noise_std, rtol=1e-10)
    np.testing.assert_allclose(r1.estimate, r2.estimate, rtol=1e-9, atol=1e-9)
    assert r2.clip_norm == pytest.approx(7.5 * r1.clip_norm, rel=1e-10)


def test_no_scaling_agrees_with_the_clipping_baseline():
    rng = np.random.default_rng(8)
    stds = np.array([2.0, 1.0, 0.5])
    X = rng.normal(0, stds, size=(300, 3))
    for relation, p in (("replace", None), ("add-remove", 1e-3)):
        r1 = gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, scaling="isotropic",
                                     clip_probability=p, neighbouring=relation, rng=12, center=0)
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
    for scale in ("scaled", "isotropic"):
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
    args = dict(epsilon=EPS, delta=DELTA, stds=np.ones(2), center=0, neighbouring="replace")
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
    args = dict(epsilon=EPS, delta=DELTA, stds=np.ones(2), center=0)
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
                                clip_probability=0.1, center=0)
    with pytest.raises(ValueError, match=match):
        clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=1.0)
    with pytest.raises(ValueError, match=match):
        elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-0.5, upper=0.5)


def test_other_mechanisms_reject_bad_arguments():
    X = np.ones((5, 2))
    with pytest.raises(ValueError, match="lower must be < upper"):
        elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=[-0.5, 0.0],
                                      upper=[0.5, 0.0])
    with pytest.raises(ValueError, match="lower must be a scalar or have length 2"):
        elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=[-0.5], upper=[0.5])
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
        gaussian_data_mechanism(np.ones((1, 2)), epsilon=EPS, delta=DELTA, stds=np.ones(2), center=0)


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
                 "clip_radius"):
        assert hasattr(dpsum, name), name
    for name in ("elliptical_scaling", "gaussian_data_scaling"):
        assert hasattr(dpsum.design, name), name


# ------------------------------------------------------------------ hygiene
MECHANISM_CALLS = {
    "gaussian": lambda **kw: gaussian_mechanism(np.ones(2), sensitivity=1.0, **kw),
    "elliptical": lambda **kw: elliptical_gaussian_mechanism(np.ones((3, 2)), lower=-0.5, upper=0.5,
                                                             **kw),
    "gaussian-data": lambda **kw: gaussian_data_mechanism(np.ones((3, 2)), stds=[1.0, 1.0], center=0,
                                                          **kw),
    "clipped": lambda **kw: clipped_gaussian_mechanism(np.ones((3, 2)), clip_norm=1.0, **kw),
}


@pytest.mark.parametrize("name", sorted(MECHANISM_CALLS))
def test_delta_none_and_negative_seed_name_the_argument(name):
    call = MECHANISM_CALLS[name]
    with pytest.raises(TypeError, match="delta must be a real number"):
        call(epsilon=EPS, delta=None, rng=0)
    with pytest.raises(TypeError, match="epsilon"):
        call(epsilon=None, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="rng must be a non-negative int seed"):
        call(epsilon=EPS, delta=DELTA, rng=-1)


def test_ragged_data_is_refused_without_echoing_it():
    secret = 918273.645
    ragged = [[secret, 1.0], [2.0]]
    for call in (
        lambda: gaussian_mechanism(ragged, epsilon=EPS, delta=DELTA, sensitivity=1.0),
        lambda: gaussian_data_mechanism(ragged, epsilon=EPS, delta=DELTA, stds=[1.0, 1.0], center=0),
        lambda: clipped_gaussian_mechanism(ragged, epsilon=EPS, delta=DELTA, clip_norm=1.0),
        lambda: elliptical_gaussian_mechanism(ragged, epsilon=EPS, delta=DELTA, lower=[-0.5, -0.5], upper=[0.5, 0.5]),
    ):
        with pytest.raises(ValueError, match="rectangular") as info:
            call()
        assert "918273" not in str(info.value)
    with pytest.raises(TypeError) as info:
        gaussian_mechanism(np.array([secret, "x"], dtype=object), epsilon=EPS, delta=DELTA,
                           sensitivity=1.0)
    assert "918273" not in str(info.value)


def test_overflowing_noise_is_refused():
    with pytest.raises(ValueError, match="overflows"):
        gaussian_mechanism([1.0], epsilon=EPS, delta=DELTA, sensitivity=1e308)
    with pytest.raises(ValueError, match="overflows"):
        clipped_gaussian_mechanism(np.ones((2, 2)), epsilon=EPS, delta=DELTA, clip_norm=1e308)
    with pytest.raises(ValueError, match="overflows"):
        elliptical_gaussian_mechanism(np.ones((2, 2)), epsilon=EPS, delta=DELTA,
                                      lower=-0.5 * np.asarray([1e308, 1e308]), upper=0.5 * np.asarray([1e308, 1e308]))
