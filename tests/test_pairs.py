"""Worst-case neighbouring pairs (dpsum.audit.pairs); their use in audits is in test_audit.py."""

from __future__ import annotations

import numpy as np
import pytest

from dpsum.design.clip_radius import clip_radius
from dpsum.design.gaussian_data import gaussian_data_setup
from dpsum.audit.pairs import add_remove_pair, binary_pair, clipped_pair, elliptical_pair, gaussian_data_pair, replace_one_pair, statistic_pair
from dpsum.design.scaling import gaussian_data_scaling

STDS = np.array([3.0, 1.0, 0.3, 0.1])
CENTER = np.array([1.0, -2.0, 0.5, 0.0])


def test_pair_constructors():
    X, Y = replace_one_pair([3.0, 4.0], n=3, center=[1.0, 1.0])
    np.testing.assert_array_equal(X, [[4, 5], [1, 1], [1, 1]])
    np.testing.assert_array_equal(Y, [[-2, -3], [1, 1], [1, 1]])
    X, Y = add_remove_pair([3.0, 4.0], n=2)
    assert X.shape == (2, 2) and Y.shape == (3, 2)
    np.testing.assert_array_equal(Y[-1], [3, 4])
    X, Y = elliptical_pair([2.0, 4.0], n=1, factor=3)
    np.testing.assert_array_equal(X, [[3.0, 6.0]])
    np.testing.assert_array_equal(Y, [[-3.0, -6.0]])
    x, y = binary_pair(5, 2)
    assert x.sum() == 3 and y.sum() == 2 and (x != y).sum() == 1
    # add-remove with a center: the record points along b * c
    b = gaussian_data_scaling(STDS)
    X, Y = gaussian_data_pair(STDS, center=CENTER, clip_probability=0.05,
                              neighbouring="add-remove", n=3)
    u = (Y[-1] - CENTER) * b
    C = clip_radius(STDS, 0.05, b)
    assert np.linalg.norm(u) == pytest.approx(100 * C)
    np.testing.assert_allclose(u / np.linalg.norm(u), b * CENTER / np.linalg.norm(b * CENTER))


def test_gaussian_data_pair_uses_the_mechanism_setup():
    """The record sits factor * C outside the ball, with C from the mechanism's set-up."""
    for relation, p in (("replace", None), ("add-remove", 0.05)):
        X, Y = gaussian_data_pair(STDS, center=CENTER, clip_probability=p,
                                  neighbouring=relation, n=4, factor=7.0)
        setup = gaussian_data_setup(STDS, center=CENTER, clip_probability=p, n=4,
                                    neighbouring=relation)
        row = X[0] if relation == "replace" else Y[-1]
        assert np.linalg.norm((row - CENTER) * setup.scaling) == pytest.approx(
            7.0 * setup.clip_norm, rel=1e-12)
    # the default clip probability 1/n needs n >= 2, and is refused under add-remove
    with pytest.raises(ValueError, match="n >= 2"):
        gaussian_data_pair(STDS, n=1)
    with pytest.raises(ValueError, match="clip_probability must be given"):
        gaussian_data_pair(STDS, neighbouring="add-remove")


def test_statistic_and_clipped_pairs():
    x, y = statistic_pair(2.0, 3)
    assert np.linalg.norm(y - x) == 2.0
    X, Y = clipped_pair(3, 1.5, "replace", n=2, factor=10.0)
    np.testing.assert_array_equal(X[0], [15.0, 0.0, 0.0])
    np.testing.assert_array_equal(Y[0], [-15.0, 0.0, 0.0])
