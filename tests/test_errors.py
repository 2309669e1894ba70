"""Closed-form expected errors (dpsum.errors): equations (1), (5), (6) and (9)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsum import errors, scaling
from dpsum.calibration import analytic_sigma
from dpsum.clipping import clip_radius

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
