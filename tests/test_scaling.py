"""Scaling vectors (dpsum.scaling): Theorem 4, Lemma 3.1 and the power family.

The error-optimal scalings are tested in test_optimal_scaling.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpsum.design import scaling



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
