"""The Gaussian-data mechanism's set-up (dpsum.gaussian_data): one source for b, C, sensitivity and noise."""

from __future__ import annotations

import numpy as np
import pytest

from dpsum.accuracy import expected as errors
from dpsum.design import scaling
from dpsum.privacy.calibration import analytic_sigma
from dpsum.design.clip_radius import clip_radius
from dpsum.design.gaussian_data import gaussian_data_setup

STDS = np.array([3.0, 1.0, 0.3])
CENTER = np.array([2.0, -1.0, 0.5])


def test_setup_follows_the_formulas():
    s = gaussian_data_setup(STDS, epsilon=1.0, delta=1e-6, n=1000)
    b = scaling.gaussian_data_scaling(STDS)
    C = clip_radius(STDS, 1e-3, b)
    np.testing.assert_array_equal(s.scaling, b)
    assert s.clip_probability == 1e-3 and s.clip_norm == C
    assert s.sensitivity == 2 * C
    assert s.sigma_opt == analytic_sigma(1.0, 1e-6)
    np.testing.assert_allclose(s.noise_std, 2 * C * s.sigma_opt / b, rtol=1e-15)
    assert s.expected_squared_error == pytest.approx(
        errors.gaussian_data_error(STDS, 1.0, 1e-6, 1e-3), rel=1e-15)


def test_add_remove_with_a_center_charges_the_center():
    s = gaussian_data_setup(STDS, epsilon=1.0, delta=1e-6, center=CENTER,
                            clip_probability=1e-3, neighbouring="add-remove")
    assert s.sensitivity == pytest.approx(s.clip_norm + np.linalg.norm(s.scaling * CENTER))
    # under replace-one the center cancels
    r = gaussian_data_setup(STDS, epsilon=1.0, delta=1e-6, center=CENTER,
                            clip_probability=1e-3)
    assert r.sensitivity == 2 * r.clip_norm
    # the error formula uses the same sensitivity
    e = errors.gaussian_data_error(STDS, 1.0, 1e-6, 1e-3, neighbouring="add-remove",
                                   center=CENTER)
    assert e == pytest.approx(s.expected_squared_error, rel=1e-15)
    # a zero center is no center
    z = gaussian_data_setup(STDS, clip_probability=1e-3, center=np.zeros(3),
                            neighbouring="add-remove")
    assert z.center is None and z.sensitivity == z.clip_norm


def test_default_clip_probability_and_its_guards():
    with pytest.raises(ValueError, match="clip_probability must be given under add-remove"):
        gaussian_data_setup(STDS, n=100, neighbouring="add-remove")
    with pytest.raises(ValueError, match="n >= 2"):
        gaussian_data_setup(STDS, n=1)
    with pytest.raises(ValueError, match="clip_probability must be given"):
        gaussian_data_setup(STDS)
    with pytest.raises(TypeError, match="delta"):
        gaussian_data_setup(STDS, epsilon=1.0, n=10)
    with pytest.raises(TypeError, match="delta"):
        gaussian_data_setup(STDS, epsilon=1.0, delta=None, n=10)
    geometry = gaussian_data_setup(STDS, n=10)
    assert geometry.noise_std is None and geometry.sigma_opt is None
    with pytest.raises(ValueError, match="epsilon and delta"):
        geometry.expected_squared_error


def test_setup_arrays_are_read_only_copies():
    b = np.array([1.0, 2.0, 3.0])
    s = gaussian_data_setup(STDS, epsilon=1.0, delta=1e-6, clip_probability=0.01, scaling=b,
                            center=CENTER)
    for arr in (s.stds, s.scaling, s.center, s.noise_std):
        assert not arr.flags.writeable
    assert not np.shares_memory(s.scaling, b)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_extreme_stds_without_scaling_name_stds_not_weights(scale):
    """stds of 1e+-200 with scaling="isotropic": the clip radius is computed in
    power-of-two units; a problem is reported in terms of the arguments."""
    stds = np.array([1.0, 0.5, 0.25]) * scale
    s = gaussian_data_setup(stds, clip_probability=1e-6, scaling="isotropic")
    ref = gaussian_data_setup(np.array([1.0, 0.5, 0.25]), clip_probability=1e-6,
                              scaling="isotropic")
    assert s.clip_norm == pytest.approx(ref.clip_norm * scale, rel=1e-14)
    if scale > 1:
        # the squared error itself exceeds the float range: say so, naming stds
        with pytest.raises(ValueError, match="stds") as info:
            errors.gaussian_data_error(stds, 1.0, 1e-6, 1e-6, scaling="isotropic")
        assert "weights" not in str(info.value)
    else:
        # the noise level is representable and exact; its square underflows to 0
        small = gaussian_data_setup(stds, epsilon=1.0, delta=1e-6, clip_probability=1e-6,
                                    scaling="isotropic")
        unit = gaussian_data_setup(stds / scale, epsilon=1.0, delta=1e-6,
                                   clip_probability=1e-6, scaling="isotropic")
        np.testing.assert_allclose(small.noise_std, unit.noise_std * scale, rtol=1e-14)
