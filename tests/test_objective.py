"""The ``objective`` of the noise's shape: total, relative or weighted squared error.

The weighted scalings are checked against their closed forms and against a
numerical minimiser of the objective on the constraint; the mechanisms and
the pipeline record the objective they used, and the mixed-units table of
the realistic suite shows what the relative objective is for.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import optimize

import dpsum
from _suite import realistic_tables
from dpsum.design import elliptical_scaling, gaussian_data_scaling, whitening_scaling

EPS, DLT = 1.0, 1e-6


def _minimise_on(constraint_scales, weights, widths):
    """Numerically minimise ``sum_j u_j widths_j^2 / b_j^2`` over positive
    ``b`` with ``sum_j (b_j constraint_scales_j)^2 = 1`` (b = exp(v), rescaled)."""
    def objective(v):
        b = np.exp(v - v.max())
        b /= np.linalg.norm(b * constraint_scales)
        return float(np.log(np.sum(weights * widths ** 2 / b ** 2)))

    v0 = np.zeros(widths.size)
    res = optimize.minimize(objective, v0, method="BFGS", options={"gtol": 1e-10})
    b = np.exp(res.x - res.x.max())
    return b / np.linalg.norm(b * constraint_scales), float(np.exp(res.fun))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_elliptical_scaling_is_the_closed_form_and_the_minimum(seed):
    gen = np.random.default_rng(seed)
    widths = gen.lognormal(0.0, 1.5, size=5)
    u = gen.lognormal(0.0, 1.0, size=5)
    b = elliptical_scaling(widths, u)
    # the closed form b_j^2 = sqrt(u_j) Delta_j / sum_i sqrt(u_i) Delta_i, ||b|| = 1
    t = np.sqrt(u) * widths
    np.testing.assert_allclose(b, np.sqrt(t / t.sum()), rtol=1e-13)
    assert abs(np.linalg.norm(b) - 1) < 1e-14
    value = np.sum(u * widths ** 2 / b ** 2)
    np.testing.assert_allclose(value, t.sum() ** 2, rtol=1e-12)
    # a numerical minimiser on the unit sphere finds the same point and value
    b_num, v_num = _minimise_on(np.ones(5), u, widths)
    assert value <= v_num * (1 + 1e-12)
    np.testing.assert_allclose(b_num, b, rtol=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_gaussian_data_scaling_is_the_closed_form_and_the_minimum(seed):
    gen = np.random.default_rng(10 + seed)
    stds = gen.lognormal(0.0, 1.5, size=4)
    u = gen.lognormal(0.0, 1.0, size=4)
    b = gaussian_data_scaling(stds, u)
    # b_j^2 = sqrt(u_j) / (sigma_j sum_i sqrt(u_i) sigma_i), sum_j (b_j sigma_j)^2 = 1
    closed = np.sqrt(np.sqrt(u) / (stds * np.sum(np.sqrt(u) * stds)))
    np.testing.assert_allclose(b, closed, rtol=1e-13)
    assert abs(np.sum((b * stds) ** 2) - 1) < 1e-13
    # the fixed-radius error sum_j u_j / b_j^2 (the widths are 1 here)
    b_num, v_num = _minimise_on(stds, u, np.ones(4))
    assert np.sum(u / b ** 2) <= v_num * (1 + 1e-12)
    np.testing.assert_allclose(b_num, b, rtol=1e-4)


def test_named_objectives_are_their_weights():
    w = np.array([72.0, 1e6, 1.0, 1.0])
    assert np.array_equal(elliptical_scaling(w, "total"), elliptical_scaling(w))
    np.testing.assert_allclose(elliptical_scaling(w, np.ones(4)), elliptical_scaling(w),
                               rtol=1e-14)
    np.testing.assert_allclose(elliptical_scaling(w, "relative"), np.full(4, 0.5), rtol=1e-15)
    np.testing.assert_allclose(elliptical_scaling(w, "relative"),
                               elliptical_scaling(w, w ** -2.0), rtol=1e-13)
    # weights have no scale
    np.testing.assert_allclose(elliptical_scaling(w, [1.0, 2, 3, 4]),
                               elliptical_scaling(w, [1e-9, 2e-9, 3e-9, 4e-9]), rtol=1e-14)
    s = np.array([4.0, 1.0, 1e-3])
    assert np.array_equal(gaussian_data_scaling(s, "total"), gaussian_data_scaling(s))
    np.testing.assert_allclose(gaussian_data_scaling(s, "relative"), whitening_scaling(s),
                               rtol=1e-14)


def test_extreme_ranges_give_finite_scalings():
    w = np.array([1e-300, 1.0, 1e300])
    for obj in ("relative", [1e200, 1.0, 1e-200]):
        b = elliptical_scaling(w, obj)
        assert np.all(np.isfinite(b)) and np.all(b > 0)
        assert abs(np.linalg.norm(b) - 1) < 1e-14
    b = gaussian_data_scaling([1e-150, 1.0, 1e150], "relative")
    assert np.all(np.isfinite(b)) and np.all(b > 0)


@pytest.mark.parametrize("bad, error", [
    ("weighted", ValueError), ([1.0, 2.0], ValueError), ([1.0, -1.0, 1.0], ValueError),
    ([1.0, np.nan, 1.0], ValueError), (True, TypeError), (np.ones((3, 1)), TypeError),
    (3.0, TypeError),
])
def test_bad_objective_is_refused_naming_it(bad, error):
    X = np.random.default_rng(0).uniform(size=(50, 3))
    calls = [
        lambda: dpsum.elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DLT, lower=0, upper=1,
                                                    objective=bad, rng=0),
        lambda: dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DLT, stds=[1.0] * 3,
                                              center=0.5, objective=bad, rng=0),
        lambda: dpsum.private_mean(X, lower=0, upper=1, epsilon=EPS, delta=DLT,
                                   objective=bad, rng=0),
        lambda: elliptical_scaling([1.0, 2.0, 3.0], bad),
    ]
    for call in calls:
        with pytest.raises(error, match="objective"):
            call()


def test_the_pipeline_warns_when_the_weighted_scaling_leaves_the_floats():
    """The weighted scaling is post-processing of the private scales; where it
    is not a vector of positive normal floats (weights spanning more than the
    floats' range) the pipeline says so and clips for the total error."""
    X = np.random.default_rng(0).normal(size=(20_000, 3))
    kw = dict(lower=-8.0, upper=8.0, epsilon=EPS, delta=DLT, scaling="scaled", rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        total = dpsum.private_mean(X, objective="total", **kw)
        fine = dpsum.private_mean(X, objective=[1e-100, 1e100, 1.0], **kw)
    assert not np.array_equal(fine.scaling, total.scaling)
    with pytest.warns(UserWarning, match="total error instead"):
        r = dpsum.private_mean(X, objective=[1e-300, 1e300, 1.0], **kw)
    np.testing.assert_array_equal(r.scaling, total.scaling)


def test_columns_across_hundreds_of_orders_of_magnitude_are_no_error():
    """The clip radius's model drops coordinates whose weight is below the
    smallest normal float relative to the largest: columns of scales 1e-100
    and 1e100 release a finite mean instead of an error that depends on the
    private scales."""
    s = np.array([1e-100, 1e100, 1.0])
    X = np.random.default_rng(1).normal(size=(20_000, 3)) * s
    for objective in ("total", "relative", [1e-50, 1e50, 1.0]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = dpsum.private_mean(X, lower=-10 * s, upper=10 * s, epsilon=EPS, delta=DLT,
                                   scaling="scaled", objective=objective, rng=0)
        assert r.strategy == "coordinate center, scaled"
        assert np.all(np.isfinite(r.estimate)) and np.all(np.abs(r.estimate) <= 10 * s)


def test_the_default_is_relative_for_a_dataframe_and_total_for_an_array():
    pd = pytest.importorskip("pandas")
    gen = np.random.default_rng(1)
    X = np.c_[gen.uniform(18, 90, 400), gen.uniform(0, 1e6, 400), gen.uniform(0, 1, 400)]
    lo, hi = np.array([18.0, 0, 0]), np.array([90.0, 1e6, 1])
    frame = pd.DataFrame(X, columns=["age", "income", "ratio"])
    kw = dict(epsilon=EPS, delta=DLT, lower=lo, upper=hi, rng=0, statistic="mean")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arr = dpsum.elliptical_gaussian_mechanism(X, **kw)
        df = dpsum.elliptical_gaussian_mechanism(frame, **kw)
        forced = dpsum.elliptical_gaussian_mechanism(frame, objective="total", **kw)
        weighted = dpsum.elliptical_gaussian_mechanism(X, objective=[1.0, 2.0, 3.0], **kw)
        p_arr = dpsum.private_mean(X, lower=lo, upper=hi, epsilon=EPS, delta=DLT, rng=0)
        p_df = dpsum.private_mean(frame, lower=lo, upper=hi, epsilon=EPS, delta=DLT, rng=0)
    assert (arr.objective, df.objective, forced.objective) == ("total", "relative", "total")
    assert arr.objective_weights is None and df.objective_weights is None
    assert weighted.objective == "weights"
    assert weighted.objective_weights.tolist() == [1.0, 2.0, 3.0]
    assert np.array_equal(forced.noise_std, arr.noise_std)
    # relative: noise sigma sqrt(d) Delta_j (over n), the same share of each width
    widths = hi - lo
    share = df.noise_std / widths
    np.testing.assert_allclose(share, share[0], rtol=1e-12)
    np.testing.assert_allclose(df.noise_std, df.sigma_opt * np.sqrt(3) * widths / 400,
                               rtol=1e-12)
    assert (p_arr.objective, p_df.objective) == ("total", "relative")
    assert df.to_dict()["public"]["objective"] == "relative"


def test_gaussian_data_mechanism_relative_is_whitening():
    X = np.random.default_rng(2).normal([0.0, 0.0], [1e3, 1e-2], size=(1000, 2))
    r = dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DLT, stds=[1e3, 1e-2], center=0,
                                      objective="relative", rng=0)
    assert r.objective == "relative"
    ratio = r.noise_std / np.array([1e3, 1e-2])
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    iso = dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DLT, stds=[1e3, 1e-2], center=0,
                                        objective="relative", scaling="isotropic", rng=0)
    assert np.array_equal(iso.scaling, np.ones(2))


def test_the_accumulator_takes_the_objective_and_merges_to_the_same_bits():
    gen = np.random.default_rng(3)
    X = np.c_[gen.uniform(0, 1, 300), gen.uniform(0, 1e4, 300)]
    acc = dpsum.release.elliptical_gaussian_accumulator([0.0, 0.0], [1.0, 1e4], epsilon=EPS,
                                                        delta=DLT, objective="relative")
    r = acc.update(X[:100]).merge(acc.update(X[100:])).release(rng=4)
    m = dpsum.elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DLT, lower=[0.0, 0.0],
                                            upper=[1.0, 1e4], objective="relative", rng=4,
                                            diagnostics=False)
    assert r.objective == m.objective == "relative"
    assert np.array_equal(r.estimate, m.estimate)
    s = dpsum.elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DLT, lower=[0.0, 0.0],
                                            upper=[1.0, 1e4], objective="relative", rng=4,
                                            diagnostics=False, secure=True)
    assert s.objective == "relative" and np.allclose(s.scaling, 2 ** -0.5)


def test_pipeline_box_path_under_the_relative_objective_shares_the_widths():
    gen = np.random.default_rng(4)
    X = np.c_[gen.uniform(0, 1, 40), gen.uniform(0, 1e4, 40), gen.uniform(18, 90, 40)]
    lo, hi = np.array([0.0, 0, 18]), np.array([1.0, 1e4, 90])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = dpsum.private_mean(X, lower=lo, upper=hi, epsilon=0.1, delta=DLT, rng=0,
                               objective="relative")
    assert r.strategy == "box" and r.objective == "relative"
    share = r.noise_std / (hi - lo)
    np.testing.assert_allclose(share, share[0], rtol=1e-9)


# ---------------------------------------------------------------------------
# mixed units: the customer table of the realistic suite
# ---------------------------------------------------------------------------
RUNS = 10


@pytest.mark.parametrize("name, box", [("customer", "tight"), ("customer", "loose"),
                                       ("mixed-scales", "tight")])
def test_relative_objective_fixes_the_worst_column_of_mixed_units(name, box):
    """Ages, incomes and ratios (and columns of scales 1e-5 ... 1e5): under
    "total" the widest columns take the budget and the worst column's
    relative RMSE is above 1 (n = 10^4); under "relative" it is a few
    percent or less, for the pipeline and the box alike. The worst column's relative RMSE over RUNS runs has a
    relative standard error of about 1/sqrt(2 RUNS) (< 0.25); the factor 5
    asked for is many standard errors below the factor measured (60 or more)."""
    suite = realistic_tables()
    t = suite.TABLES[name]
    lo, hi = t.box(box)
    worst = {}
    for objective in ("total", "relative"):
        res = suite.run_setting(lambda g: t.draw(g, 10_000), lo, hi, RUNS,
                                [suite.SEED, list(suite.TABLES).index(name), 10_000,
                                 box == "loose"], objective=objective)
        worst[objective] = res["worst_col"]
    assert worst["relative"]["pipeline"] < worst["total"]["pipeline"] / 5
    assert worst["relative"]["pipeline"] < 0.1
    if box == "tight":
        assert worst["relative"]["box"] < worst["total"]["box"] / 5
        assert worst["relative"]["box"] < 0.5
