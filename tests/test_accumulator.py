"""The mergeable accumulators (dpsum.accumulator, issue 17).

The claims checked here: cutting the rows into pieces, folding each piece and
merging the partial results in any order releases exactly (bit for bit) what
the in-memory mechanism releases with the same ``rng``, on every path and
relation (the sums are exact); accumulators are immutable values that pickle;
only accumulators of one public set-up merge; bad input is refused.
"""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _releases import same_release
from dpsum.release import accumulator as A
from dpsum.kernels.grid import clamped_sum, clipped_sum
from dpsum.mechanisms import clipped_gaussian_mechanism, elliptical_gaussian_mechanism, gaussian_data_mechanism

U = 2.0 ** -53
EPS, DELTA = 1.0, 1e-6
STDS = np.array([4.0, 1.0, 0.3, 0.05])
CENTER = np.array([1.0, -2.0, 0.5, 0.0])
WIDTHS = np.array([8.0, 2.0, 0.6, 0.1])
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _data(n, seed=0, heavy=0.05):
    """Gaussian rows around CENTER with a fraction of far outliers (clipped)."""
    gen = np.random.default_rng(seed)
    X = CENTER + gen.normal(0.0, STDS, size=(n, STDS.size))
    far = gen.random(n) < heavy
    X[far] *= 1e3
    return X


def _fold(acc, X, cuts, order_seed):
    """Fold the pieces X[cuts[k]:cuts[k+1]] and merge them in a random tree."""
    parts = [acc.update(X[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    gen = np.random.default_rng(order_seed)
    while len(parts) > 1:
        i, j = sorted(gen.choice(len(parts), size=2, replace=False))
        merged = parts[i].merge(parts[j])
        parts = [p for k, p in enumerate(parts) if k not in (i, j)] + [merged]
    return parts[0]


def _cuts(n, gen, pieces):
    inner = np.sort(gen.integers(0, n + 1, size=pieces - 1))
    return [0, *inner.tolist(), n]


# ------------- the same release whatever the pieces (in memory: one piece)

@SETTINGS
@given(st.integers(2, 2500), st.integers(1, 9), st.integers(0, 2**32 - 1),
       st.sampled_from(["replace", "add-remove"]), st.booleans())
def test_gaussian_data_accumulator_releases_the_in_memory_release(n, pieces, seed, relation,
                                                                  centred):
    X = _data(n, seed)
    center = CENTER if centred else 0
    p = 1e-3 if relation == "add-remove" else None
    kw = dict(epsilon=EPS, delta=DELTA, center=center, clip_probability=p,
              neighbouring=relation, diagnostics=False)   # the accumulator's default
    ref = gaussian_data_mechanism(X, stds=STDS, rng=seed, **kw)
    acc = A.gaussian_data_accumulator(STDS, n=n if relation == "replace" else None, **kw)
    cuts = _cuts(n, np.random.default_rng(seed), pieces)
    merged = _fold(acc, X, cuts, seed + 1)
    assert same_release(merged.release(rng=seed), ref)
    # exact sums: another cut and order gives the same statistic exactly
    other = _fold(acc, X[::-1], _cuts(n, np.random.default_rng(seed + 2), 4), seed + 3)
    assert np.array_equal(other.sum_before_noise(), merged.sum_before_noise())


@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_clipped_accumulator_releases_the_in_memory_release(relation):
    X = _data(5000, 3)
    ref = clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=2.0,
                                     neighbouring=relation, rng=11, diagnostics=False)
    acc = A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=2.0,
                                         neighbouring=relation)
    cuts = [0, 1, 1700, 1701, 4999, 5000]
    out = _fold(acc, X, cuts, 2).release(rng=11)
    assert same_release(out, ref)
    assert out.sensitivity == (2.0 if relation == "replace" else 1.0) * 2.0
    # the data-dependent count is kept, as release_diagnostics counts it
    assert _fold(acc, X, cuts, 5).diagnostic_count == clipped_sum(X, 2.0)[1] > 0


def test_elliptical_accumulator_releases_the_in_memory_release():
    X = _data(4000, 5)
    ref = elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-WIDTHS / 2, upper=WIDTHS / 2, rng=3,
                                        diagnostics=False)
    acc = A.elliptical_gaussian_accumulator(-WIDTHS / 2, WIDTHS / 2, epsilon=EPS, delta=DELTA, n=4000)
    cuts = [0, 999, 2000, 2001, 4000]
    total = _fold(acc, X, cuts, 9)
    out = total.release(rng=3)
    assert same_release(out, ref)
    assert np.array_equal(out.widths, ref.widths) and np.array_equal(out.scaling, ref.scaling)
    assert total.diagnostic_count == clamped_sum(X, WIDTHS / 2)[1]


# --------------------------------------------- the grid path: exactly equal

@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 1500), st.integers(1, 9), st.integers(0, 2**32 - 1),
       st.sampled_from(["replace", "add-remove"]), st.booleans())
def test_grid_accumulator_releases_exactly_the_in_memory_release(n, pieces, seed, relation,
                                                                 centred):
    X = _data(n, seed)
    center = CENTER if centred else 0
    p = 1e-3 if relation == "add-remove" else None
    kw = dict(epsilon=EPS, delta=DELTA, center=center, clip_probability=p,
              neighbouring=relation, secure=True, diagnostics=False)
    ref = gaussian_data_mechanism(X, stds=STDS, rng=seed, **kw)
    acc = A.gaussian_data_accumulator(STDS, n=n if relation == "replace" else None, **kw)
    cuts = _cuts(n, np.random.default_rng(seed), pieces)
    merged = _fold(acc, X, cuts, seed + 1)
    assert same_release(merged.release(rng=seed), ref)
    # integer sums: any other cut and order gives the same statistic exactly
    other = _fold(acc, X[::-1], _cuts(n, np.random.default_rng(seed + 2), 4), seed + 3)
    assert np.array_equal(other.sum_before_noise(), merged.sum_before_noise())


@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_grid_clipped_and_elliptical_accumulators_release_exactly(relation):
    X = _data(3000, 12)
    cuts = [0, 1, 1200, 2999, 3000]
    ref = clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=2.0,
                                     neighbouring=relation, rng=4, secure=True, diagnostics=False)
    acc = A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=2.0,
                                         neighbouring=relation, secure=True)
    assert same_release(_fold(acc, X, cuts, 1).release(rng=4), ref)
    assert ref.secure and ref.calibration == "discrete gaussian (zCDP)"
    if relation == "replace":
        ref = elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-WIDTHS / 2, upper=WIDTHS / 2, rng=4,
                                            secure=True, diagnostics=False)
        acc = A.elliptical_gaussian_accumulator(-WIDTHS / 2, WIDTHS / 2, epsilon=EPS, delta=DELTA, secure=True)
        total = _fold(acc, X, cuts, 2)
        assert same_release(total.release(rng=4), ref)
        assert total.diagnostic_count == clamped_sum(X, WIDTHS / 2)[1]


def test_grid_release_with_no_rng_uses_the_secure_generator():
    X = _data(200, 1)
    acc = A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=2.0,
                                         secure=True).update(X)
    first, second = acc.release(), acc.release()
    K = first.grid_exponent
    for r in (first, second):          # every released value is on the grid 2^K (scaled)
        q = np.ldexp(r.estimate * r.scaling, -K)
        assert np.array_equal(q, np.rint(q))
    assert not np.array_equal(first.estimate, second.estimate)   # fresh entropy each time
    with pytest.raises(ValueError, match="different mechanism or different public"):
        acc.merge(A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=2.0))
    with pytest.raises(TypeError, match="secure"):
        A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=2.0, secure=1)


# ------------------------------------------------------ values, not objects

def test_update_and_merge_return_new_accumulators():
    X = _data(50)
    acc = A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=1.0)
    one = acc.update(X[:20])
    two = one.update(X[20:])
    assert (acc.rows, one.rows, two.rows) == (0, 20, 50)
    other = acc.update(X[20:])                  # a sibling: a disjoint block
    both = one.merge(other)
    assert (one.rows, other.rows, both.rows) == (20, 30, 50)
    with pytest.raises(ValueError, match="count them twice"):
        one.merge(two)                          # two holds one's rows (issue 26, item 4)
    assert np.array_equal(acc.sum_before_noise(), np.zeros(4))
    assert acc.update(np.empty((0, 4))) is acc


@pytest.mark.parametrize("secure", [False, True])
def test_accumulators_pickle_and_merge_after_the_round_trip(secure):
    X = _data(400, 2)
    acc = A.gaussian_data_accumulator(STDS, epsilon=EPS, delta=DELTA, center=CENTER,
                                      clip_probability=1e-2, neighbouring="add-remove",
                                      secure=secure)
    left, right = acc.update(X[:150]), acc.update(X[150:])
    shipped = pickle.loads(pickle.dumps(left)).merge(pickle.loads(pickle.dumps(right)))
    assert np.array_equal(shipped.release(rng=4).estimate,
                          left.merge(right).release(rng=4).estimate)
    assert shipped.mechanism == "gaussian data" and shipped.d == 4


def test_only_accumulators_of_one_set_up_merge():
    base = dict(epsilon=EPS, delta=DELTA)
    acc = A.clipped_gaussian_accumulator(4, clip_norm=1.0, **base)
    others = [
        A.clipped_gaussian_accumulator(4, clip_norm=1.5, **base),
        A.clipped_gaussian_accumulator(4, clip_norm=1.0, neighbouring="add-remove", **base),
        A.clipped_gaussian_accumulator(4, clip_norm=1.0, epsilon=0.5, delta=DELTA),
        A.clipped_gaussian_accumulator(4, clip_norm=1.0, n=10, **base),
        A.gaussian_data_accumulator(STDS, clip_probability=1e-2, center=0, **base),
        A.elliptical_gaussian_accumulator(-WIDTHS / 2, WIDTHS / 2, **base),
    ]
    for other in others:
        with pytest.raises(ValueError, match="different mechanism or different public"):
            acc.merge(other)
    with pytest.raises(TypeError, match="other must be an Accumulator"):
        acc.merge(np.zeros(4))
    with pytest.raises(ValueError, match="another plan"):     # same parameters, another plan
        acc.merge(A.clipped_gaussian_accumulator(4, clip_norm=1.0, **base))
    assert acc.merge(acc.empty()).rows == 0


# ------------------------------------------------------------- bad input

def test_release_under_replace_one_needs_rows_and_the_declared_count():
    acc = A.gaussian_data_accumulator(STDS, epsilon=EPS, delta=DELTA, n=10, center=0)
    with pytest.raises(ValueError, match="at least one row under replace-one"):
        acc.release(rng=0)
    with pytest.raises(ValueError, match="built for n = 10 rows but accumulated 9"):
        acc.update(_data(9)).release(rng=0)
    with pytest.raises(ValueError, match="n must not be given under add-remove"):
        A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=1.0,
                                       neighbouring="add-remove", n=3)
    with pytest.raises(ValueError, match="clip_probability must be given under add-remove"):
        A.gaussian_data_accumulator(STDS, epsilon=EPS, delta=DELTA, neighbouring="add-remove", center=0)


def test_empty_dataset_under_add_remove_releases_noise_only():
    acc = A.gaussian_data_accumulator(STDS, epsilon=EPS, delta=DELTA, center=CENTER,
                                      clip_probability=1e-3, neighbouring="add-remove")
    r = acc.release(rng=6)
    # the noise, drawn in the scaled space and divided by b exactly (add-remove)
    z = np.random.default_rng(6).normal(0.0, 1.0, size=4) * (r.sensitivity * r.sigma_opt)
    expected = [float(Fraction(float(v)) / Fraction(float(b))) for v, b in zip(z, r.scaling)]
    assert r.estimate.tolist() == expected
    np.testing.assert_allclose(r.estimate, np.random.default_rng(6).normal(size=4) * r.noise_std,
                               rtol=1e-15)
    assert r.sensitivity > r.clip_norm          # the center is charged under add-remove


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_rows_are_refused(bad):
    X = _data(30)
    X[17, 2] = bad
    for acc in (A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=1.0),
                A.elliptical_gaussian_accumulator(-WIDTHS / 2, WIDTHS / 2, epsilon=EPS, delta=DELTA)):
        with pytest.raises(ValueError, match="NaN or infinite"):
            acc.update(X)


def test_bad_blocks_and_parameters_are_refused_before_any_data_is_read():
    acc = A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=1.0)
    with pytest.raises(ValueError, match="block must be 2-dimensional with 4 columns"):
        acc.update(np.ones((3, 5)))
    with pytest.raises(ValueError, match="block must be 2-dimensional"):
        acc.update(np.ones(4))
    with pytest.raises(TypeError, match="block"):
        acc.update([["a", "b", "c", "d"]])
    with pytest.raises(TypeError, match="block"):
        acc.update(np.ones((2, 4), dtype=bool))
    with pytest.raises(ValueError, match="epsilon"):
        A.clipped_gaussian_accumulator(4, epsilon=-1.0, delta=DELTA, clip_norm=1.0)
    with pytest.raises(ValueError, match="clip_norm"):
        A.clipped_gaussian_accumulator(4, epsilon=EPS, delta=DELTA, clip_norm=0.0)
    with pytest.raises(ValueError, match="lower must be < upper"):
        A.elliptical_gaussian_accumulator([-0.5, 0.5], [0.5, -0.5], epsilon=EPS, delta=DELTA)
    with pytest.raises(ValueError, match="delta"):
        A.gaussian_data_accumulator(STDS, epsilon=EPS, delta=2.0, n=10, center=0)
    with pytest.raises(TypeError, match="rng"):
        acc.update(np.ones((1, 4))).release(rng="seed")


# ---------------------------------------------------------------------------
# calibrated by a zCDP multiplier: the private pipeline's last step
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_deviation_accumulator_is_one_release_under_any_split(secure, relation):
    from dpsum.privacy import Neighbouring
    X = _data(600, seed=11)
    d = X.shape[1]
    b, c = np.linspace(0.5, 2.0, d), np.full(d, 0.25)
    lo, hi = np.full(d, -3.0), np.full(d, 3.0)
    rel_ = Neighbouring.parse(relation)
    empty = A.deviation_accumulator(2.0, b, c, multiplier=1.5, neighbouring=rel_,
                                    secure=secure, lower=lo, upper=hi)
    whole = empty.update(X)
    parts = empty.update(X[::-1][:250]).merge(empty.update(X[::-1][250:]))
    assert np.array_equal(whole.sum_before_noise(), parts.sum_before_noise())
    assert (whole.diagnostic_count, whole.rows_outside) == \
        (parts.diagnostic_count, parts.rows_outside)
    assert whole.rows_outside == int(np.sum(np.any((X < lo) | (X > hi), axis=1)))
    r1, r2 = whole.release(np.random.default_rng(3)), parts.release(np.random.default_rng(3))
    assert np.array_equal(r1.estimate, r2.estimate)
    # calibrated in zCDP: rho = 1 / (2 s^2), no (epsilon, delta); the centre is not
    # added back, so the sensitivity is the clipped sum's (2C, or C under add-remove)
    assert r1.rho == pytest.approx(0.5 / 1.5 ** 2) and r1.epsilon is None
    sens = 4.0 if relation == "replace" else 2.0
    if secure:
        assert r1.discrete_scale is not None and r1.grid_exponent is not None
        units = r1.sensitivity / 2.0 ** r1.grid_exponent
        assert r1.sigma_opt * units >= 1.5 * sens / 2.0 ** r1.grid_exponent
    else:
        np.testing.assert_allclose(r1.noise_std, 1.5 * sens / b, rtol=1e-15)


def test_a_release_without_epsilon_needs_rho():
    from dpsum.release import Mechanism, Release
    base = dict(estimate=np.zeros(2), noise_std=np.ones(2), scaling=None, clip_norm=None,
                neighbouring="replace", sigma_opt=1.0, sensitivity=1.0,
                mechanism=Mechanism.GAUSSIAN_ANALYTIC)
    with pytest.raises(TypeError, match="epsilon"):
        Release(epsilon=None, delta=1e-6, **base)
    r = Release(epsilon=None, delta=None, rho=0.5, **base)
    assert r.rho == 0.5 and "rho=0.5" in repr(r)
    with pytest.raises(ValueError, match="zCDP"):
        A.accumulator_for(r)
