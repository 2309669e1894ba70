"""DP-SGD in NumPy on dpsum's private sums (book chapter "Private sums of gradients").

A softmax regression is trained by gradient descent in which every step's
gradient is a private sum: each row enters the step's batch with probability
``q`` (Poisson subsampling), its gradient is clipped to norm ``C`` (in the
original coordinates, or in a space scaled by ``b``), the clipped gradients are
summed by :func:`dpsum.clipped_gaussian_accumulator` with noise ``z C``
(add-remove neighbouring), and the sum is divided by the public expected
batch size ``q N``. Under add-remove the number of private rows is private,
so ``N`` is the task's public nominal size (:attr:`Task.nominal_rows`, fixed
from the dataset's published size and the split's fractions), never the
number of rows the training holds. The noise multiplier ``z`` is calibrated by the package's
accountant of subsampled Gaussian steps (:func:`calibrate_multiplier`).

Two tasks: scikit-learn's bundled digits (1,797 images, 64 pixels, 10 classes)
and a synthetic binary task from :func:`sklearn.datasets.make_classification`
with ``n = 10^5`` and features in different units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpsum import (analytic_sigma, clipped_gaussian_accumulator, compose, gaussian_epsilon,
                   gaussian_step)
from dpsum.privacy import subsampled_gaussian_epsilon, subsampled_gaussian_step
from dpsum.design import gaussian_data_scaling

__all__ = ["Task", "Config", "digits_task", "classification_task", "per_example_gradients",
           "accuracy", "calibrate_multiplier", "gradient_scales", "train", "nonprivate",
           "best_linear", "summarise", "run", "VARIANTS", "CONFIGS", "EPSILONS",
           "naive_epsilon", "dp_accounting_epsilon", "accounting_table", "load_results",
           "scales_multiplier", "expected_batch"]

#: the clipping variants compared: isotropic; scaled with scales from the public
#: split; scaled with scales from a private release (part of the budget)
VARIANTS = ("isotropic", "scaled (public)", "scaled (private)")


@dataclass(frozen=True)
class Task:
    """A classification task: private training rows, a public split, a test split.

    Features carry a final constant column (the bias); labels are 0..K-1.
    ``nominal_rows`` is the public nominal size ``N`` of the private split,
    fixed before the data are seen (from the dataset's published size and
    the split's fractions): every division by a number of rows uses it, so
    that a release does not depend on the private number of rows (add-remove
    neighbours differ in it).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    X_public: np.ndarray
    y_public: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    classes: int
    nominal_rows: int


@dataclass(frozen=True)
class Config:
    """The hyperparameters of one training run (all public)."""

    epsilon: float
    delta: float
    sampling_rate: float
    steps: int
    learning_rate: float
    clip_quantile: float = 0.5
    scales_share: float = 0.1  # epsilon share of the private scales' release
    interval: float = 1e-3


#: the book's settings per task: delta below 1/n, about 30 epochs of digits
#: and 6 of the larger task
CONFIGS: dict[str, Config] = {
    "digits": Config(epsilon=1.0, delta=1e-6, sampling_rate=0.05, steps=600,
                     learning_rate=2.0),
    "make_classification": Config(epsilon=1.0, delta=1e-6, sampling_rate=0.005, steps=1000,
                                  learning_rate=0.2),
}
#: the privacy levels of the precomputed table, per task (the larger task
#: reaches the non-private accuracy already at small epsilon)
EPSILONS: dict[str, list[float]] = {
    "digits": [0.5, 1.0, 2.0, 4.0, 8.0],
    "make_classification": [0.05, 0.1, 0.2, 0.5, 1.0, 8.0],
}


def _with_bias(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _split(name: str, X: np.ndarray, y: np.ndarray, classes: int, test: float,
           public: float) -> Task:
    size = len(y)                   # the dataset's published size
    order = np.random.default_rng(0).permutation(size)
    n_test, n_pub = int(test * size), int(public * size)
    te, pu, tr = np.split(order, [n_test, n_test + n_pub])
    X = _with_bias(X)
    # the nominal size of the private split: public, from the published size
    # and the fractions alone
    nominal = size - n_test - n_pub
    return Task(name, X[tr], y[tr], X[pu], y[pu], X[te], y[te], classes, nominal)


def expected_batch(task: Task, cfg: Config) -> float:
    """The public expected batch size ``q N`` (``N`` the task's nominal size):
    the divisor of every noisy gradient sum."""
    return cfg.sampling_rate * task.nominal_rows


def digits_task() -> Task:
    """Digits: pixels divided by 16; 30% test, 10% public, 60% private (1,079 rows)."""
    from sklearn.datasets import load_digits
    data = load_digits()
    return _split("digits", data.data / 16.0, data.target, 10, 0.3, 0.1)


def classification_task(n: int = 100_000) -> Task:
    """``make_classification`` (20 features, 10 informative, fixed seed), features
    multiplied by scales from 0.3 to 3 (different units); 20% test, 1% public."""
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=n, n_features=20, n_informative=10,
                               n_redundant=4, class_sep=1.0, random_state=0)
    X = X * np.logspace(-0.5, 0.5, 20)
    return _split("make_classification", X, y, 2, 0.2, 0.01)


def _probabilities(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    logits = X @ W
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    return P / P.sum(axis=1, keepdims=True)


def per_example_gradients(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The gradients of the cross-entropy of each row, flattened: shape (n, d K)."""
    P = _probabilities(W, X)
    P[np.arange(len(y)), y] -= 1.0
    return (X[:, :, None] * P[:, None, :]).reshape(len(y), -1)


def accuracy(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """The fraction of rows whose largest logit is their label."""
    return float(np.mean(np.argmax(X @ W, axis=1) == y))


def gradient_scales(task: Task) -> np.ndarray:
    """Per-coordinate root mean square of the gradients at ``W = 0`` on the public
    split (a floor of 1% of the largest keeps every scale positive)."""
    W = np.zeros((task.X.shape[1], task.classes))
    G = per_example_gradients(W, task.X_public, task.y_public)
    s = np.sqrt(np.mean(G ** 2, axis=0))
    return np.maximum(s, 0.01 * s.max())


def _private_scales(task: Task, cfg: Config, C0: float, gen: np.random.Generator
                    ) -> np.ndarray:
    """Per-coordinate mean absolute gradient at ``W = 0`` from one Gaussian release:
    rows clipped to ``C0``, their absolute values summed with noise ``z0 C0``."""
    W = np.zeros((task.X.shape[1], task.classes))
    G = np.abs(per_example_gradients(W, task.X, task.y))
    d = G.shape[1]
    eps = float(gaussian_epsilon(scales_multiplier(cfg) * C0, cfg.delta, C0))
    acc = clipped_gaussian_accumulator(d, epsilon=eps, delta=cfg.delta, clip_norm=C0,
                                       neighbouring="add-remove")
    s = acc.update(G).release(rng=gen).estimate / task.nominal_rows
    return np.maximum(s, 0.01 * max(float(s.max()), 1e-12))


def scales_multiplier(cfg: Config) -> float:
    """The noise multiplier of the private scales: alone, their release is
    ``(scales_share * epsilon, delta)``-DP."""
    return float(analytic_sigma(cfg.scales_share * cfg.epsilon, cfg.delta))


def calibrate_multiplier(cfg: Config, extra: float | None = None) -> float:
    """The smallest noise multiplier (to 0.1%) whose ``steps`` subsampled steps,
    composed with an optional extra Gaussian step of multiplier ``extra``, are
    ``(epsilon, delta)``-DP under add-remove."""
    def eps_of(z: float) -> float:
        steps = [subsampled_gaussian_step("sgd", z, cfg.sampling_rate, cfg.steps)]
        if extra is None:
            return subsampled_gaussian_epsilon(z, cfg.sampling_rate, cfg.steps, cfg.delta,
                                               interval=cfg.interval)
        steps.append(gaussian_step("scales", extra))
        return compose(steps, delta=cfg.delta).epsilon
    lo, hi = 0.3, 0.6
    while eps_of(hi) > cfg.epsilon:
        lo, hi = hi, hi * 2
        if hi > 1e4:
            raise ValueError("no noise multiplier reaches this epsilon")
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if eps_of(mid) > cfg.epsilon else (lo, mid)
    return hi


def train(task: Task, cfg: Config, variant: str = "isotropic", *, rng: Any = None,
          multiplier: float | None = None) -> dict[str, float]:
    """One DP-SGD run; returns the test accuracy, the multiplier and the clip radius."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    gen = np.random.default_rng(rng)
    n, p = task.X.shape[0], task.X.shape[1] * task.classes
    W0 = np.zeros((task.X.shape[1], task.classes))
    public = per_example_gradients(W0, task.X_public, task.y_public)
    extra = None
    if variant == "isotropic":
        b = np.ones(p)
    elif variant == "scaled (public)":
        b = gaussian_data_scaling(gradient_scales(task))
    else:
        C0 = float(np.quantile(np.linalg.norm(public, axis=1), 0.9))
        b = gaussian_data_scaling(_private_scales(task, cfg, C0, gen))
        extra = scales_multiplier(cfg)
    # the clip radius: a quantile of the (scaled) gradient norms on the public split
    C = float(np.quantile(np.linalg.norm(public * b, axis=1), cfg.clip_quantile))
    z = multiplier if multiplier is not None else calibrate_multiplier(cfg, extra)
    eps_step = float(gaussian_epsilon(z * C, cfg.delta, C))
    acc = clipped_gaussian_accumulator(p, epsilon=eps_step, delta=cfg.delta, clip_norm=C,
                                       neighbouring="add-remove")
    W = W0.copy()
    expected = expected_batch(task, cfg)      # public: never the private n
    for _ in range(cfg.steps):
        batch = gen.random(n) < cfg.sampling_rate
        G = per_example_gradients(W, task.X[batch], task.y[batch]) * b
        # every step releases the same plan, one release each; the guarantee of
        # all the steps together is the subsampled accountant's (calibrate_multiplier)
        noisy = acc.empty().update(G).release(rng=gen).estimate / b
        W -= cfg.learning_rate * noisy.reshape(W.shape) / expected
    return {"accuracy": accuracy(W, task.X_test, task.y_test), "multiplier": z,
            "clip_radius": C}


def best_linear(task: Task) -> float:
    """The test accuracy of scikit-learn's (non-private) logistic regression fitted
    to convergence: the best a linear model reaches, for reference."""
    from sklearn.linear_model import LogisticRegression
    model = LogisticRegression(max_iter=2000).fit(task.X[:, :-1], task.y)
    return float(model.score(task.X_test[:, :-1], task.y_test))


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean test accuracy and its standard error over seeds, per task, variant
    and epsilon."""
    keys = sorted({(r["task"], r["variant"], float(r["epsilon"])) for r in rows},
                  key=lambda k: (k[0], k[2], k[1]))
    out = []
    for task, variant, eps in keys:
        acc = np.array([float(r["accuracy"]) for r in rows if r["task"] == task
                        and r["variant"] == variant and float(r["epsilon"]) == eps])
        se = float(acc.std(ddof=1) / math.sqrt(acc.size)) if acc.size > 1 else math.nan
        out.append({"task": task, "variant": variant, "epsilon": eps,
                    "mean": float(acc.mean()), "se": se, "seeds": int(acc.size)})
    return out


def nonprivate(task: Task, cfg: Config, *, rng: Any = None) -> float:
    """The same optimiser without clipping or noise: the test accuracy."""
    gen = np.random.default_rng(rng)
    n = task.X.shape[0]
    W = np.zeros((task.X.shape[1], task.classes))
    for _ in range(cfg.steps):
        batch = gen.random(n) < cfg.sampling_rate
        G = per_example_gradients(W, task.X[batch], task.y[batch])
        W -= cfg.learning_rate * G.sum(axis=0).reshape(W.shape) / expected_batch(task, cfg)
    return accuracy(W, task.X_test, task.y_test)


def run(task: Task, cfg: Config, epsilons: list[float], seeds: list[int],
        variants: tuple[str, ...] = VARIANTS) -> list[dict[str, Any]]:
    """Every (epsilon, variant, seed), plus the non-private model per seed: rows
    of a table (``variant == "non-private"`` has ``epsilon`` inf)."""
    rows: list[dict[str, Any]] = []
    for seed in seeds:
        rows.append({"task": task.name, "variant": "non-private", "epsilon": math.inf,
                     "seed": seed, "accuracy": nonprivate(task, cfg, rng=seed),
                     "multiplier": 0.0, "clip_radius": math.inf})
    for eps in epsilons:
        c = replace(cfg, epsilon=eps)
        zs = {v: calibrate_multiplier(c, scales_multiplier(c) if v == VARIANTS[2] else None)
              for v in variants}
        for v in variants:
            for seed in seeds:
                out = train(task, c, v, rng=seed, multiplier=zs[v])
                rows.append({"task": task.name, "variant": v, "epsilon": eps,
                             "seed": seed, **out})
    return rows


# ------------------------------------------------------------------ accounting

def naive_epsilon(multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """Basic composition of ``steps`` amplified steps: each step's Gaussian
    ``(eps0, delta0)`` with ``delta0 = delta / (steps * rate)``, amplified to
    ``log(1 + rate (e^eps0 - 1))`` and ``rate * delta0``, then added up."""
    d0 = delta / (steps * sampling_rate)
    if not d0 < 1:
        return math.inf
    e0 = float(gaussian_epsilon(multiplier, d0))
    return steps * math.log1p(sampling_rate * math.expm1(e0))


def dp_accounting_epsilon(multiplier: float, sampling_rate: float, steps: int,
                          delta: float, interval: float) -> float:
    """Epsilon from Google's ``dp_accounting`` PLD accountant (the independent check)."""
    import dp_accounting
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=interval)
    event = dp_accounting.PoissonSampledDpEvent(sampling_rate,
                                                dp_accounting.GaussianDpEvent(multiplier))
    acc.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return float(acc.get_epsilon(delta))


def accounting_table(settings: list[tuple[float, float, int]], delta: float,
                     intervals: tuple[float, ...] = (1e-3, 1e-4)) -> list[dict[str, float]]:
    """dpsum's accountant against dp_accounting's: one row per setting and interval."""
    rows = []
    for z, q, t in settings:
        for h in intervals:
            ours = subsampled_gaussian_epsilon(z, q, t, delta, interval=h)
            theirs = dp_accounting_epsilon(z, q, t, delta, h)
            rows.append({"multiplier": z, "rate": q, "steps": t, "interval": h,
                         "dpsum": ours, "dp_accounting": theirs, "difference": ours - theirs})
    return rows


def load_results(path: Any = None) -> list[dict[str, Any]]:
    """The precomputed runs, ``book/data/dp_sgd.csv``, as rows of the table."""
    import csv
    from pathlib import Path
    from dpsum_book.conventions import BOOK
    p = Path(path) if path is not None else BOOK / "data" / "dp_sgd.csv"
    with p.open() as fh:
        rows: list[dict[str, Any]] = list(csv.DictReader(fh))
    for r in rows:
        for k in ("epsilon", "accuracy", "multiplier", "clip_radius"):
            r[k] = float(r[k])
        r["seed"] = int(r["seed"])
    return rows
