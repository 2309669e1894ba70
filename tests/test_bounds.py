"""Tests of dpsum.bounds: every bound against the exact tail or quantile.

The exact reference is scipy.stats.chi2 for equal standard deviations (an
independent implementation) and dpsum.GeneralizedChiSquare otherwise (itself
tested against mpmath in test_gchisq.py). Identities between the source's
formulas are checked to a relative 1e-12.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpsum
from dpsum import bounds as B
from dpsum.design.clip_radius import clip_radius
from dpsum.distributions.gchisq import GeneralizedChiSquare
from dpsum.design.scaling import gaussian_data_scaling

RTOL = 1e-12
# the exact clip radius is rounded up by a relative 1e-12 (dpsum.clipping)
EXACT_MARGIN = 1e-9


def _configs():
    rng = np.random.default_rng(20230106)
    return {
        "iso-1": np.ones(1),
        "iso-2": np.full(2, 0.3),
        "iso-10": np.full(10, 2.0),
        "iso-300": np.ones(300),
        "power-0.5": np.arange(1, 51.0) ** -0.5,
        "power-1": np.arange(1, 101.0) ** -1.0,
        "power-2": np.arange(1, 21.0) ** -2.0,
        "one-large": np.r_[10.0, np.ones(99)],
        "lognormal": np.exp(rng.normal(0.0, 1.0, 40)),
        "wide": np.logspace(-3, 3, 25),
    }


CONFIGS = _configs()
IDS = list(CONFIGS)


def _exact(stds, scaling=None):
    s = np.asarray(stds, float) if scaling is None else np.asarray(stds) * scaling
    return GeneralizedChiSquare(s**2)


# ------------------------------------------------------------ Lemma 3.2
@pytest.mark.parametrize("name", IDS)
def test_max_t_formula(name):
    s = CONFIGS[name]
    expected = math.sqrt(2 * np.sum(s**4)) / (6 * np.max(s) ** 2)
    assert B.bernstein_max_t(s) == pytest.approx(expected, rel=RTOL)
    # depends only on the ratios, and never exceeds the isotropic value sqrt(2d)/6
    assert B.bernstein_max_t(s * 1e100) == pytest.approx(expected, rel=RTOL)
    assert B.bernstein_max_t(s * 1e-100) == pytest.approx(expected, rel=RTOL)
    assert expected <= math.sqrt(2 * s.size) / 6 * (1 + RTOL)


@pytest.mark.parametrize("d", [1, 7, 100])
def test_max_t_isotropic(d):
    assert B.bernstein_max_t(np.full(d, 3.0)) == pytest.approx(math.sqrt(2 * d) / 6, rel=RTOL)


@pytest.mark.parametrize("name", IDS)
def test_threshold_formula(name):
    s = CONFIGS[name]
    t = np.linspace(0, B.bernstein_max_t(s), 7)
    direct = t * math.sqrt(8 * np.sum(s**4)) + np.sum(s**2)
    got = B.bernstein_tail_threshold(s, t)
    assert isinstance(got, np.ndarray) and got.shape == t.shape
    np.testing.assert_allclose(got, direct, rtol=RTOL)
    assert isinstance(B.bernstein_tail_threshold(s, 0.0), float)
    assert B.bernstein_tail_threshold(s, 0) == pytest.approx(np.sum(s**2), rel=RTOL)


@pytest.mark.parametrize("d", [1, 2, 5, 10, 100, 1000])
def test_lemma32_against_scipy_chi2(d):
    # equal sigma: sum X_j^2 = sigma^2 chi2_d, an independent reference
    sigma = 0.3
    s = np.full(d, sigma)
    t = np.linspace(0, B.bernstein_max_t(s), 25)
    thr = B.bernstein_tail_threshold(s, t)
    tail = stats.chi2(d).sf(thr / sigma**2)
    assert np.all(tail < np.exp(-t**2))


@pytest.mark.parametrize("name", IDS)
def test_lemma32_against_exact_tail(name):
    s = CONFIGS[name]
    t = np.linspace(0, B.bernstein_max_t(s), 25)
    tail = _exact(s).sf(B.bernstein_tail_threshold(s, t))
    assert np.all(tail < np.exp(-t**2))


def test_lemma32_range_is_enforced():
    s = CONFIGS["power-1"]
    t_max = B.bernstein_max_t(s)
    assert B.bernstein_tail_threshold(s, t_max) > 0  # the limit itself is allowed
    with pytest.raises(ValueError, match="Bernstein tail lemma"):
        B.bernstein_tail_threshold(s, 1.01 * t_max)
    with pytest.raises(ValueError, match="Bernstein tail lemma"):
        B.bernstein_tail_threshold(s, [0.0, 2 * t_max])
    loose = B.bernstein_tail_threshold(s, 3.0, strict=False)
    assert loose == pytest.approx(3 * math.sqrt(8 * np.sum(s**4)) + np.sum(s**2), rel=RTOL)


def test_formula_fails_far_beyond_the_range():
    # why strict=True is the default: for large t the formula is below the exact quantile
    s = CONFIGS["power-1"]
    t = 3.0
    assert t > 10 * B.bernstein_max_t(s)
    thr = B.bernstein_tail_threshold(s, t, strict=False)
    assert _exact(s).sf(thr) > math.exp(-t * t)


@pytest.mark.parametrize("name", IDS)
def test_tail_bound_is_valid_everywhere(name):
    s = CONFIGS[name]
    g = _exact(s)
    x = g.mean() + np.linspace(-0.9, 40, 60) * g.std()
    x = x[x > 0]
    bound = B.bernstein_tail_bound(s, x)
    assert np.all(g.sf(x) <= bound)
    assert np.all(np.diff(bound) <= 0) and np.all(bound > 0) and np.all(bound <= 1)


def test_tail_bound_pieces():
    s = CONFIGS["lognormal"]
    mean, root8 = np.sum(s**2), math.sqrt(8 * np.sum(s**4))
    t_max = B.bernstein_max_t(s)
    assert B.bernstein_tail_bound(s, 0.5 * mean) == 1.0
    assert B.bernstein_tail_bound(s, mean) == 1.0
    t = 0.6 * t_max
    assert B.bernstein_tail_bound(s, mean + t * root8) == pytest.approx(math.exp(-t * t), rel=1e-12)
    beyond = B.bernstein_tail_bound(s, [mean + 2 * t_max * root8, 1e6 * mean])
    np.testing.assert_allclose(beyond, math.exp(-t_max**2), rtol=1e-12)
    assert isinstance(B.bernstein_tail_bound(s, mean), float)


@pytest.mark.parametrize("name", ["iso-300", "iso-10", "one-large"])
def test_bernstein_clip_radius(name):
    s = CONFIGS[name]
    b = gaussian_data_scaling(s)
    t_max = B.bernstein_max_t(s * b)
    for t in np.linspace(0.05, 1, 5) * t_max:
        p = math.exp(-t * t)
        C = B.bernstein_clip_radius(s, p, b)
        assert C**2 == pytest.approx(B.bernstein_tail_threshold(s * b, t), rel=RTOL)
        assert C >= dpsum.clip_radius(s, p, b)
    with pytest.raises(ValueError, match="clip_probability = .* outside the range of the Bernstein tail lemma"):
        B.bernstein_clip_radius(s, math.exp(-4 * t_max**2), b)
    assert B.bernstein_clip_radius(s, math.exp(-t_max**2), b) > 0  # the limit itself is allowed


# --------------------------------------------------- the moment condition
def _abs_central_moment(k: int) -> mpmath.mpf:
    """E|Z - 1|^k for Z ~ chi2_1, exactly up to rounding at 60 digits.

    E[Z^i 1{Z<1}] = (2i-1) E[Z^(i-1) 1{Z<1}] - 2 phi(1), from P(Z<1) = erf(1/sqrt 2).
    """
    with mpmath.workdps(60):
        two_phi1 = 2 * mpmath.npdf(1)
        lower = [mpmath.erf(1 / mpmath.sqrt(2))]
        for i in range(1, k + 1):
            lower.append((2 * i - 1) * lower[-1] - two_phi1)
        full = [mpmath.mpf(1)] + [mpmath.fac2(2 * i - 1) for i in range(1, k + 1)]
        central = sum(mpmath.binomial(k, i) * (-1) ** (k - i) * full[i] for i in range(k + 1))
        if k % 2 == 0:
            return central
        below = sum(mpmath.binomial(k, i) * (-1) ** i * lower[i] for i in range(k + 1))
        return central + 2 * below


def test_abs_central_moment_reference():
    # the recurrence against direct quadrature of |z - 1|^k times the chi2_1 density
    with mpmath.workdps(30):
        for k in (1, 2, 3, 6):
            f = lambda z: abs(z - 1) ** k * z ** -0.5 * mpmath.exp(-z / 2) / mpmath.sqrt(2 * mpmath.pi)
            direct = mpmath.quad(f, [0, 1, 10, mpmath.inf])
            assert float(direct) == pytest.approx(float(_abs_central_moment(k)), rel=1e-12)


def test_moment_constants():
    # (13): E|Y^k| <= (1/2) E[Y^2] L^(k-2) k! with E[Y^2] = 2 sigma^4 (sigma = 1);
    # holds for L = 3 (the source) and L = 2, and the ratios approach 2 from below
    ratios = []
    for k in range(2, 31):
        m = _abs_central_moment(k)
        assert m <= B.BERNSTEIN_MOMENT_CONSTANT ** (k - 2) * mpmath.factorial(k)
        assert m <= B.SMALLEST_MOMENT_CONSTANT ** (k - 2) * mpmath.factorial(k)
        if k >= 3:
            ratios.append(float((m / mpmath.factorial(k)) ** (mpmath.mpf(1) / (k - 2))))
    assert all(np.diff(ratios) > 0) and 1.9 < ratios[-1] < 2


# -------------------------------------------------------------- Theorem 5
@pytest.mark.parametrize("name", IDS)
def test_theorem5_condition_is_lemma32_range(name):
    # the source's derivation: ln n <= t_max^2 for the scaled standard deviations
    s = CONFIGS[name]
    b = gaussian_data_scaling(s)
    limit = B.bernstein_error_max_log_n(s)
    assert limit == pytest.approx(np.sum(s**2) / (18 * np.max(s) ** 2), rel=RTOL)
    assert limit == pytest.approx(B.bernstein_max_t(s * b) ** 2, rel=RTOL)
    assert limit <= s.size / 18 * (1 + RTOL)
    n_edge = math.exp(limit)
    assert B.bernstein_error_condition_holds(s, n_edge) is True
    assert B.bernstein_error_condition_holds(s, 1.001 * n_edge) is False
    np.testing.assert_array_equal(B.bernstein_error_condition_holds(s, [1, n_edge * 2]), [True, False])


@pytest.mark.parametrize("name", ["iso-300", "iso-10", "one-large", "lognormal", "power-1"])
def test_theorem5_clip_bound_is_lemma32(name):
    s = CONFIGS[name]
    b = gaussian_data_scaling(s)
    ns = np.exp(np.linspace(0, B.bernstein_error_max_log_n(s), 6))
    c2 = B.bernstein_error_clip_radius_squared(s, ns)
    direct = np.sqrt(8 * np.log(ns) * np.sum(s**2)) / np.sum(s) + 1
    np.testing.assert_allclose(c2, direct, rtol=RTOL)
    for n, v in zip(ns[1:], c2[1:]):
        assert v == pytest.approx(B.bernstein_clip_radius(s, 1 / n, b) ** 2, rel=RTOL)
    assert B.bernstein_error_clip_radius_squared(s, 1) == 1.0  # t = 0: the mean, E||x_hat||^2 = 1


@pytest.mark.parametrize("d", [100, 300, 2000])
def test_theorem5_bounds_exact_clip_radius(d):
    for s in (np.ones(d), np.linspace(1, 2, d)):
        b = gaussian_data_scaling(s)
        for log_n in np.linspace(0.5, 1, 4) * B.bernstein_error_max_log_n(s):
            n = math.exp(log_n)
            exact = dpsum.clip_radius(s, 1 / n, b) ** 2
            assert B.bernstein_error_clip_radius_squared(s, n) >= exact


def test_theorem5_error_bound():
    s = np.linspace(1, 3, 400)
    eps, delta = 0.7, 1e-6
    b = gaussian_data_scaling(s)
    sopt = dpsum.analytic_sigma(eps, delta)
    for n in (10, 1e3, 1e4):
        assert B.bernstein_error_condition_holds(s, n)
        bound = B.bernstein_error_bound(s, n, eps, delta)
        report = 4 * sopt**2 * np.sum(s) * (math.sqrt(8 * math.log(n) * np.sum(s**2)) + np.sum(s))
        assert bound == pytest.approx(report, rel=RTOL)
        # equation (20) with C^2 replaced by the bound: (2 C sigma_opt)^2 sum b^-2
        c2 = B.bernstein_error_clip_radius_squared(s, n)
        assert bound == pytest.approx(4 * sopt**2 * c2 * np.sum(b**-2.0), rel=1e-12)
        exact = dpsum.accuracy.gaussian_data_error(s, eps, delta, 1 / n)
        assert bound >= exact
        exact_c2 = dpsum.clip_radius(s, 1 / n, b) ** 2
        assert bound / exact == pytest.approx(c2 / exact_c2, rel=EXACT_MARGIN)
        add_remove = B.bernstein_error_bound(s, n, eps, delta, neighbouring="add-remove")
        assert add_remove == pytest.approx(bound / 4, rel=RTOL)
    vec = B.bernstein_error_bound(s, [10, 1e3], eps, delta)
    assert vec.shape == (2,)


def test_theorem5_condition_is_enforced():
    s = CONFIGS["power-1"]  # sum sigma^2 / (18 sigma_*^2) < ln 2: no n >= 2 qualifies
    assert B.bernstein_error_max_log_n(s) < math.log(2)
    with pytest.raises(ValueError, match="Bernstein error bound"):
        B.bernstein_error_clip_radius_squared(s, 100)
    with pytest.raises(ValueError, match="Bernstein error bound"):
        B.bernstein_error_bound(s, 100, 1.0, 1e-6)
    # beyond the condition the formula can fall below the exact C^2: not a bound
    b = gaussian_data_scaling(s)
    n = 1e6
    assert B.bernstein_error_clip_radius_squared(s, n, strict=False) < dpsum.clip_radius(s, 1 / n, b) ** 2
    loose = B.bernstein_error_bound(s, n, 1.0, 1e-6, strict=False)
    assert loose < dpsum.accuracy.gaussian_data_error(s, 1.0, 1e-6, 1 / n)


# ------------------------------------------------------------- Chebyshev
@pytest.mark.parametrize("name", IDS)
def test_chebyshev_radius_is_an_upper_bound(name):
    s = CONFIGS[name]
    b = gaussian_data_scaling(s)
    for p in (0.5, 0.05, 1e-3, 1e-6):
        exact = dpsum.clip_radius(s, p, b)
        two = B.chebyshev_clip_radius(s, p, b)
        one = B.chebyshev_clip_radius(s, p, b, one_sided=True)
        assert exact <= one < two
        e, v = np.sum((s * b) ** 2), 2 * np.sum((s * b) ** 4)
        assert two**2 == pytest.approx(e + math.sqrt(v / p), rel=RTOL)
        assert one**2 == pytest.approx(e + math.sqrt(v * (1 - p) / p), rel=RTOL)


@pytest.mark.parametrize("name", ["iso-10", "power-0.5", "lognormal", "wide"])
def test_chebyshev_constraint_round_trip(name):
    s = CONFIGS[name]
    for p in (0.05, 1e-4):
        for one_sided in (False, True):
            C = B.chebyshev_clip_radius(s, p, one_sided=one_sided)
            assert B.chebyshev_clip_probability(s, C, one_sided=one_sided) == pytest.approx(p, rel=1e-10)
        # the source's form: rescale b so that the radius is 1, then Var / (1 - E)^2 = p
        b = gaussian_data_scaling(s)
        b1 = b / B.chebyshev_clip_radius(s, p, b)
        e, v = np.sum((s * b1) ** 2), 2 * np.sum((s * b1) ** 4)
        assert e < 1
        assert v / (1 - e) ** 2 == pytest.approx(p, rel=1e-10)
        assert B.chebyshev_clip_probability(s, 1.0, b1) == pytest.approx(p, rel=1e-10)


@pytest.mark.parametrize("name", IDS)
def test_chebyshev_probability_is_an_upper_bound(name):
    s = CONFIGS[name]
    g = _exact(s)
    for C2 in g.mean() + np.array([0.1, 1, 3, 10, 30]) * g.std():
        exact = g.sf(C2)
        assert exact <= B.chebyshev_clip_probability(s, math.sqrt(C2), one_sided=True)
        assert exact <= B.chebyshev_clip_probability(s, math.sqrt(C2))
    # at or inside the mean Chebyshev says nothing
    assert B.chebyshev_clip_probability(s, math.sqrt(g.mean())) == 1.0
    assert B.chebyshev_clip_probability(s, 0.5 * math.sqrt(g.mean()), one_sided=True) == 1.0


# ------------------------------------------------------- the Extra alpha
@pytest.mark.parametrize("name", IDS)
def test_extra_alpha_as_written_matches_report(name):
    s = CONFIGS[name]
    for p in (1e-4, 1e-2, 1e-9):
        var = 2 * np.sum(s**2) / np.sum(s) ** 2
        C = np.max(s) * 16 / np.sum(s)  # the source's "C", a per-coordinate bound
        lg = math.log(p / 2)
        t = -(C * lg - math.sqrt(lg * (-18 * var + C**2 * lg))) / 3
        assert B.bernstein_alpha(s, p, as_written=True) == pytest.approx(1 + t, rel=RTOL)


@pytest.mark.parametrize("name", IDS)
def test_extra_alpha_corrected_solves_bernstein(name):
    s = CONFIGS[name]
    var = 2 * np.sum(s**2) / np.sum(s) ** 2
    s_star2 = np.max(s) / np.sum(s)
    for L in (2.0, 3.0):
        for p in (1e-2, 1e-6, 1e-12):
            t = B.bernstein_alpha(s, p, moment_constant=L) - 1
            c = L * s_star2
            assert math.exp(-(t * t / 2) / (var + c * t)) == pytest.approx(p, rel=1e-9)


@pytest.mark.parametrize("name", IDS)
def test_extra_alpha_orderings_and_validity(name):
    s = CONFIGS[name]
    b = gaussian_data_scaling(s)
    for p in (0.05, 1e-4, 1e-8, 1e-12):
        exact = dpsum.clip_radius(s, p, b) ** 2
        lm = B.laurent_massart_clip_radius(s, p, b) ** 2
        sharp = B.bernstein_alpha(s, p, moment_constant=2.0)
        report_L = B.bernstein_alpha(s, p)
        written = B.bernstein_alpha(s, p, as_written=True)
        assert exact <= lm <= sharp < report_L < written


def test_extra_alpha_rejects_too_small_constant():
    with pytest.raises(ValueError, match="moment_constant"):
        B.bernstein_alpha(np.ones(5), 0.01, moment_constant=1.9)


# -------------------------------------------------------- Laurent--Massart
@pytest.mark.parametrize("name", IDS)
def test_laurent_massart(name):
    s = CONFIGS[name]
    x = np.linspace(0, 30, 31)
    thr = B.laurent_massart_threshold(s, x)
    direct = np.sum(s**2) + 2 * np.sqrt(x * np.sum(s**4)) + 2 * np.max(s) ** 2 * x
    np.testing.assert_allclose(thr, direct, rtol=RTOL)
    assert np.all(_exact(s).sf(thr) <= np.exp(-x))
    # sharper than Lemma 3.2 throughout Lemma 3.2's range
    t = np.linspace(0, B.bernstein_max_t(s), 11)
    assert np.all(B.laurent_massart_threshold(s, t**2) <= B.bernstein_tail_threshold(s, t) * (1 + RTOL))


@pytest.mark.parametrize("d", [1, 3, 50])
def test_laurent_massart_against_scipy_chi2(d):
    x = np.linspace(0, 40, 41)
    thr = B.laurent_massart_threshold(np.ones(d), x)
    assert np.all(stats.chi2(d).sf(thr) <= np.exp(-x))


def test_laurent_massart_clip_radius():
    s = CONFIGS["power-1"]
    b = gaussian_data_scaling(s)
    for p in (0.1, 1e-3, 1e-9):
        C = B.laurent_massart_clip_radius(s, p, b)
        assert C**2 == pytest.approx(B.laurent_massart_threshold(s * b, -math.log(p)), rel=RTOL)
        assert C >= dpsum.clip_radius(s, p, b)


# --------------------------------------------------------------- scaling
def test_scale_covariance_without_overflow():
    s = CONFIGS["lognormal"]
    for k in (1e-150, 1e150):
        assert B.bernstein_clip_radius(k * s, 0.95) == pytest.approx(k * B.bernstein_clip_radius(s, 0.95), rel=1e-12)
        assert B.laurent_massart_clip_radius(k * s, 1e-6) == pytest.approx(k * B.laurent_massart_clip_radius(s, 1e-6), rel=1e-12)
        assert B.chebyshev_clip_radius(k * s, 1e-6) == pytest.approx(k * B.chebyshev_clip_radius(s, 1e-6), rel=1e-12)
        assert B.chebyshev_clip_probability(k * s, k * 30.0) == pytest.approx(B.chebyshev_clip_probability(s, 30.0), rel=1e-12)
    for k in (1e-300, 1e300):
        assert B.bernstein_error_max_log_n(k * s) == pytest.approx(B.bernstein_error_max_log_n(s), rel=1e-12)
        assert B.bernstein_alpha(k * s, 1e-4) == pytest.approx(B.bernstein_alpha(s, 1e-4), rel=1e-12)
    assert B.bernstein_error_clip_radius_squared(1e300 * np.ones(400), 100) == pytest.approx(
        B.bernstein_error_clip_radius_squared(np.ones(400), 100), rel=1e-12)


# ------------------------------------------------------------ validation
BAD_STDS = [
    ([1.0, 0.0], ValueError),
    ([1.0, -2.0], ValueError),
    ([1.0, np.nan], ValueError),
    ([1.0, np.inf], ValueError),
    ([], ValueError),
    ([[1.0, 2.0]], ValueError),
    ("abc", TypeError),
    (None, TypeError),
]


@pytest.mark.parametrize("stds, exc", BAD_STDS)
def test_bad_stds(stds, exc):
    calls = [
        lambda: B.bernstein_max_t(stds),
        lambda: B.bernstein_tail_threshold(stds, 0.1),
        lambda: B.bernstein_tail_bound(stds, 1.0),
        lambda: B.bernstein_clip_radius(stds, 0.99),
        lambda: B.bernstein_error_max_log_n(stds),
        lambda: B.bernstein_error_condition_holds(stds, 2),
        lambda: B.bernstein_error_clip_radius_squared(stds, 2),
        lambda: B.bernstein_error_bound(stds, 2, 1.0, 1e-6),
        lambda: B.chebyshev_clip_radius(stds, 0.1),
        lambda: B.chebyshev_clip_probability(stds, 1.0),
        lambda: B.bernstein_alpha(stds, 0.1),
        lambda: B.laurent_massart_threshold(stds, 1.0),
        lambda: B.laurent_massart_clip_radius(stds, 0.1),
    ]
    for call in calls:
        with pytest.raises(exc, match="stds"):
            call()


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5, np.nan, [0.1, 0.2]])
def test_bad_clip_probability(p):
    s = np.ones(4)
    for f in (B.bernstein_clip_radius, B.chebyshev_clip_radius, B.bernstein_alpha,
              B.laurent_massart_clip_radius):
        with pytest.raises(ValueError, match="clip_probability"):
            f(s, p)


def test_bad_other_arguments():
    s = np.ones(4)
    with pytest.raises(ValueError, match="t must"):
        B.bernstein_tail_threshold(s, -0.1)
    with pytest.raises(ValueError, match="t must"):
        B.bernstein_tail_threshold(s, np.nan, strict=False)
    with pytest.raises(ValueError, match="x"):
        B.bernstein_tail_bound(s, np.nan)
    with pytest.raises(ValueError, match="x must"):
        B.laurent_massart_threshold(s, -1.0)
    for n in (0.5, 0, -3, np.nan, np.inf):
        with pytest.raises(ValueError, match="n must"):
            B.bernstein_error_clip_radius_squared(np.ones(400), n)
        with pytest.raises(ValueError, match="n must"):
            B.bernstein_error_condition_holds(s, n)
    with pytest.raises(TypeError):
        B.bernstein_error_clip_radius_squared(np.ones(400), True)
    with pytest.raises(ValueError, match="scaling"):
        B.chebyshev_clip_radius(s, 0.1, scaling=np.ones(3))
    with pytest.raises(ValueError, match="scaling"):
        B.laurent_massart_clip_radius(s, 0.1, scaling=[1, 1, 1, 0])
    with pytest.raises(ValueError, match="clip_norm"):
        B.chebyshev_clip_probability(s, 0.0)
    with pytest.raises(TypeError, match="one_sided"):
        B.chebyshev_clip_radius(s, 0.1, one_sided="yes")
    with pytest.raises(TypeError, match="as_written"):
        B.bernstein_alpha(s, 0.1, as_written=1)
    with pytest.raises(ValueError, match="epsilon"):
        B.bernstein_error_bound(np.ones(400), 10, 0.0, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        B.bernstein_error_bound(np.ones(400), 10, 1.0, 1.0)
    with pytest.raises(ValueError, match="neighbouring"):
        B.bernstein_error_bound(np.ones(400), 10, 1.0, 1e-6, neighbouring="swap")


def test_strict_must_be_boolean():
    with pytest.raises(TypeError, match="strict"):
        B.bernstein_tail_threshold(np.ones(4), 0.1, strict="no")
    with pytest.raises(TypeError, match="strict"):
        B.bernstein_clip_radius(np.ones(4), 0.99, strict=0)
    with pytest.raises(TypeError, match="strict"):
        B.bernstein_error_clip_radius_squared(np.ones(400), 10, strict=None)


def test_overflowing_results_raise():
    huge = np.full(3, 1e200)
    with pytest.raises(ValueError, match="stds too large"):
        B.bernstein_tail_threshold(huge, 0.1)
    with pytest.raises(ValueError, match="stds too large"):
        B.bernstein_tail_bound(huge, 1.0)
    with pytest.raises(ValueError, match="stds too large"):
        B.laurent_massart_threshold(huge, 1.0)


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e160, 1e300])
def test_clip_radius_bounds_are_upper_bounds_at_any_scale(scale):
    """Computed relative to the largest std: no underflow to 0 (which is no
    upper bound), no overflow."""
    stds = np.array([1.0, 1.0, 1.0])
    p = 1e-6
    exact = clip_radius(stds, p)
    lm = B.laurent_massart_clip_radius(stds * scale, p)
    assert lm > 0 and lm == pytest.approx(B.laurent_massart_clip_radius(stds, p) * scale, rel=1e-14)
    assert lm >= exact * scale * (1 - 1e-14)
    ch = B.chebyshev_clip_radius(stds * scale, p)
    assert ch == pytest.approx(B.chebyshev_clip_radius(stds, p) * scale, rel=1e-14)
    bs = B.bernstein_clip_radius(stds * scale, 0.2, strict=False)
    assert bs == pytest.approx(B.bernstein_clip_radius(stds, 0.2, strict=False) * scale,
                               rel=1e-14)
    assert B.laurent_massart_clip_radius([1e-300] * 3, 1e-6) >= exact * 1e-300 * (1 - 1e-14)
