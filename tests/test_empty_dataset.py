"""Under add-remove the empty dataset is data like any other.

The empty dataset and a one-row dataset are add-remove neighbours, so an
exception on the first and a release on the second is an output that
depends on the data. Every function that takes rows under add-remove
releases noise on no rows, with the same record shape as on one row; under
replace-one (the number of rows is public) the empty dataset is refused with
a message that says why.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpsum
from dpsum import pipeline as P

D = 3
EMPTY = np.empty((0, D))
ONE = np.full((1, D), 0.25)


def _frames():
    cols = list("abc")
    return [(EMPTY, ONE), (pd.DataFrame(EMPTY, columns=cols), pd.DataFrame(ONE, columns=cols))]


def _shape(result):
    """What a record looks like from outside: its fields and their shapes."""
    if hasattr(result, "to_dict"):
        return {k: np.shape(v) for k, v in result.to_dict().items()}
    if hasattr(result, "__dataclass_fields__"):
        return {k: np.shape(getattr(result, k)) for k in result.__dataclass_fields__}
    return np.shape(result)


def _same_shape(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for empty, one in _frames():
            a, b = call(empty), call(one)
            assert _shape(a) == _shape(b)
            out = getattr(a, "estimate", getattr(a, "clip_radius", a))
            assert np.all(np.isfinite(np.asarray(out, dtype=float)))


@pytest.mark.parametrize("statistic", ["mean", "sum"])
@pytest.mark.parametrize("scaling", ["adaptive", "scaled", "isotropic"])
@pytest.mark.parametrize("secure", [False, True])
def test_private_mean_and_sum_release_on_no_rows(statistic, scaling, secure):
    f = P.private_mean if statistic == "mean" else P.private_sum
    _same_shape(lambda X: f(X, lower=-1.0, upper=1.0, epsilon=1.0, delta=1e-6,
                            neighbouring="add-remove", scaling=scaling, secure=secure, rng=0))


def test_quantile_steps_release_on_no_rows():
    kw = dict(neighbouring="add-remove", rng=0)
    _same_shape(lambda X: P.private_norm_quantile(X, 0.5, epsilon=1.0, lower=0.1, upper=10.0,
                                                  **kw))
    _same_shape(lambda X: P.private_center(X, epsilon=1.0, lower=-1.0, upper=1.0, **kw))
    _same_shape(lambda X: P.private_scales(X, np.zeros(D), epsilon=1.0, min_scale=0.1,
                                           max_scale=10.0, **kw))
    _same_shape(lambda X: P.exponential_quantile(np.asarray(X), 0.5, epsilon=1.0, lower=0.0,
                                                 upper=1.0, **kw))
    _same_shape(lambda X: P.exponential_quantile(np.asarray(X)[:, 0], 0.5, epsilon=1.0,
                                                 lower=0.0, upper=1.0, **kw))
    edges, p = P.norm_quantile_law(EMPTY, 0.5, epsilon=1.0, lower=0.1, upper=10.0,
                                   neighbouring="add-remove")
    assert edges.tolist() == [0.1, 10.0] and p.tolist() == [1.0]


def test_adaptive_clip_update_with_public_rows_releases_on_an_empty_batch():
    # a Poisson batch of DP-SGD is empty with probability (1 - q)^n
    _same_shape(lambda X: P.adaptive_clip_update(X, 1.0, target_quantile=0.5,
                                                 learning_rate=0.2, count_noise=1.0,
                                                 rows=10.0, rng=0))
    # without rows the denominator is the (public) row count: none is refused
    with pytest.raises(ValueError, match="X must not be empty"):
        P.adaptive_clip_update(EMPTY, 1.0, target_quantile=0.5, learning_rate=0.2,
                               count_noise=1.0, rng=0)


@pytest.mark.parametrize("mechanism", ["clipped", "gaussian data"])
def test_vector_mechanisms_release_on_an_empty_dataframe(mechanism):
    def call(X):
        if mechanism == "clipped":
            return dpsum.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0,
                                                    neighbouring="add-remove", rng=0)
        return dpsum.gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[1.0] * D,
                                             center=0.0, clip_probability=0.01,
                                             neighbouring="add-remove", rng=0)
    _same_shape(call)
    # the same draw on an empty DataFrame and an empty array: one path
    a, b = call(EMPTY), call(pd.DataFrame(EMPTY, columns=list("abc")))
    assert np.array_equal(a.estimate, b.estimate) and b.columns == ("a", "b", "c")


def test_replace_one_refuses_no_rows_and_says_why():
    msg = "at least one row under replace-one"
    for X in (EMPTY, pd.DataFrame(EMPTY, columns=list("abc"))):
        with pytest.raises(ValueError, match=msg):
            P.private_mean(X, lower=-1.0, upper=1.0, epsilon=1.0, delta=1e-6, rng=0)
        with pytest.raises(ValueError, match=msg):
            dpsum.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0, rng=0)
    with pytest.raises(ValueError, match=msg):
        P.private_center(EMPTY, epsilon=1.0, lower=-1.0, upper=1.0, rng=0)
    with pytest.raises(ValueError, match=msg):
        P.private_scales(EMPTY, np.zeros(D), epsilon=1.0, min_scale=0.1, max_scale=10.0,
                         rng=0)
    with pytest.raises(ValueError, match=msg):
        P.private_norm_quantile(EMPTY, 0.5, epsilon=1.0, lower=0.1, upper=10.0, rng=0)
    with pytest.raises(ValueError, match="values must not be empty"):
        P.exponential_quantile(np.array([]), 0.5, epsilon=1.0, lower=0.0, upper=1.0, rng=0)
    # no columns is never a dataset
    with pytest.raises(ValueError, match="X must be 2-dimensional with at least one column"):
        P.private_mean(np.empty((0, 0)), lower=-1.0, upper=1.0, epsilon=1.0, delta=1e-6,
                       neighbouring="add-remove", rng=0)
