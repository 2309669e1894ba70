"""Closed-form expected errors (dpsum.errors): equations (1), (5), (6) and (9),
and the expected clipping error B of the Gaussian-data mechanism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import dpsum
from dpsum.accuracy import expected as errors
from dpsum.design import scaling
from dpsum.privacy.calibration import analytic_sigma
from dpsum.design.clip_radius import clip_radius

EPS, DELTA = 1.0, 1e-6


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


# ------------------------------------ clipping error B (gaussian_data_clipping_error)

def test_isotropic_case_matches_a_one_dimensional_chi_integral():
    # b = 1 and equal stds s: R = ||x - mu|| = s chi_d, so the per-record term
    # E[(1 - C/R)_+^2 R^2] is E[(R - C)_+^2], an integral of the chi density
    s, d, n, p = 2.5, 3, 500, 0.01
    B = dpsum.accuracy.gaussian_data_clipping_error(np.full(d, s), n, p, scaling="isotropic")
    C = dpsum.gaussian_data_setup(np.full(d, s), clip_probability=p, scaling="isotropic").clip_norm
    law = stats.chi(d, scale=s)
    assert math.isclose(law.sf(C), p, rel_tol=1e-9)
    exact, _ = integrate.quad(lambda r: (r - C) ** 2 * law.pdf(r), C, np.inf,
                              epsabs=0, epsrel=1e-12)
    assert math.isclose(B, n * exact, rel_tol=1e-8)


def test_one_coordinate_matches_the_normal_integral():
    # d = 1: (1 - C/R)_+^2 (x - mu)^2 = (|x - mu| - C/b)_+^2
    sd, n, p = 3.0, 100, 0.05
    B = dpsum.accuracy.gaussian_data_clipping_error([sd], n, p)
    setup = dpsum.gaussian_data_setup([sd], clip_probability=p)
    t = setup.clip_norm / setup.scaling[0]
    assert math.isclose(t, sd * stats.norm.isf(p / 2), rel_tol=1e-9)
    exact, _ = integrate.quad(lambda z: 2 * (sd * z - t) ** 2 * stats.norm.pdf(z),
                              t / sd, np.inf, epsabs=0, epsrel=1e-12)
    assert math.isclose(B, n * exact, rel_tol=1e-8)


def test_unequal_stds_agree_with_simulation():
    rng = np.random.default_rng(7)
    sd = np.array([10.0, 3.0, 1.0, 0.3, 0.05])
    n, p, m = 200, 0.02, 400_000
    B = dpsum.accuracy.gaussian_data_clipping_error(sd, n, p)
    setup = dpsum.gaussian_data_setup(sd, clip_probability=p)
    Z = rng.normal(size=(m, sd.size)) * sd
    R = np.linalg.norm(Z * setup.scaling, axis=1)
    terms = n * np.clip(1 - setup.clip_norm / R, 0, None) ** 2 * np.sum(Z**2, axis=1)
    se = terms.std(ddof=1) / math.sqrt(m)
    assert abs(terms.mean() - B) < 5 * se
    assert se < 0.05 * B  # the check has power


def test_units_and_number_of_records():
    sd = np.array([4.0, 1.0, 0.5])
    B = dpsum.accuracy.gaussian_data_clipping_error(sd, 50, 0.01)
    assert math.isclose(dpsum.accuracy.gaussian_data_clipping_error(7 * sd, 50, 0.01), 49 * B,
                        rel_tol=1e-9)
    assert math.isclose(dpsum.accuracy.gaussian_data_clipping_error(sd, 150, 0.01), 3 * B,
                        rel_tol=1e-12)
    # the default p_C is 1/n, as in gaussian_data_mechanism
    assert dpsum.accuracy.gaussian_data_clipping_error(sd, 80) == dpsum.accuracy.gaussian_data_clipping_error(
        sd, 80, 1 / 80)
    # a smaller clip probability means a larger radius and less clipping
    assert dpsum.accuracy.gaussian_data_clipping_error(sd, 50, 1e-4) < B


def test_equal_weights_are_grouped_without_changing_the_result():
    # an explicit scaling b = 1 / stds makes every weight b_j^2 stds_j^2 equal
    sd = np.array([2.0, 1.0, 0.5, 0.25])
    grouped = dpsum.accuracy.gaussian_data_clipping_error(sd, 30, 0.05, scaling=1 / sd)
    iso = dpsum.accuracy.gaussian_data_clipping_error(np.ones(4), 30, 0.05, scaling="isotropic")
    # x_j = sd_j Z_j with R = ||Z||: the term is (1 - C/R)_+^2 sum_j sd_j^2 Z_j^2, and by
    # symmetry each Z_j^2 carries a quarter of E[(1 - C/R)_+^2 ||Z||^2]
    assert math.isclose(grouped, iso * np.sum(sd**2) / 4, rel_tol=1e-9)


@pytest.mark.parametrize("kwargs, error, word", [
    (dict(stds=[1.0, -1.0], n=10), ValueError, "stds"),
    (dict(stds=[1.0, 2.0], n=0), ValueError, "n"),
    (dict(stds=[1.0, 2.0], n=True), TypeError, "n"),
    (dict(stds=[1.0, 2.0], n=2.5), ValueError, "n"),
    (dict(stds=[1.0, 2.0], n=1), ValueError, "clip_probability"),
    (dict(stds=[1.0, 2.0], n=10, clip_probability=1.5), ValueError, "clip_probability"),
    (dict(stds=[1.0, 2.0], n=10, scaling="whatever"), ValueError, "scaling"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, word):
    with pytest.raises(error, match=word):
        dpsum.accuracy.gaussian_data_clipping_error(**kwargs)
