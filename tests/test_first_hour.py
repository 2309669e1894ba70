"""The engineer's first hour (issue 27): the nine traps of a new user, each with
the behaviour that replaces it. Data: rows with unknown scales (0.01 to 100)
and means (about +-5), as the issue's user had."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import dpsum
from dpsum.release.records import PublicInputWarning

ROOT = Path(__file__).resolve().parents[1]
N, D = 20_000, 20
EPS, DELTA = 1.0, 1e-6


def _data(n=N, d=D, seed=0):
    gen = np.random.default_rng(seed)
    scales = np.geomspace(0.01, 100.0, d)
    means = gen.uniform(-5.0, 5.0, d)
    return gen.normal(means, scales, size=(n, d)), means, scales


def _coverage(intervals, value):
    return float(np.mean(intervals.covers(value)))


# 1. no silent centre, one box convention ---------------------------------
def test_model_based_mechanism_requires_its_centre_and_warns_on_a_wrong_one():
    X, means, scales = _data()
    with pytest.raises(TypeError, match="center"):
        dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=scales, rng=1)
    with pytest.warns(PublicInputWarning, match="center or stds"):
        wrong = dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=scales,
                                              center=0, statistic="mean", diagnostics=True,
                                              rng=1)
    assert wrong.notes and _coverage(wrong.confidence_intervals(), X.mean(0)) < 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", PublicInputWarning)
        right = dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=scales,
                                              center=means, statistic="mean",
                                              diagnostics=True, rng=1)
    assert not right.notes
    # 95% intervals of the clipped mean and of the data mean (under the model)
    assert _coverage(right.confidence_intervals(0.05), X.mean(0)) >= 0.9
    assert _coverage(right.data_intervals(0.05), X.mean(0)) >= 0.9


def test_one_box_convention_an_off_centre_box_is_not_clamped_at_zero():
    X, means, scales = _data(d=4)
    X = X[:, :2]                                    # scales 0.01 and 0.2
    lower, upper = means[:2] - 5.0, means[:2] + 5.0  # a box around the data, not at 0
    r = dpsum.elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=lower,
                                            upper=upper, statistic="mean", rng=2)
    assert np.all(np.abs(r.estimate - X.mean(0)) < 10 * r.noise_std)
    assert np.array_equal(r.lower, lower) and np.array_equal(r.widths, upper - lower)
    with pytest.raises(TypeError, match="unexpected keyword argument 'widths'"):
        dpsum.elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, widths=[1, 1])
    with pytest.raises(TypeError, match="domain"):
        dpsum.private_mean(X, domain=(-1, 1), epsilon=EPS, delta=DELTA)


# 2. a box that is too small ------------------------------------------------
def test_too_small_box_warns_from_a_private_count():
    X, _, _ = _data()
    with pytest.warns(PublicInputWarning, match="outside the box"):
        r = dpsum.private_mean(X, lower=-1, upper=1, epsilon=EPS, delta=DELTA, rng=1)
    assert r.outside_count is not None and r.outside_count > 0.5 * N
    assert r.budget.diagnostics == pytest.approx(0.02) and r.notes
    # the share is part of the stated guarantee: epsilon covers the counts too
    assert r.guarantee.epsilon <= EPS * (1 + 1e-9)
    good = dpsum.private_mean(X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1)
    assert not good.notes
    assert _coverage(good.data_intervals(0.05), X.mean(0)) >= 0.9


# 3. the right function is easy to find -------------------------------------
def test_readme_routes_to_every_function_of_its_table():
    text = (ROOT / "README.md").read_text()
    assert "Which function" in text
    for name in ("elliptical_gaussian_mechanism", "gaussian_data_mechanism", "private_mean",
                 "private_sum", "secure=True", "data_intervals"):
        assert name in text, name


# 4. intervals say what they cover -------------------------------------------
def test_intervals_and_balls_name_their_target():
    X, means, scales = _data(n=5000, d=5)
    r = dpsum.private_mean(X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=3)
    iv = r.confidence_intervals(0.05)
    assert iv.target == "the mean of the clipped rows" and "clipped rows" in repr(iv)
    lo, hi = iv                                       # still unpacks as a pair
    assert np.all(lo < hi)
    data = r.data_intervals(0.05)
    assert data.target == "the data mean" and "box" in data.assumption
    assert np.all(data.lower <= lo) and np.all(data.upper >= hi)
    ball = r.confidence_ball(0.05)
    assert "clipped rows" in repr(ball)
    c = dpsum.clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=1.0, rng=1)
    assert c.confidence_intervals().target == "the sum of the clipped rows"
    with pytest.raises(ValueError, match="neither a data model nor a box"):
        c.data_intervals()


# 5. too few rows --------------------------------------------------------------
def test_too_few_rows_warn_before_anything_is_spent():
    X, _, _ = _data(n=500, d=50)
    X[0, 0] = np.nan                                   # the pass would fail: the warning is first
    with pytest.warns(PublicInputWarning, match="too few rows"):
        with pytest.raises(ValueError, match="NaN"):
            dpsum.private_mean(X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1)
    X[0, 0] = 0.0
    with pytest.warns(PublicInputWarning, match="too few rows"):
        r = dpsum.private_mean(X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1)
    assert any("too few rows" in note for note in r.notes)


# 6. secure=True on the pipeline -----------------------------------------------
@pytest.mark.parametrize("fn", [dpsum.private_mean, dpsum.private_sum])
def test_pipeline_takes_the_grid_path(fn):
    X, _, _ = _data(n=5000, d=4)
    r = fn(X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=4, secure=True)
    assert r.secure and r.grid_unit is not None and "secure" in repr(r)
    truth = X.mean(0) if fn is dpsum.private_mean else X.sum(0)
    assert np.all(np.abs(r.estimate - truth) < 8 * r.noise_std + r.grid_unit)
    iv = r.confidence_intervals(0.05)
    assert np.all(iv.half_width >= 1.959 * r.noise_std + 0.99 * r.grid_unit)


# 7. readable records, a mean for every vector mechanism --------------------------
def test_records_are_short_summarised_rounded_and_exportable():
    X, means, scales = _data()
    releases = [
        dpsum.private_mean(X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1),
        dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=scales, center=means,
                                      rng=1),
        dpsum.elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-1000,
                                            upper=1000, rng=1),
    ]
    for r in releases:
        text = repr(r)
        assert len(text) < 1000 and "epsilon=1," in text and "0.99999" not in text
        table = r.summary()
        assert "estimate" in table and "noise std" in table and len(table.splitlines()) < 25
        out = json.loads(json.dumps(r.to_dict()))
        assert out["guarantee"]["neighbouring"] == "replace"
        # published rounded, and rounded up: never below the proved epsilon
        assert out["guarantee"]["epsilon"] >= r.epsilon
        assert len(repr(out["guarantee"]["epsilon"])) <= 8
        assert out["accuracy"]["target"] in ("the mean of the clipped rows",
                                             "the sum of the clipped rows",
                                             "the sum of the rows clamped to the box [lower, upper]")
    assert "budget by step" in releases[0].summary()


def test_every_vector_mechanism_releases_a_mean():
    X, means, scales = _data(n=2000, d=3)
    calls = {
        "elliptical": lambda **kw: dpsum.elliptical_gaussian_mechanism(
            X, lower=-500, upper=500, **kw),
        "gaussian data": lambda **kw: dpsum.gaussian_data_mechanism(
            X, stds=scales, center=means, **kw),
        "clipped": lambda **kw: dpsum.clipped_gaussian_mechanism(X, clip_norm=200.0, **kw),
    }
    for name, call in calls.items():
        s = call(epsilon=EPS, delta=DELTA, rng=5)
        m = call(epsilon=EPS, delta=DELTA, rng=5, statistic="mean")
        assert m.statistic == "mean" and m.n == 2000, name
        np.testing.assert_allclose(m.estimate, s.estimate / 2000, rtol=1e-12)
        np.testing.assert_allclose(m.noise_std, s.noise_std / 2000, rtol=1e-12)
        assert m.confidence_intervals().target.startswith("the mean")
    with pytest.raises(ValueError, match="private under add-remove"):
        dpsum.clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=1.0,
                                         neighbouring="add-remove", statistic="mean")


def test_diagnostics_share_keeps_the_guarantee():
    X, means, scales = _data(n=2000, d=3)
    off = dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=scales,
                                        center=means, rng=5, diagnostics=False)
    on = dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=scales,
                                       center=means, rng=5, diagnostics=0.1)
    # Gaussian mechanisms compose exactly: 1/sigma^2 is split, the total is unchanged
    total = (1 / on.sigma_opt ** 2) + (1 / on.clip_count_std ** 2)
    assert total == pytest.approx(1 / off.sigma_opt ** 2, rel=1e-12)
    assert on.diagnostics_share == 0.1 and on.clip_count is not None


# 8. pandas in, pandas out -----------------------------------------------------------
def test_dataframe_keeps_its_labels_and_errors_name_the_column():
    pd = pytest.importorskip("pandas")
    X, means, scales = _data(n=3000, d=3)
    frame = pd.DataFrame(X, columns=["income", "age", "height"])
    r = dpsum.private_mean(frame, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1)
    assert r.columns == ("income", "age", "height")
    table = r.to_pandas()
    assert list(table.index) == ["income", "age", "height"]
    assert {"estimate", "lower", "upper", "noise_std"} <= set(table.columns)
    g = dpsum.gaussian_data_mechanism(frame, epsilon=EPS, delta=DELTA, stds=scales,
                                      center=means, rng=1)
    assert g.columns == r.columns and "income" in g.summary()
    bad = frame.assign(age=frame["age"].astype(str))
    with pytest.raises(TypeError, match="column 'age'") as err:
        dpsum.private_mean(bad, lower=-1, upper=1, epsilon=EPS, delta=DELTA)
    assert not any(ch.isdigit() for ch in str(err.value).replace("64", ""))
    nan = frame.copy()
    nan.iloc[17, 2] = np.nan
    with pytest.raises(ValueError, match="column 'height' contains NaN") as err:
        dpsum.gaussian_data_mechanism(nan, epsilon=EPS, delta=DELTA, stds=scales,
                                      center=means)
    assert "17" not in str(err.value)
    s = dpsum.gaussian_mechanism(pd.Series([1.0, 2.0], index=["a", "b"]), epsilon=EPS,
                                 delta=DELTA, sensitivity=1.0, rng=0)
    assert list(s.to_pandas().index) == ["a", "b"]


# 9. a light import ---------------------------------------------------------------
def test_import_dpsum_loads_no_heavy_module():
    """Which modules load, in a fresh process (the time and memory are figures of
    benchmarks/import_cost.py, not assertions)."""
    code = ("import sys, dpsum; print(','.join(m for m in ('scipy.stats', 'scipy.optimize', "
            "'scipy.interpolate', 'pandas', 'dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""
    math.isfinite(0.0)
