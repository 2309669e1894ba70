"""Gaussian mechanism calibration (dpsum.calibration) against a 50-digit mpmath reference.

The reference noise levels (the exact roots of the source's equation (2)) are
stored in ``tests/data/calibration_sigma_reference.csv``; regenerate them with

    .venv/bin/python tests/test_calibration.py --regenerate

Everything else (the privacy profile at given points) is cheap in mpmath and is
computed here.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsum.privacy.calibration import analytic_sigma, classic_sigma, gaussian_delta, gaussian_epsilon, MAX_CALIBRATION_EPSILON

DATA = Path(__file__).parent / "data" / "calibration_sigma_reference.csv"
DIGITS = 50

# The range over which the accuracy promises hold (DESIGN.md, issue 3).
EPS_GRID = np.logspace(-3, math.log10(50.0), 15)
DELTA_GRID = np.array(
    [1e-300, 1e-250, 1e-200, 1e-150, 1e-100, 1e-60, 1e-30, 1e-15, 1e-10,
     1e-6, 1e-3, 1e-2, 0.1, 0.3, 0.5]
)


# ---------------------------------------------------------------------------
# mpmath reference
# ---------------------------------------------------------------------------
def mp_delta(sigma, epsilon, sensitivity=1.0, dps=DIGITS):
    """Privacy profile (left side of equation (2)) in mpmath at ``dps`` digits.

    The arguments are taken as the exact binary values of the floats passed.
    At 50 digits the subtraction below loses at most ~10 digits over the
    tested range (delta >= 1e-300 and Phi(a) / delta <= 1e9 there).
    """
    with mp.workdps(dps):
        s, e, d = mp.mpf(sigma), mp.mpf(epsilon), mp.mpf(sensitivity)
        a = d / (2 * s) - e * s / d
        b = -d / (2 * s) - e * s / d
        return mp.ncdf(a) - mp.exp(e) * mp.ncdf(b)


def mp_sigma_root(epsilon, delta, start):
    """The exact smallest sigma with mp_delta(sigma) <= delta (sensitivity 1)."""
    with mp.workdps(DIGITS + 10):
        target = mp.log(mp.mpf(delta))

        def f(log_s):
            return mp.log(mp_delta(mp.exp(log_s), epsilon, dps=DIGITS + 10)) - target

        root = mp.findroot(f, mp.log(mp.mpf(start)), tol=mp.mpf(10) ** (-2 * DIGITS))
        return mp.exp(root)


def regenerate():  # pragma: no cover - run by hand
    DATA.parent.mkdir(exist_ok=True)
    rows = []
    for eps in EPS_GRID:
        for dlt in DELTA_GRID:
            start = analytic_sigma(float(eps), float(dlt))
            root = mp_sigma_root(float(eps), float(dlt), start)
            # the root really is one: delta crosses the target there
            with mp.workdps(DIGITS):
                assert mp_delta(root * (1 - mp.mpf(10) ** -30), eps) > dlt
                assert mp_delta(root * (1 + mp.mpf(10) ** -30), eps) < dlt
            rows.append((repr(float(eps)), repr(float(dlt)), mp.nstr(root, 30)))
    with DATA.open("w", newline="") as fh:
        fh.write("# epsilon, delta (exact binary values of these floats) and the exact\n")
        fh.write("# smallest sigma_opt (sensitivity 1) solving the source's equation (2),\n")
        fh.write("# 30 significant digits, from mpmath at 60 digits. Regenerate with\n")
        fh.write("#   .venv/bin/python tests/test_calibration.py --regenerate\n")
        writer = csv.writer(fh)
        writer.writerow(["epsilon", "delta", "sigma_opt"])
        writer.writerows(rows)


def load_reference():
    with DATA.open() as fh:
        lines = [line for line in fh if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    return [(float(r["epsilon"]), float(r["delta"]), mp.mpf(r["sigma_opt"])) for r in rows]


# ---------------------------------------------------------------------------
# classic calibration (Theorem 2)
# ---------------------------------------------------------------------------
def test_classic_formula():
    assert classic_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-15)
    assert classic_sigma(0.5, 1e-5, 3.0) == pytest.approx(3 * classic_sigma(0.5, 1e-5), rel=1e-15)
    out = classic_sigma(np.array([0.1, 0.5]), 1e-6, sensitivity=[[1.0], [2.0]])
    assert out.shape == (2, 2)
    np.testing.assert_allclose(out[1], 2 * out[0], rtol=1e-15)
    assert isinstance(classic_sigma(0.5, 1e-5), float)


@pytest.mark.parametrize("eps", [1.0, 2.0, 10.0, [0.5, 1.0]])
def test_classic_refuses_epsilon_at_least_one(eps):
    with pytest.raises(ValueError, match="epsilon") as info:
        classic_sigma(eps, 1e-5)
    message = str(info.value)
    assert "analytic_sigma" in message and "epsilon < 1" in message


def test_classic_formula_fails_outside_its_theorem():
    """At delta = 1e-3 the classic formula is 3.4x over budget at epsilon = 10
    (computed directly, since classic_sigma refuses), but still private at 5."""
    delta = 1e-3
    sigma10 = math.sqrt(2 * math.log(1.25 / delta)) / 10.0
    ratio10 = float(mp_delta(sigma10, 10.0) / delta)
    assert 3.3 < ratio10 < 3.45
    assert gaussian_delta(sigma10, 10.0) / delta == pytest.approx(ratio10, rel=1e-9)
    sigma5 = math.sqrt(2 * math.log(1.25 / delta)) / 5.0
    assert mp_delta(sigma5, 5.0) <= delta


def test_classic_is_private_and_above_analytic_where_it_applies():
    eps, dlt = np.meshgrid(np.logspace(-3, math.log10(0.99), 12), DELTA_GRID)
    cs = classic_sigma(eps, dlt)
    assert np.all(cs >= analytic_sigma(eps, dlt))
    for s, e, d in zip(cs.ravel()[::7], eps.ravel()[::7], dlt.ravel()[::7]):
        assert mp_delta(s, e) <= d


# ---------------------------------------------------------------------------
# analytic calibration (Theorem 3): conservative and tight
# ---------------------------------------------------------------------------
def test_reference_file_covers_the_promised_range():
    ref = load_reference()
    eps = {r[0] for r in ref}
    dlt = {r[1] for r in ref}
    assert min(eps) == 1e-3 and max(eps) == pytest.approx(50.0)
    assert min(dlt) == 1e-300 and max(dlt) == 0.5
    assert len(ref) == len(EPS_GRID) * len(DELTA_GRID)


def test_analytic_sigma_matches_exact_root():
    """Relative excess over the exact root is in (0, 1e-9] on the whole grid,
    for the scalar and the vectorised code paths."""
    ref = load_reference()
    eps = np.array([r[0] for r in ref])
    dlt = np.array([r[1] for r in ref])
    vec = analytic_sigma(eps, dlt)
    worst = 0.0
    for (e, d, root), v in zip(ref, vec):
        s = analytic_sigma(e, d)
        assert v == pytest.approx(s, rel=1e-12)
        for value in (s, float(v)):
            excess = float(mp.mpf(value) / root - 1)
            assert 0.0 < excess <= 1e-9, (e, d, excess)
            worst = max(worst, excess)
    assert worst < 1e-10  # in practice ~1e-12


def test_analytic_sigma_is_conservative_and_tight_in_mpmath():
    eps, dlt = np.meshgrid(EPS_GRID, DELTA_GRID)
    sig = analytic_sigma(eps, dlt)
    for s, e, d in zip(sig.ravel(), eps.ravel(), dlt.ravel()):
        assert mp_delta(s, e) <= d
        assert mp_delta(s * (1 - 1e-9), e) > d


@pytest.mark.parametrize(
    "eps, delta",
    # where the published Balle-Wang code (autodp) overshoots delta 712-fold and is 15% off
    [(0.1, 1e-15), (0.01, 1e-15), (1e-3, 1e-300), (50.0, 1e-300), (50.0, 0.5), (1e-3, 0.5)],
)
def test_analytic_sigma_at_hard_points(eps, delta):
    s = analytic_sigma(eps, delta)
    assert mp_delta(s, eps) <= delta
    assert mp_delta(s * (1 - 1e-10), eps) > delta


def test_analytic_sigma_known_values():
    # sigma_opt(1, 1e-5) from the 50-digit root; classic would be 4.84
    assert analytic_sigma(1.0, 1e-5) == pytest.approx(3.730631634816, rel=1e-12)
    assert analytic_sigma(1.0, 1e-5, sensitivity=2.0) == pytest.approx(2 * 3.730631634816, rel=1e-12)


def test_analytic_sigma_outside_the_promised_range_is_still_private():
    for eps, delta in [(1e-6, 1e-5), (300.0, 1e-300), (1e5, 1e-10), (0.5, 0.9), (0.5, 0.999999)]:
        s = analytic_sigma(eps, delta)
        assert math.isfinite(s) and s > 0
        assert mp_delta(s, eps) <= delta


# ---------------------------------------------------------------------------
# the privacy profile and its inverse in epsilon
# ---------------------------------------------------------------------------
def _profile_grid():
    sig = np.logspace(-2, 4, 19)
    eps = np.logspace(-4, 2, 13)
    s, e = np.meshgrid(sig, eps)
    return s.ravel(), e.ravel()


def test_gaussian_delta_relative_error():
    """Relative error <= 1e-9 (in practice ~1e-12) wherever delta >= 1e-300,
    including both sides of the switch between quadrature and logs at Delta/sigma = 1."""
    sig, eps = _profile_grid()
    sig = np.concatenate([sig, [0.999999, 1.0, 1.000001, 0.5, 2.0]])
    eps = np.concatenate([eps, [0.3, 0.3, 0.3, 3.0, 0.01]])
    for sens in (1.0, 0.37):
        got = gaussian_delta(sig, eps, sens)
        checked = 0
        for s, e, g in zip(sig, eps, got):
            true = mp_delta(s, e, sens)
            assert gaussian_delta(float(s), float(e), sens) == pytest.approx(g, rel=1e-12, abs=1e-320)
            if true >= 1e-300:
                assert abs(g / true - 1) <= 1e-9, (s, e, sens)
                checked += 1
            else:
                assert 0.0 <= g <= 2e-300
        assert checked > 150


def test_gaussian_delta_extremes_are_finite():
    assert gaussian_delta(1e-300, 1.0, 1e300) == 1.0  # Delta / sigma overflows
    assert gaussian_delta(1e300, 1.0, 1e-300) == 0.0  # Delta / sigma underflows
    assert gaussian_delta(1e-3, 1e300) == 0.0
    out = gaussian_delta([1e-300, 1e300, 1e-3, 1.0], [1.0, 1.0, 1e300, 1e-300], [1e300, 1e-300, 1.0, 1.0])
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [1.0, 0.0, 0.0, gaussian_delta(1.0, 1e-300)])
    # at epsilon -> 0 the profile tends to the total variation 2 Phi(1/(2 sigma)) - 1
    assert gaussian_delta(1.0, 1e-300) == pytest.approx(math.erf(0.5 / math.sqrt(2)), rel=1e-12)


def test_gaussian_epsilon_round_trips():
    eps, dlt = np.meshgrid(EPS_GRID, DELTA_GRID)
    sig = analytic_sigma(eps, dlt)
    back = gaussian_epsilon(sig, dlt)
    np.testing.assert_allclose(back, eps, rtol=1e-9)
    scalar = [gaussian_epsilon(float(s), float(d)) for s, d in zip(sig.ravel(), dlt.ravel())]
    np.testing.assert_allclose(scalar, back.ravel(), rtol=1e-12)
    # and the other way round: delta(epsilon(delta)) is just below delta
    d_back = gaussian_delta(sig, back)
    assert np.all(d_back <= dlt)
    np.testing.assert_allclose(d_back, dlt, rtol=1e-9)


def test_gaussian_epsilon_is_conservative_in_mpmath():
    sig, _ = _profile_grid()
    for s in sig[::2]:
        for d in (1e-300, 1e-30, 1e-6, 0.01):
            e = gaussian_epsilon(float(s), d)
            if e == 0.0:  # already (0, d)-DP: the total variation 2 Phi(1/(2s)) - 1 is <= d
                assert 2 * mp.ncdf(mp.mpf(0.5) / mp.mpf(s)) - 1 <= d
                continue
            true = mp_delta(s, e)
            assert d * (1 - 1e-9) <= true <= d


def test_gaussian_epsilon_is_zero_when_already_zero_dp():
    sigma = 10.0
    tv = float(2 * mp.ncdf(mp.mpf(0.5) / sigma) - 1)  # delta(0), about 0.0399
    assert gaussian_epsilon(sigma, 0.05) == 0.0
    assert gaussian_epsilon(sigma, tv * 1.001) == 0.0
    small = gaussian_epsilon(sigma, tv * 0.999)
    assert 0.0 < small < 1e-3
    assert mp_delta(sigma, small) <= tv * 0.999
    np.testing.assert_array_equal(gaussian_epsilon([10.0, 1.0], 0.05) > 0, [False, True])


def test_sensitivity_enters_only_through_the_ratio():
    assert gaussian_delta(6.0, 0.7, 2.0) == pytest.approx(gaussian_delta(3.0, 0.7), rel=1e-13)
    assert gaussian_epsilon(6.0, 1e-7, 2.0) == pytest.approx(gaussian_epsilon(3.0, 1e-7), rel=1e-12)


# ---------------------------------------------------------------------------
# types and broadcasting
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("func", [classic_sigma, analytic_sigma])
def test_scalar_in_float_out_and_broadcasting(func):
    assert type(func(0.5, 1e-5)) is float
    assert type(func(np.float64(0.5), np.float32(1e-5), 2)) is float
    assert type(func(np.array(0.5), 1e-5)) is float
    out = func(np.array([0.1, 0.2, 0.5]), np.array([[1e-5], [1e-9]]))
    assert out.shape == (2, 3)
    assert out[1, 0] == pytest.approx(func(0.1, 1e-9), rel=1e-12)
    with pytest.raises(ValueError, match="broadcast"):
        func([0.1, 0.2], [1e-5, 1e-6, 1e-7])


@pytest.mark.parametrize("func", [gaussian_delta, gaussian_epsilon])
def test_profile_functions_scalar_and_arrays(func):
    second = 0.5 if func is gaussian_delta else 1e-5
    assert type(func(2.0, second)) is float
    out = func(np.array([[1.0, 2.0, 4.0]]), np.array([second, second / 2]).reshape(2, 1))
    assert out.shape == (2, 3)
    assert out[1, 2] == pytest.approx(func(4.0, second / 2), rel=1e-12)
    with pytest.raises(ValueError, match="broadcast"):
        func([1.0, 2.0], [second] * 3)


def test_inputs_are_not_modified():
    eps = np.array([0.5, 1.0])
    dlt = np.array([1e-5, 1e-6])
    analytic_sigma(eps, dlt)
    np.testing.assert_array_equal(eps, [0.5, 1.0])
    np.testing.assert_array_equal(dlt, [1e-5, 1e-6])


# ---------------------------------------------------------------------------
# validation: every bad input raises, naming the argument
# ---------------------------------------------------------------------------
BAD_EPS = [0.0, -1.0, float("nan"), float("inf"), [0.5, 0.0], []]
BAD_DELTA = [0.0, 1.0, -1e-9, 1.5, float("nan"), [1e-5, 1.0]]
BAD_POS = [0.0, -2.0, float("inf"), float("nan"), [1.0, -1.0]]
NOT_NUMBERS = ["0.5", None, True, object()]

CALLS = {
    "classic_sigma": lambda epsilon=0.5, delta=1e-5, sensitivity=1.0: classic_sigma(epsilon, delta, sensitivity),
    "analytic_sigma": lambda epsilon=0.5, delta=1e-5, sensitivity=1.0: analytic_sigma(epsilon, delta, sensitivity),
    "gaussian_delta": lambda sigma=2.0, epsilon=0.5, sensitivity=1.0: gaussian_delta(sigma, epsilon, sensitivity),
    "gaussian_epsilon": lambda sigma=2.0, delta=1e-5, sensitivity=1.0: gaussian_epsilon(sigma, delta, sensitivity),
}
ARGS = {
    "classic_sigma": ("epsilon", "delta", "sensitivity"),
    "analytic_sigma": ("epsilon", "delta", "sensitivity"),
    "gaussian_delta": ("sigma", "epsilon", "sensitivity"),
    "gaussian_epsilon": ("sigma", "delta", "sensitivity"),
}
BAD_VALUES = {"epsilon": BAD_EPS, "delta": BAD_DELTA, "sigma": BAD_POS, "sensitivity": BAD_POS}
CASES = [
    (func, arg, bad)
    for func, names in ARGS.items()
    for arg in names
    for bad in BAD_VALUES[arg]
    # epsilon = 0 is a valid argument of the privacy profile: it is what
    # gaussian_epsilon returns when the mechanism is already (0, delta)-DP
    if not (func == "gaussian_delta" and arg == "epsilon" and bad in (0.0, [0.5, 0.0]))
]


def test_gaussian_delta_accepts_epsilon_zero():
    """delta(0) = 2 Phi(Delta / (2 sigma)) - 1, and gaussian_epsilon's 0.0 round-trips."""
    from scipy.special import ndtr
    assert gaussian_delta(2.0, 0.0) == pytest.approx(2 * ndtr(0.25) - 1, rel=1e-13)
    eps = gaussian_epsilon(2.0, 0.5)
    assert eps == 0.0 and gaussian_delta(2.0, eps) <= 0.5
    np.testing.assert_allclose(gaussian_delta(2.0, [0.0, 0.5]),
                               [gaussian_delta(2.0, 0.0), gaussian_delta(2.0, 0.5)], rtol=0)


@pytest.mark.parametrize("func, arg, bad", CASES)
def test_bad_values_raise_value_error_naming_the_argument(func, arg, bad):
    with pytest.raises(ValueError, match=arg):
        CALLS[func](**{arg: bad})


@pytest.mark.parametrize("func, arg", [(f, a) for f, names in ARGS.items() for a in names])
@pytest.mark.parametrize("bad", NOT_NUMBERS)
def test_non_numbers_raise_type_error_naming_the_argument(func, arg, bad):
    with pytest.raises(TypeError, match=arg):
        CALLS[func](**{arg: bad})


def test_unresolvable_requests_raise_clear_errors():
    with pytest.raises(ValueError, match="epsilon must be <="):
        analytic_sigma(2 * MAX_CALIBRATION_EPSILON, 1e-5)
    with pytest.raises(ValueError, match="sigma is too small"):
        gaussian_epsilon(1e-6, 1e-5)
    with pytest.raises(ValueError, match="sigma is too small"):
        gaussian_epsilon([1.0, 1e-300], 0.5)
    with pytest.raises(ValueError, match="not a positive finite float"):
        analytic_sigma(1e-310, 1e-315)  # sigma > 1e311 overflows
    with pytest.raises(ValueError, match="not a positive finite float"):
        analytic_sigma(1.0, 1e-5, 1e308)  # 3.7e308 overflows


# ---------------------------------------------------------------------------
# properties over the whole range (hypothesis)
# ---------------------------------------------------------------------------
log_eps = st.floats(min_value=-3.0, max_value=math.log10(50.0))
log_delta = st.floats(min_value=-300.0, max_value=math.log10(0.5))
log_sens = st.floats(min_value=-6.0, max_value=6.0)
PROPS = settings(deadline=None, max_examples=120, derandomize=True)
# Outputs carry a deliberate safety margin of ~1e-12 whose size varies a
# little from point to point, so monotonicity is checked up to 1e-11.
JITTER = 1e-11


@PROPS
@given(log_eps, log_eps, log_delta)
def test_sigma_decreases_with_epsilon(le1, le2, ld):
    e1, e2 = sorted((10.0**le1, 10.0**le2))
    d = 10.0**ld
    assert analytic_sigma(e1, d) >= analytic_sigma(e2, d) * (1 - JITTER)


@PROPS
@given(log_eps, log_delta, log_delta)
def test_sigma_decreases_with_delta(le, ld1, ld2):
    d1, d2 = sorted((10.0**ld1, 10.0**ld2))
    e = 10.0**le
    assert analytic_sigma(e, d1) >= analytic_sigma(e, d2) * (1 - JITTER)


@PROPS
@given(st.floats(-2.0, 4.0), log_eps, log_eps)
def test_delta_decreases_with_epsilon_and_sigma(ls, le1, le2):
    e1, e2 = sorted((10.0**le1, 10.0**le2))
    s = 10.0**ls
    assert gaussian_delta(s, e1) >= gaussian_delta(s, e2) * (1 - 1e-12)
    assert gaussian_delta(s, e1) >= gaussian_delta(s * 1.01, e1)


@PROPS
@given(st.floats(-2.0, 4.0), st.floats(-2.0, 4.0), log_delta)
def test_epsilon_decreases_with_sigma(ls1, ls2, ld):
    s1, s2 = sorted((10.0**ls1, 10.0**ls2))
    d = 10.0**ld
    try:
        e1 = gaussian_epsilon(s1, d)
    except ValueError:  # sigma so small that epsilon > MAX_CALIBRATION_EPSILON
        return
    assert e1 >= gaussian_epsilon(s2, d) * (1 - JITTER)


@settings(deadline=None, max_examples=150, derandomize=True)
@given(log_eps, log_delta)
def test_sigma_conservative_and_tight_everywhere(le, ld):
    e, d = 10.0**le, 10.0**ld
    s = analytic_sigma(e, d)
    assert mp_delta(s, e) <= d
    assert mp_delta(s * (1 - 1e-9), e) > d


@PROPS
@given(log_eps, log_delta, log_sens)
def test_sigma_linear_in_sensitivity(le, ld, lsens):
    e, d, sens = 10.0**le, 10.0**ld, 10.0**lsens
    assert analytic_sigma(e, d, sens) == pytest.approx(sens * analytic_sigma(e, d), rel=1e-11)
    s = analytic_sigma(e, d)
    assert gaussian_delta(sens * s, e, sens) == pytest.approx(gaussian_delta(s, e), rel=1e-11)


@PROPS
@given(st.floats(min_value=-3.0, max_value=math.log10(0.999)), log_delta)
def test_analytic_never_above_classic(le, ld):
    e, d = 10.0**le, 10.0**ld
    assert analytic_sigma(e, d) <= classic_sigma(e, d)


if __name__ == "__main__":  # pragma: no cover
    if "--regenerate" in sys.argv:
        regenerate()
        print(f"wrote {DATA}")


# ---------------------------------------------------------------------------
# one kernel: a scalar call and the same point inside an array agree bit for bit
# ---------------------------------------------------------------------------
_eps = st.floats(1e-3, 50.0)
_log_delta = st.floats(-300.0, math.log10(0.5))
_sens = st.floats(1e-3, 1e3)


@settings(max_examples=60, deadline=None)
@given(eps=_eps, log_delta=_log_delta, sens=_sens, others=st.lists(_eps, min_size=1, max_size=4))
def test_scalar_and_array_calls_agree_bit_for_bit(eps, log_delta, sens, others):
    delta = 10.0**log_delta
    sigma = analytic_sigma(eps, delta, sens)
    batch = analytic_sigma(np.array([eps] + others), delta, sens)
    assert batch[0] == sigma
    assert gaussian_delta(sigma, eps, sens) == gaussian_delta(np.array([sigma, 2 * sigma]),
                                                              eps, sens)[0]
    e = gaussian_epsilon(sigma, delta, sens)
    assert gaussian_epsilon(np.array([sigma, 2 * sigma]), delta, sens)[0] == e
    assert gaussian_delta(sigma, e, sens) <= delta
