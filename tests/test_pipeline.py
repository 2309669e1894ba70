"""Tests of dpsum.pipeline: the private mean and sum with no public data model.

Privacy is checked three ways: each step's mechanism is tested in
test_estimators.py; the composed guarantee is recomputed here by an
independent accountant (dp_accounting's RDP accountant); and the whole
pipeline is audited with dpsum.audit, where deliberately broken variants
(non-private scales, the mean's noise skipped) must be caught.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpsum
from dpsum import pipeline as P
from dpsum.pipeline import adaptive as A
from dpsum.pipeline import mean as pipeline_mean
from dpsum.release import records
from dpsum.privacy.composition import zcdp_rho
from dpsum.audit.runner import epsilon_lower_bound

rdp = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
dp_event = pytest.importorskip("dp_accounting.dp_event")


def _gaussian_data(n, stds, mean, seed):
    gen = np.random.default_rng(seed)
    stds = np.asarray(stds, dtype=float)
    return mean + gen.standard_normal((n, stds.size)) * stds


# ---------------------------------------------------------------------------
# the budget rule
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n, d, rho, relation, scaling", [
    (10_000, 512, 0.125, "replace", "scaled"),
    (4_000, 2048, 0.125, "replace", "scaled"),
    (4_000, 16, 1.0, "add-remove", "scaled"),
    (100, 8, 0.5, "replace", "isotropic"),
])
def test_default_budget_rule(n, d, rho, relation, scaling):
    b = P.default_budget(n, d, rho, neighbouring=relation, scaling=scaling)
    shares = b.as_dict()
    assert math.isclose(sum(shares.values()), 1.0, rel_tol=1e-12)
    assert all(v >= 0 for v in shares.values()) and b.mean > 0.5
    assert (b.count > 0) == (relation == "add-remove")
    assert (b.scales > 0) == (b.radius > 0) == (scaling == "scaled")
    du = 1.0 if relation == "replace" else 0.5
    cap = P.MAX_COORDINATE_SHARE

    def eps(share, count):           # the per-mechanism parameter of a share
        return math.sqrt(8 * share * rho / count)

    # the center: reliable (margin) unless capped
    want = 4 * du * P.CENTER_MARGIN / n
    assert eps(b.center, d) == pytest.approx(want, rel=1e-12) or (
        b.center == cap and eps(b.center, d) < want)
    if scaling == "scaled":
        # the scales: at least reliable and at least the accurate share
        accurate = du / pipeline_mean._LOG_MAD_DENSITY * math.sqrt(d / rho) / n
        reliable = d * (4 * du * P.SCALE_MARGIN / n) ** 2 / 8 / rho
        assert b.scales == pytest.approx(min(max(accurate, reliable), cap), rel=1e-12)
        assert b.radius == b.clip
    # scalar quantiles: one coordinate's reliable share (the scalar margin),
    # at least SCALAR_SHARE
    one = (4 * du * P.SCALAR_MARGIN / n) ** 2 / 8 / rho
    assert b.clip == pytest.approx(min(max(P.SCALAR_SHARE, one), cap), rel=1e-12)


# ---------------------------------------------------------------------------
# accounting
# ---------------------------------------------------------------------------
def _rdp_epsilon(steps, delta):
    """Compose the steps with dp_accounting's RDP accountant (an independent
    implementation): Gaussian steps as GaussianDpEvent, exponential-mechanism
    steps as zCDP events of rho = epsilon^2 / 8 each."""
    acc = rdp.RdpAccountant(orders=np.concatenate([np.linspace(1.01, 10, 400),
                                                   np.linspace(10.5, 500, 300)]))
    for st in steps:
        if st.kind == "gaussian":
            acc.compose(dp_event.GaussianDpEvent(st.noise_multiplier), st.count)
        else:
            assert st.kind == "bounded-range"
            acc.compose(dp_event.ZCDpEvent(st.epsilon ** 2 / 8), st.count)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("epsilon, delta, relation", [
    (0.3, 1e-8, "replace"), (1.0, 1e-6, "replace"), (4.0, 1e-5, "add-remove"),
    (10.0, 1e-10, "replace"), (2.0, 1e-3, "add-remove")])
def test_composed_guarantee_matches_an_independent_accountant(epsilon, delta, relation):
    X = _gaussian_data(300, [1.0, 5.0, 0.2], 2.0, 1)
    r = P.private_mean(X, lower=-100, upper=100, epsilon=epsilon, delta=delta,
                       neighbouring=relation, scaling="scaled", rng=2)
    g = r.guarantee
    assert g.method == "zcdp" and g.delta == delta
    assert g.epsilon <= epsilon * (1 + 1e-9)          # the promise is kept ...
    assert g.epsilon >= epsilon * (1 - 1e-6)          # ... and the budget is spent
    assert r.rho == pytest.approx(zcdp_rho(epsilon, delta), rel=1e-9)
    independent = _rdp_epsilon(r.steps, delta)
    # the RDP accountant optimises over a grid of orders: never below ours
    assert g.epsilon <= independent * (1 + 1e-9)
    assert independent <= g.epsilon * 1.02
    names = [st.name for st in r.steps]
    expected = ["center", "radius", "scales", "clip", "mean", "diagnostics"]
    assert names == (["count"] + expected if relation == "add-remove" else expected)


@pytest.mark.parametrize("rho", [0.01, 0.125, 2.0])
def test_rho_budget_is_spent_exactly(rho):
    X = _gaussian_data(500, [1.0, 2.0], 0.0, 3)
    r = P.private_mean(X, lower=-50, upper=50, rho=rho, scaling="scaled", rng=4)
    assert r.rho == pytest.approx(rho, rel=1e-12)
    assert r.guarantee is None
    total = sum(st.count * (st.epsilon ** 2 / 8 if st.kind == "bounded-range"
                            else 0.5 / st.noise_multiplier ** 2) for st in r.steps)
    assert total == pytest.approx(rho, rel=1e-12)
    shares = r.budget.as_dict()
    for st in r.steps:
        assert st.rho == pytest.approx(shares[st.name] * rho, rel=1e-12)


def test_user_budget():
    X = _gaussian_data(500, [1.0, 2.0], 0.0, 5)
    split = {"center": 0.1, "radius": 0.02, "scales": 0.2, "clip": 0.03}
    r = P.private_mean(X, lower=-50, upper=50, rho=1.0, budget=split, scaling="scaled", rng=6)
    # the diagnostics (on by default) take their share from the mean's
    assert r.budget.mean == pytest.approx(0.65 - records.DIAGNOSTICS_SHARE)
    assert r.budget.diagnostics == records.DIAGNOSTICS_SHARE
    assert r.budget.scales == 0.2
    off = P.private_mean(X, lower=-50, upper=50, rho=1.0, budget=split, scaling="scaled",
                         rng=6, diagnostics=False)
    assert off.budget.mean == pytest.approx(0.65) and off.clip_count is None
    iso = P.private_mean(X, lower=-50, upper=50, rho=1.0, scaling="isotropic",
                         budget={"center": 0.1, "clip": 0.05}, rng=6)
    assert iso.scales is None and np.all(iso.scaling == 1.0)
    assert [st.name for st in iso.steps] == ["center", "clip", "mean", "diagnostics"]


# ---------------------------------------------------------------------------
# the record and the estimate
# ---------------------------------------------------------------------------
def test_record_holds_only_private_and_public_quantities():
    X = _gaussian_data(2000, [1.0, 3.0, 0.5, 10.0], 5.0, 7)
    r = P.private_mean(X, lower=-1e3, upper=1e3, epsilon=1.0, delta=1e-6, scaling="scaled",
                       rng=8)
    # a Release plus the pipeline's own fields
    fields = set(records.PipelineRelease.__dataclass_fields__)
    own = fields - set(records.Release.__dataclass_fields__)
    assert issubclass(records.PipelineRelease, records.Release)
    assert own == {"count", "scales", "budget", "steps", "guarantee", "strategy",
                   "outside_count", "grid_unit"}
    assert {"estimate", "statistic", "center", "scaling", "clip_norm", "clip_probability",
            "noise_std", "neighbouring", "rho", "secure", "lower", "upper", "columns",
            "clip_count", "clip_count_std", "notes", "accounting", "unprojected"} <= fields
    assert r.mechanism is records.Mechanism.PRIVATE_PIPELINE
    assert (r.epsilon, r.delta) == (r.guarantee.epsilon, r.guarantee.delta)
    assert r.strategy == "coordinate center, scaled"
    assert r.count == 2000 and r.statistic == "mean"
    assert r.clip_probability == pytest.approx(1 / 2000)
    # the scaling and noise are functions of the released scales and radius only
    np.testing.assert_allclose(r.scaling, P.robust_scaling(r.scales))
    s_mean = next(st for st in r.steps if st.name == "mean").noise_multiplier
    np.testing.assert_allclose(r.noise_std, s_mean * 2 * r.clip_norm / r.scaling / 2000)
    with pytest.raises(AttributeError):
        r.estimate = None


def test_mean_is_accurate_on_gaussian_data():
    stds = np.array([0.1, 1.0, 10.0, 100.0, 3.0, 0.3])
    mu = np.array([5.0, -20.0, 300.0, 0.0, 1.0, -1.0])
    n = 20_000
    X = _gaussian_data(n, stds, mu, 9)
    errs = []
    for seed in range(10):
        r = P.private_mean(X, lower=-1e4, upper=1e4, rho=0.5, scaling="scaled", rng=seed)
        errs.append((r.estimate - X.mean(axis=0)) / r.noise_std)
        # the private scales are within 30% (the scale step's tolerance at this n)
        assert np.all(np.abs(np.log(r.scales / stds)) < 0.3)
    z = np.array(errs)
    # against the empirical mean the error is the noise plus a small clipping
    # bias: standardised by the released noise_std it is N(0, 1)-like
    assert np.abs(z).max() < 5
    assert abs(z.mean()) < 5 / math.sqrt(z.size)


def test_sum_is_n_times_the_mean_and_add_remove_counts():
    X = _gaussian_data(3000, [1.0, 2.0, 4.0], 1.0, 10)
    m = P.private_mean(X, lower=-100, upper=100, rho=1.0, rng=11)
    s = P.private_sum(X, lower=-100, upper=100, rho=1.0, rng=11)
    np.testing.assert_allclose(s.estimate, 3000 * m.estimate, rtol=1e-12)
    np.testing.assert_allclose(s.noise_std, 3000 * m.noise_std, rtol=1e-12)
    a = P.private_sum(X, lower=-100, upper=100, rho=1.0, neighbouring="add-remove", rng=12)
    s_count = a.steps[0].noise_multiplier
    assert abs(a.count - 3000) < 5 * s_count
    assert np.all(np.abs(a.estimate - X.sum(axis=0)) < 5 * a.noise_std + 0.02 * 3000)
    am = P.private_mean(X, lower=-100, upper=100, rho=1.0, neighbouring="add-remove", rng=12)
    assert am.budget.count == P.SCALAR_SHARE


def test_isotropic_baseline_and_calibrated_radius():
    X = _gaussian_data(5000, np.ones(50), 0.0, 13)
    r = P.private_mean(X, lower=-100, upper=100, rho=1.0, scaling="isotropic", clip_probability=0.01,
                       rng=14)
    from scipy import stats
    # the radius targets the 0.99 quantile of ||x - c|| (chi with 50 dof)
    assert r.clip_norm == pytest.approx(math.sqrt(stats.chi2.ppf(0.99, 50)), rel=0.05)
    assert P.calibrated_clip_radius(2.0, np.ones(50), np.ones(50), 0.01) == pytest.approx(
        2.0 * math.sqrt(stats.chi2.isf(0.01, 50) / stats.chi2.isf(0.5, 50)), rel=1e-9)


def test_clip_radius_with_one_dominant_scale():
    # a failed center makes one coordinate's scale (and weight) dominate; the
    # model's median then lies below its mean. The radius must still exceed the
    # median norm for p_C < 1/2 and match a Monte Carlo quantile ratio.
    s = np.ones(512)
    s[0] = 739.0
    b = P.robust_scaling(s)
    weights = (b * s) ** 2
    draws = np.sum(weights * np.random.default_rng(5).chisquare(1, size=(20_000, 512)), axis=1)
    mc = math.sqrt(np.quantile(draws, 0.99) / np.median(draws))
    got = P.calibrated_clip_radius(1.0, s, b, 0.01)
    assert 1.0 < got
    # quantile ratio from 2e4 draws: the 0.99-quantile within ~2%, the median ~0.5%
    assert got == pytest.approx(mc, rel=0.05)


def test_data_outside_the_domain_is_clamped_not_an_error():
    X = _gaussian_data(2000, [1.0, 1.0], 0.0, 15)
    X[:100] += 1000.0           # 5% of the rows far outside the box
    r = P.private_mean(X, lower=-10, upper=10, rho=1.0, rng=16)
    assert np.all(np.isfinite(r.estimate))
    # the far rows are clipped: the estimate is near the bulk, not the raw mean (50)
    assert np.all(np.abs(r.estimate) < 2.0)


def test_robust_scaling_bounds_an_underestimated_scale():
    s = np.array([1.0, 1.0, 1.0, 1e-9])
    b = P.robust_scaling(s)
    b0 = P.robust_scaling(s, 0.0)
    # without the floor the tiny scale gets a weight 1e4 times the others'
    assert b0[3] / b0[0] == pytest.approx(math.sqrt(1e9), rel=1e-6)
    assert b[3] / b[0] < math.sqrt((1 + 0.1 * 0.75) / (0.1 * 0.75)) * (1 + 1e-9)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(epsilon=1.0, delta=1e-6, rho=1.0), TypeError, "either"),
    (dict(epsilon=1.0), TypeError, "budget"),
    (dict(rho=-1.0), ValueError, "rho"),
    (dict(epsilon=1.0, delta=2.0), ValueError, "delta"),
    (dict(rho=1.0, scaling="elliptical"), ValueError, "scaling"),
    (dict(rho=1.0, clip_probability=1.0), ValueError, "clip_probability"),
    (dict(rho=1.0, budget={"center": 0.1}), ValueError, "budget"),
    (dict(rho=1.0, budget={"center": 0.5, "radius": 0.2, "scales": 0.3, "clip": 0.1,
                           "spread": 0.01}), ValueError, "sum"),
    (dict(rho=1.0, budget=[0.1]), TypeError, "budget"),
    (dict(rho=1.0, regularization=-1.0), ValueError, "regularization"),
    (dict(rho=1.0, lower=0.0, upper=[1.0, 2.0, 3.0]), ValueError, "upper"),
    (dict(rho=1.0, neighbouring="swap"), ValueError, "neighbouring"),
])
def test_argument_errors_name_the_argument(kwargs, exc, match):
    X = np.ones((10, 2))
    kw = dict(lower=-1.0, upper=1.0)
    kw.update(kwargs)
    with pytest.raises(exc, match=match):
        P.private_mean(X, **kw)


def test_bad_data_is_refused_without_echoing_it():
    X = np.array([[1.0, 2.0], [np.nan, 3.0]])
    with pytest.raises(ValueError, match="X") as info:
        P.private_mean(X, lower=-1, upper=1, rho=1.0)
    assert "3.0" not in str(info.value)
    with pytest.raises(ValueError, match="X"):
        P.private_sum(np.ones(5), lower=-1, upper=1, rho=1.0)


def test_public_names():
    for name in ("private_mean", "private_sum", "PipelineRelease"):
        assert hasattr(dpsum, name), name
    assert hasattr(dpsum.release, "BudgetSplit")
    for name in ("default_budget", "private_center", "private_scales",
                 "private_norm_quantile", "exponential_quantile"):
        assert hasattr(dpsum.pipeline, name), name


# ---------------------------------------------------------------------------
# auditing the whole pipeline
# ---------------------------------------------------------------------------
_EPS, _DELTA = 2.0, 1e-5
_GEN = np.random.default_rng(20)
# two coordinates of very different scales; the neighbour replaces one row by
# a far value in the small coordinate (its standard deviation jumps 45-fold,
# its median absolute deviation does not move)
_D = np.column_stack([_GEN.standard_normal(400), 0.01 * _GEN.standard_normal(400)])
_D2 = _D.copy()
_D2[0] = [0.0, 9.0]
# one coordinate; the neighbour moves one row within the clip radius
_E = _GEN.standard_normal((400, 1))
_E2 = _E.copy()
_E2[0, 0] = 4.5


def _release(p):
    def release(data, gen):
        return P.private_mean(data, lower=-10, upper=10, epsilon=_EPS, delta=_DELTA,
                              clip_probability=p, scaling="scaled", rng=gen).estimate
    return release


def _audit_scales(seed):
    # p_C = 1/2 skips the generalized chi-square quantile (post-processing only)
    return epsilon_lower_bound(_release(0.5), _D, _D2, delta=_DELTA, n_samples=2000,
                               rng=seed, direction=[0.0, 1.0])


def _audit_noise(seed):
    # p_C = 1e-6: the radius covers every row, so that without the mean's
    # noise the release would be the exact mean (one coordinate: the model
    # quantile ratio is cached)
    # the audit's upper test asks for events likelier on the first dataset: the
    # neighbour's moved row raises its mean, so project on -1
    return epsilon_lower_bound(_release(1e-6), _E, _E2, delta=_DELTA, n_samples=2000,
                               rng=seed, direction=[-1.0])


@pytest.mark.slow
def test_audit_of_the_correct_pipeline_passes():
    assert _audit_scales(21).epsilon_lower_bound <= _EPS
    assert _audit_noise(22).epsilon_lower_bound <= _EPS


def test_audit_catches_non_private_scales(monkeypatch):
    def exact_scales(t, eps, lo, hi, du, gen):
        # the root mean square of |x - c| from the pass's values log |x - c|:
        # from the data, no noise
        return np.maximum(np.sqrt(np.mean(np.exp(2.0 * t), axis=0)), 1e-6)
    monkeypatch.setattr(pipeline_mean, "scales_from_values", exact_scales)
    assert _audit_scales(23).epsilon_lower_bound > _EPS


def test_audit_catches_a_skipped_noise(monkeypatch):
    real = pipeline_mean.deviation_accumulator

    def no_mean_noise(C, b, center, **kw):      # the clipped sums' noise, all but gone
        return real(C, b, center, **{**kw, "multiplier": 1e-9})
    monkeypatch.setattr(pipeline_mean, "deviation_accumulator", no_mean_noise)
    assert _audit_noise(24).epsilon_lower_bound > _EPS


# ---------------------------------------------------------------------------
# the adaptive steps (scaling="adaptive", the default)
# ---------------------------------------------------------------------------
def test_adaptive_choice_follows_the_spread_of_the_scales():
    iso = _gaussian_data(4000, np.ones(64), 3.0, 30)
    unequal = _gaussian_data(4000, np.sqrt(64 / np.arange(1, 65)) ** 2, 3.0, 31)
    for seed in range(3):
        a = P.private_mean(iso, lower=-200, upper=200, rho=0.25, rng=seed)
        assert a.strategy == "coordinate center, isotropic" and a.scales is None
        # the shares of the skipped steps went to the mean
        assert a.budget.scales == a.budget.clip == 0.0
        assert a.budget.mean == pytest.approx(
            1 - a.budget.center - a.budget.radius - a.budget.spread - a.budget.diagnostics
            - a.budget.check, rel=1e-12)
        u = P.private_mean(unequal, lower=-200, upper=200, rho=0.25, rng=seed)
        assert u.strategy == "coordinate center, scaled" and u.scales is not None


def test_heterogeneity_estimates_the_gain_of_scaling():
    gen = np.random.default_rng(32)
    for sigma in (np.ones(200), np.geomspace(0.1, 10, 200)):
        X = gen.standard_normal((20_000, 200)) * sigma
        l1 = np.median(np.abs(X).sum(axis=1))
        l2 = np.median(np.linalg.norm(X, axis=1))
        want = sigma.sum() ** 2 / (200 * np.sum(sigma ** 2))
        # medians of 2e4 norms: relative errors of a few 1e-3
        assert A.heterogeneity(l1, l2, 200) == pytest.approx(want, rel=0.03)


def test_heavy_tails_with_equal_scales_stay_isotropic():
    # the L1/L2 ratio is calibrated on Gaussian coordinates: Student-t rows
    # (3 degrees of freedom) with equal scales read G well below 1, as unequal
    # scales would; ISOTROPY_MARGIN keeps them isotropic (the shares of the
    # tails target, n = 2000, d = 50: the mean's 0.80 scaled, 0.88 isotropic)
    gen = np.random.default_rng(35)
    d = 50
    t3 = gen.standard_t(3, size=(20_000, d))
    g_t3 = A.heterogeneity(np.median(np.abs(t3).sum(axis=1)),
                           np.median(np.linalg.norm(t3, axis=1)), d)
    assert 0.7 < g_t3 < 0.85
    assert not A.prefer_scaled(g_t3, 0.80, 0.88)
    # the margin of 0.05 that came before chose scaling here
    assert A.scaled_error_ratio(g_t3, 0.80, 0.88) * 1.05 < 1.0
    # Gaussian rows with scales 100 times apart keep the scaled clipping
    sigma = np.geomspace(0.1, 10, d)
    un = gen.standard_normal((20_000, d)) * sigma
    g_un = A.heterogeneity(np.median(np.abs(un).sum(axis=1)),
                           np.median(np.linalg.norm(un, axis=1)), d)
    assert A.prefer_scaled(g_un, 0.80, 0.88)


def test_shrinkage_pools_noise_and_keeps_real_differences():
    gen = np.random.default_rng(33)
    tau2 = 0.04
    noisy = np.exp(gen.normal(0.0, math.sqrt(tau2), 500))       # equal true scales
    pooled, factor = A.shrink_log_scales(noisy, tau2)
    assert factor == pytest.approx(1.0, abs=0.15)
    assert np.std(np.log(pooled)) < 0.1 * np.std(np.log(noisy))
    spread = np.geomspace(0.01, 100, 500) * noisy                 # unequal true scales
    kept, factor = A.shrink_log_scales(spread, tau2)
    assert factor < 0.01
    np.testing.assert_allclose(np.log(kept), np.log(spread), atol=0.1)


def test_log_scale_noise_variance_matches_simulation():
    from dpsum.pipeline.quantiles import scales_step
    gen = np.random.default_rng(34)
    n, d, eps = 2000, 400, 0.05
    X = gen.standard_normal((n, d))
    s = scales_step(X, np.zeros(d), eps, np.full(d, 1e-6), np.full(d, 100.0), 1.0, gen)
    tau2 = A.log_scale_noise_variance(eps, n, 1.0, pipeline_mean._LOG_MAD_DENSITY)
    var = np.var(np.log(s))
    # a variance from 400 coordinates: relative standard error sqrt(2/400) ~ 7%
    assert var == pytest.approx(tau2, rel=0.3)


@pytest.mark.parametrize("n, d, half, relation, strategy", [
    (3000, 20, 1000.0, "replace", "vector center"),
    (1500, 20, 1000.0, "add-remove", "vector center"),
    (300, 20, 1000.0, "replace", "box"),
    (2000, 20, 5.0, "replace", "box"),
    (300, 20, 4.0, "replace", "box"),
    (300, 20, 4.0, "add-remove", "box"),
])
def test_small_data_strategies_spend_the_budget_exactly(n, d, half, relation, strategy):
    X = _gaussian_data(n, np.ones(d), 0.5, 35)
    if strategy == "box":
        # rows at the corners of the box: no ball around a center is smaller
        X = np.where(X > 0.5, half, -half) * np.random.default_rng(1).uniform(0.9, 1, X.shape)
    with pytest.warns(UserWarning, match="too few rows"):
        r = P.private_mean(X, lower=-half, upper=half, epsilon=1.0, delta=1e-6,
                           neighbouring=relation, rng=36)
    assert r.strategy.startswith(strategy)
    assert sum(r.budget.as_dict().values()) == pytest.approx(1.0, rel=1e-12)
    assert r.guarantee.epsilon <= 1.0 * (1 + 1e-9)
    if r.guarantee.method == "branch":
        # the box chosen by the first count alone, under replace-one: the
        # (epsilon, delta) promise by the bound over every path (appendix A3;
        # tests/test_pipeline_spend.py recomputes it), with more than rho in zCDP
        assert relation == "replace" and [st.name for st in r.steps][0] == "decision"
        assert r.guarantee.epsilon == 1.0 and r.guarantee.delta <= 1e-6
        assert sum(st.rho for st in r.steps) > zcdp_rho(1.0, 1e-6) * 1.05
        return
    # every step's rho, the recorded total and the (epsilon, delta) promise
    assert sum(st.rho for st in r.steps) == pytest.approx(zcdp_rho(1.0, 1e-6), rel=1e-9)
    independent = _rdp_epsilon(r.steps, 1e-6)
    assert r.guarantee.epsilon <= independent * (1 + 1e-9) <= r.guarantee.epsilon * 1.02


def test_box_strategy_noise_law():
    # the box release is the Elliptical Gaussian mechanism: given the count,
    # (estimate - clamped mean) / noise_std is standard normal in every coordinate
    gen = np.random.default_rng(37)
    n, d, R = 300, 5, 400
    X = np.where(_gaussian_data(n, np.ones(d), 0.5, 38) > 0.5, 4.0, -4.0)
    X *= gen.uniform(0.9, 1.0, X.shape)
    X[0] = 6.0                                  # one row outside the box: clamped
    target = np.clip(X, -4, 4).mean(axis=0)
    z = []
    for _ in range(R):
        with pytest.warns(UserWarning):
            r = P.private_mean(X, lower=-4, upper=4, rho=0.002, rng=gen)
        assert r.strategy == "box"
        z.append((r.estimate - target) / r.noise_std)
    z = np.array(z).ravel()
    m = z.size
    assert abs(z.mean()) < 4 / math.sqrt(m)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / m)


def test_vector_center_contracts_toward_the_data():
    X = _gaussian_data(2000, np.ones(30), 40.0, 39)
    with pytest.warns(UserWarning, match="whole vector"):
        r = P.private_mean(X, lower=-1000, upper=1000, rho=0.02, rng=40)
    # from the box's midpoint (0, distance 219) to about the data's spread (sqrt 30)
    assert np.linalg.norm(r.center - 40.0) < 2 * math.sqrt(30)
    assert np.linalg.norm(r.estimate - 40.0) < 1.0


# rows uniform in the unit disk: the moves' clip radius (about twice the
# median norm) exceeds every norm, so a move without noise is the exact mean;
# the neighbour moves one row across the disk
_F = np.sqrt(_GEN.uniform(0, 1, (400, 1))) * np.exp(1j * _GEN.uniform(0, 2 * np.pi, (400, 1)))
_F = np.column_stack([_F.real, _F.imag]).reshape(400, 2)
_F[0] = [-0.9, 0.0]
_F2 = _F.copy()
_F2[0] = [0.9, 0.0]


def _center_release(data, gen):
    # 400 rows, two coordinates: the coordinate-wise center's reliable share
    # does not fit, so the center is a whole-vector center (its moves are clipped means)
    return P.private_mean(data, lower=-10, upper=10, epsilon=_EPS, delta=_DELTA, rng=gen,
                          diagnostics=False).center


def _audit_center(seed):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return epsilon_lower_bound(_center_release, _F, _F2, delta=_DELTA, n_samples=2000,
                                   rng=seed, direction=[-1.0, 0.0])


@pytest.mark.slow
def test_audit_of_the_vector_center_passes():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert P.private_mean(_F, lower=-10, upper=10, epsilon=_EPS, delta=_DELTA,
                              rng=0).strategy.startswith("vector center")
    assert _audit_center(25).epsilon_lower_bound <= _EPS


@pytest.mark.slow
def test_audit_catches_a_vector_center_without_noise(monkeypatch):
    real = pipeline_mean.deviation_accumulator

    def no_vector_noise(C, b, center, **kw):    # the center's moves (and the mean) all but noise-free
        return real(C, b, center, **{**kw, "multiplier": 1e-9})
    monkeypatch.setattr(pipeline_mean, "deviation_accumulator", no_vector_noise)
    assert _audit_center(26).epsilon_lower_bound > _EPS


# ---------------------------------------------------------------------------
# the small-data rule (issue 28): scalar margin, fewer moves, the decision count
# ---------------------------------------------------------------------------
def test_plan_settings_keep_their_strategy():
    # the rule for few rows must not reach PLAN's 89 settings (n >= 4000,
    # rho >= 1/16): their public plan is frozen in tests/data
    import csv
    from pathlib import Path
    from dpsum.design.scaling import Scaling
    from dpsum.privacy.neighbouring import Neighbouring
    path = Path(__file__).parent / "data" / "pipeline_plan_strategies.csv"
    rows = list(csv.DictReader(ln for ln in path.read_text().splitlines()
                               if not ln.startswith("#")))
    assert len(rows) == 89
    modes = set()
    for row in rows:
        n, d, rho = float(row["n"]), int(row["d"]), float(row["rho"])
        plan = pipeline_mean._default_split(n, d, rho, Neighbouring.REPLACE, Scaling.ADAPTIVE)
        assert plan.mode == row["mode"] and plan.moves == int(row["moves"]), row
        assert plan.decision == pytest.approx(float(row["decision"]), rel=1e-12, abs=1e-15)
        for key, share in plan.split.as_dict().items():
            if key in row:
                assert share == pytest.approx(float(row[key]), rel=1e-12, abs=1e-15), (row, key)
        modes.add(plan.mode)
    assert modes == {"coordinate", "vector"}     # never the box, never the small-n variants
    assert all(int(r["moves"]) in (0, pipeline_mean.VECTOR_STEPS) for r in rows)


@pytest.mark.parametrize("n, mode", [(40, "box"), (70, "vector"), (100, "vector")])
def test_small_vector_center_is_isotropic_with_reliable_radii(n, mode):
    from dpsum.design.scaling import Scaling
    from dpsum.privacy.neighbouring import Neighbouring
    d, rho = 8, 0.5
    plan = pipeline_mean._default_split(float(n), d, rho, Neighbouring.REPLACE, Scaling.ADAPTIVE)
    b = plan.split
    assert plan.mode == mode
    assert math.isclose(sum(b.as_dict().values()), 1.0, rel_tol=1e-12)
    reliable = (4 * P.SCALAR_MARGIN / n) ** 2 / 8 / rho       # one scalar quantile, margin 12
    if mode == "box":
        assert b.mean == 1.0 and plan.moves == 0
        return
    # too few rows for the scaled choice: no spread, scales or clip steps;
    # the radii keep their reliable share, the preparation at most half
    assert b.spread == b.scales == b.clip == 0.0
    assert b.radius == pytest.approx(reliable, rel=1e-12)
    assert 1 <= plan.moves <= pipeline_mean.VECTOR_STEPS
    assert b.mean >= 1 - A.MAX_PREPARATION_SHARE - 1e-12
    move = A.vector_center_shares(n, d, rho, Neighbouring.REPLACE, b.radius, 0.15)
    assert b.center == pytest.approx(plan.decision + plan.moves * (b.radius + move), rel=1e-12)
    # the release follows the plan: at most plan.moves Gaussian moves
    X = _gaussian_data(n, np.geomspace(4, 0.25, d), 30.0, 41)
    with pytest.warns(UserWarning, match="too few rows"):
        r = P.private_mean(X, lower=-100, upper=100, rho=rho, rng=42)
    assert r.strategy == "vector center, isotropic"
    moves = [st for st in r.steps if st.name == "center" and st.kind == "gaussian"]
    assert 1 <= len(moves) <= plan.moves
    assert sum(st.rho for st in r.steps) <= rho * (1 + 1e-12)


def _decision_data(n_near, seed):
    """400 rows in [-10, 10]^2: ``n_near`` within the break-even distance of the
    midpoint, the others near the corners (beyond it)."""
    from dpsum.design.scaling import Scaling
    from dpsum.privacy.neighbouring import Neighbouring
    n, d = 400, 2
    rho = pipeline_mean._zcdp_rho(_EPS, _DELTA)
    plan = pipeline_mean._default_split(float(n), d, rho, Neighbouring.REPLACE, Scaling.ADAPTIVE)
    assert plan.mode == "vector"
    rest = 1.0 - plan.decision
    ratio = P.calibrated_clip_radius(1.0, np.ones(d), np.ones(d), 1 / n)
    r_star = A.break_even_radius(np.full(d, 20.0), n, d, rest * rho, plan.split.mean * rho,
                                 2.0, ratio)
    assert 2.0 < r_star < 12.0                    # between the bulk and the corners
    gen = np.random.default_rng(seed)
    X = gen.uniform(-1.0, 1.0, (n, d))
    corner = np.sign(gen.uniform(-1, 1, (n - n_near, d))) * gen.uniform(9.0, 9.9, (n - n_near, d))
    X[n_near:] = corner
    assert int(np.sum(np.linalg.norm(X, axis=1) <= r_star)) == n_near
    return X, plan, rho


def test_decision_count_output_law():
    # the first count says box when the Gaussian count of rows within the
    # break-even distance is at most n/2: Pr[box] = Phi((n/2 - near) /
    # (DECISION_NOISE n)); it then asks a second count (after the first move)
    from scipy import stats
    import warnings
    near, R = 240, 400
    X, plan, rho = _decision_data(near, 43)
    sd = A.DECISION_NOISE * 400
    want = stats.norm.cdf((200 - near) / sd)                  # 0.159
    gen = np.random.default_rng(44)
    boxes = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(R):
            r = P.private_mean(X, lower=-10, upper=10, epsilon=_EPS, delta=_DELTA, rng=gen,
                               diagnostics=False)
            decisions = [st.name for st in r.steps].count("decision")
            assert decisions in (1, 2) and (decisions == 2 or r.strategy != "box")
            boxes += decisions == 2
    se = math.sqrt(want * (1 - want) / R)
    assert abs(boxes / R - want) < 4 * se


def test_decision_count_accounting():
    # the decision is one Gaussian count of sensitivity 1 with standard
    # deviation DECISION_NOISE n; recomputed independently, and the whole
    # release composed by dp_accounting's RDP accountant
    import warnings
    X, plan, rho = _decision_data(300, 45)
    for seed in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            r = P.private_mean(X, lower=-10, upper=10, epsilon=_EPS, delta=_DELTA, rng=seed)
        (dec,) = [st for st in r.steps if st.name == "decision"]
        assert dec.kind == "gaussian" and dec.count == 1
        assert dec.noise_multiplier == pytest.approx(A.DECISION_NOISE * 400, rel=1e-9)
        assert dec.rho == pytest.approx(1 / (2 * (0.1 * 400) ** 2), rel=1e-9)
        assert dec.rho == pytest.approx(plan.decision * rho, rel=1e-9)
        # clipping around the centre, or the box when the bias check predicts
        # that clipping loses to it (the corners' rows)
        assert r.strategy.startswith("vector center") or r.strategy == "box (bias check)"
        assert sum(st.rho for st in r.steps) == pytest.approx(rho, rel=1e-9)
        assert _rdp_epsilon(r.steps, _DELTA) <= _EPS * 1.02


def _decision_release(data, gen):
    return np.array([float(P.private_mean(data, lower=-10, upper=10, epsilon=_EPS, delta=_DELTA,
                                          rng=gen, diagnostics=False).strategy == "box")])


def _audit_decision(seed):
    import warnings
    # 201 rows within the break-even distance, and the neighbour moves one of
    # them to a corner: without noise the count decides clip on one, box on the other
    X, _, _ = _decision_data(201, 46)
    X2 = X.copy()
    X2[0] = [9.5, 9.5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return epsilon_lower_bound(_decision_release, X2, X, delta=_DELTA, n_samples=600,
                                   rng=seed, direction=[1.0])


@pytest.mark.slow
def test_audit_of_the_decision_passes():
    assert _audit_decision(47).epsilon_lower_bound <= _EPS


def test_audit_catches_a_decision_without_noise(monkeypatch):
    real = pipeline_mean._gaussian_noise

    def no_scalar_noise(gen, std, size=None):   # the scalar draws (the decision count) noise-free
        return real(gen, std, size) * (0.0 if size is None else 1.0)
    monkeypatch.setattr(pipeline_mean, "_gaussian_noise", no_scalar_noise)
    assert _audit_decision(48).epsilon_lower_bound > _EPS
