"""Argument checks (dpsum._validation): one rule for each kind of argument."""

from __future__ import annotations

import numpy as np
import pytest

from dpsum import _validation as V


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), -float("inf"), [1.0, 0.0]])
def test_epsilon_rejects_non_positive_or_non_finite(bad):
    with pytest.raises(ValueError, match="epsilon"):
        V.check_epsilon(bad)


@pytest.mark.parametrize("bad", ["1", None, True, np.array([True]), [1, "a"], object()])
def test_epsilon_rejects_non_numbers(bad):
    with pytest.raises(TypeError, match="epsilon"):
        V.check_epsilon(bad)


def test_epsilon_scalar_and_array():
    assert V.check_epsilon(1) == 1.0 and isinstance(V.check_epsilon(1), float)
    arr = V.check_epsilon([0.5, 2])
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float64
    np.testing.assert_array_equal(arr, [0.5, 2.0])


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan"), float("inf"), [0.1, 1.0]])
def test_delta_must_lie_in_open_unit_interval(bad):
    with pytest.raises(ValueError, match="delta"):
        V.check_delta(bad)


def test_delta_accepts_tiny_values():
    assert V.check_delta(1e-300) == 1e-300


@pytest.mark.parametrize("bad", [0, 1, -0.5, 2, float("nan")])
def test_probability_bounds(bad):
    with pytest.raises(ValueError, match="clip_probability"):
        V.check_probability(bad, "clip_probability")


def test_positive():
    assert V.check_positive(2, "sigma") == 2.0
    assert V.check_positive(0, "sigma", allow_zero=True) == 0.0
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="sigma"):
            V.check_positive(bad, "sigma")
    with pytest.raises(ValueError, match="sigma"):
        V.check_positive([], "sigma")


def test_finite_array_rejects_nan_inf_shape_and_empty():
    with pytest.raises(ValueError, match="X contains NaN"):
        V.check_data_matrix(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="X contains NaN"):
        V.check_data_matrix(np.array([[1.0, np.inf]]))
    with pytest.raises(ValueError, match="2-dimensional"):
        V.check_data_matrix(np.ones(3))
    with pytest.raises(ValueError, match="empty"):
        V.check_data_matrix(np.ones((0, 3)))
    with pytest.raises(TypeError, match="X"):
        V.check_data_matrix([["a", "b"]])


def test_finite_array_does_not_copy_float64_input():
    X = np.ones((3, 2))
    assert V.check_data_matrix(X) is X or np.shares_memory(V.check_data_matrix(X), X)
    ints = np.ones((3, 2), dtype=np.int64)
    out = V.check_data_matrix(ints)
    assert out.dtype == np.float64 and ints.dtype == np.int64


def test_vector_length_and_positivity():
    np.testing.assert_array_equal(V.check_vector([1, 2], "stds", 2, positive=True), [1.0, 2.0])
    with pytest.raises(ValueError, match="stds must have length 3"):
        V.check_vector([1, 2], "stds", 3)
    with pytest.raises(ValueError, match="stds must be > 0"):
        V.check_vector([1, 0], "stds", 2, positive=True)


def test_rng():
    g = np.random.default_rng(1)
    assert V.check_rng(g) is g
    assert isinstance(V.check_rng(3), np.random.Generator)
    assert isinstance(V.check_rng(None), np.random.Generator)
    a = V.check_rng(5).normal(size=3)
    b = V.check_rng(5).normal(size=3)
    np.testing.assert_array_equal(a, b)
    for bad in (1.5, "seed", True, np.random.RandomState(0)):
        with pytest.raises(TypeError, match="rng"):
            V.check_rng(bad)




# ------------------------------------------------------- the rules, one per kind
def test_integer_rule_whole_floats_yes_fractions_and_bools_no():
    assert V.check_integer(3, "n") == 3 and V.check_integer(np.int32(3), "n") == 3
    assert V.check_integer(3.0, "n") == 3 and type(V.check_integer(3.0, "n")) is int
    np.testing.assert_array_equal(V.check_integer([1.0, 2.0], "k", 0, array=True), [1, 2])
    for bad in (2.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="n must be a whole number"):
            V.check_integer(bad, "n")
    for bad in (1e300, 2**70, -(2**70), np.array([2**63], dtype=np.uint64)):
        with pytest.raises(ValueError, match="n must be an integer of magnitude below 2"):
            V.check_integer(bad, "n", None, array=True) if np.ndim(bad) else V.check_integer(bad, "n")
    for bad in (True, np.bool_(False)):
        with pytest.raises(TypeError, match="n must be an integer, not a boolean"):
            V.check_integer(bad, "n")
    for bad in ("3", None, [1, 2]):
        with pytest.raises(TypeError, match="n"):
            V.check_integer(bad, "n")
    with pytest.raises(ValueError, match="n must be a positive integer"):
        V.check_integer(0, "n")
    with pytest.raises(ValueError, match="between 0 and 4"):
        V.check_integer(5, "ones", 0, 4)


def test_count_rule():
    np.testing.assert_array_equal(V.check_count([0, 3.0, 10], 10, "k"), [0.0, 3.0, 10.0])
    with pytest.raises(ValueError, match="k must lie between 0 and n = 10"):
        V.check_count(11, 10, "k")
    with pytest.raises(ValueError, match="k"):
        V.check_count(-1, 10, "k")


def test_boolean_rule_accepts_only_real_bools():
    assert V.check_bool(True, "exact") is True and V.check_bool(np.bool_(False), "exact") is False
    for bad in (0, 1, "no", None, 1.0):
        with pytest.raises(TypeError, match="exact must be True or False"):
            V.check_bool(bad, "exact")


def test_real_numbers_refuse_booleans_and_ragged_input_without_echoing_it():
    with pytest.raises(TypeError, match="sensitivity"):
        V.check_positive(True, "sensitivity")
    secret = 123456.789
    with pytest.raises(ValueError, match="X must be a rectangular") as info:
        V.check_data_matrix([[secret, 1.0], [2.0]])
    assert "123456" not in str(info.value)
    with pytest.raises(ValueError, match="value must be a rectangular") as info:
        V.check_finite_array([secret, [1.0, 2.0]], "value")
    assert "123456" not in str(info.value)
    with pytest.raises(TypeError) as info:
        V.check_data_matrix(np.array([[secret, "a"]], dtype=object))
    assert "123456" not in str(info.value)


def test_scalar_flag_and_scalar_or_array():
    assert V.check_epsilon(2, scalar=True) == 2.0
    with pytest.raises(ValueError, match="epsilon must be a scalar"):
        V.check_epsilon([1.0, 2.0], scalar=True)
    assert type(V.scalar_or_array(np.float64(2.0), 1.0, 3)) is float
    out = V.scalar_or_array(np.array([1.0, 2.0]), [1.0, 2.0])
    assert isinstance(out, np.ndarray) and out.shape == (2,)
    assert isinstance(V.scalar_or_array(np.array(1.0), np.array([1.0])[0], [1.0]), np.ndarray)


def test_delta_none_and_zero():
    with pytest.raises(TypeError, match="delta must be a real number in \\(0, 1\\), got None"):
        V.check_delta(None)
    assert V.check_delta(0.0, allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="delta"):
        V.check_delta(0.0)


def test_rng_negative_seed_is_a_clear_value_error():
    with pytest.raises(ValueError, match="rng must be a non-negative int seed"):
        V.check_rng(-1)
    seq = np.random.SeedSequence(4)
    assert isinstance(V.check_rng(seq), np.random.Generator)


def test_size_and_choice():
    assert V.check_size(None) is None and V.check_size(3.0) == 3 and V.check_size((2, 0)) == (2, 0)
    with pytest.raises(ValueError, match="size"):
        V.check_size(-1)
    assert V.check_choice("power", "family", ("power", "all")) == "power"
    with pytest.raises(ValueError, match="family"):
        V.check_choice("best", "family", ("power", "all"))
    with pytest.raises(TypeError, match="family"):
        V.check_choice(3, "family", ("power", "all"))
