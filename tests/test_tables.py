"""People and groups (dpsum.tables): privacy units, contribution bounds,
per-group sums and means, private group discovery.

Unit-level neighbours are checked exactly: removing (or replacing) one unit,
with all of its rows in all of its groups, moves the pre-noise statistics by
at most the declared sensitivity, in Fraction arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsum.audit import epsilon_lower_bound
from dpsum.tables import (
    ContributionBounds,
    GroupRelease,
    bound_contributions,
    private_group_sums,
)
from dpsum.tables.selection import selection_delta, selection_threshold
from dpsum.tables._sums import _statistics
from dpsum.tables.units import check_groups, table_structure

pd = pytest.importorskip("pandas")

KEY = bytes(range(16))


def _stats(X, units, keys, *, C, max_rows, max_groups, groups=None, per_unit="sum", key=KEY):
    table = table_structure(X, units, keys, None)
    listed = check_groups(groups, len(table.keys))
    b, sums, K, counts = _statistics(table, listed, ContributionBounds(max_rows, max_groups,
                                                                       per_unit), key, C)
    unit = Fraction(2) ** K
    return b, {g: [Fraction(v) * unit for v in s] for g, s in zip(b.groups, sums)}, \
        {g: int(c) for g, c in zip(b.groups, counts)}


def _extreme_table(rng, n_units, n_groups, scale):
    """Units with heavy-tailed row counts, rows mixing huge and tiny columns."""
    rows_per = np.minimum(rng.zipf(1.6, size=n_units), 40)
    units = np.repeat(np.arange(n_units) * 7 + 3, rows_per)
    n = units.size
    keys = rng.integers(0, n_groups, size=n)
    d = int(rng.integers(1, 5))
    mags = 10.0 ** rng.uniform(-300, 300, size=(n, d)) if scale is None else \
        scale * rng.uniform(0.0, 3.0, size=(n, d))
    X = mags * rng.choice([-1.0, 1.0], size=(n, d))
    perm = rng.permutation(n)
    return X[perm], units[perm], keys[perm]


def _sq_move(a, b, groups):
    zero = None
    total = Fraction(0)
    for g in groups:
        sa, sb = a.get(g), b.get(g)
        if sa is None and sb is None:
            continue
        d = len(sa if sa is not None else sb)
        zero = [Fraction(0)] * d
        sa = sa if sa is not None else zero
        sb = sb if sb is not None else zero
        total += sum((x - y) ** 2 for x, y in zip(sa, sb))
    return total


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 4), m=st.integers(1, 3),
       per_unit=st.sampled_from(["sum", "mean"]),
       scale=st.sampled_from([None, 1e-300, 1.0, 1e300]))
def test_removing_a_unit_moves_the_statistics_by_at_most_the_sensitivity(seed, k, m, per_unit,
                                                                         scale):
    rng = np.random.default_rng(seed)
    X, units, keys = _extreme_table(rng, 12, 5, scale)
    C = float(10.0 ** rng.uniform(-290, 290)) if scale is None else \
        float(scale * rng.uniform(0.5, 2.0))
    victim = units[int(rng.integers(units.size))]
    keep = units != victim
    full = _stats(X, units, keys, C=C, max_rows=m, max_groups=k, per_unit=per_unit)
    less = _stats(X[keep], units[keep], keys[keep], C=C, max_rows=m, max_groups=k,
                  per_unit=per_unit)
    groups = set(full[1]) | set(less[1])
    # the sums: sqrt(k) C across groups, exactly
    assert _sq_move(full[1], less[1], groups) <= Fraction(C) ** 2 * k
    # the unit counts: at most k groups, by one each
    moves = [full[2].get(g, 0) - less[2].get(g, 0) for g in groups]
    assert all(v in (0, 1) for v in moves) and sum(moves) <= k
    # the truncated-unit count: by at most one
    assert 0 <= full[0].truncated_units - less[0].truncated_units <= 1
    # the declared sensitivity of the release is sqrt(k) C, rounded up
    rel = private_group_sums(X, privacy_unit=units, by=keys, groups=list(range(5)),
                             clip_norm=C, max_rows=m, max_groups=k, epsilon=1.0, delta=1e-6,
                             rng=0) if C > 1e-300 else None
    if rel is not None:
        assert Fraction(rel.sensitivity) ** 2 >= Fraction(C) ** 2 * k


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 3),
       scale=st.sampled_from([None, 1e-300, 1e300]))
def test_replacing_a_unit_moves_the_sums_by_at_most_2C_sqrt_k(seed, k, scale):
    rng = np.random.default_rng(seed)
    X, units, keys = _extreme_table(rng, 10, 4, scale)
    C = float(10.0 ** rng.uniform(-290, 290)) if scale is None else float(scale)
    victim = units[int(rng.integers(units.size))]
    Y, v_units, v_keys = _extreme_table(rng, 1, 4, scale)
    d = min(X.shape[1], Y.shape[1])
    X, Y = X[:, :d], Y[:, :d]
    keep = units != victim
    X2 = np.vstack([X[keep], Y])
    u2 = np.concatenate([units[keep], np.full(len(Y), -5)])
    k2 = np.concatenate([keys[keep], v_keys])
    a = _stats(X, units, keys, C=C, max_rows=2, max_groups=k, groups=[0, 1, 2, 3])
    b = _stats(X2, u2, k2, C=C, max_rows=2, max_groups=k, groups=[0, 1, 2, 3])
    assert _sq_move(a[1], b[1], range(4)) <= 4 * Fraction(C) ** 2 * k
    assert sum((a[2][g] - b[2][g]) ** 2 for g in range(4)) <= 2 * k
    rel = private_group_sums(X, privacy_unit=units, by=keys, groups=[0, 1, 2, 3],
                             clip_norm=max(C, 1e-290), max_rows=2, max_groups=k,
                             neighbouring="replace", epsilon=1.0, delta=1e-6, rng=0)
    assert Fraction(rel.sensitivity) ** 2 >= 4 * Fraction(max(C, 1e-290)) ** 2 * k


def _heavy(rng, n_units=40, n_groups=6, d=3):
    rows = rng.integers(1, 12, size=n_units)
    units = np.repeat(rng.permutation(10**6)[:n_units], rows)
    keys = rng.integers(0, n_groups, size=units.size)
    return rng.normal(size=(units.size, d)), units, keys


def _cells(b):
    """The bounded table as a sorted list of (unit, group, vector bytes)."""
    return sorted((int(u), int(g), v.tobytes()) for u, g, v in
                  zip(b.unit_index, b.group_index, b.vectors))


def test_the_kept_rows_do_not_depend_on_the_row_order():
    rng = np.random.default_rng(5)
    X, units, keys = _heavy(rng)
    bounds = ContributionBounds(max_rows=2, max_groups=2)
    a = bound_contributions(X, privacy_unit=units, by=keys, bounds=bounds, key=KEY)
    for _ in range(3):
        p = rng.permutation(units.size)
        b = bound_contributions(X[p], privacy_unit=units[p], by=keys[p], bounds=bounds,
                                key=KEY)
        assert np.array_equal(b.kept, a.kept[p])
        assert _cells(a) == _cells(b)                    # the same bits, per unit and group
        assert a.truncated_units == b.truncated_units
    # some rows and some groups were dropped: the test is not vacuous
    assert 0 < a.kept.sum() < units.size and a.truncated_units > 0


def test_the_kept_rows_of_a_unit_do_not_depend_on_the_other_units_or_the_split():
    rng = np.random.default_rng(6)
    X, units, keys = _heavy(rng)
    bounds = ContributionBounds(max_rows=3, max_groups=2, per_unit="mean")
    whole = bound_contributions(X, privacy_unit=units, by=keys, bounds=bounds, key=KEY)
    ids = np.unique(units)
    parts = [np.isin(units, ids[::2]), np.isin(units, ids[1::2])]
    kept = np.zeros(units.size, dtype=bool)
    vectors = []
    for mask in parts:
        b = bound_contributions(X[mask], privacy_unit=units[mask], by=keys[mask],
                                bounds=bounds, key=KEY)
        kept[np.flatnonzero(mask)[b.kept]] = True
        uid = np.unique(units[mask])
        vectors += [(int(uid[u]), int(g), v.tobytes())
                    for u, g, v in zip(b.unit_index, b.group_index, b.vectors)]
    assert np.array_equal(kept, whole.kept)
    uid = np.unique(units)
    assert sorted(vectors) == sorted((int(uid[u]), int(g), v.tobytes()) for u, g, v in
                                     zip(whole.unit_index, whole.group_index, whole.vectors))


def test_a_dataframe_and_arrays_give_the_same_bounded_table():
    rng = np.random.default_rng(7)
    X, units, keys = _heavy(rng, d=2)
    df = pd.DataFrame({"user": units.astype(str), "a": X[:, 0], "region": keys, "b": X[:, 1]})
    bounds = ContributionBounds(max_rows=2, max_groups=1)
    a = bound_contributions(df, privacy_unit="user", by="region", bounds=bounds, key=KEY)
    b = bound_contributions(X, privacy_unit=units.astype(str), by=keys, bounds=bounds,
                            key=KEY)
    assert a.columns == ("a", "b")
    assert np.array_equal(a.kept, b.kept) and _cells(a) == _cells(b)


def test_the_kept_rows_and_groups_are_uniformly_random_over_the_key():
    """One unit with 5 rows in group 0 and rows in 4 groups: over keys, each
    row is kept with probability 2/5 and each group with probability 2/4."""
    X = np.arange(10.0)[:, None]
    units = np.zeros(10, dtype=int)
    keys = np.array([0, 0, 0, 0, 0, 1, 2, 3, 1, 2])
    bounds = ContributionBounds(max_rows=2, max_groups=2)
    trials = 1500
    row_hits = np.zeros(10)
    group_hits = np.zeros(4)
    rng = np.random.default_rng(8)
    for _ in range(trials):
        b = bound_contributions(X, privacy_unit=units, by=keys, bounds=bounds,
                                key=rng.bytes(16))
        row_hits += b.kept
        group_hits[b.group_index] += 1
    # given group 0 is kept (prob 1/2), each of its 5 rows is kept with prob 2/5
    p_group = group_hits / trials
    tol = 4.5 * math.sqrt(0.25 / trials)
    assert np.all(np.abs(p_group - 0.5) < tol), p_group
    p_row = row_hits[:5] / group_hits[0]
    tol_row = 4.5 * math.sqrt(0.24 / group_hits[0])
    assert np.all(np.abs(p_row - 0.4) < tol_row), p_row


def test_a_release_is_the_same_on_any_row_order():
    rng = np.random.default_rng(9)
    X, units, keys = _heavy(rng)
    kw = dict(clip_norm=2.0, max_rows=2, max_groups=2, epsilon=1.0, delta=1e-6,
              statistic="mean")
    a = private_group_sums(X, privacy_unit=units, by=keys, rng=3, **kw)
    p = rng.permutation(units.size)
    b = private_group_sums(X[p], privacy_unit=units[p], by=keys[p], rng=3, **kw)
    assert a.groups == b.groups
    assert np.array_equal(a.noisy_sum, b.noisy_sum)
    assert np.array_equal(a.noisy_count, b.noisy_count)


def test_public_groups_drop_other_rows_and_answer_empty_groups():
    rng = np.random.default_rng(10)
    X, units, keys = _heavy(rng)
    rel = private_group_sums(X, privacy_unit=units, by=keys, groups=[1, 99, 0],
                             clip_norm=2.0, max_rows=2, max_groups=3, epsilon=1.0,
                             delta=1e-6, rng=4)
    assert rel.groups == (1, 99, 0)
    table = rel.to_pandas()
    assert list(table.columns) == ["group", "column", "estimate", "noise_std", "lower",
                                   "upper"]
    assert len(table) == 3 * X.shape[1]
    # the empty group's answer is pure noise, with the same noise scale
    assert np.all(np.isfinite(rel.noisy_sum[1]))
    _, sums, _ = _stats(X, units, keys, C=2.0, max_rows=2, max_groups=3, groups=[1, 99, 0])
    assert sums[99] == [0] * X.shape[1] and any(v != 0 for v in sums[1])


def test_the_tidy_table_keeps_the_labels_and_several_group_columns():
    rng = np.random.default_rng(11)
    X, units, keys = _heavy(rng, d=2)
    df = pd.DataFrame({"user": units, "spend": X[:, 0], "visits": X[:, 1],
                       "region": np.where(keys % 2, "north", "south"), "day": keys % 3})
    rel = private_group_sums(df, privacy_unit="user", by=["region", "day"],
                             groups=[("north", 0), ("south", 1)], clip_norm=3.0,
                             max_rows=2, max_groups=2, epsilon=1.0, delta=1e-6,
                             statistic="mean", rng=0)
    table = rel.to_pandas()
    assert list(table.columns[:3]) == ["region", "day", "column"]
    assert list(table["column"]) == ["spend", "visits"] * 2
    assert list(table["region"]) == ["north", "north", "south", "south"]
    assert np.all(table["lower"] <= table["estimate"]) and \
        np.all(table["estimate"] <= table["upper"])


# ----------------------------------------------------------- noise and intervals
def test_the_noise_is_calibrated_exactly_to_the_unit_sensitivity():
    from dpsum.privacy import analytic_sigma, gaussian_delta
    rng = np.random.default_rng(12)
    X, units, keys = _heavy(rng)
    for relation, factor in (("add-remove", 1), ("replace", 4)):
        rel = private_group_sums(X, privacy_unit=units, by=keys, groups=list(range(6)),
                                 clip_norm=1.5, max_rows=3, max_groups=3, epsilon=0.7,
                                 delta=1e-7, neighbouring=relation, statistic="mean",
                                 rng=0)
        w_s, w_c, w_t = rel.shares
        assert math.isclose(w_s + w_c + w_t, 1.0)
        # the stacked Gaussian release: sensitivity in units of its noise
        r2 = (rel.sensitivity / rel.sum_std) ** 2 + \
            (math.sqrt(3 * (2 if factor == 4 else 1)) / rel.count_std) ** 2 + \
            (1.0 / rel.truncated_std) ** 2
        assert math.sqrt(r2) <= 1.0 / rel.sigma_opt
        assert math.isclose(math.sqrt(r2), 1.0 / rel.sigma_opt, rel_tol=1e-12)
        assert rel.sigma_opt == analytic_sigma(0.7, 1e-7)
        assert gaussian_delta(1.0, 0.7, math.sqrt(r2)) <= 1e-7 * (1 + 1e-9)
        assert math.isclose(rel.sensitivity, math.sqrt(factor * 3) * 1.5, rel_tol=1e-15)


def test_the_mean_interval_covers_at_its_level():
    """Repeated releases on one table: the 90% interval of the mean (two
    noises, union bound) covers the true mean of clipped unit vectors at
    least 90% of the time (tolerance from the number of releases)."""
    rng = np.random.default_rng(13)
    n_units = 30
    units = np.repeat(np.arange(n_units), 2)
    X = rng.normal(0.3, 0.2, size=(units.size, 1))
    keys = np.zeros(units.size, dtype=int)
    unit_means = X.reshape(n_units, 2).mean(axis=1)
    truth = unit_means.mean()                  # no clipping at C = 5 (up to the grid)
    runs = 300
    hits = 0
    for seed in range(runs):
        rel = private_group_sums(X, privacy_unit=units, by=keys, groups=[0], clip_norm=5.0,
                                 max_rows=2, epsilon=2.0, delta=1e-5, statistic="mean",
                                 rng=seed)
        lo, hi = rel.intervals(0.9)
        hits += bool(lo[0, 0] - 1e-9 <= truth <= hi[0, 0] + 1e-9)
    assert hits / runs >= 0.9 - 3 * math.sqrt(0.09 / runs)
    # the sum's interval is exact Gaussian: z sigma each side
    rel = private_group_sums(X, privacy_unit=units, by=keys, groups=[0], clip_norm=5.0,
                             max_rows=2, epsilon=2.0, delta=1e-5, rng=0)
    lo, hi = rel.intervals(0.95)
    assert np.allclose((hi - lo) / 2, 1.959963984540054 * rel.sum_std, rtol=1e-12)


# ----------------------------------------------------------- group discovery
def test_the_selection_threshold_matches_the_formula_in_high_precision():
    mpmath.mp.dps = 40
    for sigma, k, delta in [(1.0, 1, 1e-6), (3.0, 5, 1e-9), (0.5, 50, 1e-3), (20.0, 3, 0.2)]:
        tau = selection_threshold(sigma, k, delta)
        exact = 1 - mpmath.ncdf((mpmath.mpf(tau) - 1) / sigma) ** k
        assert exact <= delta
        # and not needlessly high: a hair lower breaks it
        lower = 1 - mpmath.ncdf((mpmath.mpf(tau) * (1 - 1e-9) - 1) / sigma) ** k
        assert lower > delta * (1 - 1e-6) or tau < 1e-3
        assert math.isclose(selection_delta(tau, sigma, k), float(exact), rel_tol=1e-9)


def test_groups_of_one_unit_are_released_at_most_with_probability_delta_tau():
    """A unit alone in k = 3 groups: over many releases the frequency of
    releasing any of them matches delta_tau, with delta_tau / (1 - delta_tau)
    the selection's share of delta (here large enough to simulate); the
    tolerance comes from the number of runs."""
    X = np.ones((3, 1))
    units = np.zeros(3, dtype=int)
    keys = np.array([0, 1, 2])
    runs = 2000
    released = 0
    rel = None
    for seed in range(runs):
        rel = private_group_sums(X, privacy_unit=units, by=keys, clip_norm=1.0,
                                 max_rows=1, max_groups=3, epsilon=1.0, delta=0.4,
                                 truncation_share=0.0, rng=seed)
        released += len(rel.groups) > 0
    assert rel is not None and rel.selection_delta == 0.2
    target = 0.2 / 1.2                              # delta_tau / (1 - delta_tau) = 0.2
    p = released / runs
    assert abs(p - target) < 4 * math.sqrt(target * (1 - target) / runs), p
    assert math.isclose(selection_delta(rel.threshold, rel.count_std, 3), target,
                        rel_tol=1e-9)


def test_private_discovery_finds_the_large_groups():
    rng = np.random.default_rng(14)
    units = np.arange(3000)
    keys = np.where(units < 2000, 0, np.where(units < 2999, 1, 2))   # group 2: one unit
    X = rng.normal(size=(3000, 2))
    rel = private_group_sums(X, privacy_unit=units, by=keys, clip_norm=3.0, max_rows=1,
                             epsilon=1.0, delta=1e-6, rng=0)
    assert rel.groups == (0, 1) and rel.threshold > 1


# ----------------------------------------------------------- audit
def _audit_table():
    """Three units; the audited one has 4 rows in group 0."""
    X = np.array([[1.0], [1.0], [1.0], [1.0], [-0.2], [0.4]])
    units = np.array([9, 9, 9, 9, 1, 2])
    keys = np.zeros(6, dtype=int)
    return X, units, keys


def _release(row_level):
    def release(data, rng):
        X, units, keys = data
        ids = np.arange(len(units)) if row_level else units
        return private_group_sums(X, privacy_unit=ids, by=keys, groups=[0], clip_norm=1.0,
                                  max_rows=4, epsilon=1.0, delta=1e-3,
                                  truncation_share=0.0, rng=rng).estimate.ravel()
    return release


@pytest.mark.slow
def test_the_audit_passes_the_unit_mechanism_and_catches_row_bounding():
    X, units, keys = _audit_table()
    keep = units != 9
    D, D2 = (X, units, keys), (X[keep], units[keep], keys[keep])
    ok = epsilon_lower_bound(_release(False), D, D2, delta=1e-3, n_samples=1500, rng=0,
                             alpha=0.01)
    assert ok.epsilon_lower_bound <= 1.0
    bad = epsilon_lower_bound(_release(True), D, D2, delta=1e-3, n_samples=1500, rng=0,
                              alpha=0.01)
    assert bad.epsilon_lower_bound > 1.0


# ----------------------------------------------------------- bad input
def _frame():
    return pd.DataFrame({"user": [1, 1, 2], "region": ["a", "b", "a"], "x": [0.1, 0.2, 0.3]})


BASE = dict(clip_norm=1.0, max_rows=2, epsilon=1.0, delta=1e-6, rng=0)


@pytest.mark.parametrize("change, name", [
    (dict(privacy_unit="nobody"), "privacy_unit"),
    (dict(by="nowhere"), "by"),
    (dict(max_rows=0), "max_rows"),
    (dict(max_groups=0), "max_groups"),
    (dict(max_rows=1.5), "max_rows"),
    (dict(groups="a"), "groups"),
    (dict(groups=[]), "groups"),
    (dict(groups=["a", "a"]), "groups"),
    (dict(groups=[None]), "groups"),
    (dict(columns=["user"]), "columns"),
    (dict(columns=["missing"]), "columns"),
    (dict(statistic="median"), "statistic"),
    (dict(per_unit="max"), "per_unit"),
    (dict(count_share=1.0), "count_share"),
    (dict(truncation_share=-0.1), "truncation_share"),
    (dict(neighbouring="replace", groups=None), "neighbouring"),
    (dict(clip_norm=-1.0), "clip_norm"),
    (dict(epsilon=0.0), "epsilon"),
])
def test_bad_arguments_get_a_clear_error_naming_them(change, name):
    args = dict(BASE, privacy_unit="user", by="region", groups=["a", "b"], **{})
    args.update(change)
    with pytest.raises((ValueError, TypeError), match=name):
        private_group_sums(_frame(), **args)


@pytest.mark.parametrize("units, kind", [
    ([1.0, np.nan, 2.0], TypeError),            # a float column: missing ids as NaN
    (["a", None, "b"], ValueError),             # a missing id
    (["a", 1, "b"], TypeError),                 # mixed kinds
    ([True, False, True], TypeError),           # booleans
    ([1, 2], ValueError),                       # wrong length
    ([[1], [2], [3]], ValueError),              # 2-d
])
def test_bad_unit_ids_get_a_clear_error_without_values(units, kind):
    X = np.array([[0.1], [0.2], [0.3]])
    ids = np.array(units, dtype=object) if np.ndim(units) == 1 and \
        isinstance(units[0], str) else np.array(units)
    cases = [(X, ids)]
    if len(units) == 3 and np.ndim(units) == 1:
        cases.append((_frame().assign(user=pd.Series(units, dtype=object)
                                      if isinstance(units[0], str) else units), "user"))
    for data, pu in cases:
        with pytest.raises(kind, match="privacy_unit") as e:
            private_group_sums(data, privacy_unit=pu, by=None, columns=["x"]
                               if not isinstance(data, np.ndarray) else None, **BASE)
        assert not any(str(v) in str(e.value) for v in ("0.1", "0.2", "0.3"))


def test_nan_in_a_frame_unit_column_and_in_values_are_refused():
    df = _frame().assign(user=[1.0, np.nan, 2.0])
    with pytest.raises(TypeError, match="privacy_unit"):
        private_group_sums(df, privacy_unit="user", by="region", **BASE)
    df = _frame().assign(user=pd.array([1, None, 2], dtype="Int64"))
    with pytest.raises((TypeError, ValueError), match="privacy_unit"):
        private_group_sums(df, privacy_unit="user", by="region", **BASE)
    df = _frame().assign(x=[0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="'x'"):
        private_group_sums(df, privacy_unit="user", by="region", **BASE)
    df = _frame().assign(region=["a", None, "b"])
    with pytest.raises(ValueError, match="by"):
        private_group_sums(df, privacy_unit="user", by="region", **BASE)


def test_parameters_are_checked_before_the_data_is_read():
    class Untouchable(np.ndarray):
        def __array_ufunc__(self, *a, **k):
            raise AssertionError("data read")
    X = np.ones((3, 1)).view(Untouchable)
    with pytest.raises(ValueError, match="max_rows"):
        private_group_sums(X, privacy_unit=np.array([1, 2, 3]), max_rows=0, clip_norm=1.0,
                           epsilon=1.0, delta=1e-6)
    with pytest.raises(TypeError, match="by"):
        private_group_sums(X, privacy_unit=np.array([1, 2, 3]), by="region", max_rows=1,
                           clip_norm=1.0, epsilon=1.0, delta=1e-6)


def test_the_record_refuses_impossible_fields():
    rng = np.random.default_rng(15)
    X, units, keys = _heavy(rng)
    rel = private_group_sums(X, privacy_unit=units, by=keys, groups=[0, 1], clip_norm=1.0,
                             max_rows=1, epsilon=1.0, delta=1e-6, statistic="mean", rng=0)
    import dataclasses
    fields = {f.name: getattr(rel, f.name) for f in dataclasses.fields(rel)}
    assert GroupRelease(**fields).groups == rel.groups
    with pytest.raises(ValueError, match="noisy_sum"):
        GroupRelease(**{**fields, "noisy_sum": np.ones((3, 3))})
    with pytest.raises(ValueError, match="noisy_count"):
        GroupRelease(**{**fields, "noisy_count": None})
    with pytest.raises(ValueError, match="epsilon"):
        GroupRelease(**{**fields, "epsilon": -1.0})


def test_the_fast_exact_rounding_agrees_with_fractions_bit_for_bit():
    """S 2^K + z rounded once in integer arithmetic, against Fraction, over
    subnormal, huge and saturating values."""
    import random
    from dpsum.kernels._exact import to_float
    from dpsum.tables._round import noisy_grid_sum
    rnd = random.Random(16)
    M = np.finfo(np.float64).max
    cases = [(0, 0, 5e-324), (1, -1075, 0.0), (3, -1076, 0.0), (1, -1076, 0.0),
             (2**53 + 1, 970, 0.0), (2**54 - 1, 971, 0.0), (-(2**60), 964, -M), (7, 0, -7.0)]
    for _ in range(20000):
        K = rnd.randint(-1200, 1000)
        S = rnd.choice([0, rnd.randint(-9, 9), rnd.getrandbits(rnd.randint(1, 130))
                        * rnd.choice([-1, 1])])
        z = rnd.choice([0.0, math.ldexp(rnd.uniform(-1, 1), rnd.randint(-1080, 1023)),
                        5e-324 * rnd.randint(-9, 9)])
        cases.append((S, K, z))
    for S, K, z in cases:
        want = to_float(Fraction(S) * Fraction(2) ** K + Fraction(z))
        got = noisy_grid_sum(S, K, z)
        assert want == got, (S, K, z)


def _reference_bound(X, units, keys, bounds, key):
    """The bounding rule written out unit by unit (no sorting tricks): a
    unit's groups ranked by (cell word, group), its rows in a cell by (row
    word, content); the first max_groups groups and max_rows rows kept."""
    from dpsum import _units as H
    uid = sorted(set(units.tolist()))
    gid = sorted(set(keys.tolist()))
    uw = dict(zip(uid, H.words(uid, key, b"dpsum-unit")))
    gw = dict(zip(gid, H.mix(H.words(gid, key, b"dpsum-group"))))
    cells, kept, truncated = {}, np.zeros(len(units), dtype=bool), 0
    for u in uid:
        mine = np.flatnonzero(units == u)
        groups = sorted(set(keys[mine].tolist()))
        word = {g: int(H.mix(np.array([uw[u] ^ gw[g]], dtype=np.uint64))[0]) for g in groups}
        ranked = sorted(groups, key=lambda g: (word[g], g))
        cut = len(ranked) > bounds.max_groups
        for g in ranked[:bounds.max_groups]:
            rows = mine[keys[mine] == g]
            h = H.row_digest(X[rows], np.full(rows.size, word[g], dtype=np.uint64))
            rows = [r for _, _, r in sorted(zip(h.tolist(), [tuple(X[r] + 0.0) for r in rows],
                                                rows.tolist()))]
            cut |= len(rows) > bounds.max_rows
            rows = rows[:bounds.max_rows]
            kept[rows] = True
            acc = np.zeros(X.shape[1])
            for r in rows:
                acc = acc + (X[r] / len(rows) if bounds.per_unit == "mean" else X[r])
            cells[(u, g)] = acc.tobytes()
        truncated += cut
    return cells, kept, truncated


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_bounding_pass_equals_the_rule_written_out(seed):
    """Including units with many rows in few groups, which the fast pass's
    first level misses and redoes on all their rows."""
    rng = np.random.default_rng(100 + seed)
    parts = []
    for u in range(25):
        r = int(rng.integers(1, 60))
        few = rng.choice(40, size=int(rng.integers(1, 6)), replace=False)
        g = rng.choice(few, size=r) if u % 3 == 0 else rng.integers(0, 40, size=r)
        parts.append((np.full(r, 1000 + 37 * u), g))
    units = np.concatenate([p[0] for p in parts])
    keys = np.concatenate([p[1] for p in parts])
    X = np.round(rng.normal(size=(units.size, 2)), 1)          # repeated rows too
    bounds = ContributionBounds(max_rows=int(rng.integers(1, 4)),
                                max_groups=int(rng.integers(1, 4)),
                                per_unit=["sum", "mean"][seed % 2])
    key = rng.bytes(16)
    b = bound_contributions(X, privacy_unit=units, by=keys, bounds=bounds, key=key)
    cells, kept, truncated = _reference_bound(X, units, keys, bounds, key)
    uid = np.unique(units)
    got = {(int(uid[u]), int(b.groups[g])): v.tobytes()
           for u, g, v in zip(b.unit_index, b.group_index, b.vectors)}
    assert got == cells
    assert np.array_equal(b.kept, kept)
    assert b.truncated_units == truncated


# ----------------------------------------------------------- dask DataFrames
@pytest.mark.parametrize("private", [False, True])
def test_a_dask_frame_gives_the_pandas_release_bit_for_bit(private):
    dd = pytest.importorskip("dask.dataframe")
    import dask
    rng = np.random.default_rng(17)
    X, units, keys = _heavy(rng, n_units=300, n_groups=4, d=2)
    df = pd.DataFrame({"user": units, "region": keys % 2, "day": keys // 2,
                       "spend": X[:, 0], "visits": X[:, 1]})
    kw = dict(privacy_unit="user", by=["region", "day"], clip_norm=2.0, max_rows=2,
              max_groups=2, epsilon=1.0, delta=1e-6, statistic="mean",
              groups=None if private else [(0, 0), (1, 1), (5, 5)])
    want = private_group_sums(df, rng=7, **kw)
    with dask.config.set(scheduler="synchronous"):
        for parts in (1, 3, 7):
            got = private_group_sums(dd.from_pandas(df, npartitions=parts), rng=7, **kw)
            assert got.groups == want.groups and got.columns == want.columns
            assert np.array_equal(got.noisy_sum, want.noisy_sum)
            assert np.array_equal(got.noisy_count, want.noisy_count)
            assert got.truncated_units == want.truncated_units
    assert len(want.groups) >= 2 and want.truncated_units > 0


def test_a_dask_frame_needs_column_labels():
    dd = pytest.importorskip("dask.dataframe")
    df = dd.from_pandas(_frame(), npartitions=2)
    with pytest.raises(TypeError, match="privacy_unit"):
        private_group_sums(df, privacy_unit=np.array([1, 1, 2]), **BASE)
    with pytest.raises(ValueError, match="by"):
        private_group_sums(df, privacy_unit="user", by="nowhere", **BASE)


# ----------------------------------------------------------------- sessions
def _session_table():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    return X, rng.integers(0, 50, 200), rng.integers(0, 3, 200)


def test_a_session_is_charged_before_the_noise():
    from dpsum.session import ONE_OFF, Session
    X, units, keys = _session_table()
    s = Session(epsilon=2.0, delta=1e-5, neighbouring="add-remove")
    rel = private_group_sums(X, privacy_unit=units, by=keys, groups=[0, 1, 2], clip_norm=2.0,
                             max_rows=2, epsilon=1.0, delta=1e-6, rng=0, session=s)
    assert rel.accounting != ONE_OFF
    header, entry = s.ledger()
    assert entry["mechanism"] == "private_group_sums"
    alone = private_group_sums(X, privacy_unit=units, by=keys, groups=[0, 1, 2], clip_norm=2.0,
                               max_rows=2, epsilon=1.0, delta=1e-6, rng=0)
    assert alone.accounting == ONE_OFF
    assert np.array_equal(alone.noisy_sum, rel.noisy_sum)     # the session draws nothing


def test_a_session_refuses_before_the_table_is_read():
    from dpsum.session import Session
    X, units, keys = _session_table()
    X[5, 1] = np.nan                          # reading the values would raise about X
    s = Session(epsilon=0.5, delta=1e-6, neighbouring="add-remove")
    for groups in ([0, 1, 2], None):
        with pytest.raises(ValueError, match="session refuses"):
            private_group_sums(X, privacy_unit=units, by=keys, groups=groups, clip_norm=2.0,
                               max_rows=2, epsilon=1.0, delta=1e-6, rng=0, session=s)
    assert len(s.ledger()) == 1                       # the header only
    t = Session(epsilon=2.0, delta=1e-5, neighbouring="replace")
    with pytest.raises(ValueError, match="neighbouring|relation"):
        private_group_sums(X, privacy_unit=units, by=keys, groups=[0, 1], clip_norm=2.0,
                           max_rows=2, epsilon=1.0, delta=1e-6, rng=0, session=t)
    with pytest.raises(TypeError, match="session"):
        private_group_sums(X, privacy_unit=units, by=keys, groups=[0, 1], clip_norm=2.0,
                           max_rows=2, epsilon=1.0, delta=1e-6, rng=0, session="s")
