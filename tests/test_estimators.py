"""Tests of dpsum.estimators: the exponential-mechanism quantile and the
private center, scales and norm quantiles built on it.

Statistical tolerances come from the sample sizes: the sampling error of a
median plus the rank noise of the exponential mechanism, whose rank error is
(close to) Laplace with scale ``2 Delta_u / epsilon``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtri

from dpsum.pipeline import quantiles as E


# ---------------------------------------------------------------------------
# the exponential mechanism
# ---------------------------------------------------------------------------
def _gap_probabilities(values, q, eps, lo, hi, du=1.0):
    """The exact probabilities of the gaps of McSherry-Talwar's quantile mechanism."""
    edges = np.concatenate([[lo], np.sort(np.clip(values, lo, hi)), [hi]])
    m = len(values)
    w = np.diff(edges) * np.exp(-eps * np.abs(np.arange(m + 1) - q * m) / (2 * du))
    return edges, w / w.sum()


@pytest.mark.parametrize("q, eps, relation", [(0.5, 1.0, "replace"), (0.2, 3.0, "replace"),
                                               (0.5, 0.5, "add-remove"), (0.9, 2.0, "add-remove")])
def test_exponential_quantile_has_the_exact_output_law(q, eps, relation):
    # replicate one dataset over many columns: each column is an independent draw
    values = np.array([-1.0, 0.5, 0.7, 2.0, 2.0, 4.5])
    lo, hi = -3.0, 6.0
    k = 40_000
    out = E.exponential_quantile(np.repeat(values[:, None], k, axis=1), q, epsilon=eps,
                                 lower=lo, upper=hi, neighbouring=relation, rng=5)
    du = E.quantile_sensitivity(q, relation)
    edges, prob = _gap_probabilities(values, q, eps, lo, hi, du)
    counts = np.histogram(out, bins=edges)[0]
    keep = prob > 0
    assert counts[~keep].sum() == 0          # an empty gap (the tie) is never chosen
    chi2, pval = stats.chisquare(counts[keep], prob[keep] * k)
    assert pval > 1e-4
    # and uniform inside the chosen gap: the positions within the widest gap
    j = int(np.argmax(np.diff(edges)))
    inside = out[(out > edges[j]) & (out < edges[j + 1])]
    u = (inside - edges[j]) / (edges[j + 1] - edges[j])
    assert stats.kstest(u, "uniform").pvalue > 1e-4


def test_exponential_quantile_density_ratio_is_bounded_by_epsilon():
    # the exact output densities on replace-one neighbours differ by at most e^eps
    eps = 0.7
    base = np.array([0.1, 0.4, 0.45, 0.8, 1.5])
    lo, hi = 0.0, 2.0
    grid = np.linspace(lo + 1e-9, hi - 1e-9, 4001)

    def density(values):
        edges, prob = _gap_probabilities(values, 0.5, eps, lo, hi)
        idx = np.clip(np.searchsorted(edges, grid, side="right") - 1, 0, len(prob) - 1)
        return prob[idx] / np.diff(edges)[idx]

    worst = 0.0
    for i in range(base.size):
        for new in (0.0, 0.42, 1.0, 1.99):
            other = base.copy()
            other[i] = new
            ratio = np.abs(np.log(density(base) / density(other)))
            worst = max(worst, float(ratio.max()))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.5 * eps


def test_exponential_quantile_clamps_and_handles_infinities():
    out = E.exponential_quantile(np.array([-np.inf, 5.0, np.inf, 1e300]), 0.5, epsilon=1.0,
                                 lower=0.0, upper=10.0, rng=0)
    assert 0.0 <= out <= 10.0
    cols = E.exponential_quantile(np.arange(12.0).reshape(6, 2), 0.5, epsilon=1.0,
                                  lower=[0.0, -1.0], upper=[20.0, 30.0], rng=0)
    assert cols.shape == (2,) and np.all((cols >= [0, -1]) & (cols <= [20, 30]))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: E.exponential_quantile([1.0, np.nan], 0.5, epsilon=1, lower=0, upper=1), ValueError, "NaN"),
    (lambda: E.exponential_quantile([1.0], 1.5, epsilon=1, lower=0, upper=1), ValueError, "quantile"),
    (lambda: E.exponential_quantile([1.0], 0.5, epsilon=0, lower=0, upper=1), ValueError, "epsilon"),
    (lambda: E.exponential_quantile([1.0], 0.5, epsilon=1, lower=1, upper=1), ValueError, "lower"),
    (lambda: E.exponential_quantile(np.ones((2, 2, 2)), 0.5, epsilon=1, lower=0, upper=1), ValueError, "values"),
    (lambda: E.exponential_quantile([1.0], 0.5, epsilon=1, lower=0, upper=1, neighbouring="swap"), ValueError, "neighbouring"),
    (lambda: E.private_center(np.ones((3, 2)), epsilon=1, lower=0, upper=[1, 2, 3]), ValueError, "upper"),
    (lambda: E.private_center(np.ones((3, 2)), epsilon=1, lower=1, upper=0), ValueError, "lower"),
    (lambda: E.private_center(np.ones((3, 2)), epsilon=1, lower=None, upper=5), TypeError, "lower"),
    (lambda: E.private_center([[1.0, np.inf]], epsilon=1, lower=0, upper=1), ValueError, "X"),
    (lambda: E.private_scales(np.ones((3, 2)), [0.0], epsilon=1, min_scale=1e-3, max_scale=1), ValueError, "center"),
    (lambda: E.private_scales(np.ones((3, 2)), [0, 0], epsilon=1, min_scale=1, max_scale=1e-3), ValueError, "min_scale"),
    (lambda: E.private_scales(np.ones((3, 2)), [0, 0], epsilon=1, min_scale=0, max_scale=1), ValueError, "min_scale"),
    (lambda: E.private_norm_quantile(np.ones((3, 2)), 0.5, epsilon=1, lower=2, upper=1), ValueError, "lower"),
    (lambda: E.private_norm_quantile(np.ones((3, 2)), 0.5, epsilon=1, lower=1, upper=2, scaling=[1, 0]), ValueError, "scaling"),
])
def test_argument_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------------------
# coverage on data with known center and scales
# ---------------------------------------------------------------------------
def _rank_sd(eps, du, n):
    """Standard deviation of the exponential mechanism's rank error as a
    fraction of n (Laplace with scale 2 du / eps)."""
    return math.sqrt(2.0) * 2.0 * du / eps / n


def test_private_center_covers_the_true_center():
    gen = np.random.default_rng(11)
    n, d = 4000, 200
    sigma = np.exp(gen.uniform(-3, 3, d))
    mu = gen.uniform(-50, 50, d)
    X = mu + gen.standard_normal((n, d)) * sigma
    eps = 0.05
    c = E.private_center(X, epsilon=eps, lower=-1e4, upper=1e4, rng=12)
    # sd of the median: sampling sqrt(pi/2) sigma / sqrt(n), plus rank noise / density
    sd = sigma * math.hypot(math.sqrt(math.pi / 2 / n), _rank_sd(eps, 1.0, n) / stats.norm.pdf(0))
    z = np.abs(c - mu) / sd
    # Laplace tail beyond 4 sd is exp(-4 sqrt 2) = 0.35%: at most 5 of 200 (P ~ 5e-4)
    assert np.count_nonzero(z > 4) <= 5
    assert np.median(z) < 1.5


def test_private_scales_cover_the_true_scales():
    gen = np.random.default_rng(21)
    n, d = 4000, 200
    sigma = np.exp(gen.uniform(-4, 4, d))
    mu = gen.uniform(-50, 50, d)
    X = mu + gen.standard_normal((n, d)) * sigma
    eps = 0.05
    s = E.private_scales(X, mu, epsilon=eps, min_scale=1e-6, max_scale=1e4, rng=22)
    # log|Z| has density 2 m phi(m) at its median log m, m = Phi^{-1}(3/4)
    m = ndtri(0.75)
    f = 2 * m * stats.norm.pdf(m)
    sd = math.hypot(0.5 / math.sqrt(n), _rank_sd(eps, 1.0, n)) / f
    z = np.abs(np.log(s / sigma)) / sd
    assert np.count_nonzero(z > 4) <= 5
    assert np.median(z) < 1.5


def test_private_norm_quantile_matches_the_chi_quantile():
    gen = np.random.default_rng(31)
    n, d = 20_000, 16
    X = 3.0 + 2.0 * gen.standard_normal((n, d))
    est = np.array([E.private_norm_quantile(X, 0.5, epsilon=0.5, lower=1e-3, upper=1e3,
                                            center=np.full(d, 3.0), rng=k) for k in range(20)])
    truth = 2.0 * math.sqrt(stats.chi2.ppf(0.5, d))
    # density of ||x|| at its median: chi density / 2
    f = stats.chi.pdf(truth / 2.0, d) / 2.0
    sd = math.hypot(0.5 / math.sqrt(n), _rank_sd(0.5, 1.0, n)) / f
    assert np.all(np.abs(est - truth) < 5 * sd)
    # with a scaling vector: the quantile of ||(x - c) * b||
    b = np.full(d, 0.5)
    est_b = E.private_norm_quantile(X, 0.5, epsilon=0.5, lower=1e-3, upper=1e3,
                                    center=np.full(d, 3.0), scaling=b, rng=1)
    assert abs(est_b - truth / 2) < 5 * sd / 2


def test_center_outside_the_domain_is_clamped_not_an_error():
    # every value is clamped to the top of the box: a point mass, whose gaps
    # have zero width, so the output is drawn from the one gap below it; it
    # stays inside the box (the pipeline's later steps absorb the offset)
    gen = np.random.default_rng(41)
    X = 500.0 + gen.standard_normal((2000, 3))
    c = E.private_center(X, epsilon=1.0, lower=-10.0, upper=10.0, rng=1)
    assert np.all((c >= -10.0) & (c <= 10.0))
    # partly outside: the median of the clamped data is still found
    Y = np.concatenate([X[:500] - 500.0, X[500:] - 495.0])    # median about 5
    c2 = E.private_center(Y, epsilon=1.0, lower=-10.0, upper=10.0, rng=2)
    assert np.all(np.abs(c2 - np.median(np.clip(Y, -10, 10), axis=0)) < 0.2)


def test_a_far_off_center_inflates_the_scale():
    # the property the pipeline relies on: with a center k sigma away, the
    # median absolute deviation is about k sigma, not sigma
    gen = np.random.default_rng(51)
    X = gen.standard_normal((4000, 1))
    s = E.private_scales(X, [30.0], epsilon=1.0, min_scale=1e-6, max_scale=1e4, rng=2)
    assert 30 * E.MAD_TO_STD * 0.95 < s[0] < 30 * E.MAD_TO_STD * 1.05
