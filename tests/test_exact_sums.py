"""Exact sums on every path: the same bits on any machine, order and split.

Each row's clipped, rounded contribution is computed by element-wise IEEE
operations and one reduction in an order the kernel fixes
(``dpsum.kernels._rows._lane_sum``: 8 lanes, each summed left to right, then a
fixed tree), so it is a function of that row and the
public parameters alone. The first test recomputes every row's integers with
an emulation of IEEE double arithmetic in exact rationals (each operation's
exact result rounded to the nearest float by ``float(Fraction)``), so it
checks the kernel against the specification, not against NumPy or a BLAS.
The others check the consequence: a release is bit-identical under any
permutation of the rows and any split into blocks, on every vector mechanism
and relation.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpsum
from _releases import same_release
from dpsum.kernels import _rows
from dpsum.kernels.grid import EXACT_CHARGE, grid_rows, make_grid_plan
from dpsum.release import accumulator as A

U = 2.0 ** -53


def fl(q: Fraction) -> float:
    """The exact rational ``q`` rounded to the nearest double (ties to even)."""
    return float(q)


def F(x: float) -> Fraction:
    return Fraction(float(x))


def lane_sum(values: list[float]) -> float:
    """The kernel's fixed order: term j in lane j mod 8, each lane summed left
    to right from +0, then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))."""
    lanes = [0.0] * 8
    for j, v in enumerate(values):
        lanes[j % 8] = fl(F(lanes[j % 8]) + F(v))
    l0, l1, l2, l3, l4, l5, l6, l7 = (F(v) for v in lanes)
    return fl(F(fl(F(fl(l0 + l4)) + F(fl(l2 + l6)))) + F(fl(F(fl(l1 + l5)) + F(fl(l3 + l7)))))


def reference_row(x, plan, k):
    """One row's grid integers, each IEEE operation emulated exactly."""
    d = plan.d
    t = []
    for j in range(d):
        v = float(x[j]) if plan.center is None else fl(F(x[j]) - F(plan.center[j]))
        t.append(fl(F(v) * F(plan.b_n[j])))
    sq = lane_sum([fl(F(v) * F(v)) for v in t])
    nu = math.sqrt(sq)                        # IEEE square root: correctly rounded
    f = 1.0 if nu == 0 else min(1.0, fl(fl(F(plan.C_n) / F(nu)) * F(plan.shrink)))
    upper = float(_rows._norm_upper_bound(np.array([nu]), d)[0])
    for _ in range(_rows.MAX_RECHECKS):
        if not fl(fl(F(f) * F(upper)) * F(1.0 + 2 * U)) > plan.C_n:
            break
        f = fl(F(f) * F(1.0 - 2.0 ** -20))
    g = fl(F(f) * F(math.ldexp(1.0, -k)))
    return [float(round(fl(F(v) * F(g)))) for v in t]   # round: ties to even


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 40), st.integers(1, 9), st.integers(0, 2**32 - 1), st.booleans())
def test_each_row_is_the_ieee_computation_in_the_fixed_order(d, n, seed, centred):
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((n, d)) * 10.0 ** gen.uniform(-3, 3, size=d)
    b = 10.0 ** gen.uniform(-1, 1, size=d)
    c = gen.standard_normal(d) if centred else None
    C = float(np.median(np.linalg.norm(((X - (0 if c is None else c)) * b), axis=1))) + 1e-9
    plan, K, k = make_grid_plan(C, b, c, d, EXACT_CHARGE)
    Q, K2 = grid_rows(X, C, b, c, charge=EXACT_CHARGE)
    assert K2 == K
    for i in range(n):
        assert Q[i].tolist() == reference_row(X[i], plan, k)


def _norm_cases(gen, d, n):
    X = gen.standard_normal((n, d)) * 10.0 ** gen.uniform(-3, 3, size=d)
    b = 10.0 ** gen.uniform(-1, 1, size=d)
    c = gen.standard_normal(d)
    return X, b, c


def _reference_norm(x, b, c):
    return lane_sum([fl(F(v) * F(v)) for v in (fl(F(fl(F(xj) - F(cj))) * F(bj))
                                               for xj, bj, cj in zip(x, b, c))])


@pytest.mark.parametrize("d", [1, 5, 8, 13, 16, 37, 100])
def test_squared_norms_are_summed_in_the_fixed_lane_order(d):
    # the numpy kernel's squared norms, bit for bit, against exact arithmetic
    # in the lane order; the rows are chosen so that a left-to-right sum (the
    # order a plain loop or np.sum might take) differs on some of them
    gen = np.random.default_rng(d)
    X, b, c = _norm_cases(gen, d, 300)
    plan = _rows.make_clip_plan(1.0, b, c, d)
    t, sq = _rows._scaled_rows(X, plan, np.empty(X.shape), np.empty(X.shape))
    ref = [_reference_norm(x, plan.b_n, c) for x in X]
    assert sq.tolist() == ref
    if d > 2:
        plain = [float(np.cumsum(np.square(row))[-1]) for row in t]   # left to right
        assert plain != ref              # the order matters: this test can fail


def test_the_compiled_kernel_sums_squares_in_the_same_order(numba_kernel):
    gen = np.random.default_rng(2)
    # both kernels (transposed below 16 columns), more rows than a sub-tile,
    # with a centre and without (compiled apart: no subtraction, x - 0 = x)
    for d in (1, 3, 8, 9, 15, 16, 41, 100):
        X, b, c = _norm_cases(gen, d, 600)
        sq = numba_kernel.squared_norms(X, c, b)
        assert sq.tolist() == [_reference_norm(x, b, c) for x in X], d
        sq = numba_kernel.squared_norms(X, None, b)
        assert sq.tolist() == [_reference_norm(x, b, np.zeros(d)) for x in X], d


def test_a_row_gives_the_same_integers_in_any_block_at_any_position():
    gen = np.random.default_rng(4)
    d = 13                                    # not a multiple of any vector width
    X = gen.standard_normal((1001, d)) * 3
    alone = [grid_rows(X[i:i + 1], 4.0)[0][0] for i in (0, 500, 1000)]
    together = grid_rows(X, 4.0)[0]
    shifted = grid_rows(X[3:], 4.0)[0]
    for row, i in zip(alone, (0, 500, 1000)):
        assert np.array_equal(row, together[i])
        if i >= 3:
            assert np.array_equal(row, shifted[i - 3])


def _releases(X, relation, secure=False):
    n, d = X.shape
    lo, hi = -3.0 * np.ones(d), 3.0 * np.ones(d)
    kw = dict(epsilon=1.0, delta=1e-6, neighbouring=relation, rng=7)
    out = [dpsum.clipped_gaussian_mechanism(X, clip_norm=2.5, secure=secure, **kw),
           dpsum.gaussian_data_mechanism(X, stds=np.ones(d), center=0.3, secure=secure,
                                         clip_probability=1e-2, **kw)]
    if relation == "replace":
        out.append(dpsum.elliptical_gaussian_mechanism(X, lower=lo, upper=hi, epsilon=1.0,
                                                       delta=1e-6, rng=7, secure=secure))
        out.append(dpsum.mechanisms.shaped_laplace_mechanism(X, epsilon=1.0, widths=hi - lo,
                                                             rng=7, secure=secure))
    return out


@pytest.mark.parametrize("relation", ["replace", "add-remove"])
@pytest.mark.parametrize("secure", [False, True])
def test_every_mechanism_releases_the_same_bits_in_any_row_order(relation, secure):
    gen = np.random.default_rng(11)
    X = gen.standard_normal((3001, 5)) * [1, 2, 3, 0.1, 10] + 0.5
    perm = gen.permutation(len(X))
    for a, b in zip(_releases(X, relation, secure), _releases(X[perm], relation, secure)):
        assert same_release(a, b), a.mechanism


@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_the_pipeline_releases_the_same_bits_in_any_row_order(relation):
    gen = np.random.default_rng(12)
    X = gen.lognormal(1.0, 1.0, size=(4000, 3))
    perm = gen.permutation(len(X))
    kw = dict(lower=0.0, upper=1e3, epsilon=1.0, delta=1e-6, neighbouring=relation,
              diagnostics=False)
    a = dpsum.private_mean(X, rng=3, **kw)
    b = dpsum.private_mean(X[perm], rng=3, **kw)
    assert np.array_equal(a.estimate, b.estimate)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 600), st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_any_split_into_blocks_gives_the_same_release(n, pieces, seed):
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((n, 4)) * 5
    acc = A.clipped_gaussian_accumulator(4, epsilon=1.0, delta=1e-6, clip_norm=3.0, n=n)
    cuts = [0, *np.sort(gen.integers(0, n + 1, size=pieces - 1)).tolist(), n]
    parts = [acc.update(X[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    total = parts[0]
    for p in parts[1:]:
        total = total.merge(p)
    whole = acc.update(X)
    assert np.array_equal(total.sum_before_noise(), whole.sum_before_noise())
    fresh = A.clipped_gaussian_accumulator(4, epsilon=1.0, delta=1e-6, clip_norm=3.0, n=n)
    assert same_release(total.release(rng=seed), fresh.update(X).release(rng=seed))


def test_worst_case_replace_one_neighbours_move_the_exact_sum_by_at_most_2C():
    # the two rows as far apart as the ball allows, among rows whose positions
    # in the block differ between the neighbours (the row order follows the data)
    gen = np.random.default_rng(5)
    d, C = 7, 1.0
    X = gen.standard_normal((997, d))
    direction = gen.standard_normal(d)
    Xa = np.vstack([X[:400], 1e12 * direction, X[400:]])
    Xb = np.vstack([-1e12 * direction, X])
    plan, K, k = make_grid_plan(2 * C / 2, np.ones(d), None, d, EXACT_CHARGE)
    Sa = A.clipped_gaussian_accumulator(d, epsilon=1, delta=1e-6, clip_norm=C).update(Xa)
    Sb = A.clipped_gaussian_accumulator(d, epsilon=1, delta=1e-6, clip_norm=C).update(Xb)
    gap = sum((Fraction(int(a) - int(b)) * Fraction(2) ** K) ** 2
              for a, b in zip(Sa.sum_before_noise(), Sb.sum_before_noise()))
    assert gap <= Fraction(2 * C) ** 2
    assert Sa.release(rng=1).sensitivity == 2 * C


# ------------------------------------------- the compiled kernel: same bits



@pytest.fixture(scope="module")
def numba_kernel():
    from dpsum.kernels import _compiled
    if not _compiled.available():
        pytest.skip("numba is not installed (the fast extra) or DPSUM_KERNEL=numpy")
    return _compiled


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 700), st.integers(1, 40), st.integers(0, 2**32 - 1), st.booleans(),
       st.sampled_from([1e-300, 1e-150, 1.0, 1e150, 1e300]))
def test_the_compiled_kernel_gives_the_numpy_kernels_bits(numba_kernel, n, d, seed, centred,
                                                          scale):
    from dpsum.kernels import grid
    gen = np.random.default_rng(seed)
    with np.errstate(over="ignore"):
        X = gen.standard_normal((n, d)) * scale
        X[gen.random(n) < 0.1] *= 1e8                    # clipped rows
        X = np.clip(X, -1.7e308, 1.7e308)
    X[gen.random(n) < 0.02] = 1.7e308                   # rows that overflow
    X[gen.random(n) < 0.02] = 5e-324                    # subnormal rows
    b = 10.0 ** gen.uniform(-2, 2, size=d)
    c = gen.standard_normal(d) * scale if centred else None
    C = float(scale * np.sqrt(d))
    plan, K, k = make_grid_plan(C, b, c, d, EXACT_CHARGE)
    with np.errstate(all="ignore"):
        a = grid._accumulate_numpy(X, plan, k)
        z = grid._accumulate_compiled(X, plan, k)
    assert [int(v) for v in a[0]] == [int(v) for v in z[0]]
    assert a[1] == z[1]


def test_the_compiled_kernel_refuses_non_finite_rows_as_the_numpy_one(numba_kernel):
    from dpsum.kernels import grid
    X = np.ones((50, 3))
    X[31, 1] = np.nan
    plan, K, k = make_grid_plan(1.0, np.ones(3), None, 3, EXACT_CHARGE)
    for f in (grid._accumulate_numpy, grid._accumulate_compiled):
        with pytest.raises(ValueError, match="X contains NaN or infinite values"):
            f(X, plan, k)


@pytest.mark.parametrize("d", [3, 15, 16, 40])
def test_the_compiled_kernel_across_tiles_sub_tiles_and_threads(numba_kernel, d):
    # more rows than a tile (4096) and than a sub-tile, some clipped, a
    # non-finite-norm row inside a group of eight: the NumPy kernel's bits on
    # one thread and on two
    from dpsum.kernels import grid
    gen = np.random.default_rng(d)
    n = 9001
    X = gen.standard_normal((n, d))
    X[gen.random(n) < 0.3] *= 50.0
    X[5000, 0] = 1.7e308                                 # its squared norm overflows
    plan, K, k = make_grid_plan(float(np.sqrt(d)), np.ones(d), None, d, EXACT_CHARGE)
    want = grid._accumulate_numpy(X, plan, k)
    for threads in (1, 2):
        numba_kernel.set_threads(threads)
        try:
            got = grid._accumulate_compiled(X, plan, k)
        finally:
            numba_kernel.set_threads(None)
        assert [int(v) for v in got[0]] == [int(v) for v in want[0]]
        assert got[1] == want[1] > 0


def test_one_thread_holds_inside_its_block_and_on_its_thread_only(numba_kernel):
    import threading
    numba_kernel.set_threads(2)
    try:
        seen = []
        with numba_kernel.one_thread():
            seen.append(numba_kernel.threads())
            other = threading.Thread(target=lambda: seen.append(numba_kernel.threads()))
            other.start()
            other.join()
        seen.append(numba_kernel.threads())
    finally:
        numba_kernel.set_threads(None)
    assert seen == [1, 2, 2]


@settings(max_examples=300, deadline=None)
@given(count=st.integers(-2**62, 2**62), exponent=st.integers(-1100, 60),
       rows=st.integers(0, 2**45),
       mid=st.floats(allow_nan=False, allow_infinity=False))
def test_the_clamped_sums_statistic_in_integers_is_exact(count, exponent, rows, mid):
    from dpsum.kernels._exact import dyadic_sum
    num, den = dyadic_sum(count, exponent, rows, mid.as_integer_ratio())
    assert den > 0 and den & (den - 1) == 0              # a power of two
    assert Fraction(num, den) == Fraction(count) * Fraction(2) ** exponent + rows * Fraction(mid)
