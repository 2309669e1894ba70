"""The private quantile of norms and adaptive clipping (book chapter "Clipping
without a model"): their output laws and their privacy accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsum.pipeline import adaptive_clip_update, norm_quantile_law, private_norm_quantile
from dpsum.privacy import bounded_range_step, compose, gaussian_step


def _data(n=40, seed=1):
    return np.random.default_rng(seed).standard_t(3, size=(n, 3))


def test_public_names():
    import dpsum.pipeline as pipeline
    assert {"private_norm_quantile", "norm_quantile_law", "adaptive_clip_update",
            "ClipUpdate"} <= set(pipeline.__all__)


@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_sampler_follows_the_law(relation):
    X = _data()
    edges, p = norm_quantile_law(X, 0.9, epsilon=2.0, lower=0.01, upper=100.0,
                                 neighbouring=relation)
    N = 20_000
    gen = np.random.default_rng(5)
    out = np.array([private_norm_quantile(X, 0.9, epsilon=2.0, lower=0.01, upper=100.0,
                                          neighbouring=relation, rng=gen) for _ in range(N)])
    counts = np.histogram(out, bins=edges)[0] / N
    # each gap's frequency within 5 standard errors (plus one draw) of its probability
    tol = 5 * np.sqrt(p * (1 - p) / N) + 1.0 / N
    assert np.all(np.abs(counts - p) <= tol)
    # log-uniform inside a gap: the median of the draws in the likeliest gap
    k = int(np.argmax(p))
    inside = np.log(out[(out >= edges[k]) & (out <= edges[k + 1])])
    mid = 0.5 * (np.log(edges[k]) + np.log(edges[k + 1]))
    width = np.log(edges[k + 1]) - np.log(edges[k])
    assert abs(np.median(inside) - mid) <= 5 * width / math.sqrt(inside.size)


def _density(X, points, **kw):
    edges, p = norm_quantile_law(X, **kw)
    logw = np.diff(np.log(edges))
    k = np.clip(np.searchsorted(edges, points, side="right") - 1, 0, p.size - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dens = np.where(logw[k] > 0, p[k] / logw[k], 0.0)
    return dens


@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_privacy_of_the_law(relation):
    eps = 0.7
    X = _data(30)
    gen = np.random.default_rng(2)
    pts = np.exp(np.linspace(np.log(0.011), np.log(99.0), 4001))
    kw = dict(quantile=0.75, epsilon=eps, lower=0.01, upper=100.0, neighbouring=relation)
    for _ in range(20):
        if relation == "replace":
            Y = X.copy()
            Y[gen.integers(30)] = gen.standard_t(1, size=3) * 10
        else:
            Y = np.delete(X, gen.integers(30), axis=0)
        a, b = _density(X, pts, **kw), _density(Y, pts, **kw)
        both = (a > 0) & (b > 0)
        # away from the points where a gap of one dataset ends (density jumps)
        ratio = np.abs(np.log(a[both] / b[both]))
        assert np.quantile(ratio, 0.99) <= eps + 1e-9
    assert bounded_range_step("norm quantile", eps).rho == pytest.approx(eps ** 2 / 8)


def test_quantile_is_accurate_with_many_rows():
    X = np.random.default_rng(3).lognormal(size=(20_000, 1))
    est = private_norm_quantile(X, 0.5, epsilon=1.0, lower=1e-3, upper=1e3, rng=4)
    norms = np.abs(X[:, 0])
    rank = np.mean(norms <= est)
    assert abs(rank - 0.5) < 0.01


def test_adaptive_update_law_and_accounting():
    X = _data(500)
    C, s, N = 1.5, 20.0, 4000
    true = np.mean(np.linalg.norm(X, axis=1) <= C)
    gen = np.random.default_rng(6)
    ups = [adaptive_clip_update(X, C, target_quantile=0.5, learning_rate=0.3,
                                count_noise=s, rng=gen) for _ in range(N)]
    frac = np.array([u.fraction for u in ups])
    sd = s / 500
    assert abs(frac.mean() - true) <= 5 * sd / math.sqrt(N)
    assert abs(frac.std() / sd - 1) <= 5 / math.sqrt(2 * N)
    new = np.array([u.clip_radius for u in ups])
    np.testing.assert_allclose(new, C * np.exp(-0.3 * (frac - 0.5)), rtol=1e-12)
    step = ups[0].privacy_step
    assert step == gaussian_step("unclipped count", s)
    T = 50
    g = compose([step] * T, delta=1e-6)
    assert g.noise_multiplier == pytest.approx(s / math.sqrt(T))


def test_adaptive_clipping_tracks_the_target_quantile():
    X = np.random.default_rng(7).lognormal(size=(2000, 4))
    norms = np.linalg.norm(X, axis=1)
    gen = np.random.default_rng(8)
    C = 0.01
    for _ in range(300):
        C = adaptive_clip_update(X, C, target_quantile=0.8, learning_rate=0.2,
                                 count_noise=10.0, rng=gen).clip_radius
    lo, hi = np.quantile(norms, [0.75, 0.85])
    assert lo <= C <= hi


@pytest.mark.parametrize("kwargs, name", [
    (dict(clip_radius=0.0), "clip_radius"),
    (dict(target_quantile=1.0), "target_quantile"),
    (dict(learning_rate=-1.0), "learning_rate"),
    (dict(count_noise=0.0), "count_noise"),
    (dict(rows=0.0), "rows"),
])
def test_adaptive_bad_arguments(kwargs, name):
    args = dict(clip_radius=1.0, target_quantile=0.5, learning_rate=0.2, count_noise=1.0)
    args.update(kwargs)
    C = args.pop("clip_radius")
    with pytest.raises((ValueError, TypeError), match=name):
        adaptive_clip_update(np.ones((3, 2)), C, **args)
