"""Validation helpers, neighbouring relations, composition and group privacy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsum import privacy as P


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), -float("inf"), [1.0, 0.0]])
def test_epsilon_rejects_non_positive_or_non_finite(bad):
    with pytest.raises(ValueError, match="epsilon"):
        P.check_epsilon(bad)


@pytest.mark.parametrize("bad", ["1", None, True, np.array([True]), [1, "a"], object()])
def test_epsilon_rejects_non_numbers(bad):
    with pytest.raises(TypeError, match="epsilon"):
        P.check_epsilon(bad)


def test_epsilon_scalar_and_array():
    assert P.check_epsilon(1) == 1.0 and isinstance(P.check_epsilon(1), float)
    arr = P.check_epsilon([0.5, 2])
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float64
    np.testing.assert_array_equal(arr, [0.5, 2.0])


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan"), float("inf"), [0.1, 1.0]])
def test_delta_must_lie_in_open_unit_interval(bad):
    with pytest.raises(ValueError, match="delta"):
        P.check_delta(bad)


def test_delta_accepts_tiny_values():
    assert P.check_delta(1e-300) == 1e-300


@pytest.mark.parametrize("bad", [0, 1, -0.5, 2, float("nan")])
def test_probability_bounds(bad):
    with pytest.raises(ValueError, match="clip_probability"):
        P.check_probability(bad, "clip_probability")


def test_positive():
    assert P.check_positive(2, "sigma") == 2.0
    assert P.check_positive(0, "sigma", allow_zero=True) == 0.0
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="sigma"):
            P.check_positive(bad, "sigma")
    with pytest.raises(ValueError, match="sigma"):
        P.check_positive([], "sigma")


def test_finite_array_rejects_nan_inf_shape_and_empty():
    with pytest.raises(ValueError, match="X contains NaN"):
        P.check_data_matrix(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="X contains NaN"):
        P.check_data_matrix(np.array([[1.0, np.inf]]))
    with pytest.raises(ValueError, match="2-dimensional"):
        P.check_data_matrix(np.ones(3))
    with pytest.raises(ValueError, match="empty"):
        P.check_data_matrix(np.ones((0, 3)))
    with pytest.raises(TypeError, match="X"):
        P.check_data_matrix([["a", "b"]])


def test_finite_array_does_not_copy_float64_input():
    X = np.ones((3, 2))
    assert P.check_data_matrix(X) is X or np.shares_memory(P.check_data_matrix(X), X)
    ints = np.ones((3, 2), dtype=np.int64)
    out = P.check_data_matrix(ints)
    assert out.dtype == np.float64 and ints.dtype == np.int64


def test_vector_length_and_positivity():
    np.testing.assert_array_equal(P.check_vector([1, 2], "stds", 2, positive=True), [1.0, 2.0])
    with pytest.raises(ValueError, match="stds must have length 3"):
        P.check_vector([1, 2], "stds", 3)
    with pytest.raises(ValueError, match="stds must be > 0"):
        P.check_vector([1, 0], "stds", 2, positive=True)


def test_rng():
    g = np.random.default_rng(1)
    assert P.check_rng(g) is g
    assert isinstance(P.check_rng(3), np.random.Generator)
    assert isinstance(P.check_rng(None), np.random.Generator)
    a = P.check_rng(5).normal(size=3)
    b = P.check_rng(5).normal(size=3)
    np.testing.assert_array_equal(a, b)
    for bad in (1.5, "seed", True, np.random.RandomState(0)):
        with pytest.raises(TypeError, match="rng"):
            P.check_rng(bad)


def test_neighbouring_parse():
    assert P.Neighbouring.parse("replace") is P.Neighbouring.REPLACE
    assert P.Neighbouring.parse("add-remove") is P.Neighbouring.ADD_REMOVE
    assert P.Neighbouring.parse(P.Neighbouring.REPLACE) is P.Neighbouring.REPLACE
    with pytest.raises(ValueError, match="neighbouring"):
        P.Neighbouring.parse("swap")
    with pytest.raises(TypeError, match="neighbouring"):
        P.Neighbouring.parse(1)


def test_clipped_sum_sensitivity_follows_the_relation():
    # replace-one: a row c*u replaced by -c*u moves the sum by 2c; add-remove by c.
    assert P.clipped_sum_sensitivity(1.5, "replace") == 3.0
    assert P.clipped_sum_sensitivity(1.5, "add-remove") == 1.5
    u = np.array([0.6, 0.8])
    assert np.linalg.norm(1.5 * u - (-1.5 * u)) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="clip_norm"):
        P.clipped_sum_sensitivity(0.0)


def test_basic_composition_adds_up():
    eps, dlt = P.basic_composition([0.5, 0.25, 1.0], [1e-6, 2e-6, 3e-6])
    assert eps == pytest.approx(1.75) and dlt == pytest.approx(6e-6)
    with pytest.raises(ValueError, match="same length"):
        P.basic_composition([0.5, 0.5], [1e-6])
    with pytest.raises(ValueError, match="sum to 1"):
        P.basic_composition([0.5, 0.5], [0.6, 0.6])


def test_advanced_composition_formula_and_regime():
    eps, k, dp = 0.01, 1000, 1e-6
    e_tot, d_tot = P.advanced_composition(eps, 1e-9, k, dp)
    expected = math.sqrt(2 * k * math.log(1 / dp)) * eps + k * eps * math.expm1(eps)
    assert e_tot == pytest.approx(expected, rel=1e-14)
    assert d_tot == pytest.approx(k * 1e-9 + dp)
    # for many small-epsilon steps it beats basic composition k * eps = 10
    assert e_tot < k * eps
    with pytest.raises(ValueError, match="k must be a positive integer"):
        P.advanced_composition(eps, 1e-9, 0, dp)
    with pytest.raises(ValueError, match="delta_prime"):
        P.advanced_composition(eps, 1e-9, 3, 0.0)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("k", [1, 2, 5, 20])
def test_group_privacy_geometric_sum_is_within_the_textbook_bound(eps, k):
    delta = 1e-8
    geometric = delta * sum(math.exp(i * eps) for i in range(k))
    if geometric >= 1:
        with pytest.raises(ValueError, match="void"):
            P.group_privacy(eps, delta, k)
        return
    k_eps, k_delta = P.group_privacy(eps, delta, k)
    assert k_eps == pytest.approx(k * eps)
    assert k_delta == pytest.approx(geometric, rel=1e-12)
    assert k_delta <= k * math.exp((k - 1) * eps) * delta * (1 + 1e-12)
    if k == 1:
        assert k_delta == pytest.approx(delta)


def test_group_privacy_refuses_a_void_guarantee():
    with pytest.raises(ValueError, match="void"):
        P.group_privacy(1.0, 0.5, 5)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        P.group_privacy(1.0, 1e-6, 0)
