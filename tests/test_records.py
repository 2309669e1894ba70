"""The public record constructors validate their fields (naming the field),
and a record that goes through pickle or deepcopy keeps read-only arrays."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

import dpsum
from dpsum.binary import BinaryRelease
from dpsum.release import BudgetSplit, ConfidenceBall, Intervals, PipelineRelease, Release


def _release() -> Release:
    return dpsum.gaussian_data_mechanism(np.random.default_rng(0).normal(size=(50, 2)),
                                         epsilon=1.0, delta=1e-6, stds=[1.0, 1.0], center=0,
                                         rng=0)


def _pipeline() -> PipelineRelease:
    X = np.random.default_rng(1).normal(size=(400, 2))
    with pytest.warns(dpsum.release.PublicInputWarning):
        return dpsum.private_mean(X, lower=-5, upper=5, epsilon=1.0, delta=1e-6, rng=0)


def _round_trips(obj):
    yield pickle.loads(pickle.dumps(obj))
    yield copy.deepcopy(obj)


def _arrays(obj):
    if isinstance(obj, Intervals):
        return [obj[0], obj[1]]
    return [v for v in (getattr(obj, f.name) for f in dataclasses.fields(obj))
            if isinstance(v, np.ndarray)]


@pytest.mark.parametrize("make", [
    _release, _pipeline,
    lambda: _release().confidence_intervals(0.05),
    lambda: _release().confidence_ball(0.05),
    lambda: dpsum.randomized_response([1, 0, 1, 1], epsilon=1.0, rng=0),
])
def test_pickle_and_deepcopy_keep_read_only_arrays(make):
    obj = make()
    for back in _round_trips(obj):
        assert type(back) is type(obj)
        arrays = _arrays(back)
        assert all(not a.flags.writeable for a in arrays)
        for a, b in zip(arrays, _arrays(obj)):
            assert np.array_equal(a, b)
        if isinstance(obj, Intervals):
            assert (back.target, back.level, back.simultaneous) == \
                (obj.target, obj.level, obj.simultaneous)


def test_a_tampered_pickle_is_validated_like_any_input():
    rel = _release()
    state = {f.name: getattr(rel, f.name) for f in dataclasses.fields(rel)}
    state["epsilon"] = -1.0
    # what an edited pickle would carry: rebuilding goes through the constructor
    reducer, (cls, _fields) = rel.__reduce__()
    with pytest.raises(ValueError, match="epsilon"):
        reducer(cls, state)


@pytest.mark.parametrize("field, value, kind", [
    ("epsilon", -1.0, ValueError), ("epsilon", np.inf, ValueError), ("epsilon", "1", TypeError),
    ("delta", 2.0, ValueError), ("delta", -0.1, ValueError), ("delta", 1.0, ValueError),
    ("noise_std", [np.nan, 1.0], ValueError), ("noise_std", [0.0, 1.0], ValueError),
    ("noise_std", [1.0, 1.0, 1.0], ValueError), ("noise_std", None, TypeError),
    ("estimate", [np.nan, 1.0], ValueError), ("scaling", [1.0], ValueError),
    ("scaling", [-1.0, 1.0], ValueError), ("clip_norm", 0.0, ValueError),
    ("clip_norm", np.nan, ValueError), ("sigma_opt", 0.0, ValueError),
    ("sensitivity", np.inf, ValueError), ("mechanism", "nope", ValueError),
    ("neighbouring", 3, TypeError), ("center", [1.0, np.inf], ValueError),
    ("clip_probability", 1.0, ValueError), ("secure", 1, TypeError),
    ("statistic", "median", ValueError), ("n", 0, ValueError), ("n", 2.5, ValueError),
    ("stds", [1.0, 0.0], ValueError), ("lower", [1.0, 1.0], ValueError),
    ("diagnostics_share", 1.0, ValueError), ("notes", "a note", TypeError),
    ("clip_count_std", -1.0, ValueError), ("grid_exponent", 0.5, ValueError),
])
def test_release_refuses_an_impossible_field_naming_it(field, value, kind):
    rel = _release()
    if field == "lower":     # a box needs both ends; give an upper that is fine
        with pytest.raises(ValueError, match="lower"):
            dataclasses.replace(rel, lower=np.array(value), upper=np.array([0.5, 2.0]))
        return
    with pytest.raises(kind, match=field):
        dataclasses.replace(rel, **{field: value})


def test_release_accepts_the_fields_of_every_mechanism():
    X = np.random.default_rng(2).normal(size=(20, 2))
    for rel in (dpsum.gaussian_mechanism([1.0, 2.0], epsilon=1.0, delta=1e-6, sensitivity=1.0,
                                         rng=0),
                dpsum.laplace_mechanism([1.0, 2.0], epsilon=1.0, sensitivity=1.0, rng=0),
                dpsum.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0,
                                                 secure=True, rng=0),
                dpsum.elliptical_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, lower=-3,
                                                    upper=3, rng=0)):
        back = dataclasses.replace(rel)                   # rebuilt without complaint
        assert np.array_equal(back.estimate, rel.estimate)
        assert pickle.loads(pickle.dumps(rel)).epsilon == rel.epsilon


@pytest.mark.parametrize("field, value", [
    ("count", np.nan), ("clip_norm", -1.0), ("rho", 0.0), ("noise_std", [1.0]),
    ("scaling", [1.0, np.inf]), ("statistic", "median"), ("budget", None),
    ("clip_probability", 0.0), ("grid_unit", [0.0, 1.0]),
])
def test_pipeline_release_refuses_an_impossible_field_naming_it(field, value):
    rel = _pipeline()
    with pytest.raises((ValueError, TypeError), match=field):
        dataclasses.replace(rel, **{field: value})


def test_other_records_refuse_impossible_fields():
    lo, hi = np.zeros(2), np.ones(2)
    with pytest.raises(ValueError, match="lower"):
        Intervals(hi, lo, target="x", level=0.95)
    with pytest.raises(ValueError, match="lower"):
        Intervals([np.nan, 0.0], hi, target="x", level=0.95)
    with pytest.raises(ValueError, match="level"):
        Intervals(lo, hi, target="x", level=1.5)
    with pytest.raises(ValueError, match="radius"):
        ConfidenceBall(center=lo, radius=-1.0, beta=0.05)
    with pytest.raises(ValueError, match="beta"):
        ConfidenceBall(center=lo, radius=1.0, beta=0.0)
    with pytest.raises(ValueError, match="shares"):
        BudgetSplit(count=0.5, center=0.5, radius=0.5, scales=0.0, clip=0.0, mean=0.0)
    with pytest.raises(ValueError, match="count"):
        BudgetSplit(count=-0.5, center=0.5, radius=0.5, scales=0.5, clip=0.0, mean=0.0)
    good = dict(estimate=1.0, output=2, n=4, epsilon=1.0, delta=0.0,
                mechanism="randomized response", probability=0.7, threshold=None)
    BinaryRelease(**good)
    for field, value in [("epsilon", -1.0), ("delta", 2.0), ("n", 0), ("output", -1),
                         ("probability", 1.5), ("estimate", np.nan), ("threshold", np.inf)]:
        with pytest.raises((ValueError, TypeError), match=field):
            BinaryRelease(**{**good, field: value})
