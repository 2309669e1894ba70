"""The grid path: grid rounding charged to the sensitivity, exact integer sums,
and the exact discrete Gaussian sampler with its privacy bound (issue 16)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import dpsum
from dpsum.distributions import discrete
from dpsum.kernels import _rows, grid
from dpsum.release import discrete_noise
from dpsum.distributions.discrete import discrete_gaussian, discrete_gaussian_pmf
from dpsum.privacy.discrete import discrete_gaussian_delta, discrete_gaussian_delta_exact_1d, discrete_gaussian_sigma
from dpsum.kernels.grid import grid_clipped_sum, grid_exponent

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def int_sq(v) -> int:
    return sum(int(x) * int(x) for x in v)


def grid_radius_sq(C: float, K: int) -> Fraction:
    return (Fraction(C) / Fraction(2) ** K) ** 2


# ------------------------------------------------------------------ the grid

@given(st.floats(1e-290, 1e290), st.integers(1, 10**6))
def test_grid_exponent_charges_at_most_the_stated_fraction(C, d):
    K = grid_exponent(C, d)
    step = Fraction(2) ** K
    assert Fraction(d) * (step / 2) ** 2 <= (Fraction(grid.GRID_CHARGE) * Fraction(C)) ** 2
    assert Fraction(d) * step ** 2 > (Fraction(grid.GRID_CHARGE) * Fraction(C)) ** 2


@st.composite
def datasets(draw):
    d = draw(st.integers(1, 8))
    n = draw(st.integers(1, 6))
    C = 10.0 ** draw(st.integers(-290, 290))
    scale = C * 10.0 ** draw(st.integers(-8, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    X = np.random.default_rng(seed).standard_normal((n, d)) * scale
    c = None
    if draw(st.booleans()):
        c = np.full(d, 10.0 ** draw(st.integers(-300, 300)))
        X = X + c
    return X, C, c


@SETTINGS
@given(datasets())
def test_every_rounded_row_lies_in_the_ball(problem):
    X, C, c = problem
    for row in X:
        S, K, _ = grid_clipped_sum(row[None, :], C, center=c)
        assert int_sq(S) <= grid_radius_sq(C, K)


def test_an_overflowing_row_is_clipped_and_rounded_into_the_ball():
    X = np.array([[1.7e308, -1.7e308, 3.0]])
    S, K, k = grid_clipped_sum(X, 2.0, center=np.array([-1.7e308, 1.7e308, 0.0]))
    assert k == 1 and int_sq(S) <= grid_radius_sq(2.0, K)
    assert S[0] > 0 and S[1] < 0


@SETTINGS
@given(datasets(), st.integers(0, 5))
def test_worst_case_neighbours_move_the_integer_sum_by_at_most_2C(problem, where):
    X, C, c = problem
    k = where % X.shape[0]
    d = X.shape[1]
    centre = np.zeros(d) if c is None else c
    Xa, Xb = X.copy(), X.copy()
    Xa[k] = centre + 1e3 * C
    Xb[k] = centre - 1e3 * C
    Sa, K, _ = grid_clipped_sum(Xa, C, center=c)
    Sb, _, _ = grid_clipped_sum(Xb, C, center=c)
    assert int_sq(Sa - Sb) <= 4 * grid_radius_sq(C, K)


def test_integer_sum_does_not_depend_on_row_order():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5000, 6)) * np.array([1e6, 1, 1e-6, 3, 1, 1])
    X[::7] *= 1e3                                   # many clipped rows
    b = rng.uniform(0.1, 10, 6)
    c = rng.normal(size=6)
    S1, K1, k1 = grid_clipped_sum(X, 50.0, b, c)
    S2, K2, k2 = grid_clipped_sum(X[rng.permutation(5000)], 50.0, b, c)
    assert K1 == K2 and k1 == k2
    assert all(int(a) == int(b_) for a, b_ in zip(S1, S2))


def test_grid_sum_agrees_with_the_float_kernel_up_to_the_charge():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((20_000, 10)) * 2
    b = rng.uniform(0.5, 2, 10)
    C = 6.0
    S, K, k = grid_clipped_sum(X, C, b)
    T, k_float = dpsum.kernels.clipped_sum(X, C, b)
    # each row differs by at most the clip shrink plus the rounding: 2 * charge * C
    err = np.linalg.norm(np.array([float(v) for v in S]) * 2.0 ** K - T)
    assert err <= X.shape[0] * 2 * grid.GRID_CHARGE * C
    assert abs(k - k_float) <= 5                    # radii differ by a relative 2^-20


def test_grid_sum_of_the_empty_dataset_is_zero():
    S, K, k = grid_clipped_sum(np.empty((0, 3)), 1.0)
    assert [int(v) for v in S] == [0, 0, 0] and k == 0


def test_grid_kernel_does_the_same_work_whatever_is_clipped(monkeypatch):
    # a kernel whose time grew with the clipped count would leak it: the NumPy
    # kernel computes clip factors for every row of every block (the compiled
    # kernel runs one code path per row, with no branch on the clip decision
    # but the re-check, which the margin makes pass the first time)
    monkeypatch.setenv("DPSUM_KERNEL", "numpy")
    calls = []
    original = grid._grid_factors

    def recording(sq, plan):
        calls.append(sq.shape)
        return original(sq, plan)

    monkeypatch.setattr(grid, "_grid_factors", recording)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20_000, 100))
    grid_clipped_sum(X, 1e3)                        # nothing clipped
    none = list(calls)
    calls.clear()
    grid_clipped_sum(X, 1.0)                        # everything clipped
    rows = (_rows._BLOCK_ELEMENTS // 100) * grid._GRID_BLOCK_FACTOR
    assert calls == none and len(none) == -(-20_000 // rows)


def test_grid_rejects_bad_input():
    with pytest.raises(ValueError, match="NaN or infinite"):
        grid_clipped_sum(np.array([[0.0, np.nan]]), 1.0)
    with pytest.raises(TypeError, match="X"):
        grid_clipped_sum([["a"]], 1.0)
    with pytest.raises(ValueError, match="X"):
        grid_clipped_sum(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="clip_norm"):
        grid_clipped_sum(np.ones((1, 1)), -1.0)


# ------------------------------------------------------ the discrete Gaussian

@pytest.mark.parametrize("sigma2, n", [(0.3, 20_000), (2.0, 20_000), (50.5, 20_000)])
def test_discrete_gaussian_fits_the_exact_pmf(sigma2, n):
    x = discrete_gaussian(sigma2, size=n, rng=12345).astype(np.int64)
    half = int(math.ceil(4 * math.sqrt(sigma2))) + 1
    edges = np.arange(-half, half + 1)
    p = discrete_gaussian_pmf(edges, sigma2)
    # merge the tails into the end cells
    p[0] += discrete_gaussian_pmf(np.arange(-half - 200, -half), sigma2).sum()
    p[-1] += discrete_gaussian_pmf(np.arange(half + 1, half + 201), sigma2).sum()
    observed = np.array([np.sum(np.clip(x, -half, half) == e) for e in edges])
    expected = n * p
    keep = expected >= 5                            # pool sparse cells with neighbours
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    chi2, pvalue = stats.chisquare(obs, exp * obs.sum() / exp.sum())
    assert pvalue > 1e-3


def test_discrete_gaussian_pmf_sums_to_one_and_matches_the_continuous_limit():
    for s2 in (0.1, 1.0, 3.9, 4.0, 100.0):
        ys = np.arange(-400, 401)
        assert discrete_gaussian_pmf(ys, s2).sum() == pytest.approx(1.0, rel=1e-13)
    # for large sigma the pmf at 0 is 1 / (sigma sqrt(2 pi)) to within exp(-2 pi^2 sigma^2)
    assert discrete_gaussian_pmf(0, 1e6) == pytest.approx(1 / math.sqrt(2 * math.pi * 1e6),
                                                          rel=1e-14)


def test_discrete_gaussian_moments_at_large_scale():
    sigma2 = 1e12
    x = np.array([float(v) for v in discrete_gaussian(sigma2, size=4000, rng=7)])
    se_mean = math.sqrt(sigma2 / 4000)
    assert abs(x.mean()) < 5 * se_mean
    # the sample variance has standard error sigma^2 sqrt(2 / n)
    assert abs(x.var() / sigma2 - 1) < 5 * math.sqrt(2 / 4000)


def test_discrete_gaussian_takes_rationals_and_a_secure_source():
    x = discrete_gaussian(Fraction(7, 3), size=(2, 3))
    assert x.shape == (2, 3) and all(isinstance(v, int) for v in x.ravel())
    assert discrete._Bits(None).secure and not discrete._Bits(0).secure
    with pytest.raises(ValueError, match="sigma2"):
        discrete_gaussian(-1.0)
    with pytest.raises(TypeError, match="rng"):
        discrete_gaussian(1.0, rng="seed")


def test_uniform_integers_above_int64_stay_in_range():
    bits = discrete._Bits(3)
    m = 3 * 2**70 + 1
    draws = [bits.below(m) for _ in range(2000)]
    assert all(0 <= v < m for v in draws)
    # the top third is hit about a third of the time
    top = sum(v >= 2 * 2**70 for v in draws) / 2000
    assert abs(top - 1 / 3) < 5 * math.sqrt(2 / 9 / 2000)


# ---------------------------------------------------------------- its privacy

@pytest.mark.parametrize("sigma2, D, eps", [(25.0, 1, 1.0), (25.0, 3, 0.5), (400.0, 7, 2.0),
                                            (2.0, 1, 0.3)])
def test_zcdp_delta_bounds_the_exact_one_dimensional_delta(sigma2, D, eps):
    exact = discrete_gaussian_delta_exact_1d(sigma2, eps, D)
    bound = discrete_gaussian_delta(math.sqrt(sigma2), eps, D)
    assert 0 <= exact <= bound


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-6), (0.1, 1e-10), (5.0, 1e-5), (1e-3, 1e-6),
                                        (20.0, 1e-12)])
def test_calibrated_sigma_meets_delta_and_is_nearly_minimal(eps, delta):
    s = discrete_gaussian_sigma(eps, delta, sensitivity=3.0)
    assert discrete_gaussian_delta(s, eps, 3.0) <= delta
    assert discrete_gaussian_delta(s * (1 - 1e-7), eps, 3.0) > delta
    # the discrete Gaussian pays a little more than the analytic Gaussian
    assert 1.0 < s / (3.0 * dpsum.analytic_sigma(eps, delta)) < 1.25


# -------------------------------------------------- secure=True on mechanisms

def test_secure_releases_lie_on_a_data_independent_grid():
    rng = np.random.default_rng(11)
    X1, X2 = rng.normal(size=(300, 4)), rng.normal(size=(300, 4)) * 50
    outs = [dpsum.clipped_gaussian_mechanism(X, epsilon=1, delta=1e-6, clip_norm=2.0,
                                             rng=5, secure=True) for X in (X1, X2)]
    assert outs[0].grid_exponent == outs[1].grid_exponent
    for r in outs:
        assert r.secure and r.calibration == "discrete gaussian (zCDP)"
        units = r.estimate / 2.0 ** r.grid_exponent
        assert np.all(units == np.rint(units))
    g = dpsum.gaussian_mechanism([0.1, 7.3], epsilon=1, delta=1e-6, sensitivity=1.0,
                                 rng=5, secure=True)
    units = g.estimate / 2.0 ** g.grid_exponent
    assert np.all(units == np.rint(units))
    # the Gaussian-data mechanism: in the scaled space, less n c (replace-one), the grid again
    s = np.array([4.0, 1.0, 0.5])
    c = np.array([10.0, -3.0, 0.0])
    r = dpsum.gaussian_data_mechanism(X1[:, :3] * s + c, epsilon=1, delta=1e-6, stds=s,
                                      center=c, rng=5, secure=True)
    units = (r.estimate - 300 * c) * r.scaling / 2.0 ** r.grid_exponent
    np.testing.assert_allclose(units, np.rint(units), atol=1e-6)


def test_secure_release_is_reproducible_with_a_seed_and_close_to_the_float_one():
    rng = np.random.default_rng(12)
    s = np.array([3.0, 1.0])
    X = rng.normal(0, s, (4000, 2))
    a = dpsum.gaussian_data_mechanism(X, epsilon=1, delta=1e-6, stds=s, rng=1, secure=True, center=0)
    b = dpsum.gaussian_data_mechanism(X, epsilon=1, delta=1e-6, stds=s, rng=1, secure=True, center=0)
    np.testing.assert_array_equal(a.estimate, b.estimate)
    f = dpsum.gaussian_data_mechanism(X, epsilon=1, delta=1e-6, stds=s, rng=1, center=0)
    # the discrete Gaussian's calibration costs a few per cent more noise
    assert 1.0 < a.noise_std[0] / f.noise_std[0] < 1.15
    assert np.all(np.abs(a.estimate - X.sum(axis=0)) < 6 * a.noise_std)
    e = dpsum.elliptical_gaussian_mechanism(X, epsilon=1, delta=1e-6, lower=[-10.0, -4.0], upper=[10.0, 4.0],
                                            rng=2, secure=True)
    assert np.all(np.abs(e.estimate - np.clip(X, [-10, -4], [10, 4]).sum(0)) < 6 * e.noise_std)
    assert e.secure and e.grid_exponent is not None


def test_secure_path_sensitivity_in_grid_units_holds_on_neighbours():
    # worst-case replace-one neighbours, noise-free: the integer sums differ by <= 2C / 2^K
    X = np.zeros((5, 3))
    Y = X.copy()
    X[2] = [1e9, 0, 0]
    Y[2] = [-1e9, 1e-300, 0]
    Sx, K, _ = grid_clipped_sum(X, 1.5)
    Sy, _, _ = grid_clipped_sum(Y, 1.5)
    r = dpsum.clipped_gaussian_mechanism(X, epsilon=1, delta=1e-6, clip_norm=1.5, rng=0,
                                         secure=True)
    assert int_sq(Sx - Sy) <= (Fraction(r.sensitivity) / Fraction(2) ** K) ** 2


def test_secure_flag_must_be_a_bool_and_classic_is_refused():
    with pytest.raises(TypeError, match="secure"):
        dpsum.gaussian_mechanism([1.0], epsilon=1, delta=1e-6, sensitivity=1, secure="yes")
    with pytest.raises(ValueError, match="classic"):
        dpsum.gaussian_mechanism([1.0], epsilon=0.5, delta=1e-6, sensitivity=1,
                                 calibration="classic", secure=True)


# ----------------------------------------------------- the precision attack

def test_precision_attack_breaks_the_float_path_and_not_the_grid_path():
    eps, delta, n = 1.0, 1e-5, 200_000
    rng = np.random.default_rng(13)
    rel = lambda v, r: dpsum.gaussian_mechanism(v, epsilon=eps, delta=delta, sensitivity=1.0,
                                                rng=r)
    std = rel([0.0], 0).noise_std[0]
    # the mechanism's own arithmetic, batched: fl(value + fl(std * normal))
    a = 1.0 + rng.normal(0.0, std, n)
    b = 0.0 + rng.normal(0.0, std, n)
    np.testing.assert_array_equal(rel([1.0], np.random.default_rng(1)).estimate,
                                  1.0 + np.random.default_rng(1).normal(0.0, std, 1))
    lb_float, _ = dpsum.audit.precision_epsilon_lower_bound(a, b, sensitivity=1.0, delta=delta)
    assert lb_float > eps
    m = 3000
    ga = np.array([dpsum.gaussian_mechanism([1.0], epsilon=eps, delta=delta, sensitivity=1.0,
                                            rng=rng, secure=True).estimate[0] for _ in range(m)])
    gb = np.array([dpsum.gaussian_mechanism([0.0], epsilon=eps, delta=delta, sensitivity=1.0,
                                            rng=rng, secure=True).estimate[0] for _ in range(m)])
    lb_grid, counts = dpsum.audit.precision_epsilon_lower_bound(ga, gb, sensitivity=1.0,
                                                                delta=delta, bits=1)
    assert lb_grid <= eps
    # on the grid every output is a multiple of ulp(1)/2, so the bit test is void
    assert np.all(dpsum.audit.precision_event(np.concatenate([ga, gb]), 1.0, 1)
                  == (np.abs(np.concatenate([ga, gb])) < 0.5))


# ------------------------------------------- the discrete Laplace (secure Laplace)

@pytest.mark.parametrize("scale, n", [(0.3, 20_000), (2.5, 20_000), (Fraction(7, 3), 20_000),
                                      (12.0, 20_000)])
def test_discrete_laplace_fits_the_exact_pmf(scale, n):
    x = discrete.discrete_laplace(scale, size=n, rng=2024).astype(np.int64)
    tau = float(scale)
    half = int(math.ceil(6 * tau)) + 1
    cells = np.arange(-half, half + 1)
    p = discrete.discrete_laplace_pmf(cells, tau)
    tail = discrete.discrete_laplace_pmf(np.arange(half + 1, half + 2000), tau).sum()
    p[0] += tail
    p[-1] += tail
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    observed = np.array([np.sum(np.clip(x, -half, half) == c) for c in cells])
    expected = n * p
    keep = expected >= 5                            # pool sparse cells
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3


def test_discrete_laplace_moments_at_large_scale_and_a_secure_source():
    tau = Fraction(10**9, 3)
    x = np.array([float(v) for v in discrete.discrete_laplace(tau, size=4000, rng=8)])
    std = discrete.discrete_laplace_std(tau)
    assert std == pytest.approx(math.sqrt(2) * float(tau), rel=1e-9)
    assert abs(x.mean()) < 5 * std / math.sqrt(4000)
    # E|X| = tau up to O(1/tau) for large tau; |X| has standard deviation ~ tau
    assert abs(np.abs(x).mean() / float(tau) - 1) < 5 / math.sqrt(4000)
    y = discrete.discrete_laplace(1.5, size=(2, 2))          # OS CSPRNG
    assert y.shape == (2, 2) and all(isinstance(v, int) for v in y.ravel())
    with pytest.raises(ValueError, match="scale"):
        discrete.discrete_laplace(0.0)
    # variance 2r / (1 - r)^2 against the pmf summed directly
    ys = np.arange(-200, 201)
    var = float(np.sum(ys * ys * discrete.discrete_laplace_pmf(ys, 2.5)))
    assert discrete.discrete_laplace_std(2.5) == pytest.approx(math.sqrt(var), rel=1e-12)


@SETTINGS
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=6), st.floats(1e-3, 1e3),
       st.data())
def test_secure_laplace_grid_sensitivity_holds_on_worst_case_neighbours(a, sens, data):
    # neighbours at exact L1 distance <= sens, placed anywhere relative to the grid:
    # the rounded integer vectors differ by at most D in L1, exactly
    a = np.array(a)
    d = a.size
    weights = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=d, max_size=d)))
    step = weights / max(1.0, float(np.abs(weights).sum())) * sens
    b = a + step
    dist = sum(abs(Fraction(float(x)) - Fraction(float(y))) for x, y in zip(a, b))
    if dist > Fraction(sens):                        # rounding of a + step overshot
        return
    _, K, D, _ = discrete_noise.secure_laplace(a, sensitivity=sens, epsilon=1.0, rng=0)
    qa, qb = grid.round_to_grid(a, K), grid.round_to_grid(b, K)
    assert sum(abs(int(x) - int(y)) for x, y in zip(qa, qb)) <= D
    # the rounding charge is at most 2 GRID_CHARGE of the sensitivity
    assert Fraction(D) * Fraction(2) ** K <= Fraction(sens) * (1 + 2 * Fraction(grid.GRID_CHARGE))


def test_secure_laplace_mechanism_records_the_grid_path():
    value = np.array([[1.5, -2.0], [0.25, 8.0]])
    r = dpsum.laplace_mechanism(value, epsilon=0.5, sensitivity=2.0, neighbouring="add-remove",
                                rng=3, secure=True)
    assert r.secure and r.delta == 0.0 and r.calibration == "discrete laplace"
    assert r.mechanism == "laplace" and r.estimate.shape == (2, 2)
    units = r.estimate / 2.0 ** r.grid_exponent
    assert np.all(units == np.rint(units))
    D = round(r.sensitivity / 2.0 ** r.grid_exponent)
    tau = D / 0.5
    assert r.sensitivity == pytest.approx(2.0, rel=3 * grid.GRID_CHARGE)
    np.testing.assert_allclose(r.noise_std, discrete.discrete_laplace_std(tau) * 2.0 ** r.grid_exponent)
    assert r.sigma_opt * r.sensitivity == pytest.approx(r.noise_std[0], rel=1e-15)
    again = dpsum.laplace_mechanism(value, epsilon=0.5, sensitivity=2.0, rng=3, secure=True)
    np.testing.assert_array_equal(r.estimate, again.estimate)
    assert np.all(np.abs(r.estimate - value) < 20 * r.noise_std)
    secure = dpsum.laplace_mechanism(value, epsilon=0.5, sensitivity=2.0, secure=True)
    assert secure.secure                                  # rng=None: the OS CSPRNG
    with pytest.raises(TypeError, match="secure"):
        dpsum.laplace_mechanism(value, epsilon=0.5, sensitivity=2.0, secure=1)
    # a statistic beyond the grid's float range saturates (no data-dependent exception)
    big = dpsum.laplace_mechanism([1e300, -1e300], epsilon=0.5, sensitivity=1e-10, rng=0,
                                  secure=True)
    M = np.finfo(np.float64).max
    np.testing.assert_allclose(big.estimate, [M * 2.0 ** big.grid_exponent,
                                              -M * 2.0 ** big.grid_exponent], rtol=1e-12)


def test_secure_laplace_draws_noise_of_scale_D_over_epsilon_exactly(monkeypatch):
    seen = []
    original = discrete.discrete_laplace

    def recording(scale, size=(), rng=None):
        seen.append(scale)
        return original(scale, size, rng)

    monkeypatch.setattr(discrete_noise, "discrete_laplace", recording)
    eps = 0.1                                        # not a dyadic rational
    est, K, D, std = discrete_noise.secure_laplace([0.3, 0.0, -4.0], sensitivity=3.0, epsilon=eps, rng=1)
    assert seen == [Fraction(D) / Fraction(eps)]     # exact rational scale, no rounding
    assert D == math.floor(3.0 / 2.0 ** K) + 3
    assert std == pytest.approx(discrete.discrete_laplace_std(seen[0]) * 2.0 ** K, rel=0)


def _worst_case_laplace_pair(sens: float, d: int):
    """Neighbouring statistics at L1 distance <= sens whose grid roundings are
    exactly D = floor(sens / 2^K) + d apart: every coordinate gains a whole
    grid unit from rounding."""
    _, K, D, _ = discrete_noise.secure_laplace(np.zeros(d), sensitivity=sens, epsilon=1.0, rng=0)
    u = 2.0 ** K
    L = D - d
    frac = Fraction(sens) / Fraction(u) - L
    n = [L // d + (1 if j < L % d else 0) for j in range(d)]
    m = np.arange(d) * 6 - 2 * d                      # even grid points around zero
    if frac > 0:
        # a_j just below a midpoint (rounds down), b_j just above the next one
        e = 2.0 ** -3
        while Fraction(2 * d) * Fraction(e) > frac:
            e /= 2
        a = (m + 0.5 - e) * u
        b = a + (np.array(n, dtype=np.float64) + 2 * e) * u
    else:
        # sens is a multiple of 2^K: use ties (to even), which need odd steps
        n = [(L // d) | 1 for _ in range(d - 1)]
        n.append(L - sum(n))
        assert all(k % 2 == 1 and k > 0 for k in n), "pick (sens, d) with L = d mod 2"
        a = (m + 0.5) * u                             # m even: rounds down to m
        b = a + np.array(n, dtype=np.float64) * u     # m + n odd: rounds up to m + n + 1
    return a, b, K, D


@pytest.mark.parametrize("sens, d", [(1.3, 3), (0.7, 1), (5e-200, 4), (2.0 ** 60 / 3, 5),
                                     (1.0, 2), (1 + 2.0 ** -19, 1), (2.0 ** -30, 4)])
def test_secure_laplace_grid_sensitivity_is_attained_and_not_exceeded(sens, d):
    a, b, K, D = _worst_case_laplace_pair(sens, d)
    dist = sum(abs(Fraction(float(x)) - Fraction(float(y))) for x, y in zip(a, b))
    assert dist <= Fraction(sens)                     # a genuine neighbouring pair
    qa, qb = grid.round_to_grid(a, K), grid.round_to_grid(b, K)
    assert sum(abs(int(x) - int(y)) for x, y in zip(qa, qb)) == D   # tight, never above
    # the noise scale D / epsilon makes this worst pair's privacy loss exactly epsilon:
    # log P[q + Z = y] - log P[q' + Z = y] at y = qa, from the pmf itself
    eps = 0.75
    tau = float(Fraction(D) / Fraction(eps))
    diff = np.array([int(x) - int(y) for x, y in zip(qb, qa)], dtype=np.float64)
    loss = np.sum(np.log(discrete.discrete_laplace_pmf(np.zeros(d), tau))
                  - np.log(discrete.discrete_laplace_pmf(diff, tau)))
    assert loss == pytest.approx(eps, rel=1e-9)


def test_precision_attack_breaks_the_float_laplace_and_not_the_grid_laplace():
    eps, delta, n = 1.0, 1e-5, 200_000
    rng = np.random.default_rng(13)
    # the float path's own arithmetic, batched: fl(value + laplace(0, Delta / eps))
    np.testing.assert_array_equal(
        dpsum.laplace_mechanism([1.0], epsilon=eps, sensitivity=1.0,
                                rng=np.random.default_rng(5)).estimate,
        1.0 + np.random.default_rng(5).laplace(0.0, 1.0, 1))
    a = 1.0 + rng.laplace(0.0, 1.0, n)
    b = 0.0 + rng.laplace(0.0, 1.0, n)
    lb_float, _ = dpsum.audit.precision_epsilon_lower_bound(a, b, sensitivity=1.0, delta=delta)
    assert lb_float > eps
    m = 3000
    rel = lambda v: dpsum.laplace_mechanism([v], epsilon=eps, sensitivity=1.0, rng=rng,
                                            secure=True).estimate[0]
    ga = np.array([rel(1.0) for _ in range(m)])
    gb = np.array([rel(0.0) for _ in range(m)])
    for bits in (1, 6):
        lb_grid, counts = dpsum.audit.precision_epsilon_lower_bound(
            ga, gb, sensitivity=1.0, delta=delta, bits=bits)
        assert lb_grid <= eps and counts[0] > 0
    # every grid output is a multiple of ulp(1)/2: the bit test reduces to |y| small
    both = np.concatenate([ga, gb])
    assert np.all(dpsum.audit.precision_event(both, 1.0, 1) == (np.abs(both) < 0.5))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(epsilon=0.0), ValueError, "epsilon"),
    (dict(epsilon=-1.0), ValueError, "epsilon"),
    (dict(epsilon=float("nan")), ValueError, "epsilon"),
    (dict(epsilon=float("inf")), ValueError, "epsilon"),
    (dict(sensitivity=0.0), ValueError, "sensitivity"),
    (dict(sensitivity=float("inf")), ValueError, "sensitivity"),
    (dict(sensitivity=1e307, epsilon=1e-3), ValueError, "sensitivity / epsilon"),
    (dict(value=[1.0, float("nan")]), ValueError, "value"),
    (dict(value=[[1.0], ["a"]]), (TypeError, ValueError), "value"),
    (dict(rng="seed"), TypeError, "rng"),
])
def test_secure_laplace_refuses_bad_arguments(kwargs, error, match):
    args = dict(value=[1.0, 2.0], sensitivity=1.0, epsilon=1.0, rng=0) | kwargs
    with pytest.raises(error, match=match):
        discrete_noise.secure_laplace(**args)
    with pytest.raises(error, match=match):
        dpsum.laplace_mechanism(secure=True, **args)


@pytest.mark.parametrize("scale, error", [(0, ValueError), (-1.5, ValueError),
                                          (float("nan"), ValueError), (float("inf"), ValueError),
                                          ("2", TypeError), (True, TypeError),
                                          (Fraction(-1, 3), ValueError)])
def test_discrete_laplace_refuses_bad_scales(scale, error):
    with pytest.raises(error, match="scale"):
        discrete.discrete_laplace(scale, size=2, rng=0)


def test_grid_values_beyond_the_float_range_are_infinite_not_errors():
    big = 2 ** 1100
    out = discrete_noise._from_grid(np.array([big, -big, 3, -(2 ** 60)], dtype=object), -2)
    np.testing.assert_array_equal(out, [np.inf, -np.inf, 0.75, -(2.0 ** 58)])
    # an integer beyond the float range whose value on the grid is a float
    out = discrete_noise._from_grid(np.array([big + 1, 3], dtype=object), -200)
    assert out[0] == 2.0 ** 900 and out[1] == 3 * 2.0 ** -200
    assert discrete_noise._from_grid(np.array([-1], dtype=object), -1080)[0] == -0.0
