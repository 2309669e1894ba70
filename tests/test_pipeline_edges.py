"""The pipeline at the edges (issue 26, leaks 1 and 6): no exception and no
non-finite output depends on the data, and the replace-one float sums are
charged for their rounding (checked in exact arithmetic).

Every test here failed on the pipeline before the fix (commit 0e7efbf's
dpsum/pipeline/mean.py): N(0, 1) rows raised "median_norm must be finite"
in a box of +-1e200 where rows at its corners succeeded (the box's norm
overflowed), a box of +-1e-290 raised ZeroDivisionError (the norm
underflowed), +-1e301 was not refused before the data, and the declared
sensitivities were 2C and 1 (uncharged) while a replaced pair moves the
computed clipped sum by (1 + 1.1e-13) 2C.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsum.pipeline import private_mean, private_sum
from dpsum.data import as_data
from dpsum.pipeline.mean import _arguments, _Context
from dpsum.privacy.neighbouring import Neighbouring


def _datasets(n: int, d: int, lo: float, hi: float) -> dict[str, np.ndarray]:
    r = np.random.default_rng(0)
    mixed = np.empty((n, d))
    mixed[:, ::2] = hi
    mixed[:, 1::2] = 1e-300
    mixed[::2] *= -1
    return {
        "normal": r.normal(size=(n, d)),
        "corners": np.where(r.random((n, d)) < 0.5, lo, hi),
        "mixed": mixed,
        "constant": np.full((n, d), 0.5 * hi),
    }


def _outcome(fn, X, **kw) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(X, rng=1, **kw)
        except (ValueError, TypeError) as e:
            return f"{type(e).__name__}: {e}"
    values = [np.asarray(v, dtype=float) for v in
              (r.estimate, r.noise_std, r.clip_norm, r.center, r.scaling)]
    assert all(np.all(np.isfinite(v)) for v in values), "non-finite output"
    return "ok"


_BOXES = [(-1e301, 1e301), (-1e300, 1e300), (-1e200, 1e200), (0.0, 1e-300),
          (-1e-290, 1e-290), (-1.0, 1.0)]


_BUDGETS = [{"rho": 0.5}, {"rho": 1e-6}, {"rho": 1e6}, {"epsilon": 1.0, "delta": 1e-6}]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(box=st.sampled_from(_BOXES), d=st.sampled_from([1, 3, 50]),
       n=st.sampled_from([5, 200, 3000]),
       neighbouring=st.sampled_from(["replace", "add-remove"]),
       statistic=st.sampled_from(["mean", "sum"]),
       scaling=st.sampled_from(["adaptive", "scaled", "isotropic"]),
       budget=st.sampled_from(_BUDGETS), secure=st.booleans())
def test_outcome_does_not_depend_on_the_data(box, d, n, neighbouring, statistic, scaling,
                                             budget, secure):
    """The same public call on very different data either raises the same
    error on all of them or returns finite estimates on all of them."""
    lo, hi = box
    fn = private_mean if statistic == "mean" else private_sum
    outcomes = {name: _outcome(fn, X, lower=lo, upper=hi, neighbouring=neighbouring,
                               scaling=scaling, secure=secure, **budget)
                for name, X in _datasets(n, d, lo, hi).items()}
    assert len(set(outcomes.values())) == 1, outcomes


@pytest.mark.parametrize("neighbouring", ["replace", "add-remove"])
def test_extreme_box_found_by_review(neighbouring):
    """The reported case: N(0, 1) rows raised 'median_norm must be finite'
    where rows at the box's corners succeeded; now one public answer."""
    lo, hi = -1e200, 1e200
    data = _datasets(200, 3, lo, hi)
    outcomes = {name: _outcome(private_mean, X, lower=lo, upper=hi, rho=0.5,
                               neighbouring=neighbouring) for name, X in data.items()}
    assert set(outcomes.values()) == {"ok"}, outcomes


def test_huge_box_refused_before_data_naming_lower_upper():
    X = np.zeros((1000, 3))
    with pytest.raises(ValueError, match="lower and upper") as info:
        private_mean(X, lower=-1e301, upper=1e301, rho=0.5, rng=1)
    assert "0.0" not in str(info.value)
    # the same refusal for data that would have worked before
    with pytest.raises(ValueError, match="lower and upper"):
        private_mean(np.full((1000, 3), 1e300), lower=-1e301, upper=1e301, rho=0.5, rng=1)
    # fewer rows: the worst-case sum fits, and the call runs on any data
    for X in (np.zeros((10, 3)), np.full((10, 3), 1e301)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = private_mean(X, lower=-1e301, upper=1e301, rho=0.5, rng=1)
        assert np.all(np.isfinite(r.estimate)) and np.all(np.isfinite(r.noise_std))


class _ZeroNoise(np.random.Generator):
    """A generator whose Gaussian draws are 0: the pre-noise statistic."""

    def __init__(self):
        super().__init__(np.random.PCG64(0))

    def normal(self, loc=0.0, scale=1.0, size=None):
        return np.zeros(size if size is not None else ())


def _last_step_statistic(X: np.ndarray, C: float) -> np.ndarray:
    n, d = X.shape
    lo, hi = np.full(d, -4.0), np.full(d, 4.0)
    args = _arguments(None, None, 1.0, Neighbouring.REPLACE, None, "adaptive", None, 0.1,
                      False, False)
    ctx = _Context(args, as_data(X), lo, hi, 0, "mean")
    ctx.gen = _ZeroNoise()
    noisy, _, _, _ = ctx.last_step(C, np.ones(d), np.zeros(d), 1.0)
    return noisy


def test_last_step_moves_by_at_most_2C_exactly_on_a_worst_case_pair():
    """Worst-case replaced pair through the pipeline's last step: rows whose
    float sum would round (one value 2/3 plus multiples of 2^-52), the
    replaced row clipped in the opposite direction. The sum is exact: its
    exact statistic moves by at most 2C, with no rounding charge."""
    from dpsum.kernels.grid import EXACT_CHARGE, accumulate_grid, make_grid_plan
    n, C = 2048, 1.0
    X = np.full((n, 1), 2.0 / 3.0) + (np.arange(n) % 5)[:, None] * 2.0 ** -52
    X2 = X.copy()
    X[0, 0], X2[0, 0] = C, -C
    plan, K, k = make_grid_plan(C, np.ones(1), None, 1, EXACT_CHARGE)
    S, S2 = accumulate_grid(X, plan, k)[0], accumulate_grid(X2, plan, k)[0]
    assert abs(Fraction(int(S[0]) - int(S2[0])) * Fraction(2) ** K) <= 2 * Fraction(C)
    # the last step releases that exact statistic (rounded once, with no noise)
    T = _last_step_statistic(X, C)
    assert T[0] == float(Fraction(int(S[0])) * Fraction(2) ** K)


def test_pipeline_noise_is_calibrated_to_2C_exactly():
    """The released noise of a replace-one run is calibrated to the exact
    sum's sensitivity: noise_std = s_mean 2C / b / n."""
    X = np.random.default_rng(3).normal(size=(4000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = private_mean(X, lower=-50, upper=50, rho=1.0, rng=2, diagnostics=False)
    s_mean = [s for s in r.steps if s.name == "mean"][0].noise_multiplier
    expected = s_mean * 2 * r.clip_norm / r.scaling / 4000
    np.testing.assert_allclose(r.noise_std, expected, rtol=1e-13)


def test_box_release_noise_has_no_charge():
    """The box release (replace-one) sums exactly: its noise is s_mean / b / n."""
    n, d = 50, 3
    X = np.random.default_rng(0).normal(size=(n, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = private_mean(X, lower=-10, upper=10, rho=0.5, rng=1, diagnostics=False)
    assert r.strategy == "box"
    s_mean = [s for s in r.steps if s.name == "mean"][0].noise_multiplier
    expected = s_mean * 1.0 / r.scaling / n
    np.testing.assert_allclose(r.noise_std, expected, rtol=1e-13)


def test_vector_center_moves_are_noised_at_2_c_k(monkeypatch):
    """Each whole-vector centre move (replace-one, exact clipped sum at c_k) is
    noised at s_move 2 c_k."""
    import dpsum.pipeline.mean as M
    radii: list[float] = []
    stds: list[float] = []
    real_sum = M.deviation_accumulator

    def spy_sum(C, b, center, **kw):           # each exact clipped sum, as released
        acc = real_sum(C, b, center, **kw)
        radii.append(float(C))
        public = acc.public_parameters()
        stds.append(public["sigma_opt"] * public["sensitivity"])
        return acc

    monkeypatch.setattr(M, "deviation_accumulator", spy_sum)
    n, d = 200, 3
    X = np.random.default_rng(0).normal(size=(n, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = private_mean(X, lower=-10, upper=10, rho=0.5, rng=1, diagnostics=False)
    assert r.strategy.startswith("vector center")
    moves = [s for s in r.steps if s.name == "center" and s.noise_multiplier is not None]
    assert moves
    for k, step in enumerate(moves):
        expected = step.noise_multiplier * 2.0 * radii[k]
        assert any(abs(s - expected) <= 1e-13 * expected for s in stds), (k, expected)


def test_private_sum_warns_in_its_own_name():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.warns(UserWarning) as caught:
        private_sum(X, lower=-10, upper=10, rho=0.5, rng=1, diagnostics=False)
    messages = [str(w.message) for w in caught]
    assert messages and all(m.startswith("private_sum:") for m in messages), messages


class _Unreadable:
    """Ids that fail the test if anything reads them."""

    def __len__(self) -> int:
        raise AssertionError("the unit ids were read")

    def __array__(self, *args, **kwargs):
        raise AssertionError("the unit ids were read")


@pytest.mark.parametrize("bad", [{"scaling": "wide"}, {"regularization": 2e6},
                                 {"clip_probability": 1.5}, {"diagnostics": "yes"}])
def test_units_are_read_after_every_public_argument(bad):
    X = np.zeros((6, 2))
    with pytest.raises((TypeError, ValueError)) as err:
        private_mean(X, lower=-1, upper=1, epsilon=1.0, delta=1e-6, rng=0,
                     privacy_unit=_Unreadable(), max_rows=2, **bad)
    assert next(iter(bad)) in str(err.value)


def test_a_full_session_refuses_before_the_unit_ids_are_read():
    from dpsum import Session
    sess = Session(rho=0.1)
    with pytest.raises(ValueError, match="session refuses"):
        private_mean(np.zeros((6, 2)), lower=-1, upper=1, rho=0.5, rng=0, session=sess,
                     privacy_unit=_Unreadable(), max_rows=2)


def test_a_huge_regularization_is_refused_by_name():
    X = 1.4 * np.random.default_rng(6).normal(size=(60, 2))
    with pytest.raises(ValueError, match="regularization must be at most"):
        private_mean(X, lower=-10, upper=10, epsilon=1, delta=1e-6, rng=1,
                     regularization=1e308)
