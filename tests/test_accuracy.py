"""Tests of dpsum.accuracy: exact quantiles, coverage by simulation, planning round trips.

Coverage tolerances. An interval of exact level ``1 - beta`` checked on ``R``
independent releases has an observed coverage that is Binomial(R, 1 - beta)
/ R, with standard error ``se = sqrt(beta (1 - beta) / R)``. Exact intervals
must lie within ``4 se`` of ``1 - beta`` (two-sided; a false failure has
probability 6e-5 per check, and the seeds are fixed). Conservative ones (the
binary intervals, whose outputs are discrete, and the total-error bound,
which uses a union bound and Chebyshev) must reach at least
``1 - beta - 4 se``. Per-coordinate intervals pool the ``R d`` coordinate
checks, which are independent because the noise coordinates are.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import dpsum
from dpsum import accuracy as acc
from dpsum import binary
from dpsum.design import clipping_loss
from dpsum.kernels import grid
from dpsum.release import noise, records
from dpsum.kernels.grid import clipped_sum
from dpsum.release.noise import ConfidenceBall

BETA = 0.1
Z_TOL = 4.0


def tolerance(R: int, beta: float = BETA) -> float:
    return Z_TOL * math.sqrt(beta * (1 - beta) / R)


# ---------------------------------------------------------------- exact quantiles


def _mp_sf_two_weights(x, w1, w2):
    """Pr[w1 Z1^2 + w2 Z2^2 > x] by one-dimensional quadrature in mpmath."""
    x, w1, w2 = mp.mpf(x), mp.mpf(w1), mp.mpf(w2)
    a = mp.sqrt(x / w2)
    phi = lambda z: mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi)  # noqa: E731
    inner = mp.quad(lambda z: phi(z) * mp.erfc(mp.sqrt(max(x - w2 * z * z, 0) / (2 * w1))), [-a, 0, a])
    return inner + mp.erfc(a / mp.sqrt(2))


@pytest.mark.parametrize("stds, beta", [
    ((1.0, 0.5), 0.05),
    ((1.0, 0.5), 1e-6),
    ((3.0, 0.1), 0.2),
])
def test_norm_quantile_matches_mpmath_two_weights(stds, beta):
    mp.mp.dps = 30
    w1, w2 = stds[0] ** 2, stds[1] ** 2
    guess = dpsum.GeneralizedChiSquare([w1, w2]).isf(beta)
    x = mp.findroot(lambda t: _mp_sf_two_weights(t, w1, w2) - beta, guess)
    assert math.isclose(noise.noise_norm_quantile(stds, beta), float(mp.sqrt(x)), rel_tol=1e-11)


@pytest.mark.parametrize("d, s, beta", [(3, 2.0, 0.05), (50, 1e-3, 1e-9), (1, 7.0, 0.3)])
def test_norm_quantile_matches_mpmath_isotropic(d, s, beta):
    mp.mp.dps = 30
    # ||e||^2 / s^2 is chi-square with d degrees of freedom
    guess = stats.chi2.isf(beta, d)  # a starting point only; the root is mpmath's
    x = mp.findroot(lambda t: mp.log(mp.gammainc(mp.mpf(d) / 2, t / 2, mp.inf, regularized=True))
                    - mp.log(beta), guess)
    assert math.isclose(noise.noise_norm_quantile(np.full(d, s), beta), s * float(mp.sqrt(x)),
                        rel_tol=1e-11)


@pytest.mark.parametrize("beta", [0.5, 0.05, 1e-12])
def test_coordinate_quantile_matches_mpmath(beta):
    mp.mp.dps = 30
    s = np.array([1.0, 0.3, 250.0])
    z = float(mp.sqrt(2) * mp.erfinv(1 - mp.mpf(beta)))
    np.testing.assert_allclose(noise.noise_coordinate_quantile(s, beta), s * z, rtol=1e-12)
    assert isinstance(noise.noise_coordinate_quantile(2.0, beta), float)


def test_norm_quantile_works_at_extreme_scales():
    base = noise.noise_norm_quantile([1.0, 0.2, 0.04], 0.01)
    for scale in (1e-150, 1e150):
        assert math.isclose(noise.noise_norm_quantile(np.array([1.0, 0.2, 0.04]) * scale, 0.01),
                            base * scale, rel_tol=1e-12)


# ---------------------------------------------------------------- coverage by simulation

STDS = np.array([3.0, 1.5, 1.0, 0.4, 0.1])
DATA = np.random.default_rng(7).normal(0.0, STDS, size=(200, 5))
BOX = np.array([4.0, 2.0, 2.0, 1.0, 0.5])


def _clipped_target(release, X, center=None):
    scaled, _ = clipped_sum(X, release.clip_norm, release.scaling, center)
    out = scaled / release.scaling
    return out if center is None else out + X.shape[0] * center


MECHANISMS = {
    "the Gaussian mechanism": (lambda rng: dpsum.gaussian_mechanism(DATA.sum(axis=0), epsilon=1.0, delta=1e-6,
                                                         sensitivity=2.0, rng=rng),
                    lambda rel: DATA.sum(axis=0)),
    "the Elliptical Gaussian mechanism": (lambda rng: dpsum.elliptical_gaussian_mechanism(DATA, epsilon=1.0, delta=1e-6,
                                                                    lower=-0.5 * np.asarray(BOX), upper=0.5 * np.asarray(BOX), rng=rng),
                    lambda rel: np.clip(DATA, -BOX / 2, BOX / 2).sum(axis=0)),
    "the Gaussian-data mechanism": (lambda rng: dpsum.gaussian_data_mechanism(DATA, epsilon=1.0, delta=1e-6,
                                                              stds=STDS, clip_probability=0.05,
                                                              center=np.full(5, 0.2), rng=rng),
                    lambda rel: _clipped_target(rel, DATA, np.full(5, 0.2))),
    "clipping baseline": (lambda rng: dpsum.clipped_gaussian_mechanism(
        DATA, epsilon=1.0, delta=1e-6, clip_norm=2.0, neighbouring="add-remove", rng=rng),
        lambda rel: _clipped_target(rel, DATA)),
}


def test_laplace_intervals_cover_exactly_and_its_ball_is_refused():
    rng = np.random.default_rng(13)
    target = DATA.sum(axis=0)
    R, d = 4000, DATA.shape[1]
    marginal = box = 0
    for _ in range(R):
        rel = dpsum.laplace_mechanism(target, epsilon=1.0, sensitivity=5.0, rng=rng)
        lo, hi = rel.confidence_intervals(BETA)
        marginal += int(np.sum((lo <= target) & (target <= hi)))
        lo, hi = rel.confidence_intervals(BETA, simultaneous=True)
        box += bool(np.all((lo <= target) & (target <= hi)))
    assert abs(marginal / (R * d) - (1 - BETA)) <= tolerance(R * d)
    assert abs(box / R - (1 - BETA)) <= tolerance(R)
    with pytest.raises(ValueError, match="Laplace"):
        rel.confidence_ball(BETA)


def _alg1_grid_target(rel):
    return np.ldexp(np.array(grid.round_to_grid(DATA.sum(axis=0), rel.grid_exponent),
                             dtype=float), rel.grid_exponent)


def _alg3_grid_target(rel):
    S, K, _ = grid.grid_clipped_sum(DATA, rel.clip_norm, rel.scaling, rel.center)
    assert K == rel.grid_exponent
    return np.ldexp(np.array(S, dtype=float), K) / rel.scaling


SECURE = {
    "the Gaussian mechanism": (lambda rng: dpsum.gaussian_mechanism(
        DATA.sum(axis=0), epsilon=1.0, delta=1e-6, sensitivity=2.0, secure=True, rng=rng),
        _alg1_grid_target),
    "the Gaussian-data mechanism": (lambda rng: dpsum.gaussian_data_mechanism(
        DATA, epsilon=1.0, delta=1e-6, stds=STDS, secure=True, rng=rng, center=0), _alg3_grid_target),
}


@pytest.mark.parametrize("name", list(SECURE))
def test_grid_path_intervals_cover(name):
    # the grid path protects the statistic rounded to the grid; its noise is u_j Z_j
    # with Z_j discrete Gaussian, so the statements are bounds (coverage >= 1 - beta)
    release_of, target_of = SECURE[name]
    rng = np.random.default_rng(17)
    R, d = 2000, DATA.shape[1]
    first = release_of(rng)
    target = target_of(first)
    _, unit = noise.grid_noise_law(first)
    radius = first.confidence_ball(BETA).radius
    ball = marginal = box = 0
    for _ in range(R):
        rel = release_of(rng)
        assert np.allclose(rel.estimate / unit, np.round(rel.estimate / unit), atol=1e-6)
        ball += np.linalg.norm(rel.estimate - target) <= radius
        lo, hi = rel.confidence_intervals(BETA)
        marginal += int(np.sum((lo <= target) & (target <= hi)))
        lo, hi = rel.confidence_intervals(BETA, simultaneous=True)
        box += bool(np.all((lo <= target) & (target <= hi)))
    assert ball / R >= 1 - BETA - tolerance(R)
    assert box / R >= 1 - BETA - tolerance(R)
    assert marginal / (R * d) >= 1 - BETA - tolerance(R * d)
    # the bound costs at most one grid unit per coordinate over the continuous radius
    cont = noise.noise_norm_quantile(first.noise_std, BETA)
    assert cont < radius <= cont + np.linalg.norm(unit) * (1 + 1e-12)


def test_grid_path_total_error_is_refused():
    rel = dpsum.gaussian_data_mechanism(DATA, epsilon=1.0, delta=1e-6, stds=STDS, secure=True,
                                        rng=0, center=0)
    with pytest.raises(ValueError, match="grid path"):
        acc.release_error_bound(rel, BETA, stds=STDS, n=DATA.shape[0])


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_ball_and_intervals_cover_exactly(name):
    release_of, target_of = MECHANISMS[name]
    rng = np.random.default_rng(11)
    R = 2000
    ball = marginal = box = 0
    radius = None
    for r in range(R):
        rel = release_of(rng)
        target = target_of(rel)
        if r < 10:  # public quantities only: the radius is the same for every release
            radius = radius or rel.confidence_ball(BETA).radius
            assert rel.confidence_ball(BETA).radius == radius
        ball += ConfidenceBall(rel.estimate, radius, BETA).contains(target)
        lo, hi = rel.confidence_intervals(BETA)
        marginal += int(np.sum((lo <= target) & (target <= hi)))
        lo, hi = records.confidence_intervals(rel, BETA, simultaneous=True)
        box += bool(np.all((lo <= target) & (target <= hi)))
    d = DATA.shape[1]
    assert abs(ball / R - (1 - BETA)) <= tolerance(R)
    assert abs(box / R - (1 - BETA)) <= tolerance(R)
    assert abs(marginal / (R * d) - (1 - BETA)) <= tolerance(R * d)


def test_total_error_bound_covers_the_true_sum_and_noise_alone_does_not():
    # small n, a large clip probability and a large epsilon: the clipping loss
    # is a visible part of the error, so ignoring it must fail
    stds, n, p, R = np.array([2.0, 1.0, 0.5]), 60, 0.3, 2000
    rng = np.random.default_rng(3)
    bound = None
    covered = noise_only = 0
    for _ in range(R):
        X = rng.normal(0.0, stds, size=(n, 3))  # the model is public: data redrawn from it
        rel = dpsum.gaussian_data_mechanism(X, epsilon=30.0, delta=1e-6, stds=stds,
                                            clip_probability=p, rng=rng, center=0,
                                            diagnostics=False)
        if bound is None:
            bound = acc.release_error_bound(rel, BETA, stds=stds, n=n)
            radius = noise.noise_norm_quantile(rel.noise_std, BETA)
            assert math.isclose(bound.noise_beta + bound.bias_beta, BETA, rel_tol=1e-12)
            assert bound.bias_radius > bound.noise_radius  # the loss dominates here
        err = np.linalg.norm(rel.estimate - X.sum(axis=0))
        covered += err <= bound.bound
        noise_only += err <= radius
    assert covered / R >= 1 - BETA - tolerance(R)
    assert noise_only / R < 1 - BETA - tolerance(R)
    planned = acc.gaussian_data_error_bound(stds, n, epsilon=30.0, delta=1e-6, beta=BETA,
                                            clip_probability=p)
    assert math.isclose(planned.bound, bound.bound, rel_tol=1e-9)


@pytest.mark.parametrize("name", ["randomized response", "binomial", "sample and threshold"])
def test_count_interval_covers(name):
    rng = np.random.default_rng(5)
    bits = (rng.random(2000) < 0.2).astype(int)
    k = int(bits.sum())
    if name == "randomized response":
        bits, k = bits[:300], int(bits[:300].sum())
        release_of = lambda: dpsum.randomized_response(bits, epsilon=1.0, rng=rng)  # noqa: E731
    elif name == "binomial":
        release_of = lambda: dpsum.binomial_noise_mechanism(  # noqa: E731
            bits, epsilon=1.0, delta=1e-3, rng=rng)
    else:
        release_of = lambda: dpsum.sample_and_threshold(  # noqa: E731
            bits, epsilon=1.0, delta=1e-6, rng=rng)
    R = 800
    hits = sum(lo <= k <= hi for lo, hi in (binary.count_interval(release_of(), BETA) for _ in range(R)))
    assert hits / R >= 1 - BETA - tolerance(R)


def test_count_interval_is_the_exact_inversion():
    # binomial noise: Y = k + Binomial(n, p); the interval is {k : both tails > beta/2}
    rel = dpsum.binomial_noise_mechanism(np.ones(1000, dtype=int), epsilon=1.0, delta=1e-3, rng=1)
    lo, hi = binary.count_interval(rel, 0.05)
    ks = np.arange(rel.n + 1)
    y, n, p = rel.output, rel.n, rel.probability
    inside = (stats.binom.sf(y - ks - 1, n, p) > 0.025) & (stats.binom.cdf(y - ks, n, p) > 0.025)
    assert lo == ks[inside].min() and hi == ks[inside].max()
    assert lo <= 1000 <= hi
    # sample-and-threshold below the threshold: the interval starts at 0
    st = dpsum.sample_and_threshold(np.zeros(50, dtype=int), epsilon=1.0, delta=1e-6, rng=2)
    assert not st.released and binary.count_interval(st, 0.05)[0] == 0


# ---------------------------------------------------------------- the clipping loss


def test_loss_moment_exact_and_grouped():
    stds = np.array([2.0, 1.0, 0.7, 0.5, 0.3, 0.2])
    b = dpsum.design.gaussian_data_scaling(stds)
    C = dpsum.clip_radius(stds, 0.05, b)
    exact = acc.clipping_loss_moment(stds, b, C, levels=6)
    grouped = acc.clipping_loss_moment(stds, b, C, levels=2)
    assert exact <= grouped <= 1.5 * exact  # rounding the added weights up bounds it above
    rng = np.random.default_rng(9)
    X = rng.normal(0.0, stds, size=(400_000, 6))
    R = np.linalg.norm(X * b, axis=1)
    loss = np.clip(1 - C / R, 0, None) ** 2 * np.sum(X * X, axis=1)
    se = loss.std(ddof=1) / math.sqrt(loss.size)
    assert abs(loss.mean() - exact) < 4 * se
    # quadrature: the default nodes against 64
    default = clipping_loss.LAGUERRE_NODES
    try:
        clipping_loss.LAGUERRE_NODES = 64
        fine = acc.clipping_loss_moment(stds, b, C, levels=6)
    finally:
        clipping_loss.LAGUERRE_NODES = default
    assert math.isclose(exact, fine, rel_tol=1e-6)
    # scale-free: stds and C scaled together (b fixed) scale the moment by the square
    assert math.isclose(acc.clipping_loss_moment(stds * 1e100, b, C * 1e100, levels=6),
                        exact * 1e200, rel_tol=1e-10)


# ---------------------------------------------------------------- planning round trips

ZIPF10 = 1.0 / np.arange(1, 11)


@pytest.mark.parametrize("scaling, include_bias", [("scaled", True), ("isotropic", True),
                                                   ("scaled", False)])
def test_plan_n_round_trip(scaling, include_bias):
    kw = dict(epsilon=1.0, delta=1e-6, beta=0.05, scaling=scaling, include_bias=include_bias)
    target = 0.02
    n = acc.plan_n(target, stds=ZIPF10, **kw)
    at = lambda m: acc.gaussian_data_error_bound(ZIPF10, m, statistic="mean", **kw).bound  # noqa: E731
    assert at(n) <= target < at(n - 1)
    # truly the smallest, not only against n - 1: no smaller n meets the target
    # (the bound need not be monotone in n: with p_C = 1/n the radius grows)
    smaller = np.unique(np.geomspace(2, n - 2, 24).astype(int))
    assert all(at(int(m)) > target for m in smaller)


def test_plan_epsilon_round_trip():
    kw = dict(stds=ZIPF10, delta=1e-6, beta=0.05)
    target = 30.0
    eps = acc.plan_epsilon(target, n=5000, **kw)
    at = lambda e: acc.gaussian_data_error_bound(n=5000, epsilon=e, **kw).bound  # noqa: E731
    assert at(eps) <= target < at(eps * (1 - 1e-7))
    # truly the smallest epsilon: every smaller one on a grid down to eps / 100 misses
    assert all(at(e) > target for e in eps * np.geomspace(0.01, 1 - 1e-4, 16))
    # the clipping loss alone sets a floor no epsilon can beat
    floor = acc.gaussian_data_error_bound(n=5000, epsilon=1e3, **kw).bias_radius
    with pytest.raises(ValueError, match="epsilon_max"):
        acc.plan_epsilon(0.5 * floor, n=5000, **kw)


def test_plan_d_round_trip():
    stds = np.arange(1, 41) ** -0.5
    kw = dict(n=10_000, epsilon=1.0, delta=1e-6, beta=0.05, statistic="mean")
    target = 0.015
    d = acc.plan_d(target, stds=stds, **kw)
    at = lambda m: acc.gaussian_data_error_bound(stds[:m], **kw).bound  # noqa: E731
    assert 1 < d < stds.size
    assert at(d) <= target < at(d + 1)
    # truly the largest: no longer prefix meets the target, and every shorter one does
    assert all(at(m) > target for m in range(d + 1, stds.size + 1))
    assert all(at(m) <= target for m in range(1, d + 1))


def test_plan_n_unreachable_and_bad_targets():
    with pytest.raises(ValueError, match="n_max"):
        acc.plan_n(1e-6, stds=ZIPF10, epsilon=1.0, delta=1e-6, beta=0.05, n_max=100)
    with pytest.raises(ValueError, match="target"):
        acc.plan_n(0.0, stds=ZIPF10, epsilon=1.0, delta=1e-6, beta=0.05)
    with pytest.raises(ValueError, match="d = 1"):
        acc.plan_d(1e-9, stds=ZIPF10, n=100, epsilon=1.0, delta=1e-6, beta=0.05)


# ---------------------------------------------------------------- argument checks


def _release(**changes):
    rel = dpsum.gaussian_mechanism(np.zeros(3), epsilon=1.0, delta=1e-6, sensitivity=1.0, rng=0)
    for name, value in changes.items():  # records other mechanisms will produce
        object.__setattr__(rel, name, value)
    return rel


@pytest.mark.parametrize("beta", [0.0, 1.0, -0.1, float("nan"), [0.1, 0.2]])
def test_rejects_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        noise.noise_norm_quantile([1.0, 2.0], beta)


def test_rejects_releases_without_continuous_gaussian_noise():
    with pytest.raises(ValueError, match="not a continuous"):
        records.confidence_ball(_release(mechanism="binary"), 0.1)
    with pytest.raises(TypeError, match="release"):
        records.confidence_intervals(np.zeros(3), 0.1)
    with pytest.raises(ValueError, match="clipping mechanism"):
        acc.release_error_bound(_release(), 0.1, stds=np.ones(3), n=10)
    with pytest.raises(TypeError, match="BinaryRelease"):
        binary.count_interval(_release(), 0.1)


def test_rejects_bad_model_arguments():
    rel = dpsum.gaussian_data_mechanism(DATA, epsilon=1.0, delta=1e-6, stds=STDS, rng=0, center=0)
    with pytest.raises(ValueError, match="stds"):
        acc.release_error_bound(rel, 0.1, stds=STDS[:3], n=200)
    with pytest.raises(ValueError, match="not the model"):
        acc.release_error_bound(rel, 0.1, stds=2 * STDS, n=200)
    with pytest.raises(ValueError, match="n must"):
        acc.release_error_bound(rel, 0.1, stds=STDS, n=0)
    with pytest.raises(ValueError, match="noise_std"):
        noise.noise_norm_quantile([1.0, -1.0], 0.1)
    with pytest.raises(ValueError, match="clip_probability"):
        acc.gaussian_data_error_bound(STDS, 100, epsilon=1.0, delta=1e-6, beta=0.1,
                                      neighbouring="add-remove")
    with pytest.raises(ValueError, match="statistic"):
        acc.gaussian_data_error_bound(STDS, 100, epsilon=1.0, delta=1e-6, beta=0.1,
                                      statistic="median")
    with pytest.raises(ValueError, match="shape"):
        rel.confidence_ball(0.1).contains(np.zeros(4))


# ---------------------------------------------------------------- the private pipeline
#
# Fixed data far from the origin (so that the add-remove count term matters) and
# clip_probability = 0.5: about half the rows are clipped, so the clipped mean
# is a different quantity from the plain mean, and the clip radius is the private
# median norm itself (no model quantile per release, which keeps 2000 releases fast).

PIPE_DATA = np.random.default_rng(21).normal([50.0, -20.0, 3.0], [1.0, 5.0, 0.5], size=(3000, 3))
PIPE_ARGS = dict(lower=-100.0, upper=100.0, epsilon=2.0, delta=1e-6, clip_probability=0.5)


def _pipeline_target(rel, X):
    """The protected quantity, from the release's public center, scaling and clip
    radius and the data, with plain numpy (not dpsum's clipped sum):
    ``n c + b^{-1} ⊙ T`` for the sum, ``c + b^{-1} ⊙ T / n`` for the mean."""
    c, b, C = rel.center, rel.scaling, rel.clip_norm
    scaled = (X - c) * b
    norms = np.sqrt(np.sum(scaled ** 2, axis=1))
    factor = np.minimum(1.0, C / np.maximum(norms, 1e-300))
    dev = (factor[:, None] * scaled).sum(axis=0) / b
    n = X.shape[0]
    return c + dev / n if rel.statistic == "mean" else n * c + dev


def _pipeline_coverage(release_of, R, seed):
    """Counts of (ball, per-coordinate, simultaneous box) hits over R releases, and the releases' widths."""
    rng = np.random.default_rng(seed)
    d = PIPE_DATA.shape[1]
    ball, box, marginal = 0, 0, np.zeros(d, dtype=int)
    clipped_differs = 0
    for _ in range(R):
        rel = release_of(rng)
        target = _pipeline_target(rel, PIPE_DATA)
        ball += rel.confidence_ball(BETA).contains(target)
        lo, hi = rel.confidence_intervals(BETA)
        marginal += (lo <= target) & (target <= hi)
        lo, hi = records.confidence_intervals(rel, BETA, simultaneous=True)
        box += bool(np.all((lo <= target) & (target <= hi)))
        plain = PIPE_DATA.mean(axis=0) if rel.statistic == "mean" else PIPE_DATA.sum(axis=0)
        clipped_differs += bool(np.any(np.abs(target - plain) > (hi - lo) / 2))
    return ball, marginal, box, clipped_differs


@pytest.mark.slow
def test_pipeline_replace_one_covers_the_clipped_mean_exactly():
    R = 2000
    ball, marginal, box, differs = _pipeline_coverage(
        lambda rng: dpsum.private_mean(PIPE_DATA, rng=rng, **PIPE_ARGS), R, seed=31)
    d = PIPE_DATA.shape[1]
    # exact: two-sided; per-coordinate hits are independent given (c, b, C), pooled
    assert abs(ball / R - (1 - BETA)) <= tolerance(R)
    assert abs(box / R - (1 - BETA)) <= tolerance(R)
    assert abs(marginal.sum() / (R * d) - (1 - BETA)) <= tolerance(R * d)
    # the protected quantity is really the clipped mean, not the plain one
    assert differs > R / 2


def test_pipeline_replace_one_sum_is_n_times_the_mean():
    # the same seed draws the same center, scaling, clip radius and noise, and the
    # sum's statement is the mean's scaled by the public n (the mean's coverage is
    # simulated above; the sum's target is n times the mean's)
    n = PIPE_DATA.shape[0]
    mean = dpsum.private_mean(PIPE_DATA, rng=7, **PIPE_ARGS)
    total = dpsum.private_sum(PIPE_DATA, rng=7, **PIPE_ARGS)
    np.testing.assert_allclose(_pipeline_target(total, PIPE_DATA),
                               n * _pipeline_target(mean, PIPE_DATA), rtol=1e-12)
    for simultaneous in (False, True):
        lo_m, hi_m = mean.confidence_intervals(BETA, simultaneous=simultaneous)
        lo_s, hi_s = total.confidence_intervals(BETA, simultaneous=simultaneous)
        # each width is a difference of two endpoints rounded to their own
        # magnitude (the estimate's): compared as the endpoints are
        np.testing.assert_allclose(hi_s - lo_s, n * (hi_m - lo_m), rtol=1e-9)
        np.testing.assert_allclose(lo_s, n * lo_m, rtol=1e-9)
    assert math.isclose(total.confidence_ball(BETA).radius, n * mean.confidence_ball(BETA).radius,
                        rel_tol=1e-9)


def test_pipeline_replace_one_widths_are_the_gaussian_quantiles_of_public_fields():
    rel = dpsum.private_mean(PIPE_DATA, rng=3, **PIPE_ARGS)
    z = stats.norm.isf(BETA / 2)
    lo, hi = records.confidence_intervals(rel, BETA)
    np.testing.assert_allclose((hi - lo) / 2, rel.noise_std * z, rtol=1e-12)
    np.testing.assert_allclose((hi + lo) / 2, rel.estimate, rtol=1e-12)
    z_box = stats.norm.isf((1 - (1 - BETA) ** (1 / 3)) / 2)
    lo, hi = rel.confidence_intervals(BETA, simultaneous=True)
    np.testing.assert_allclose((hi - lo) / 2, rel.noise_std * z_box, rtol=1e-12)
    # the noise std is that of the last step: sigma * 2C / (b n), from released
    # fields (the sum is exact: no rounding charge)
    s_mean = next(st.noise_multiplier for st in rel.steps if st.name == "mean")
    np.testing.assert_allclose(rel.noise_std,
                               s_mean * 2 * rel.clip_norm / rel.scaling / 3000,
                               rtol=1e-12)
    assert math.isclose(records.confidence_ball(rel, BETA).radius,
                        noise.noise_norm_quantile(rel.noise_std, BETA), rel_tol=1e-12)


@pytest.mark.slow
def test_pipeline_add_remove_sum_covers_and_needs_the_count_term():
    R = 1000
    d = PIPE_DATA.shape[1]

    def release_of(rng):
        return dpsum.private_sum(PIPE_DATA, neighbouring="add-remove", rng=rng, **PIPE_ARGS)

    ball, marginal, box, _ = _pipeline_coverage(release_of, R, seed=41)
    # a union bound: at least 1 - beta; the coordinates share the count's error,
    # so each coordinate is checked on its own R releases
    assert ball / R >= 1 - BETA - tolerance(R)
    assert box / R >= 1 - BETA - tolerance(R)
    assert np.all(marginal / R >= 1 - BETA - tolerance(R))
    # the half-width, rebuilt from released fields: count part + noise part
    rel = release_of(np.random.default_rng(5))
    s_count = next(st.noise_multiplier for st in rel.steps if st.name == "count")
    s_mean = next(st.noise_multiplier for st in rel.steps if st.name == "mean")
    s = s_mean * rel.clip_norm / rel.scaling  # add-remove sensitivity C
    half = np.abs(rel.center) * s_count * stats.norm.isf(BETA / 4) + s * stats.norm.isf(BETA / 4)
    lo, hi = records.confidence_intervals(rel, BETA)
    np.testing.assert_allclose((hi - lo) / 2, half, rtol=1e-12)
    radius = (np.linalg.norm(rel.center) * s_count * stats.norm.isf(BETA / 4)
              + noise.noise_norm_quantile(s, BETA / 2))
    assert math.isclose(records.confidence_ball(rel, BETA).radius, radius, rel_tol=1e-12)
    # intervals that leave out the count's error miss the sum far too often
    rng = np.random.default_rng(43)
    miss = 0
    for _ in range(200):
        r = release_of(rng)
        s_r = s_mean * r.clip_norm / r.scaling
        target = _pipeline_target(r, PIPE_DATA)
        miss += bool(np.any(np.abs(r.estimate - target) > s_r * stats.norm.isf(BETA / 2)))
    assert miss / 200 > 0.5


@pytest.mark.slow
def test_pipeline_add_remove_mean_covers():
    # the mean under add-remove: error nu - (theta - c) Z / ñ, bounded on
    # |Z| <= sigma_count z by (|nu| + u |estimate - c|) / (1 - u), u = sigma_count z / ñ
    R = 1000

    def release_of(rng):
        return dpsum.private_mean(PIPE_DATA, neighbouring="add-remove", rng=rng, **PIPE_ARGS)

    ball, marginal, box, _ = _pipeline_coverage(release_of, R, seed=45)
    assert ball / R >= 1 - BETA - tolerance(R)
    assert box / R >= 1 - BETA - tolerance(R)
    assert np.all(marginal / R >= 1 - BETA - tolerance(R))
    # the half-width, rebuilt from released fields
    rel = release_of(np.random.default_rng(6))
    s_count = next(st.noise_multiplier for st in rel.steps if st.name == "count")
    u = s_count * stats.norm.isf(BETA / 4) / rel.count
    dev = np.abs(rel.estimate - rel.center)
    half = (rel.noise_std * stats.norm.isf(BETA / 4) + u * dev) / (1 - u)
    lo, hi = records.confidence_intervals(rel, BETA)
    np.testing.assert_allclose((hi - lo) / 2, half, rtol=1e-12)
    radius = (noise.noise_norm_quantile(rel.noise_std, BETA / 2)
              + u * np.linalg.norm(dev)) / (1 - u)
    assert math.isclose(rel.confidence_ball(BETA).radius, radius, rel_tol=1e-12)


def test_pipeline_argument_errors():
    import dataclasses

    rel = dpsum.private_sum(PIPE_DATA, neighbouring="add-remove", rng=0, **PIPE_ARGS)
    for beta in (0.0, 1.0, float("nan"), [0.1]):
        with pytest.raises(ValueError, match="beta"):
            records.confidence_intervals(rel, beta)
        with pytest.raises(ValueError, match="beta"):
            records.confidence_ball(rel, beta)
    with pytest.raises(TypeError, match="simultaneous"):
        records.confidence_intervals(rel, BETA, simultaneous="yes")
    # a record without the steps it claims cannot be stated for
    stripped = dataclasses.replace(rel, steps=())
    with pytest.raises(ValueError, match="steps"):
        records.confidence_ball(stripped, BETA)
    # the total-error bound is for the Gaussian-data mechanism with a public model only
    # (a PipelineRelease is a Release, of the private pipeline)
    with pytest.raises(ValueError, match="release comes from the private pipeline"):
        acc.release_error_bound(rel, BETA, stds=np.ones(3), n=3000)
