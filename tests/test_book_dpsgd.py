"""The book's DP-SGD and clipping helpers (dpsum_book.dpsgd, dpsum_book.clipping)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsum.privacy import subsampled_gaussian_epsilon
from dpsum_book import clipping, dpsgd


def test_per_example_gradients_match_finite_differences():
    gen = np.random.default_rng(0)
    X, y = gen.normal(size=(4, 3)), np.array([0, 2, 1, 2])
    W = gen.normal(size=(3, 3))
    G = dpsgd.per_example_gradients(W, X, y)

    def loss(W, i):
        z = X[i] @ W
        return np.log(np.exp(z).sum()) - z[y[i]]
    h = 1e-6
    for i in range(4):
        num = np.zeros(W.size)
        for j in range(W.size):
            E = np.zeros(W.size)
            E[j] = h
            num[j] = (loss(W + E.reshape(W.shape), i) - loss(W - E.reshape(W.shape), i)) / (2 * h)
        np.testing.assert_allclose(G[i], num, atol=1e-6)


def test_calibrated_multiplier_meets_the_budget():
    cfg = dpsgd.Config(epsilon=2.0, delta=1e-6, sampling_rate=0.05, steps=100,
                       learning_rate=1.0)
    z = dpsgd.calibrate_multiplier(cfg)
    assert subsampled_gaussian_epsilon(z, 0.05, 100, 1e-6, interval=1e-3) <= 2.0
    assert subsampled_gaussian_epsilon(z / 1.01, 0.05, 100, 1e-6, interval=1e-3) > 2.0


def test_training_runs_and_learns():
    task = dpsgd.digits_task()
    cfg = dpsgd.Config(epsilon=8.0, delta=1e-6, sampling_rate=0.05, steps=100,
                       learning_rate=2.0)
    out = dpsgd.train(task, cfg, "scaled (public)", rng=0)
    assert 0.3 < out["accuracy"] <= 1.0        # far above chance (0.1)
    with pytest.raises(ValueError, match="variant"):
        dpsgd.train(task, cfg, "other", rng=0)


def test_clipping_bias_matches_brute_force():
    norms = np.random.default_rng(1).lognormal(size=200)
    C = np.array([0.1, 0.5, 1.0, 3.0, 100.0])
    brute = [np.sum(np.maximum(norms - c, 0)) for c in C]
    np.testing.assert_allclose(clipping.clipping_bias(norms, C), brute, rtol=1e-12)


def test_summarise_standard_errors():
    rows = [{"task": "t", "variant": "v", "epsilon": 1.0, "accuracy": a}
            for a in (0.5, 0.7)]
    (s,) = dpsgd.summarise(rows)
    assert s["mean"] == pytest.approx(0.6)
    assert s["se"] == pytest.approx(np.std([0.5, 0.7], ddof=1) / np.sqrt(2))
