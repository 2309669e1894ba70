"""Privacy units on the single-table releases: ``privacy_unit=``, ``max_rows=``
and ``per_unit=`` of the vector mechanisms and of ``private_mean`` /
``private_sum``.

The neighbour tests take the mechanism's own accumulator (the one its pass
folds: ``dpsum.mechanisms._pass`` is wrapped to record it) and compare the
pre-noise statistics of two unit-level neighbours in exact rational
arithmetic: all rows of one unit removed (add-remove), or replaced by the
rows of another unit (replace-one).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpsum import _units as U
from dpsum import mechanisms as M
from dpsum import private_mean, private_sum

pd = pytest.importorskip("pandas")


def _q(x: Any) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(x)


def _table(rng: np.random.Generator, units: int, d: int, scale: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """Units with 1 to 7 rows each (heavy: some far beyond max_rows), rows
    interleaved, values at ``scale`` with some far out."""
    counts = rng.integers(1, 8, size=units)
    ids = np.repeat(np.arange(units) * 7 + 3, counts)
    X = rng.normal(size=(ids.size, d)) * scale * 10.0 ** rng.uniform(-1, 1, size=d)
    X[rng.random(ids.size) < 0.1] *= 1e3
    order = rng.permutation(ids.size)
    return X[order], ids[order]


def _call(mech: str, X: Any, ids: Any, *, relation: str, per_unit: str, m: int, d: int,
          scale: float, rng: Any = 3, statistic: str = "sum") -> Any:
    common = dict(privacy_unit=ids, max_rows=m, per_unit=per_unit, rng=rng,
                  statistic=statistic)
    if mech == "elliptical":
        return M.elliptical_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, lower=-scale,
                                               upper=2 * scale, diagnostics=False, **common)
    if mech == "shaped laplace":
        return M.shaped_laplace_mechanism(X, epsilon=1.0, widths=np.full(d, 3 * scale),
                                          **common)
    if mech == "gaussian data":
        return M.gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=np.full(d, scale),
                                         center=np.full(d, scale / 2), clip_probability=0.05,
                                         neighbouring=relation, diagnostics=False, **common)
    return M.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=2 * scale,
                                        neighbouring=relation, diagnostics=False, **common)


def _statistic(monkeypatch: pytest.MonkeyPatch, mech: str, X: Any, ids: Any,
               **kw: Any) -> tuple[list[Fraction], Any, int]:
    """The mechanism's pre-noise statistic (exact), its release and the rows
    (units) its pass saw."""
    seen: list = []
    original = M._pass

    def recording(data: Any, acc: Any) -> Any:
        folded = original(data, acc)
        seen.append((folded, np.shape(data)[0]))
        return folded
    monkeypatch.setattr(M, "_pass", recording)
    rel = _call(mech, X, ids, **kw)
    monkeypatch.setattr(M, "_pass", original)
    (folded, rows), = seen
    return [_q(v) for v in np.ravel(folded.sum_before_noise())], rel, rows


def _moved_over_sensitivity(mech: str, a: list[Fraction], b: list[Fraction], rel: Any
                            ) -> float:
    delta = [x - y for x, y in zip(a, b)]
    if mech == "shaped laplace":                   # L1 in the scaled space
        moved = sum(abs(v) * Fraction(float(s)) for v, s in zip(delta, rel.scaling))
        return float(moved / Fraction(rel.sensitivity))
    if mech == "elliptical":                       # T_j b_j / w_j, L2
        w = [Fraction(float(s)) / Fraction(float(x)) for s, x in zip(rel.scaling, rel.widths)]
        moved2 = sum((v * x) ** 2 for v, x in zip(delta, w))
    else:                                          # the scaled space, L2
        moved2 = sum(v * v for v in delta)
    return math.sqrt(float(moved2 / Fraction(rel.sensitivity) ** 2)) if moved2 else 0.0


CASES = [(mech, rel) for mech in ("elliptical", "shaped laplace", "gaussian data", "clipped")
         for rel in ("replace", "add-remove")
         if not (rel == "add-remove" and mech in ("elliptical", "shaped laplace"))]


@pytest.mark.parametrize("mech,relation", CASES)
@pytest.mark.parametrize("per_unit", ["sum", "mean"])
def test_a_unit_moves_the_statistic_by_at_most_the_sensitivity(monkeypatch, mech, relation,
                                                                per_unit):
    """Remove all rows of one unit (add-remove) or replace them by another
    unit's rows (replace-one): the exact pre-noise statistic moves by at most
    the declared sensitivity, at scales from 1e-200 to 1e200; the neighbour's
    other units keep their rows (the same key: the same rng)."""
    rng = np.random.default_rng(11)
    worst = 0.0
    for case in range(6):
        d = int(rng.integers(1, 4))
        scale = float(10.0 ** rng.uniform(-200, 200))
        m = int(rng.integers(1, 5))
        X, ids = _table(rng, 6, d, scale)
        victim = ids[0]
        gone = ids != victim
        if relation == "add-remove":
            Y, ids2 = X[gone], ids[gone]
        else:                        # the victim's rows replaced by a far, larger unit
            k = int(rng.integers(1, 9))
            new = -np.sign(X[~gone].sum(axis=0) + 0.5) * scale * 10.0 ** rng.uniform(
                1, 4, size=(k, d))
            Y = np.vstack([X[gone], new])
            ids2 = np.concatenate([ids[gone], np.full(k, -1)])
        kw = dict(relation=relation, per_unit=per_unit, m=m, d=d, scale=scale)
        a, rel_a, rows_a = _statistic(monkeypatch, mech, X, ids, **kw)
        b, rel_b, rows_b = _statistic(monkeypatch, mech, Y, ids2, **kw)
        assert rows_a == len(np.unique(ids))               # one row per unit
        assert rows_b == len(np.unique(ids2))
        assert rel_a.sensitivity == rel_b.sensitivity      # public: not from the data
        ratio = _moved_over_sensitivity(mech, a, b, rel_a)
        assert ratio <= 1.0, (case, ratio)
        worst = max(worst, ratio)
    assert worst > 0.0                                     # the unit did move it


def test_row_level_bounding_is_caught(monkeypatch):
    """The same check catches a release that bounds rows instead of units:
    the clipping baseline on the rows (each row clipped, C the per-row
    bound) moves by up to ``k C`` when a unit of ``k`` rows leaves."""
    rng = np.random.default_rng(2)
    X, ids = _table(rng, 5, 2, 1.0)
    counts = {u: int(np.sum(ids == u)) for u in np.unique(ids)}
    victim = max(counts, key=counts.get)
    assert counts[victim] >= 2
    X[ids == victim] = 50.0                                # far beyond the clip radius
    gone = ids != victim
    seen: list = []
    original = M._pass
    monkeypatch.setattr(M, "_pass", lambda data, acc: seen.append(original(data, acc))
                        or seen[-1])
    kw = dict(epsilon=1.0, delta=1e-6, clip_norm=2.0, neighbouring="add-remove",
              diagnostics=False, rng=0)
    r = M.clipped_gaussian_mechanism(X, **kw)              # rows as units: wrong here
    M.clipped_gaussian_mechanism(X[gone], **kw)
    a, b = ([_q(v) for v in np.ravel(s.sum_before_noise())] for s in seen)
    assert _moved_over_sensitivity("clipped", a, b, r) > 1.5
    seen.clear()
    r = M.clipped_gaussian_mechanism(X, privacy_unit=ids, max_rows=9, **kw)
    M.clipped_gaussian_mechanism(X[gone], privacy_unit=ids[gone], max_rows=9, **kw)
    a, b = ([_q(v) for v in np.ravel(s.sum_before_noise())] for s in seen)
    assert _moved_over_sensitivity("clipped", a, b, r) <= 1.0


def test_box_grows_for_unit_sums():
    X = np.array([[0.5, 2.0], [0.2, 3.0], [0.1, 1.0]])
    r = M.elliptical_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, lower=[-1.0, 1.0],
                                        upper=[1.0, 4.0], privacy_unit=[1, 1, 2], max_rows=3,
                                        rng=0)
    assert r.lower.tolist() == [-3.0, 1.0] and r.upper.tolist() == [3.0, 12.0]
    assert r.n == 2
    r = M.elliptical_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, lower=[-1.0, 1.0],
                                        upper=[1.0, 4.0], privacy_unit=[1, 1, 2], max_rows=3,
                                        per_unit="mean", statistic="mean", rng=0)
    assert r.lower.tolist() == [-1.0, 1.0] and r.upper.tolist() == [1.0, 4.0]
    r = M.shaped_laplace_mechanism(X, epsilon=1.0, widths=[1.0, 2.0], privacy_unit=[1, 1, 2],
                                   max_rows=4, rng=0)
    assert r.widths.tolist() == [4.0, 8.0]


def test_the_release_is_the_mechanism_on_one_row_per_unit():
    """With one row per unit, privacy_unit changes nothing but the key drawn
    first from rng; with max_rows=1 a unit's vector is one of its rows."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3))
    ids = np.arange(30)[::-1]
    order = np.argsort(ids, kind="stable")        # canonical: by the rank of the id
    gen = np.random.default_rng(9)
    gen.bytes(16)
    want = M.clipped_gaussian_mechanism(X[order], epsilon=1.0, delta=1e-6, clip_norm=1.0,
                                        rng=gen)
    got = M.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0, rng=9,
                                       privacy_unit=ids, max_rows=1)
    assert np.array_equal(want.estimate, got.estimate)
    bounds = U.ContributionBounds(max_rows=1)
    Y = np.repeat(X, 3, axis=0)
    Y[1::3] += 1.0
    ids3 = np.repeat(np.arange(30), 3)
    vec = U.bound_cells(Y, ids3, list(range(30)), np.zeros(90, np.int64), [()], bounds,
                        bytes(16))[0]
    assert all(any(np.array_equal(v, r) for r in Y[3 * i:3 * i + 3]) for i, v in
               enumerate(vec))


def _mechanism_calls() -> list:
    return [
        lambda X, **k: M.elliptical_gaussian_mechanism(X, epsilon=1.0, delta=1e-6,
                                                       lower=-3, upper=3, **k),
        lambda X, **k: M.shaped_laplace_mechanism(X, epsilon=1.0, widths=[4.0, 4.0], **k),
        lambda X, **k: M.gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[1, 1],
                                                 center=0, **k),
        lambda X, **k: M.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6,
                                                    clip_norm=2.0, **k),
        lambda X, **k: private_mean(X, lower=-10, upper=10, epsilon=1.0, delta=1e-6, **k),
        lambda X, **k: private_sum(X, lower=-10, upper=10, epsilon=1.0, delta=1e-6,
                                   neighbouring="add-remove", **k),
    ]


@pytest.mark.parametrize("call", range(6))
@pytest.mark.parametrize("per_unit", ["sum", "mean"])
def test_the_same_bits_on_any_row_order(call, per_unit):
    """Shuffled rows (and ids as strings in a DataFrame column): the same
    estimate, bit for bit, for the same rng."""
    rng = np.random.default_rng(call)
    n = 400
    X = rng.normal(size=(n, 2))
    ids = rng.integers(0, 60, n)
    f = _mechanism_calls()[call]
    df = pd.DataFrame(X, columns=["a", "b"]).assign(user=[f"u{i}" for i in ids])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = f(df, privacy_unit="user", max_rows=3, per_unit=per_unit, rng=5)
        for seed in range(3):
            p = np.random.default_rng(seed).permutation(n)
            got = f(df.iloc[p], privacy_unit="user", max_rows=3, per_unit=per_unit, rng=5)
            assert np.array_equal(want.estimate, got.estimate)
            got = f(X[p], privacy_unit=np.array([f"u{i}" for i in ids[p]]), max_rows=3,
                    per_unit=per_unit, rng=5)
            assert np.array_equal(want.estimate, got.estimate)
    assert want.columns == ("a", "b")


def test_a_unit_vector_depends_on_its_own_rows_only():
    """Split invariance: a unit's combined vector is the same whether the
    table holds the other units or not (so any split of the units into
    blocks bounds each unit alike)."""
    rng = np.random.default_rng(8)
    X, ids = _table(rng, 40, 3, 1.0)
    codes, uniq = U.canonical_codes(ids, "privacy_unit")
    bounds = U.ContributionBounds(max_rows=2, per_unit="sum")
    key = bytes(range(16))
    whole = U.bound_cells(X, codes, uniq, np.zeros(ids.size, np.int64), [()], bounds, key)[0]
    for i in (0, 7, 39):
        rows = codes == i
        alone = U.bound_cells(X[rows], np.zeros(rows.sum(), np.int64), [uniq[i]],
                              np.zeros(rows.sum(), np.int64), [()], bounds, key)[0]
        assert np.array_equal(alone[0], whole[i])


X0 = np.random.default_rng(0).normal(size=(6, 2))


@pytest.mark.parametrize("call", range(6))
@pytest.mark.parametrize("kwargs,error,name", [
    (dict(privacy_unit=[1, 2, 3, np.nan, 5, 6], max_rows=2), TypeError, "privacy_unit"),
    (dict(privacy_unit=[1, 2, 3, None, 5, 6], max_rows=2), ValueError, "privacy_unit"),
    (dict(privacy_unit=[1, "a", 3, 4, 5, 6], max_rows=2), TypeError, "privacy_unit"),
    (dict(privacy_unit=[1, 2, 3], max_rows=2), ValueError, "privacy_unit"),
    (dict(privacy_unit=[True] * 6, max_rows=2), TypeError, "privacy_unit"),
    (dict(privacy_unit="user", max_rows=2), TypeError, "privacy_unit"),
    (dict(privacy_unit=[1] * 6, max_rows=0), ValueError, "max_rows"),
    (dict(privacy_unit=[1] * 6, max_rows=2.5), ValueError, "max_rows"),
    (dict(privacy_unit=[1] * 6, max_rows=True), TypeError, "max_rows"),
    (dict(privacy_unit=[1] * 6), TypeError, "max_rows"),
    (dict(max_rows=2), ValueError, "max_rows"),
    (dict(per_unit="sum"), ValueError, "per_unit"),
    (dict(privacy_unit=[1] * 6, max_rows=2, per_unit="x"), ValueError, "per_unit"),
    (dict(privacy_unit=[1] * 6, max_rows=2, per_unit=1), TypeError, "per_unit"),
])
def test_bad_unit_arguments_are_named_before_the_data_are_read(call, kwargs, error, name):
    """X holds a NaN: had it been read first, the error would name X."""
    X = X0.copy()
    X[2, 1] = np.nan
    with pytest.raises(error, match=name):
        _mechanism_calls()[call](X, rng=0, **kwargs)


@pytest.mark.parametrize("call", range(6))
def test_frame_columns_are_checked(call):
    df = pd.DataFrame(X0, columns=["a", "b"]).assign(user=[1, 1, 2, 2, 3, np.nan])
    f = _mechanism_calls()[call]
    with pytest.raises(ValueError, match="privacy_unit names no column"):
        f(df, privacy_unit="who", max_rows=2, rng=0)
    with pytest.raises(TypeError, match="privacy_unit"):
        f(df, privacy_unit="user", max_rows=2, rng=0)          # a float column: NaN ids


def test_dask_input_is_refused_with_a_unit():
    da = pytest.importorskip("dask.array")
    X = da.from_array(X0, chunks=(3, 2))
    with pytest.raises(TypeError, match="privacy_unit"):
        M.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0,
                                     privacy_unit=np.arange(6), max_rows=1)


def test_add_remove_of_all_units_leaves_a_release():
    """Under add-remove no rows is data like any other."""
    r = M.clipped_gaussian_mechanism(np.empty((0, 2)), epsilon=1.0, delta=1e-6, clip_norm=1.0,
                                     neighbouring="add-remove", privacy_unit=np.empty(0, int),
                                     max_rows=2, rng=0)
    assert r.estimate.shape == (2,) and np.all(np.isfinite(r.estimate))


# ------------------------------------------------------- counts of bits by unit
from dpsum import binomial_noise_mechanism, sample_and_threshold  # noqa: E402


def _unit_count(bits: np.ndarray, ids: np.ndarray, rule: str, m: int, seed: int) -> int:
    units = U.unit_bits(bits, ids, m, rule)
    return int(np.count_nonzero(units.collapse_bits(np.asarray(bits, bool),
                                                    np.random.default_rng(seed))))


@pytest.mark.parametrize("rule", ["any", "mean"])
def test_a_unit_moves_the_count_by_at_most_one(rule):
    """Remove one unit's bits, or replace them by another unit's (any
    number): the count of unit bits moves by at most one, and the other
    units keep their bits (the same key)."""
    rng = np.random.default_rng(5)
    moved = []
    for _ in range(40):
        counts = rng.integers(1, 9, size=30)
        ids = rng.permutation(np.repeat(np.arange(30), counts))
        bits = (rng.random(ids.size) < rng.uniform(0.1, 0.9)).astype(int)
        m = int(rng.integers(1, 6))
        victim = ids[0]
        keep = ids != victim
        new = (rng.random(int(rng.integers(1, 9))) < 0.5).astype(int)
        base = _unit_count(bits, ids, rule, m, 7)
        for b2, i2 in ((bits[keep], ids[keep]),
                       (np.concatenate([bits[keep], new]),
                        np.concatenate([ids[keep], np.full(new.size, 99)]))):
            moved.append(abs(_unit_count(b2, i2, rule, m, 7) - base))
    assert max(moved) == 1 and min(moved) == 0


@pytest.mark.parametrize("rule", ["any", "mean"])
def test_the_counts_are_the_mechanisms_on_one_bit_per_unit(rule):
    rng = np.random.default_rng(6)
    ids = rng.integers(0, 1500, 2000)
    bits = rng.integers(0, 2, 2000)
    gen = np.random.default_rng(3)
    unit = U.unit_bits(bits, ids, 2, rule).collapse_bits(bits.astype(bool), gen)
    assert unit.size == np.unique(ids).size
    want = binomial_noise_mechanism(unit, epsilon=1.0, delta=1e-3, rng=gen)
    got = binomial_noise_mechanism(bits, epsilon=1.0, delta=1e-3, rng=3, privacy_unit=ids,
                                   max_rows=2, per_unit=rule)
    assert (got.output, got.n) == (want.output, want.n)
    p = rng.permutation(2000)
    again = binomial_noise_mechanism(bits[p], epsilon=1.0, delta=1e-3, rng=3,
                                     privacy_unit=ids[p], max_rows=2, per_unit=rule)
    assert again.output == got.output
    s1 = sample_and_threshold(bits, epsilon=1.0, delta=1e-3, rng=4, privacy_unit=ids,
                              max_rows=2, per_unit=rule, neighbouring="add-remove")
    s2 = sample_and_threshold(bits[p], epsilon=1.0, delta=1e-3, rng=4, privacy_unit=ids[p],
                              max_rows=2, per_unit=rule, neighbouring="add-remove")
    assert s1.output == s2.output and s1.n is None


def test_a_mean_rounding_is_unbiased():
    """Units whose kept bits average 1/3: about a third of them count (the
    tolerance is five binomial standard deviations)."""
    ids = np.repeat(np.arange(3000), 3)
    bits = np.tile([1, 0, 0], 3000)
    units = U.unit_bits(bits, ids, 3, "mean")
    k = int(np.count_nonzero(units.collapse_bits(bits.astype(bool),
                                                 np.random.default_rng(0))))
    assert abs(k - 1000) <= 5 * math.sqrt(3000 * (1 / 3) * (2 / 3))


@pytest.mark.parametrize("f", [binomial_noise_mechanism, sample_and_threshold])
@pytest.mark.parametrize("kwargs,error,name", [
    (dict(privacy_unit=[1, 2, 3, 4.5], max_rows=2), TypeError, "privacy_unit"),
    (dict(privacy_unit=[1, 2], max_rows=2), ValueError, "privacy_unit"),
    (dict(privacy_unit=[1, 2, 2, 3], max_rows=0), ValueError, "max_rows"),
    (dict(privacy_unit=[1, 2, 2, 3]), TypeError, "max_rows"),
    (dict(privacy_unit=[1, 2, 2, 3], max_rows=2, per_unit="sum"), ValueError, "per_unit"),
    (dict(per_unit="any"), ValueError, "per_unit"),
    (dict(max_rows=3), ValueError, "max_rows"),
])
def test_bad_unit_arguments_of_the_counts(f, kwargs, error, name):
    with pytest.raises(error, match=name):
        f(np.array([1, 0, 1, 1]), epsilon=1.0, delta=0.5, rng=0, **kwargs)


def test_the_record_says_the_neighbours_differ_in_a_unit():
    import dpsum
    X = np.random.default_rng(3).uniform(0, 1, size=(40, 2))
    ids = np.repeat(np.arange(20), 2)
    rows = dpsum.elliptical_gaussian_mechanism(X, epsilon=1, delta=1e-6, lower=0, upper=1,
                                               rng=0)
    assert rows.privacy_unit is None and "privacy_unit" not in rows.to_dict()["guarantee"]
    for rel in (dpsum.elliptical_gaussian_mechanism(X, epsilon=1, delta=1e-6, lower=0,
                                                    upper=1, rng=0, privacy_unit=ids,
                                                    max_rows=2, per_unit="mean"),
                dpsum.private_mean(X, lower=0, upper=1, epsilon=1, delta=1e-6, rng=0,
                                   privacy_unit=ids, max_rows=2, per_unit="mean")):
        assert rel.privacy_unit == "a privacy unit: at most 2 rows each, combined by their mean"
        assert rel.to_dict()["guarantee"]["privacy_unit"] == rel.privacy_unit
        assert "neighbours differ in a privacy unit" in rel.summary()
        assert rel.n in (None, 20)
