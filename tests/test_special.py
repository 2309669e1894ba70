"""Log-space special functions (dpsum._special): one sign convention, checked against mpmath."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpsum import _special as S


@pytest.fixture(autouse=True)
def _precision():
    """40 digits for every reference here (other modules change mpmath's global)."""
    with mpmath.workdps(40):
        yield


def _rel(a, b):
    return float(abs(mpmath.mpf(float(a)) / b - 1))


@pytest.mark.parametrize("x", [1e-300, 1e-20, 1e-8, 0.1, math.log(2) * (1 - 1e-15),
                               math.log(2) * (1 + 1e-15), 1.0, 30.0, 700.0])
def test_log1mexp_takes_a_positive_argument(x):
    xm = mpmath.mpf(x)
    exact = mpmath.log(-mpmath.expm1(-xm)) if x < 1 else mpmath.log1p(-mpmath.exp(-xm))
    assert _rel(S.log1mexp(x), exact) < 4e-16
    # the convention: log(1 - e^a) for a log-probability a <= 0 is log1mexp(-a)
    assert float(S.log1mexp(-(-x))) == float(S.log1mexp(x))


def test_log1mexp_edges_and_arrays():
    assert S.log1mexp(0.0) == -math.inf
    assert S.log1mexp(math.inf) == 0.0
    out = S.log1mexp(np.array([1e-10, 1.0, 50.0]))
    assert out.shape == (3,) and np.all(out < 0)


@pytest.mark.parametrize("x", [1e-12, 0.5, 1.0, 20.0, 800.0, 1e5])
def test_log_expm1(x):
    exact = mpmath.log(mpmath.expm1(mpmath.mpf(x)))
    assert abs(float(S.log_expm1(x)) - float(exact)) <= 4e-16 * max(1.0, abs(float(exact)))


@pytest.mark.parametrize("a, b", [(-1000.0, -1000.0), (0.0, -40.0), (-5.0, 3.0), (700.0, 710.0)])
def test_log_add_and_log_sub(a, b):
    exact_add = mpmath.log(mpmath.exp(a) + mpmath.exp(b))
    assert abs(float(S.log_add(a, b)) - float(exact_add)) <= 1e-15 * max(1.0, abs(float(exact_add)))
    hi, lo = max(a, b), min(a, b)
    if hi > lo:
        exact_sub = mpmath.log(mpmath.exp(hi) - mpmath.exp(lo))
        assert abs(float(S.log_sub(hi, lo)) - float(exact_sub)) <= 1e-15 * max(
            1.0, abs(float(exact_sub)))
    else:
        assert S.log_sub(hi, lo) == -math.inf
    assert S.log_add(-math.inf, -math.inf) == -math.inf
    assert S.log_sub(1.0, -math.inf) == 1.0


@pytest.mark.parametrize("x", [-40.0, -5.0, -1e-3, 0.0, 2.0, 30.0, 1e4])
def test_log_mills_and_hazard_excess(x):
    xm = mpmath.mpf(x)
    mills = mpmath.ncdf(-xm) / mpmath.npdf(xm)
    assert abs(float(S.log_mills(x)) - float(mpmath.log(mills))) <= 1e-14 * max(1, abs(x))
    t = -xm  # phi(t)/Phi(t) + t at t = -x
    exact = mpmath.npdf(t) / mpmath.ncdf(t) + t
    assert _rel(S.hazard_excess(float(t)), exact) < 1e-13
    log_phi = mpmath.log(mpmath.ncdf(xm)) if x < 0 else mpmath.log1p(-mpmath.ncdf(-xm))
    if abs(log_phi) > 1e-300:
        assert _rel(S.log_ndtr(x), log_phi) < 1e-13  # scipy's log_ndtr, wrapped
    else:  # below the float range: rounds to 0
        assert S.log_ndtr(x) == 0.0


def test_log1p_complex():
    for a, b in [(1e-20, 1e-20), (-0.5, 2.0), (3.0, -1e-3)]:
        re, im = S.log1p_complex(a, b)
        exact = mpmath.log(1 + mpmath.mpc(a, b))
        assert _rel(re, exact.real) < 1e-15 and _rel(im, exact.imag) < 1e-15
