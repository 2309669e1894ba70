"""The accountant of Poisson-subsampled Gaussian steps (dpsum.privacy.subsampling),
checked against Google's dp_accounting on a grid, against the exact Gaussian
composition (no subsampling), and against its own Rényi bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsum.privacy import (compose, compose_gaussian_multipliers, gaussian_epsilon,
                           gaussian_step, pure_step, subsampled_gaussian_delta,
                           subsampled_gaussian_epsilon, subsampled_gaussian_pld,
                           subsampled_gaussian_rdp, subsampled_gaussian_rdp_epsilon,
                           subsampled_gaussian_step)

dp_accounting = pytest.importorskip("dp_accounting")

GRID = [(z, q, t) for z in (0.8, 2.0) for q in (0.001, 0.05) for t in (10, 1000)]
DELTA = 1e-5


def _google(z, q, t, h):
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=h)
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), t))
    return acc.get_epsilon(DELTA)


@pytest.mark.parametrize("z, q, t", GRID)
@pytest.mark.parametrize("h", [1e-3, 1e-4])
def test_agrees_with_dp_accounting(z, q, t, h):
    ours = subsampled_gaussian_epsilon(z, q, t, DELTA, interval=h)
    theirs = _google(z, q, t, h)
    # both discretise the same way (connect the dots); they agree far inside
    # the discretisation error, and ours is never below theirs by more
    assert abs(ours - theirs) <= 1e-6 * max(1.0, theirs), (ours, theirs)


@pytest.mark.parametrize("z, q, t", GRID)
def test_finer_interval_is_tighter_and_close(z, q, t):
    coarse = subsampled_gaussian_epsilon(z, q, t, DELTA, interval=1e-3)
    fine = subsampled_gaussian_epsilon(z, q, t, DELTA, interval=1e-4)
    assert fine <= coarse + 1e-9
    rdp = subsampled_gaussian_rdp_epsilon(z, q, t, DELTA)
    assert fine <= rdp + 1e-9      # the RDP bound is looser


@pytest.mark.parametrize("z, t", [(0.7, 1), (1.0, 10), (3.0, 100)])
def test_no_subsampling_is_the_exact_gaussian_composition(z, t):
    exact = float(gaussian_epsilon(compose_gaussian_multipliers([z] * t), DELTA))
    pld = subsampled_gaussian_epsilon(z, 1.0, t, DELTA, interval=1e-4)
    assert exact - 1e-9 <= pld <= exact + 1e-3 * max(1.0, exact)


def test_delta_and_epsilon_are_inverse():
    pld = subsampled_gaussian_pld(1.0, 0.02, 300)
    eps = pld.epsilon(DELTA)
    assert pld.delta(eps) <= DELTA
    assert pld.delta(eps - 1e-3) > DELTA
    assert math.isclose(subsampled_gaussian_delta(1.0, 0.02, 300, eps), pld.delta(eps))


def test_amplification_and_monotonicity():
    eps = [subsampled_gaussian_epsilon(1.0, q, 100, DELTA) for q in (0.01, 0.1, 1.0)]
    assert eps[0] < eps[1] < eps[2]
    steps = [subsampled_gaussian_epsilon(1.0, 0.01, t, DELTA) for t in (10, 100, 1000)]
    assert steps[0] < steps[1] < steps[2]


def test_rdp_of_the_gaussian():
    z = 1.5
    np.testing.assert_allclose(subsampled_gaussian_rdp(z, 1.0, [2, 5, 30]),
                               np.array([2, 5, 30]) / (2 * z * z), rtol=1e-12)


def test_compose_api():
    g = compose([subsampled_gaussian_step("sgd", 1.0, 0.01, count=1000)], delta=DELTA)
    assert g.method == "pld"
    assert math.isclose(g.epsilon, subsampled_gaussian_epsilon(1.0, 0.01, 1000, DELTA))
    both = compose([subsampled_gaussian_step("sgd", 1.0, 0.01, count=1000),
                    gaussian_step("scales", 4.0)], delta=DELTA)
    assert both.epsilon > g.epsilon
    with pytest.raises(ValueError, match="steps"):
        compose([subsampled_gaussian_step("sgd", 1.0, 0.01), pure_step("q", 0.1)],
                delta=DELTA)
    with pytest.raises(ValueError, match="method"):
        compose([subsampled_gaussian_step("sgd", 1.0, 0.01)], delta=DELTA, method="zcdp")


@pytest.mark.parametrize("kwargs, name", [
    (dict(noise_multiplier=0.0), "noise_multiplier"),
    (dict(sampling_rate=0.0), "sampling_rate"),
    (dict(sampling_rate=1.5), "sampling_rate"),
    (dict(steps=0), "steps"),
    (dict(interval=1.0), "interval"),
])
def test_bad_arguments_name_themselves(kwargs, name):
    args = dict(noise_multiplier=1.0, sampling_rate=0.1, steps=10, interval=1e-3)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=name):
        subsampled_gaussian_pld(**args)
    with pytest.raises(ValueError, match="sampling_rate"):
        pure_step("x", 1.0).__class__("x", epsilon=1.0, sampling_rate=0.5)
