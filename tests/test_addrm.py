"""Add-remove neighbouring: no rounding, refusal or exception depends on the
private number of rows.

Under add-remove the number of rows ``n`` is private. The float path there
sums exactly (rows rounded to a fine public grid, integers, the centre term
folded in before the noise, the noise added in exact arithmetic:
``dpsum.release.accumulator._ExactClippedSum``), so the pre-noise statistic
moves by at most the declared sensitivity whatever ``n``, the blocks and the
engine. These tests add or remove one extreme row and check that movement in
exact rational arithmetic, on every path (in memory, merged accumulators,
dask, grid), and that the same call raises or not on both neighbours.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import battery as B
from dpsum import mechanisms as M
from dpsum import release as R
from dpsum.engines import dask as dpdask
from dpsum._special import norm_plus
from dpsum.kernels._exact import noisy_estimate, to_float
from dpsum.kernels.grid import clipped_sum

da = pytest.importorskip("dask.array")

EPS, DELTA = 1.0, 1e-6


def _q(x) -> Fraction:
    return Fraction(x) if isinstance(x, (int, Fraction)) else Fraction(float(x))


def _moved2(a, b) -> Fraction:
    """Squared L2 distance of two statistics, exactly."""
    return sum(((_q(x) - _q(y)) ** 2 for x, y in zip(np.ravel(a), np.ravel(b))), Fraction(0))


# ------------------------------------------------------------ the old leak

def _round_bits(q: Fraction, bits: int = 53) -> Fraction:
    """``q`` rounded to ``bits`` significant binary digits, ties to even: the
    rounding rule of IEEE binary64 (53 bits) as a function of rationals,
    computed with integers only (no exponent range: the values here are far
    from overflow and underflow)."""
    if q == 0:
        return q
    sign, q = (-1 if q < 0 else 1), abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:                         # now 2^e <= q < 2^(e+1)
        e -= 1
    unit = Fraction(2) ** (e - bits + 1)
    m, rem = divmod(q.numerator * unit.denominator, q.denominator * unit.numerator)
    twice, den = 2 * rem, q.denominator * unit.numerator
    if twice > den or (twice == den and m % 2):
        m += 1
    return sign * m * unit


def _rounded_running_sum(values) -> Fraction:
    """The running sum of the rationals ``values`` in the order given,
    rounded to 53 significant bits (:func:`_round_bits`) after every
    addition: a function of rationals, evaluated in integer arithmetic."""
    total = Fraction(0)
    for v in values:
        total = _round_bits(total + v)
    return total


def _unit_change_rows() -> list[Fraction]:
    """17 rows of 9/10 and one of 1/3, each rounded to 53 bits: a running
    sum that crosses 16, where the spacing of 53-bit numbers doubles."""
    return [_round_bits(Fraction(9, 10))] * 17 + [_round_bits(Fraction(1, 3))]


def test_the_rounding_model_rounds_to_53_bits_ties_to_even():
    third = Fraction(6004799503160661, 2 ** 54)      # the 53-bit number nearest 1/3
    assert _round_bits(Fraction(1, 3)) == third
    assert _round_bits(Fraction(2 ** 53 + 1)) == 2 ** 53       # a tie: to even
    assert _round_bits(Fraction(2 ** 53 + 3)) == 2 ** 53 + 4   # a tie: to even
    assert _round_bits(-Fraction(1, 3)) == -third


def test_rounding_after_every_addition_turns_a_unit_change_into_more():
    """A lemma about rationals, the reason the package never keeps a rounded
    running sum: appending one term of size 1 (a row clipped to norm C = 1)
    to these rows moves the 53-bit rounded running sum by 1 + 1.8e-15 > C,
    so its sensitivity would have to be charged from the private n."""
    rows = _unit_change_rows()
    moved = abs(_rounded_running_sum(rows) - _rounded_running_sum([*rows, Fraction(1)]))
    assert moved > 1


def test_the_exact_path_moves_at_most_c_on_the_same_rows():
    """The accumulator on the same rows, as float64 arrays (each row a 53-bit
    dyadic rational, so the conversion is exact: checked), and with a row 5
    added, which clipping to C = 1 makes the unit term of the lemma above:
    its statistic is an exact sum (Fractions), so it moves by at most C and
    the declared sensitivity is C, with no charge."""
    rows = _unit_change_rows()
    X = np.array([[float(v)] for v in rows])
    assert all(Fraction(float(x)) == v for x, v in zip(X[:, 0], rows))
    Y = np.vstack([X, [[5.0]]])
    acc = R.clipped_gaussian_accumulator(1, epsilon=EPS, delta=DELTA, clip_norm=1.0,
                                         neighbouring="add-remove")
    a, b = acc.update(X), acc.update(Y)
    assert _moved2(a.sum_before_noise(), b.sum_before_noise()) <= 1
    assert a.release(rng=0).sensitivity == 1.0         # no charge needed


# ------------------------------------------- adversarial add-remove pairs

def _acc(kind: str, d: int, scale: float, secure: bool, center: np.ndarray | None):
    kw = dict(epsilon=EPS, delta=DELTA, neighbouring="add-remove", secure=secure)
    if kind == "clipped":
        return R.clipped_gaussian_accumulator(d, clip_norm=scale, **kw)
    stds = scale * np.geomspace(1e-3, 1e3, d)
    return R.gaussian_data_accumulator(stds, center=center, clip_probability=0.05, **kw)


def _fold(acc, X: np.ndarray, path: str):
    if path == "accumulator":
        cuts = [0, X.shape[0] // 3, X.shape[0] // 3 + 1, X.shape[0]]
        parts = [acc.update(X[a:b]) for a, b in zip(cuts, cuts[1:])]
        total = parts[0]
        for p in parts[1:]:
            total = total.merge(p)
        return total
    if path == "dask":
        return dpdask.accumulate(da.from_array(X, chunks=(max(1, X.shape[0] // 4), X.shape[1])),
                                 acc.empty(), split_every=2)
    return acc.update(X)


def _pair(rng: np.random.Generator, d: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """A dataset whose float sum rounds heavily (huge and tiny rows mixed, rows
    across block boundaries), and the same with one extreme row added in the
    middle (so that every later row changes block)."""
    n = int(rng.integers(1, 3000))
    X = rng.normal(0, 1, size=(n, d)) * scale * 10.0 ** rng.uniform(-3, 3, size=(n, 1))
    X[rng.random(n) < 0.3] *= 1e-12
    # the direction from exact column sums: no summation order enters
    row = -np.sign(np.array([math.fsum(col) for col in X.T]) + 0.5) * scale * 10.0 ** rng.uniform(0, 5)
    k = int(rng.integers(0, n + 1))
    return X, np.insert(X, k, row, axis=0)


@pytest.mark.parametrize("kind", ["clipped", "gaussian data"])
@pytest.mark.parametrize("path", ["float", "accumulator", "dask", "secure"])
@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_adding_or_removing_an_extreme_row_moves_the_statistic_at_most_the_sensitivity(
        kind, path, seed):
    rng = np.random.default_rng(seed)
    d = int(rng.choice([1, 3, 70]))                 # 70: blocks of 936 / 3744 rows
    scale = float(10.0 ** rng.uniform(-250, 250))
    center = None if kind == "clipped" else \
        rng.normal(0, 1, size=d) * scale * 10.0 ** rng.uniform(-2, 2)
    X, Y = _pair(rng, d, scale)
    acc = _acc(kind, d, scale, path == "secure", center)
    a, b = _fold(acc, X, path), _fold(acc.empty(), Y, path)
    sa, sb = a.release(rng=0), b.release(rng=0)   # one plan: a second release
    assert sa.sensitivity == sb.sensitivity            # a function of public inputs
    assert np.array_equal(sa.noise_std, sb.noise_std)
    bound = Fraction(sa.sensitivity)
    if path == "secure":                               # grid units
        bound /= Fraction(2) ** sa.grid_exponent
    assert _moved2(a.sum_before_noise(), b.sum_before_noise()) <= bound * bound
    assert np.all(np.isfinite(sa.estimate)) and np.all(np.isfinite(sb.estimate))


def test_every_path_gives_the_same_exact_statistic():
    """Exact sums: the in-memory, merged and dask statistics are equal, so no
    rounding depends on how many blocks were merged."""
    rng = np.random.default_rng(5)
    X = rng.normal(0, 1, size=(2000, 3)) * 10.0 ** rng.uniform(-8, 8, size=(2000, 1))
    acc = _acc("gaussian data", 3, 1.0, False, np.array([1.0, -2.0, 1e5]))
    stats = [list(_fold(acc.empty(), X, p).sum_before_noise()) for p in ("float", "accumulator",
                                                                    "dask")]
    assert stats[0] == stats[1] == stats[2]
    releases = [_fold(acc.empty(), X, p).release(rng=3) for p in ("float", "dask")]
    assert np.array_equal(releases[0].estimate, releases[1].estimate)


# --------------------------------------------- no exception depends on n

@pytest.mark.parametrize("kind", ["clipped", "gaussian data"])
@pytest.mark.parametrize("secure", [False, True])
def test_no_overflow_and_no_exception_depend_on_the_rows(kind, secure):
    """Rows at the top of the float range, many of them: the sum of their
    contributions far exceeds the largest float. Both neighbours release a
    finite estimate (saturated), with the same sensitivity; neither raises."""
    X = np.full((40, 1), 1e307)
    for Y in (X[1:], np.vstack([X, [[-1e307]]]), X[:0]):
        outs = []
        for data in (X, Y):
            if kind == "clipped":
                r = M.clipped_gaussian_mechanism(data, epsilon=EPS, delta=DELTA, clip_norm=1e307,
                                                 neighbouring="add-remove", secure=secure, rng=0)
            else:
                r = M.gaussian_data_mechanism(data, epsilon=EPS, delta=DELTA, stds=[1e305],
                                              center=[1e307], clip_probability=0.01,
                                              neighbouring="add-remove", secure=secure, rng=0)
            assert np.all(np.isfinite(r.estimate))
            outs.append(r.sensitivity)
        assert outs[0] == outs[1]


@pytest.mark.parametrize("secure", [False, True])
def test_refusals_are_the_same_on_both_neighbours(secure):
    """Public parameters out of range are refused before the data is read,
    whatever the rows: the same error on a dataset and its neighbour."""
    X = np.ones((5, 2))
    for data in (X, X[:4], np.vstack([X, [[1e308, -1e308]]])):
        with pytest.raises(ValueError, match="clip_norm"):
            M.clipped_gaussian_mechanism(data, epsilon=EPS, delta=DELTA, clip_norm=1e-305,
                                         neighbouring="add-remove", secure=secure)
        with pytest.raises(ValueError, match="center"):
            M.gaussian_data_mechanism(data, epsilon=EPS, delta=DELTA, stds=[1.0, 1.0],
                                      center=[1e308, 1e308], clip_probability=0.01,
                                      neighbouring="add-remove", secure=secure)


# -------------------------------------------- the exact helpers themselves

@settings(max_examples=200, deadline=None)
@given(st.floats(2.0 ** -1000, 1e300), st.lists(st.floats(-1e150, 1e150), min_size=1,
                                                 max_size=6))
@example(2.0 ** -1000, [1e-200])            # the root far below one ulp of C
@example(2.0 ** -1000, [5e-324, -5e-324])    # subnormal offsets
@example(1e300, [1e150, 1e150])              # beyond the float range: inf
def test_norm_plus_is_the_smallest_float_above_the_exact_bound(C, offset):
    terms = [Fraction(v) for v in offset]
    Q = sum(t * t for t in terms)
    s = norm_plus(C, terms)
    if s == math.inf:
        assert (Fraction(float(np.finfo(np.float64).max)) - Fraction(C)) ** 2 < Q
        return
    assert Fraction(s) >= C and (Fraction(s) - Fraction(C)) ** 2 >= Q
    below = math.nextafter(s, 0.0)
    assert below < C or (Fraction(below) - Fraction(C)) ** 2 < Q


def test_the_add_remove_sensitivity_covers_the_centre_exactly():
    """The set-up's ``C + ||b ⊙ c||`` is rounded to nearest (it can fall one
    ulp below the exact bound); the release records the exact bound rounded up."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = int(rng.integers(1, 6))
        stds = 10.0 ** rng.uniform(-3, 3, size=d)
        c = rng.normal(size=d) * 10.0 ** rng.uniform(-3, 3, size=d)
        acc = R.gaussian_data_accumulator(stds, center=c, epsilon=EPS, delta=DELTA,
                                          clip_probability=0.01, neighbouring="add-remove")
        r = acc.release(rng=0)
        Q = sum((Fraction(float(b)) * Fraction(float(x))) ** 2 for b, x in zip(r.scaling, c))
        assert (Fraction(r.sensitivity) - Fraction(r.clip_norm)) ** 2 >= Q


def test_the_noisy_value_is_rounded_once_and_saturates():
    M_ = float(np.finfo(np.float64).max)
    assert to_float(Fraction(M_) * 3) == M_ and to_float(-Fraction(M_) * 3) == -M_
    assert to_float(Fraction(1, 3)) == 1 / 3
    out = noisy_estimate([Fraction(10) ** 400, Fraction(1, 3)], np.array([[1.0, 0.0], [2.0, 1.0]]),
                         np.array([1.0, 3.0]))
    assert out.shape == (2, 2) and out[0, 0] == M_
    assert out[1, 1] == float(Fraction(4, 9))          # (1/3 + 1) / 3, one rounding


# ---------------------------------------- the battery's ratio, add-remove

@pytest.mark.parametrize("mechanism", B.ADD_REMOVE_MECHANISMS)
@pytest.mark.parametrize("path", B.PATHS)
@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_battery_add_remove_neighbours_move_at_most_the_sensitivity(mechanism, path, seed):
    X, row, scale, stds, widths = B.extreme_case(np.random.default_rng(seed))
    try:
        ratio = B.neighbour_ratio(mechanism, path, X, row, scale, stds, widths,
                                  relation="add-remove")
    except ValueError as e:       # public parameters refused up front, naming them
        assert any(a in str(e) for a in ("clip_norm", "stds", "scaling", "center")), str(e)
        return
    assert ratio <= 1.0


# ----------------------------- replace-one: the blocks do not enter the charge

def test_the_replace_one_charge_does_not_depend_on_the_blocks():
    """Blocks cut by a private attribute (the sign of a column) are one or two
    non-empty pieces depending on the data; the merges are exact, so the
    sensitivity (public) and the merged statistic do not change."""
    rng = np.random.default_rng(4)
    X = rng.normal(0, 1, size=(500, 3)) * 10.0 ** rng.uniform(-6, 6, size=(500, 1))
    Y = X.copy()
    Y[:, 0] = np.abs(Y[:, 0])                       # every row on one side
    for kind in ("clipped", "elliptical"):
        if kind == "clipped":
            acc = R.clipped_gaussian_accumulator(3, epsilon=EPS, delta=DELTA, clip_norm=2.0,
                                                 n=500)
        else:
            acc = R.elliptical_gaussian_accumulator([-2.0] * 3, [2.0] * 3, epsilon=EPS,
                                                    delta=DELTA, n=500)
        sens = set()
        for data in (X, Y):
            pos = data[:, 0] > 0
            parts = acc.empty().update(data[pos]).merge(acc.empty().update(data[~pos]))
            sens.add(parts.release(rng=0).sensitivity)
            # the exact merge: the statistic is the exact sum of the partials, rounded once
            a, b = acc.empty().update(data[pos]), acc.empty().update(data[~pos])
            exact = [_q(x) + _q(y) for x, y in zip(a.sum_before_noise(), b.sum_before_noise())]
            assert parts.sum_before_noise().tolist() == [float(v) for v in exact]
        whole = acc.empty().update(X).release(rng=0)
        assert sens == {whole.sensitivity}


# ---------------------------------------------- the pipeline's add-remove path

def test_the_pipelines_exact_sum_is_the_accumulators():
    """The add-remove grid sum built from the kernels alone (plan, integer
    sum, one rounding) equals the accumulator's statistic, which the
    pipeline's steps use under add-remove (``private_mean`` /
    ``private_sum``): with zero noise the result is the accumulator's exact
    statistic divided by the scaling, rounded once."""
    from dpsum.kernels.grid import EXACT_CHARGE, accumulate_grid, make_grid_plan

    def exact_noisy_clipped_sum(X, clip_norm, scaling, center, noise):
        """``(S 2^K + noise) / b`` rounded once, ``S`` the exact integer sum of
        the clipped rows on the grid of the add-remove path."""
        plan, K, k = make_grid_plan(float(clip_norm), scaling, center, scaling.size,
                                    EXACT_CHARGE)
        S, clipped = accumulate_grid(X, plan, k)
        unit = Fraction(2) ** K
        return noisy_estimate([Fraction(int(s)) * unit for s in S], noise, scaling), clipped
    rng = np.random.default_rng(8)
    X = rng.normal(0, 1, size=(3000, 3)) * 10.0 ** rng.uniform(-6, 6, size=(3000, 1))
    b, c = np.array([1.0, 0.5, 2.0]), np.array([0.1, -3.0, 7.0])
    acc = R.gaussian_data_accumulator([1.0, 2.0, 0.5], center=c, scaling=b, epsilon=EPS,
                                      delta=DELTA, clip_probability=0.01,
                                      neighbouring="add-remove")
    # the accumulator clips at its own radius: compare at that radius
    C = acc.update(X[:1]).release(rng=0).clip_norm
    out, clipped = exact_noisy_clipped_sum(X, C, b, c, np.zeros(3))
    stat = acc.update(X).sum_before_noise()
    offset = [len(X) * Fraction(float(bj)) * Fraction(float(cj)) for bj, cj in zip(b, c)]
    assert out.tolist() == [float((s - o) / Fraction(float(bj)))
                            for s, o, bj in zip(stat, offset, b)]
    assert clipped == acc.update(X).diagnostic_count > 0


@pytest.mark.parametrize("statistic", ["mean", "sum"])
def test_the_pipeline_under_add_remove_raises_on_neither_neighbour(statistic):
    import warnings

    import dpsum
    rng = np.random.default_rng(2)
    X = rng.normal(0, 1, size=(2000, 3)) * [1e3, 1.0, 1e-3]
    run = dpsum.private_mean if statistic == "mean" else dpsum.private_sum
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for data in (X, X[1:], np.vstack([[[1e6, -1e6, 1e6]], X])):
            r = run(data, lower=-1e4, upper=1e4, epsilon=1.0, delta=1e-6,
                    neighbouring="add-remove", rng=0)
            assert np.all(np.isfinite(r.estimate))
