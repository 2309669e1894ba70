"""The release records: read-only, complete, with enum-valued mechanism fields."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import dpsum
from dpsum.binary import BinaryMechanism, BinaryRelease
from dpsum.mechanisms import clipped_gaussian_mechanism, elliptical_gaussian_mechanism, gaussian_data_mechanism, gaussian_mechanism, release_diagnostics
from dpsum.release.records import Calibration, Mechanism, Release

EPS, DELTA = 1.0, 1e-6


def _releases():
    rng = np.random.default_rng(0)
    stds = np.array([2.0, 1.0, 0.5])
    X = rng.normal(0.0, stds, size=(50, 3))
    scaling = np.array([1.0, 2.0, 3.0])
    return X, scaling, {
        "gaussian": gaussian_mechanism(X.sum(axis=0), epsilon=EPS, delta=DELTA,
                                       sensitivity=1.0, rng=1),
        "elliptical": elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA,
                                                    lower=[-2.0, -1.0, -0.5], upper=[2.0, 1.0, 0.5], rng=1),
        "gaussian-data": gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds,
                                                 center=[0.1, 0.2, 0.3], scaling=scaling,
                                                 rng=1, diagnostics=False),
        "clipped": clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=2.0,
                                              rng=1),
    }


def test_release_arrays_are_read_only_copies():
    X, scaling, releases = _releases()
    for name, rel in releases.items():
        for field in ("estimate", "noise_std", "scaling", "center", "widths"):
            value = getattr(rel, field)
            if value is None:
                continue
            assert not value.flags.writeable, (name, field)
            with pytest.raises(ValueError):
                value[...] = 0.0
        with pytest.raises(dataclasses.FrozenInstanceError):
            rel.epsilon = 2.0  # type: ignore[misc]
    # the caller's scaling vector is copied, not kept
    rel = releases["gaussian-data"]
    assert not np.shares_memory(rel.scaling, scaling)
    scaling[0] = 100.0
    assert rel.scaling[0] == 1.0


def test_release_records_the_public_inputs_of_the_guarantee():
    X, scaling, releases = _releases()
    gd = releases["gaussian-data"]
    assert gd.mechanism is Mechanism.GAUSSIAN_DATA
    assert gd.clip_probability == pytest.approx(1 / 50)
    np.testing.assert_array_equal(gd.center, [0.1, 0.2, 0.3])
    assert gd.calibration is Calibration.ANALYTIC
    setup = dpsum.gaussian_data_setup([2.0, 1.0, 0.5], epsilon=gd.epsilon, delta=gd.delta,
                                      center=gd.center, clip_probability=gd.clip_probability,
                                      scaling=gd.scaling, neighbouring=gd.neighbouring)
    assert setup.clip_norm == gd.clip_norm
    # the sum is exact: the release is calibrated to the set-up's values
    assert gd.sensitivity == setup.sensitivity
    np.testing.assert_array_equal(setup.noise_std, gd.noise_std)
    ell = releases["elliptical"]
    np.testing.assert_array_equal(ell.widths, [4.0, 2.0, 1.0])
    assert ell.mechanism is Mechanism.ELLIPTICAL_GAUSSIAN
    assert releases["clipped"].clip_probability is None
    classic = gaussian_mechanism([1.0], epsilon=0.5, delta=DELTA, sensitivity=1.0,
                                 calibration="classic", rng=0)
    assert classic.calibration is Calibration.CLASSIC
    assert classic.mechanism is Mechanism.GAUSSIAN_CLASSIC


def test_mechanism_is_a_string_enum_so_old_comparisons_work():
    _, _, releases = _releases()
    assert releases["clipped"].mechanism == "clipped gaussian"
    assert releases["gaussian"].mechanism == "gaussian (analytic)"
    assert f"{releases['gaussian-data'].mechanism}" == "gaussian data"
    assert str(releases["elliptical"].mechanism) == "elliptical gaussian"
    # a string naming a member is turned into the member; anything else is refused
    rel = Release(estimate=[1.0], noise_std=[1.0], scaling=None, clip_norm=None, epsilon=1.0,
                  delta=1e-6, neighbouring="replace", sigma_opt=1.0, sensitivity=1.0,
                  mechanism="clipped gaussian")
    assert rel.mechanism is Mechanism.CLIPPED_GAUSSIAN
    with pytest.raises(ValueError):
        Release(estimate=[1.0], noise_std=[1.0], scaling=None, clip_norm=None, epsilon=1.0,
                delta=1e-6, neighbouring="replace", sigma_opt=1.0, sensitivity=1.0,
                mechanism="exponential")


def test_diagnostics_come_from_an_explicit_call():
    X, _, releases = _releases()
    X = X * 3.0  # some rows outside the clip ball, some values outside the box
    ell = elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=[-2.0, -1.0, -0.5], upper=[2.0, 1.0, 0.5],
                                        rng=1)
    assert release_diagnostics(X, ell) == {
        "clamped_values": int(np.sum(np.abs(X) > np.array([2.0, 1.0, 0.5])))}
    clipped = clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=2.0, rng=1)
    assert release_diagnostics(X, clipped) == {
        "clipped_rows": int(np.sum(np.linalg.norm(X, axis=1) > 2.0))}
    with pytest.raises(ValueError, match="has no accumulator"):
        release_diagnostics(X, releases["gaussian"])
    with pytest.raises(ValueError, match="columns"):
        release_diagnostics(X[:, :2], clipped)
    with pytest.raises(TypeError, match="release"):
        release_diagnostics(X, {"clip_norm": 1.0})


def test_binary_release_mechanism_is_an_enum_and_picks_its_formulas():
    bits = np.zeros(3000, dtype=bool)
    bits[:700] = True
    rr = dpsum.randomized_response(bits, epsilon=1.0, rng=0)
    st = dpsum.sample_and_threshold(bits, epsilon=1.0, delta=1e-3, rng=0)
    assert rr.mechanism is BinaryMechanism.RANDOMIZED_RESPONSE and rr.mechanism == "randomized response"
    assert st.mechanism is BinaryMechanism.SAMPLE_AND_THRESHOLD
    assert rr.bias(700) == 0.0 and st.bias(700) <= 0.0
    assert rr.variance(700) == pytest.approx(dpsum.binary.randomized_response_variance(3000, 1.0))
    rel = BinaryRelease(estimate=0.0, output=0, n=10, epsilon=1.0, delta=0.0,
                        mechanism="binomial", probability=0.3, threshold=None)
    assert rel.mechanism is BinaryMechanism.BINOMIAL
    assert rel.variance(3) == pytest.approx(10 * 0.3 * 0.7)
    with pytest.raises(ValueError, match="mechanism"):
        BinaryRelease(estimate=0.0, output=0, n=10, epsilon=1.0, delta=0.0,
                      mechanism="laplace", probability=0.3, threshold=None)
