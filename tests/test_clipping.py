"""The clipping kernel over the whole float64 range, the exact clip radius and
its cache, and the argument checks of the kernels.

The central claims are checked exactly, in rational arithmetic
(:class:`fractions.Fraction`): every row's rounded contribution has norm at most
the clip radius, each row's integers are the ones an IEEE computation in the
kernel's fixed order gives (emulated with Fractions, so no BLAS or vector
width enters), and on worst-case neighbours the exact sum moves by at most the
declared sensitivity, with no rounding charge.
"""

from __future__ import annotations

import importlib
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpsum
from dpsum.design import scaling
from dpsum.kernels import _rows
from dpsum.kernels.grid import (
    EXACT_CHARGE,
    accumulate_grid,
    clamped_sum,
    clipped_sum,
    grid_rows,
    make_grid_plan,
)
from dpsum.design.clip_radius import clip_radius
from dpsum.distributions.gchisq import GeneralizedChiSquare

# the module, not the function dpsum.design.clip_radius that shadows it as an attribute
radius_module = importlib.import_module("dpsum.design.clip_radius")

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def exact_sq_norm(v) -> Fraction:
    return sum((Fraction(float(x)) ** 2 for x in v), Fraction(0))


def dyadic_sq_norm(row) -> Fraction:
    """Exact squared norm of a row of dyadic rationals (Fractions whose
    denominators are powers of two), summed in integers: fast at d = 10^4."""
    pairs = [(x.numerator, x.denominator.bit_length() - 1) for x in row]
    K = max(k for _, k in pairs)
    return Fraction(sum(p * p << (2 * (K - k)) for p, k in pairs), 1 << (2 * K))


def exact_sq_dist(a, b) -> Fraction:
    return sum(((Fraction(float(x)) - Fraction(float(y))) ** 2 for x, y in zip(a, b)),
               Fraction(0))


class _Bound:
    def __init__(self, C):
        self.C_n = C


def row_contributions(X, C, b=None, c=None):
    """Exact contributions of the float path's rows (clipped, rounded to the
    grid 2^K, in scaled units) as lists of Fractions, and the bound ``C``."""
    Q, K = grid_rows(X, C, b, c, charge=EXACT_CHARGE)
    unit = Fraction(2) ** K
    return [[Fraction(int(q)) * unit for q in row] for row in Q], _Bound(C)


def exact_sum(X, C, b=None, c=None):
    """The float path's exact statistic S 2^K (Fractions) of the clipped rows."""
    d = X.shape[1]
    plan, K, k = make_grid_plan(C, np.ones(d) if b is None else b, c, d, EXACT_CHARGE)
    S, _ = accumulate_grid(X, plan, k)
    return [Fraction(int(v)) * Fraction(2) ** K for v in S]


def exact_gap(a, b) -> Fraction:
    return sum(((x - y) ** 2 for x, y in zip(a, b)), Fraction(0))


# ------------------------------------------------------------- strategies

any_float = st.floats(allow_nan=False, allow_infinity=False, width=64)
exponent = st.integers(-300, 300)


@st.composite
def problems(draw, max_d=12, max_n=6):
    d = draw(st.integers(1, max_d))
    n = draw(st.integers(1, max_n))
    C = 10.0 ** draw(exponent) * draw(st.floats(1.0, 9.99))
    kind = draw(st.sampled_from(["scale", "raw", "subnormal"]))
    if kind == "raw":                       # any finite floats, including 1e308
        X = np.array(draw(st.lists(any_float, min_size=n * d, max_size=n * d))).reshape(n, d)
    elif kind == "subnormal":
        X = np.array(draw(st.lists(st.integers(-2**52, 2**52), min_size=n * d,
                                   max_size=n * d)), dtype=float).reshape(n, d) * 5e-324
    else:
        scale = 10.0 ** draw(exponent)
        seed = draw(st.integers(0, 2**32 - 1))
        X = np.random.default_rng(seed).standard_normal((n, d)) * scale
    if draw(st.booleans()):
        b = 10.0 ** np.array(draw(st.lists(st.floats(-3, 3), min_size=d, max_size=d)))
    else:
        b = None
    c = None
    if draw(st.booleans()):
        c = np.array(draw(st.lists(st.floats(-1e300, 1e300), min_size=d, max_size=d)))
        if kind == "scale" and draw(st.booleans()):
            X = X + c                        # data near a huge centre
    return X, C, b, c


# ------------------------------------------------------------- the row bound

@SETTINGS
@given(problems())
def test_every_row_contributes_at_most_C_exactly(problem):
    X, C, b, c = problem
    rows, plan = row_contributions(X, C, b, c)
    bound = Fraction(plan.C_n) ** 2
    for r in rows:
        assert sum((x * x for x in r), Fraction(0)) <= bound


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1e-300, 1.0, 1e300]))
def test_row_bound_holds_at_d_ten_thousand(seed, scale):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3, 10_000)) * scale
    X[1] *= 1e-3                                   # one row well inside the ball
    C = float(np.linalg.norm(X[2] / scale)) * scale * 0.999999   # one just outside
    rows, plan = row_contributions(X, C)
    for r in rows:
        assert dyadic_sq_norm(r) <= Fraction(plan.C_n) ** 2


def test_unclipped_rows_pass_through_and_clipped_rows_keep_their_direction():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 9)) * np.geomspace(1e-3, 1e3, 9)
    b = rng.uniform(0.5, 2, 9)
    c = rng.normal(size=9)
    C = 40.0
    T, k = clipped_sum(X, C, b, c)
    Y = (X - c) * b
    norms = np.linalg.norm(Y, axis=1)
    ref = (np.minimum(1, C / norms)[:, None] * Y).sum(axis=0)
    # each row is rounded to the grid: at most 2^-32 C away
    np.testing.assert_allclose(T, ref, rtol=0, atol=len(X) * 2.0 ** -32 * C)
    assert k == int(np.sum(norms > C))


# ----------------------------------------------------- worst-case neighbours


@SETTINGS
@given(problems(max_n=5), st.integers(0, 4), st.floats(1.0, 1e300), st.booleans())
def test_worst_case_neighbours_move_the_sum_by_at_most_2C(problem, where, size, flip):
    X, C, b, c = problem
    n, d = X.shape
    k = where % n
    direction = np.random.default_rng(k).standard_normal(d)
    centre = np.zeros(d) if c is None else c
    # two far-out records on opposite sides: both clipped, contributions opposite
    Xa, Xb = X.copy(), X.copy()
    with np.errstate(over="ignore"):
        far = np.clip(centre + direction * size * C / (np.ones(d) if b is None else b),
                      -1.7e308, 1.7e308)
        near = np.clip(centre - direction * size * C / (np.ones(d) if b is None else b),
                       -1.7e308, 1.7e308)
    Xa[k], Xb[k] = (far, near) if flip else (far, X[k])
    Ta, Tb = exact_sum(Xa, C, b, c), exact_sum(Xb, C, b, c)
    assert exact_gap(Ta, Tb) <= Fraction(2 * C) ** 2


def test_reproducer_3_large_centre_rounding_stays_within_sensitivity():
    # issue 16, reproducer 3: the rows are centred before they are summed
    rng = np.random.default_rng(0)
    s = np.array([4, 2, 1, .5])
    c = np.full(4, 1e14)
    X = c + rng.normal(0, s, (5000, 4))
    Y = X.copy()
    Y[759] = c
    b = dpsum.design.gaussian_data_scaling(s)
    C = dpsum.clip_radius(s, 1 / 5000, b)
    Ta, Tb = exact_sum(X, C, b, c), exact_sum(Y, C, b, c)
    assert exact_gap(Ta, Tb) <= Fraction(2 * C) ** 2
    # the mechanism's estimates, with the same noise, differ only by the
    # rounding of the final `+ n c` (post-processing of the noisy sum)
    f = lambda D: dpsum.gaussian_data_mechanism(D, epsilon=1, delta=1e-6, stds=s,
                                                center=c, rng=9)
    a, bb = f(X), f(Y)
    gap = np.abs(a.estimate - bb.estimate)
    allowed = 2 * C / a.scaling + 2 * np.spacing(a.estimate)
    assert np.all(gap <= allowed)


# ------------------------------------------------------ the other reproducers

def test_reproducer_1_huge_stds_are_clipped():
    X = np.zeros((10, 2))
    X[0, 0] = 1e206
    r = dpsum.gaussian_data_mechanism(X, epsilon=1, delta=1e-6, stds=[1e200, 1e200], rng=0, center=0)
    assert dpsum.mechanisms.release_diagnostics(X, r)["clipped_rows"] == 1
    T, _ = clipped_sum(X, r.clip_norm, r.scaling)
    assert np.linalg.norm(T) <= r.clip_norm


@pytest.mark.parametrize("X, clip_norm", [
    (np.array([[1e-164, 0.0]]), 1e-170),
    (np.array([[1e-164, 0.0], [0.0, 3e-165]]), 1e-170),
])
def test_reproducer_1_tiny_clip_norm_clips(X, clip_norm):
    T, k = clipped_sum(X, clip_norm)
    assert k == X.shape[0]
    assert exact_sq_norm(T) <= Fraction(clip_norm * X.shape[0]) ** 2
    assert T[0] > 0.99 * clip_norm


def test_reproducer_1_tiny_stds_with_a_zero_coordinate():
    rng = np.random.default_rng(5)
    s = np.array([1e-160, 2e-160, 1e-161])
    X = rng.normal(0, s * 50, (20, 3))
    X[:, 1] = 0.0
    b = dpsum.design.gaussian_data_scaling(s)
    C = dpsum.clip_radius(s, 1 / 20, b)
    T, k = clipped_sum(X, C, b)
    norms = np.linalg.norm((X / s) * (s * b), axis=1)   # avoids squaring 1e-160
    assert k == int(np.sum(norms > C)) > 0
    rows, plan = row_contributions(X, C, b)
    for r in rows:
        assert sum((x * x for x in r), Fraction(0)) <= Fraction(plan.C_n) ** 2


def test_reproducer_2_subnormal_squared_norms_terminate():
    X = np.array([[-3.833060821744355e-160, 3.200038177998223e-160,
                   2.028824405086084e-161, -8.660674212197924e-161]])
    T, k = clipped_sum(X, 5e-160)
    assert k == 1
    assert exact_sq_norm(T) <= Fraction(5e-160) ** 2
    rel = dpsum.clipped_gaussian_mechanism(X, epsilon=1, delta=1e-6, clip_norm=5e-160, rng=0)
    assert np.all(np.isfinite(rel.estimate))


def test_reproducer_4_overflowing_rows_are_clipped_not_dropped():
    T, k = clipped_sum(np.full((1, 4), 1.7e308), 5.0)
    np.testing.assert_allclose(T, np.full(4, 2.5), rtol=1e-9)
    assert k == 1
    assert exact_sq_norm(T) <= Fraction(25)
    # a deviation that overflows only after centring
    T, k = clipped_sum(np.array([[1.7e308, -1.7e308]]), 1.0, center=np.array([-1.7e308, 1.7e308]))
    np.testing.assert_allclose(T, [2 ** -0.5, -2 ** -0.5], rtol=1e-9)


def test_the_recheck_loop_terminates_and_repairs_a_too_large_factor():
    nu_upper = np.array([2.0, 3.0, 1e-3])
    f = np.array([1.0, 1.0, 1.0])              # far too large for the first two
    g = _rows._shrink_until_bounded(f, nu_upper, 1.5)
    assert np.all(g * nu_upper <= 1.5)
    assert g[2] == 1.0
    # a factor that is too large by a hair is repaired on the first pass
    h = _rows._shrink_until_bounded(np.array([1.5 / 2.0]), np.array([2.0]), 1.5)
    assert h[0] < 0.75 and h[0] > 0.75 * (1 - 2 ** -19)


def test_margin_makes_the_first_recheck_pass():
    rng = np.random.default_rng(3)
    for d in (1, 7, 100, 10_000):
        plan = _rows.make_clip_plan(1.3, np.ones(d), None, d)
        sq = rng.uniform(plan.tau, 1e300, 1000)
        nu = np.sqrt(sq)
        f = plan.C_n / nu * plan.shrink
        ok = f * _rows._norm_upper_bound(nu, d) * (1 + 2 * _rows._U) <= plan.C_n
        assert ok.all()


def test_kernel_rejects_bad_data_and_parameters():
    with pytest.raises(ValueError, match="NaN or infinite"):
        clipped_sum(np.array([[1.0, np.nan]]), 1.0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        clipped_sum(np.array([[1.0, np.inf]]), 1.0, center=np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="clip_norm"):
        clipped_sum(np.ones((2, 2)), 1e-310)
    with pytest.raises(ValueError, match="scaling"):
        clipped_sum(np.ones((2, 2)), 1.0, scaling=np.array([1e-320, 1.0]))
    with pytest.raises(TypeError, match="X"):
        clipped_sum([["a", "b"]], 1.0)
    # a sum beyond the float range saturates (no exception depends on the data)
    T, _ = clipped_sum(np.full((40, 1), 1e308), 1e307)
    assert T[0] == np.finfo(np.float64).max


def test_kernel_is_a_sum_of_block_partials():
    # what a mergeable accumulator relies on: blocks processed separately add up
    rng = np.random.default_rng(7)
    X = rng.standard_normal((3000, 5)) * 3
    T, k = clipped_sum(X, 4.0)
    T1, k1 = clipped_sum(X[:1700], 4.0)
    T2, k2 = clipped_sum(X[1700:], 4.0)
    assert k == k1 + k2
    assert exact_sum(X, 4.0) == [a + b for a, b in zip(exact_sum(X[:1700], 4.0),
                                                       exact_sum(X[1700:], 4.0))]


def test_clamped_sum_is_within_the_grid_of_the_exact_clamped_sum():
    rng = np.random.default_rng(8)
    X = rng.normal(0, 3, (20_000, 3))
    h = np.array([1.0, 2.0, 0.5])
    T, k = clamped_sum(X, h)
    ref = [math.fsum(col) for col in np.clip(X, -h, h).T]
    np.testing.assert_allclose(T, ref, rtol=0, atol=len(X) * 2.0 ** -32 * h.max())
    assert k == int(np.sum(np.abs(X) > h))


# ------------------------------------------- reproducers 5 and 6 (mechanisms)

@pytest.mark.parametrize("secure", [False, True])
def test_reproducer_5_empty_dataset_is_released_under_add_remove(secure):
    rng = None if secure else 0
    r = dpsum.clipped_gaussian_mechanism(np.empty((0, 3)), epsilon=1, delta=1e-6, clip_norm=1.0,
                                         neighbouring="add-remove", rng=rng, secure=secure)
    assert r.estimate.shape == (3,) and np.all(np.isfinite(r.estimate))
    r = dpsum.gaussian_data_mechanism(np.empty((0, 2)), epsilon=1, delta=1e-6, stds=[1.0, 2.0],
                                      center=[5.0, 5.0], clip_probability=1e-3,
                                      neighbouring="add-remove", rng=rng, secure=secure)
    assert r.estimate.shape == (2,)
    # under replace-one n is public, and a dataset with no row has no neighbour
    with pytest.raises(ValueError, match="X"):
        dpsum.clipped_gaussian_mechanism(np.empty((0, 3)), epsilon=1, delta=1e-6,
                                         clip_norm=1.0, rng=0, secure=secure)


def test_reproducer_6_infinite_noise_is_refused():
    with pytest.raises(ValueError, match="overflows"):
        dpsum.gaussian_mechanism([1.0], epsilon=1, delta=1e-6, sensitivity=1e308, rng=0)
    with pytest.raises(ValueError, match="overflows"):
        dpsum.clipped_gaussian_mechanism(np.ones((3, 2)), epsilon=1, delta=1e-6,
                                         clip_norm=1e308, rng=0)
    with pytest.raises(ValueError, match="overflows"):
        dpsum.elliptical_gaussian_mechanism(np.ones((3, 4)), epsilon=1, delta=1e-6,
                                            lower=-0.5 * np.asarray([1e308] * 4), upper=0.5 * np.asarray([1e308] * 4), rng=0)


# --------------------------------------------------------------- clip radius

def test_clip_radius_is_the_exact_quantile_rounded_up():
    stds = np.array([1.0, 0.5, 0.25, 0.125])
    b = scaling.gaussian_data_scaling(stds)
    p = 1e-9
    C = clip_radius(stds, p, b)
    dist = GeneralizedChiSquare((b * stds) ** 2)
    assert dist.sf(C**2) <= p
    assert dist.sf((C * (1 - 1e-9)) ** 2) > p


def test_clip_radius_equal_weights_matches_chi2():
    from scipy import stats
    d, p = 20, 1e-6
    C = clip_radius(np.ones(d), p)
    assert C**2 == pytest.approx(stats.chi2.isf(p, d), rel=1e-9)


# --------------------------------------------------------------- clipped sum

def test_clipped_sum_matches_the_definition_and_leaves_input_alone():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5000, 7)) * np.array([5, 1, 1, 0.1, 2, 3, 1])
    X0 = X.copy()
    b = rng.uniform(0.2, 2.0, 7)
    c = rng.normal(size=7)
    C = 3.0
    T, k = clipped_sum(X, C, b, c)
    Y = (X0 - c) * b
    norms = np.linalg.norm(Y, axis=1)
    ref = (np.minimum(1, C / norms)[:, None] * Y).sum(axis=0)
    np.testing.assert_allclose(T, ref, rtol=0, atol=len(X) * 2.0 ** -32 * C)
    assert k == int(np.sum(norms > C))
    np.testing.assert_array_equal(X, X0)


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e150, 1e200, 1e307])
def test_clipped_rows_never_exceed_C(scale):
    rng = np.random.default_rng(2)
    C = 1.0
    for _ in range(200):
        row = rng.standard_normal((1, 5)) * scale
        T, _ = clipped_sum(row, C)
        assert np.all(np.isfinite(T))
        assert np.linalg.norm(T) <= C


def test_clipped_sum_clips_rows_that_overflow_when_scaled():
    # issue 16: such rows are clipped (to the direction (1, 1)/sqrt(2)), not refused or dropped
    T, k = clipped_sum(np.full((2, 2), 1e308), 1.0, scaling=np.array([10.0, 10.0]))
    np.testing.assert_allclose(T, np.full(2, np.sqrt(2.0)), rtol=1e-9)
    assert k == 2


# ------------------------------------------------------------- validation
def test_public_clipped_sum_validates_its_arguments():
    # a list is converted, as everywhere in dpsum
    T, k = clipped_sum([[3.0, 4.0], [0.3, 0.4]], 1.0)
    np.testing.assert_allclose(T, [0.9, 1.2], rtol=1e-9)
    assert k == 1
    with pytest.raises(ValueError, match="X must be 2-dimensional"):
        clipped_sum(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="scaling must be 1-dimensional"):
        clipped_sum(np.ones((2, 3)), 1.0, scaling=2.0)
    with pytest.raises(ValueError, match="scaling must have length 3"):
        clipped_sum(np.ones((2, 3)), 1.0, scaling=[1.0, 2.0])
    with pytest.raises(ValueError, match="scaling must be > 0"):
        clipped_sum(np.ones((2, 3)), 1.0, scaling=[1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="center must have length 3"):
        clipped_sum(np.ones((2, 3)), 1.0, center=[1.0])
    with pytest.raises(ValueError, match="clip_norm"):
        clipped_sum(np.ones((2, 3)), [1.0, 2.0])
    with pytest.raises(TypeError, match="X"):
        clipped_sum([["a", "b"]], 1.0)


def test_clamped_sum_validates_its_arguments():
    T, k = clamped_sum([[3.0, -0.1], [0.2, 0.4]], [1.0, 0.25])
    np.testing.assert_allclose(T, [1.2, 0.15], rtol=1e-9)
    assert k == 2
    with pytest.raises(ValueError, match="half_widths must have length 2"):
        clamped_sum(np.ones((2, 2)), [1.0])
    with pytest.raises(ValueError, match="X must be 2-dimensional"):
        clamped_sum(np.ones(2), [1.0, 1.0])


# ------------------------------------------------------ the clip-radius cache
def test_clip_radius_cache_is_keyed_by_a_digest_and_bounded():
    radius_module._RADIUS_CACHE.clear()
    stds = np.array([3.0, 1.0, 0.5])
    first = clip_radius(stds, 1e-4)
    store = radius_module._RADIUS_CACHE._store
    assert len(store) == 1
    (key,) = store
    d, p, digest = key
    assert (d, p) == (3, 1e-4) and isinstance(digest, bytes) and len(digest) == 32
    # a repeated call is served from the cache, with the same value
    assert clip_radius(stds, 1e-4) == first and len(store) == 1
    # scaling the stds by a power of two reuses the entry (relative weights)
    assert clip_radius(4.0 * stds, 1e-4) == 4.0 * first and len(store) == 1
    # the cache never holds more than its bound, whatever the number of keys
    for k in range(radius_module._RadiusCache._MAX_ENTRIES + 20):
        clip_radius(stds, 1e-3 / (k + 1))
    assert len(store) == radius_module._RadiusCache._MAX_ENTRIES
    radius_module._RADIUS_CACHE.clear()


@pytest.mark.parametrize("scale", [1e-200, 1e-100, 1e100, 1e200])
def test_clip_radius_works_across_the_float_range(scale):
    stds = np.array([1.0, 0.5, 0.25])
    assert clip_radius(stds * scale, 1e-6) == pytest.approx(clip_radius(stds, 1e-6) * scale,
                                                            rel=1e-14)
    b = np.array([1.0, 2.0, 4.0])
    assert clip_radius(stds, 1e-6, b * scale) == pytest.approx(
        clip_radius(stds, 1e-6, b) * scale, rel=1e-14)


def test_clip_radius_refuses_a_radius_beyond_the_float_range():
    with pytest.raises(ValueError, match="clip radius"):
        clip_radius([1e300, 1e300], 1e-12, [1e10, 1e10])
