"""private_mean / private_sum on dask: the same bits as on the numpy array.

Every step of the pipeline that reads the data is a pass (exact integer sums,
or per-row values the step sorts), so the release is a function of the rows'
multiset and the rng alone: the same floats on numpy and on dask, whatever
the chunking.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from dpsum.data import as_data  # noqa: E402
from dpsum.engines.dask import run_pass  # noqa: E402
from dpsum.pipeline import private_mean, private_sum  # noqa: E402
from dpsum.data import RowValues  # noqa: E402
from dpsum.pipeline.passes import Fold  # noqa: E402
from dpsum.privacy import Neighbouring  # noqa: E402
from dpsum.release.accumulator import deviation_accumulator  # noqa: E402
from dpsum.pipeline.quantiles import center_values  # noqa: E402

_FIELDS = ("estimate", "count", "center", "scales", "scaling", "clip_norm", "noise_std",
           "strategy", "clip_count", "outside_count", "grid_unit", "unprojected", "budget")


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(a, b)
    return a == b


def _assert_same(r, s) -> None:
    for f in _FIELDS:
        assert _same(getattr(r, f), getattr(s, f)), f


def _quiet(f, X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(X, rng=11, **kw)


_G = np.random.default_rng(2024)
_COORD = _G.normal(3.0, [1.0, 10.0, 0.5], size=(4000, 3))
_VECTOR = _G.normal(0.0, [1.0] * 10 + [20.0] * 10, size=(300, 20))
_BOX = _G.normal(0.0, 1.0, size=(40, 30))
_SKEW = _G.lognormal(0.0, 3.0, size=(20_000, 2))

_CASES = {
    "coordinate": (_COORD, dict(lower=-1000, upper=1000, rho=0.5), "coordinate center"),
    "vector": (_VECTOR, dict(lower=-100, upper=100, rho=0.5), "vector center"),
    "box": (_BOX, dict(lower=-10, upper=10, rho=0.01), "box"),
    "bias check": (_SKEW, dict(lower=0, upper=1e4, rho=0.5), "box (bias check)"),
}


def _settings() -> list:
    out = []
    for case in sorted(_CASES):
        for neighbouring in ("replace", "add-remove"):
            for secure in (False, True):
                for f in (private_mean, private_sum):
                    # the 20,000-row bias-check case once per relation (float path, mean)
                    if case != "bias check" or (not secure and f is private_mean):
                        out.append(pytest.param(case, neighbouring, secure, f,
                                                id=f"{case}-{neighbouring}-{secure}-"
                                                   f"{f.__name__}"))
    return out


@pytest.mark.parametrize("case, neighbouring, secure, f", _settings())
def test_dask_gives_the_numpy_release_bit_for_bit(case, neighbouring, secure, f):
    X, kw, strategy = _CASES[case]
    kw = dict(kw, neighbouring=neighbouring, secure=secure)
    r = _quiet(f, X, **kw)
    assert r.strategy.startswith(strategy)
    for chunks in ((X.shape[0] // 3 + 1, -1), (97, 1)):
        _assert_same(r, _quiet(f, da.from_array(X, chunks=chunks), **kw))


@pytest.mark.parametrize("neighbouring", ["replace", "add-remove"])
def test_unknown_chunk_sizes(neighbouring):
    X, kw, _ = _CASES["coordinate"]
    Y = da.from_array(X, chunks=(700, -1))
    Y = Y[Y[:, 0] > -np.inf]                  # a boolean mask: unknown chunk sizes
    assert np.isnan(Y.shape[0])
    r = _quiet(private_mean, X, neighbouring=neighbouring, **kw)
    _assert_same(r, _quiet(private_mean, Y, neighbouring=neighbouring, **kw))


def test_dask_dataframe_keeps_labels_and_bits():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, kw, _ = _CASES["coordinate"]
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    r = _quiet(private_mean, frame, **kw)
    s = _quiet(private_mean, dd.from_pandas(frame, npartitions=4), **kw)
    assert s.columns == ("a", "b", "c")
    _assert_same(r, s)


def test_dask_dataframe_refuses_a_text_column_naming_it():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1.0, 2.0], "name": ["x", "y"]})
    with pytest.raises(TypeError, match="column 'name'"):
        as_data(dd.from_pandas(frame, npartitions=1))


def test_nan_in_a_chunk_is_refused_without_values():
    X = _COORD.copy()
    X[2500, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN or infinite values") as info:
        _quiet(private_mean, da.from_array(X, chunks=(1000, -1)), lower=-1000, upper=1000,
               rho=0.5)
    assert "nan" not in str(info.value).replace("NaN", "")


def test_passes_do_not_depend_on_the_row_order_or_split():
    X = _COORD[:1000]
    perm = np.random.default_rng(5).permutation(X.shape[0])
    lo, hi = np.full(3, -1000.0), np.full(3, 1000.0)
    s = Fold(deviation_accumulator(2.0, np.array([1.0, 0.1, 2.0]), np.array([3.0, 3.0, 3.0]),
                                   multiplier=1.0, neighbouring=Neighbouring.REPLACE,
                                   secure=False, lower=lo, upper=hi))
    whole = run_pass(s, as_data(X))
    split = run_pass(s, as_data(da.from_array(X[perm], chunks=(123, -1))))
    assert np.array_equal(whole.sum_before_noise(), split.sum_before_noise())
    assert (whole.rows, whole.diagnostic_count, whole.rows_outside) == \
        (split.rows, split.diagnostic_count, split.rows_outside)
    assert whole.diagnostic_count > 0
    assert np.array_equal(whole.release(4).estimate, split.release(4).estimate)
    v = RowValues(center_values, (lo, hi))
    a = np.sort(run_pass(v, as_data(X)), axis=0)
    b = np.sort(run_pass(v, as_data(da.from_array(X[perm], chunks=(77, 2)))), axis=0)
    assert np.array_equal(a, b)


def test_column_major_input_gives_the_same_bits():
    X, kw, _ = _CASES["coordinate"]
    _assert_same(_quiet(private_mean, X, **kw), _quiet(private_mean, np.asfortranarray(X), **kw))


def test_the_quantile_functions_run_on_dask_with_the_same_bits():
    from dpsum.pipeline import (norm_quantile_law, private_center, private_norm_quantile,
                                private_scales)
    X = _COORD[:2000]
    Y = da.from_array(X, chunks=(333, 2))
    kw = dict(epsilon=1.0, lower=-1000, upper=1000)
    assert np.array_equal(private_center(X, rng=3, **kw), private_center(Y, rng=3, **kw))
    kw = dict(epsilon=1.0, min_scale=0.01, max_scale=100.0)
    c = np.array([3.0, 3.0, 3.0])
    assert np.array_equal(private_scales(X, c, rng=3, **kw), private_scales(Y, c, rng=3, **kw))
    kw = dict(epsilon=1.0, lower=0.01, upper=1e3, center=c)
    assert private_norm_quantile(X, 0.5, rng=3, **kw) == private_norm_quantile(Y, 0.5, rng=3,
                                                                               **kw)
    for a, b in zip(norm_quantile_law(X, 0.5, **kw), norm_quantile_law(Y, 0.5, **kw)):
        assert np.array_equal(a, b)
