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


def test_the_step_divides_by_the_public_nominal_batch_size(monkeypatch):
    # under add-remove the number of private rows is private: removing a row
    # (the neighbour) must not change the divisor q N of the noisy sum
    import dataclasses
    task = dpsgd.digits_task()
    assert task.nominal_rows == 1797 - int(0.3 * 1797) - int(0.1 * 1797)
    neighbour = dataclasses.replace(task, X=task.X[1:], y=task.y[1:])
    cfg = dpsgd.Config(epsilon=8.0, delta=1e-6, sampling_rate=0.05, steps=1,
                       learning_rate=2.0)
    assert dpsgd.expected_batch(neighbour, cfg) == dpsgd.expected_batch(task, cfg) \
        == 0.05 * task.nominal_rows
    seen = {}
    real = dpsgd.clipped_gaussian_accumulator

    def spy_accumulator(*args, **kwargs):
        acc = real(*args, **kwargs)

        class Spy:
            def empty(self):
                return self

            def update(self, G):
                self.inner = acc.empty().update(G)
                return self

            def release(self, **kw):
                out = self.inner.release(**kw)
                seen["sum"] = out.estimate
                return out
        return Spy()

    def spy_accuracy(W, X, y):
        seen["W"] = W.copy()
        return 0.5
    monkeypatch.setattr(dpsgd, "clipped_gaussian_accumulator", spy_accumulator)
    monkeypatch.setattr(dpsgd, "accuracy", spy_accuracy)
    for t in (task, neighbour):
        dpsgd.train(t, cfg, "isotropic", rng=3, multiplier=2.0)
        # one step from W = 0 (isotropic: b = 1): W = -lr * noisy sum / (q N)
        want = -cfg.learning_rate * seen["sum"] / (0.05 * task.nominal_rows)
        np.testing.assert_array_equal(seen["W"].ravel(), want)
