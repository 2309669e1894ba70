"""Neighbouring relations, sensitivity, composition and group privacy (argument checks: test_validation.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsum import privacy as P


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


def test_group_privacy_and_composition_overflow_give_value_errors():
    """Huge k or epsilon: a ValueError naming the problem, not an OverflowError."""
    with pytest.raises(ValueError, match="void"):
        P.group_privacy(1, 1e-5, 1000)
    with pytest.raises(ValueError, match="epsilon"):
        P.advanced_composition(800, 1e-9, 2, 1e-6)
    # beyond e^700 the group delta is computed in log space; mpmath checks it
    mpmath = pytest.importorskip("mpmath")
    k_eps, k_delta = P.group_privacy(1.0, 1e-310, 701)
    exact = mpmath.mpf(1e-310) * mpmath.expm1(701) / mpmath.expm1(1)
    assert k_eps == 701.0
    assert k_delta == pytest.approx(float(exact), rel=1e-11)


def test_delta_none_names_the_argument():
    with pytest.raises(TypeError, match="delta"):
        P.group_privacy(1.0, None, 2)
    with pytest.raises(TypeError, match="delta_prime"):
        P.advanced_composition(1.0, 1e-6, 2, None)
