"""The poor answers of the third round's review, one regression test each:
a clear error naming the user's argument, or a correct answer."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dpsum
from dpsum import accuracy, audit, binary, bounds, design, distributions, pipeline, privacy
from dpsum.release import noise_norm_quantile


@pytest.fixture(scope="module")
def gd():
    X = np.random.default_rng(0).normal(0.0, [2.0, 1.0], size=(40, 2))
    return dpsum.gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[2.0, 1.0],
                                         center=0, rng=0)


@pytest.fixture(scope="module")
def pipe():
    X = np.random.default_rng(1).normal(size=(400, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpsum.private_mean(X, lower=-5, upper=5, epsilon=1.0, delta=1e-6, rng=0)


# ------------------------------------------------------------------ silent
def test_to_dict_checks_beta_with_or_without_intervals(gd):
    clipped = dpsum.clipped_gaussian_mechanism(np.ones((5, 2)), epsilon=1.0, delta=1e-6,
                                               clip_norm=1.0, rng=0)
    with pytest.raises(ValueError):       # the clipping baseline has no data intervals
        dpsum.release.data_intervals(clipped)
    for rel in (gd, clipped):
        for bad in (math.nan, 0.0, 1.5):
            with pytest.raises(ValueError, match="beta"):
                rel.to_dict(bad)
            with pytest.raises(ValueError, match="beta"):
                rel.to_pandas(bad)


def test_release_diagnostics_needs_the_release_s_dataset():
    # replace-one: the release records n, and X must have that many rows
    clipped = dpsum.clipped_gaussian_mechanism(np.ones((5, 2)), epsilon=1.0, delta=1e-6,
                                               clip_norm=1.0, rng=0)
    for X in (np.empty((0, 2)), np.ones((4, 2))):
        with pytest.raises(ValueError, match="X must have the release's n = 5 rows"):
            dpsum.release_diagnostics(X, clipped)
    with pytest.raises(ValueError, match="X"):
        dpsum.release_diagnostics(np.empty((0, 3)), clipped)
    assert dpsum.release_diagnostics(np.full((5, 2), 3.0), clipped) == {"clipped_rows": 5}
    # add-remove: no public n; the empty dataset (data like any other) has no
    # clipped row (the diagnostics are not private: for study only)
    addrm = dpsum.clipped_gaussian_mechanism(np.ones((5, 2)), epsilon=1.0, delta=1e-6,
                                             clip_norm=1.0, neighbouring="add-remove", rng=0)
    assert dpsum.release_diagnostics(np.empty((0, 2)), addrm) == {"clipped_rows": 0}


def test_noise_norm_quantile_flattens_any_shape():
    # documented: any shape, flattened (a release's noise_std may be a matrix)
    assert noise_norm_quantile(np.ones((1, 2)), 0.05) == noise_norm_quantile([1.0, 1.0], 0.05)
    assert noise_norm_quantile(np.ones((1, 2)), 0.05) == pytest.approx(
        math.sqrt(-2 * math.log(0.05)), rel=1e-12)


@pytest.mark.parametrize("draw", [distributions.discrete_gaussian,
                                  distributions.discrete_laplace])
def test_one_exact_draw_is_an_int(draw):
    x = draw(4.0, size=None, rng=0)
    assert type(x) is int
    assert draw(4.0, rng=0) == x                       # None is the default
    assert draw(4.0, size=(), rng=0).shape == ()       # an explicit shape stays an array


def test_bernstein_error_bound_is_a_closed_form_in_a_real_n():
    stds = np.ones(200)
    f = lambda n: bounds.bernstein_error_bound(stds, n, 1.0, 1e-6)  # noqa: E731
    assert f(2.0) < f(2.5) < f(3.0)              # the formula between its integer neighbours
    with pytest.raises(ValueError, match="n"):
        f(0.5)


# ------------------------------------------------------------------ non-finite
def test_zcdp_compose_refuses_an_overflowing_sum():
    with pytest.raises(ValueError, match="rhos"):
        privacy.zcdp_compose([1e308] * 2)
    assert privacy.zcdp_compose([1e307] * 2) == 2e307


@pytest.mark.parametrize("radius", [bounds.bernstein_clip_radius,
                                    bounds.laurent_massart_clip_radius])
def test_closed_form_clip_radii_refuse_an_overflow_naming_stds(radius):
    with pytest.raises(ValueError, match="stds"):
        radius(np.full(200, 1e308), 0.1)
    assert math.isfinite(radius(np.full(200, 1e150), 0.1))


def test_data_intervals_at_a_subnormal_beta(pipe):
    with pytest.raises(ValueError, match="beta"):
        pipe.data_intervals(5e-324)
    iv = pipe.data_intervals(1e-300)
    assert np.all(np.isfinite(iv.lower)) and np.all(np.isfinite(iv.upper))
    # the count's quantile from the lower tail is the same number at ordinary beta
    lo, hi = pipe.data_intervals(0.05)
    assert np.all(lo < pipe.estimate) and np.all(pipe.estimate < hi)


# ------------------------------------------------------------------ unnamed
@pytest.mark.parametrize("stds", [[1e308, 1.0], [5e-324, 1.0]])
def test_error_optimal_scaling_names_stds(stds):
    with pytest.raises(ValueError, match="stds"):
        design.error_optimal_scaling(stds, 0.1)


@pytest.mark.parametrize("family", ["tilted", "power", "all"])
@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_error_optimal_scaling_is_scale_free(family, scale):
    stds = np.array([4.0, 1.0, 0.25])
    b = design.error_optimal_scaling(stds, 1e-3, family=family)
    np.testing.assert_allclose(design.error_optimal_scaling(stds * scale, 1e-3, family=family),
                               b / scale, rtol=1e-6)


@pytest.mark.parametrize("scales", [[1e308, 1.0], [5e-324, 1.0]])
def test_calibrated_clip_radius_names_scales(scales):
    with pytest.raises(ValueError, match="scales"):
        pipeline.calibrated_clip_radius(1.0, scales, [1.0, 0.5], 0.01)


def test_clipping_loss_moment_names_its_arguments():
    for stds, scaling in (([1e308, 1.0], [1.0, 0.5]), ([2.0, 1.0], [5e-324, 0.5])):
        with pytest.raises(ValueError, match="stds and scaling"):
            accuracy.clipping_loss_moment(stds, scaling, 2.0)
    with pytest.raises(ValueError, match="stds"):          # was an OverflowError
        accuracy.clipping_loss_moment([1e308, 1e308], [1e308, 1e308], 1.0)
    # a clip radius far below the stds clips everything: E||x - c||^2, not 0
    assert accuracy.clipping_loss_moment([2.0, 1.0], [1.0, 0.5], 5e-324) == 5.0


@pytest.mark.parametrize("secure", [False, True])
def test_one_row_gaussian_data_mechanism_names_x(secure):
    with pytest.raises(ValueError, match="rows of X"):
        dpsum.gaussian_data_mechanism(np.ones((1, 2)), epsilon=1.0, delta=1e-6, stds=[2, 1],
                                      center=0, rng=0, secure=secure)


def test_gdp_delta_names_mu():
    with pytest.raises(ValueError, match="mu"):
        privacy.gdp_delta(5e-324, 1.0)
    assert privacy.gdp_delta(1.0, 0.0) == pytest.approx(0.382924922548, rel=1e-11)


def test_mixed_epsilon_names_epsilons():
    with pytest.raises(ValueError, match="epsilons"):
        privacy.mixed_epsilon(2.0, 1e-6, epsilons=[1e308, 0.25], deltas=[0, 0])


def test_sample_and_threshold_names_epsilon_when_its_p_underflows():
    with pytest.raises(ValueError, match="epsilon"):
        binary.sample_and_threshold([1, 0, 1], epsilon=5e-324, delta=1e-6, rng=0)


def test_bernstein_limits_name_stds():
    stds = np.ones(200)
    stds[0] = 1e308
    with pytest.raises(ValueError, match="stds"):
        bounds.bernstein_clip_radius(stds, 0.1)
    with pytest.raises(ValueError, match="stds"):
        bounds.bernstein_error_bound(stds, 100, 1.0, 1e-6)


def test_gaussian_data_error_bound_names_stds():
    with pytest.raises(ValueError, match="stds"):
        accuracy.gaussian_data_error_bound([1e300, 1e-300], 40, epsilon=1.0, delta=1e-6,
                                           beta=0.05)


def test_adaptive_clip_update_names_target_quantile_and_rows():
    kw = dict(learning_rate=0.2, count_noise=1.0, rng=0)
    with pytest.raises(ValueError, match="target_quantile"):
        pipeline.adaptive_clip_update(np.ones((5, 2)), 1.0, target_quantile=np.array([0.5, 0.5]),
                                      **kw)
    with pytest.raises(ValueError, match="rows"):
        pipeline.adaptive_clip_update(np.ones((5, 2)), 1.0, target_quantile=0.5,
                                      rows=5e-324, **kw)


# ------------------------------------------------------------------ raw exceptions
def test_release_error_bound_names_beta_and_bias_share(gd):
    with pytest.raises(ValueError, match="bias_share"):      # was a ZeroDivisionError
        accuracy.release_error_bound(gd, 0.05, stds=[2.0, 1.0], n=40, bias_share=5e-324)
    eb = accuracy.release_error_bound(gd, 0.05, stds=[2.0, 1.0], n=40, bias_share=0.5)
    assert eb.noise_beta == eb.bias_beta == 0.025


# ------------------------------------------------------------------ found by the battery
def test_pair_epsilon_of_randomized_response_is_its_epsilon():
    # at delta = 0 the largest log-ratio is the answer; its rounding gave inf
    for eps in (0.5, 2.5, 10.0):
        ones, e = audit.worst_binary_pair("randomized response", 4, epsilon=eps)
        assert e == pytest.approx(eps, rel=1e-11)


def test_binary_laws_check_unused_parameters():
    with pytest.raises(TypeError, match="delta"):
        audit.binary_output_laws("randomized response", 4, 1, epsilon=1.0, delta="x")
    with pytest.raises(ValueError, match="p"):
        audit.binary_output_laws("randomized response", 4, 1, epsilon=1.0, p=math.nan)


def test_gaussian_data_setup_checks_n_when_given():
    with pytest.raises(ValueError, match="n"):
        design.gaussian_data_setup([2.0, 1.0], epsilon=1.0, delta=1e-6, clip_probability=0.1,
                                   n=2.5)


@pytest.mark.parametrize("estimate, args", [
    (binary.binomial_estimate, (1000, 0.1)),
    (binary.sample_threshold_estimate, (0.1,)),
    (lambda o, n: binary.randomized_response_estimate(o, n, epsilon=1.0), (1000,)),
])
def test_binary_estimators_take_counts(estimate, args):
    with pytest.raises(ValueError, match="output"):
        estimate(2.5, *args)
    assert math.isfinite(float(estimate(3, *args)))


@pytest.mark.parametrize("scaling", [design.power_scaling, design.whitening_scaling,
                                     design.tilted_scaling])
def test_scalings_of_extreme_stds(scaling):
    args = (1.0,) if scaling is not design.whitening_scaling else ()
    for stds in ([5e-324, 1.0], [1e-300, 1e-300], [1e300, 1e-3]):
        try:
            b = scaling(stds, *args)
        except ValueError as e:           # b_j ~ 1 / stds_j is not a float: named
            assert "stds" in str(e)
            assert scaling is not design.tilted_scaling and stds[0] == 5e-324
            continue
        # otherwise a correct answer: positive, finite, on the constraint
        assert np.all(np.isfinite(b)) and np.all(b > 0)
        t = b * np.array(stds)
        assert math.fsum((t / t.max()) ** 2) * t.max() ** 2 == pytest.approx(1.0, rel=1e-12)


def test_robust_scaling_names_scales():
    with pytest.raises(ValueError, match="scales"):
        pipeline.robust_scaling([1e308, 1e308])


def test_split_multipliers_of_huge_weights():
    np.testing.assert_allclose(privacy.split_gaussian_multiplier(1.0, [1e308, 1e308]),
                               [math.sqrt(2)] * 2, rtol=1e-15)


def test_noncentrality_sum_is_bounded():
    with pytest.raises(ValueError, match="noncentrality"):
        distributions.GeneralizedChiSquare([1.0, 2.0], [1e308, 1e308])
