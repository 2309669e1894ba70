"""The experiments of the chapter on choosing the scaling and the clip probability.

Each experiment returns the rows of one file of ``book/data``; the chapter
reads the files, draws its figures from them and re-runs a small part of
each experiment (the row functions below) to check the file.

=====================  ==============================================================
file                   contents
=====================  ==============================================================
zipf_gains.csv         error factors ``F(b) = C(b)^2 sum_j b_j^-2`` of isotropic
                       clipping, the square-root scaling, whitening and the best
                       ``b`` for Zipf standard deviations, ``d`` in {100, 250, 500},
                       exponent ``a`` in {0.01, 0.1, 1, 10}, ``p_C = 10^-k`` for
                       k = 1, 1.5, ..., 6
skew_sweep.csv         the same four factors for ``sigma_j = j^-a``, ``a`` in [0, 2],
                       ``d`` in {10, 100, 1000}, ``n`` in {1e3, 1e6, 1e9}, ``p_C = 1/n``,
                       with the theory ratio and the Bernstein bound and its condition
optimum_gaps.csv       the square-root scaling, the best power and the best tilted
                       ``b`` against the optimum over all positive vectors, on four
                       small settings
measured_errors.csv    300 simulated releases per setting and scaling (tail
                       simulation for ``n`` up to 1e9) against the predicted error
full_datasets.csv      250 releases of full datasets (n = 2000, d = 100, epsilon = 10)
                       at ``p_C = 1/n`` and ``p_C = 0.1``, against noise plus bias
clip_probability.csv   noise factor and clipping bias against ``p_C`` for the
                       square-root scaling and the best ``b`` (n = 1e6, d = 100,
                       ``sigma_j = 1/j``)
=====================  ==============================================================

The names of the scalings (:data:`NAMES`) are the column names of the stored
files. Every random experiment seeds ``numpy.random.default_rng``, so the
files are reproducible bit for bit on the same NumPy version.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import numpy.typing as npt
from scipy import optimize

import dpsum
from dpsum import accuracy, bounds, design

__all__ = [
    "DELTA", "EPS", "EXPERIMENTS", "MEASURED_SETTINGS", "NAMES", "OPTIMUM_SETTINGS",
    "P_GRID", "SEED", "SKEWS", "SWEEP_D", "SWEEP_N", "ZIPF_A", "ZIPF_D", "ZIPF_K",
    "bias_term", "clip_probability", "contenders", "error_factor", "full_datasets",
    "measured_errors", "optimum_gaps", "optimum_row", "power_law", "simulate_errors",
    "skew_sweep", "sweep_row", "tail_rows", "tilt", "zipf_gains", "zipf_row", "zipf_stds",
]

Row = dict[str, Any]

SEED = 20231106
EPS, DELTA = 1.0, 1e-6  # the chapter's default guarantee
#: the four scalings compared, as named in the stored files' columns
NAMES = ("isotropic", "square-root", "whitening", "best b")
ZIPF_A, ZIPF_D, ZIPF_K = (0.01, 0.1, 1.0, 10.0), (100, 250, 500), np.arange(2, 13) / 2
SKEWS, SWEEP_D, SWEEP_N = np.linspace(0.0, 2.0, 9), (10, 100, 1000), (10**3, 10**6, 10**9)


# ------------------------------------------------------------------ helpers

def power_law(d: int, a: float) -> np.ndarray:
    """``sigma_j = j^-a``, j = 1..d."""
    return np.arange(1, d + 1, dtype=float) ** -a


def zipf_stds(d: int, a: float) -> np.ndarray:
    """Standard deviations proportional to a Zipf law, summing to 1."""
    s = power_law(d, a)
    return s / s.sum()


def error_factor(stds: npt.ArrayLike, p: float, b: npt.ArrayLike) -> float:
    """``F(b) = C(b)^2 sum_j b_j^-2``: the noise error of the Gaussian-data
    mechanism in units of ``(2 sigma_opt)^2`` (replace-one)."""
    C = float(dpsum.clip_radius(stds, p, b))
    return C * C * float(np.sum(np.asarray(b, dtype=float) ** -2.0))


def contenders(stds: npt.ArrayLike, p: float) -> dict[str, np.ndarray]:
    """The four scalings the chapter compares, by name (:data:`NAMES`)."""
    s = np.asarray(stds, dtype=float)
    return {
        "isotropic": np.ones(s.size),
        "square-root": design.gaussian_data_scaling(s),
        "whitening": design.whitening_scaling(s),
        "best b": design.error_optimal_scaling(s, p),
    }


def tilt(w: np.ndarray, C2: float) -> float:
    """The saddlepoint ``s`` with ``sum_j w_j / (1 - 2 s w_j) = C^2``."""
    if C2 <= w.sum():
        return 0.0
    root: float = optimize.brentq(lambda s: np.sum(w / (1 - 2 * s * w)) - C2, 0.0,
                                  (1 - 1e-12) / (2 * w.max()), xtol=1e-15)
    return root


def tail_rows(sigma: np.ndarray, b: np.ndarray, C: float, size: int,
              rng: np.random.Generator) -> np.ndarray:
    """``size`` independent rows ``x ~ N(0, diag sigma^2)`` conditioned on
    ``||x * b|| > C``: exponentially tilted proposals, accepted with
    probability ``exp(-s (||x_hat||^2 - C^2))``."""
    w = (b * sigma) ** 2
    s = tilt(w, C * C)
    sd = np.sqrt(w / (1 - 2 * s * w))
    kept, count = [np.empty((0, sigma.size))], 0
    while count < size:
        m = 3 * (size - count) + 32
        z = rng.standard_normal((m, sigma.size)) * sd
        X = np.einsum("ij,ij->i", z, z)
        accept = (X > C * C) & (rng.random(m) < np.exp(-s * (X - C * C)))
        kept.append(z[accept])
        count += int(accept.sum())
    return np.concatenate(kept)[:size] / b


def bias_term(sigma: np.ndarray, b: np.ndarray, C: float, n: int, M: int,
              rng: np.random.Generator) -> tuple[float, float]:
    """The clipping term ``n beta(b)`` of the total error and its standard
    error, from ``M`` rows of the conditional tail."""
    x = tail_rows(sigma, b, C, M, rng)
    v = (1 - C / np.linalg.norm(x * b, axis=1)) ** 2 * np.sum(x * x, axis=1)
    pi = float(dpsum.GeneralizedChiSquare((b * sigma) ** 2).sf(C * C))
    return n * pi * float(v.mean()), n * pi * float(v.std(ddof=1)) / math.sqrt(M)


def simulate_errors(sigma: np.ndarray, b: np.ndarray, n: int, eps: float, p: float, R: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``R`` squared errors ``||M(X) - f(X)||^2`` of the Gaussian-data mechanism
    on ``n`` model rows, simulated through the rows outside the clip ball only."""
    C = float(dpsum.clip_radius(sigma, p, b))
    pi = float(dpsum.GeneralizedChiSquare((b * sigma) ** 2).sf(C * C))
    out = np.empty(R)
    for r in range(R):
        K = int(rng.binomial(n, pi))
        X = np.vstack([np.zeros((1, sigma.size)), tail_rows(sigma, b, C, K, rng)])
        release = dpsum.gaussian_data_mechanism(X, epsilon=eps, delta=DELTA, stds=sigma,
                                                clip_probability=p, scaling=b, rng=rng, center=0)
        out[r] = np.sum((release.estimate - X.sum(axis=0)) ** 2)
    return out


# -------------------------------------------------------------- experiments

def zipf_row(a: float, d: int, k: float) -> Row:
    """One row of ``zipf_gains.csv``."""
    shape, p = zipf_stds(d, a), 10.0**-k
    F = {name: error_factor(shape, p, b) for name, b in contenders(shape, p).items()}
    return {"a": a, "d": d, "k": k, "C2_isotropic": float(dpsum.clip_radius(shape, p)) ** 2,
            "C2_lemma": float(dpsum.clip_radius(shape, p,
                                                design.gaussian_data_scaling(shape))) ** 2,
            **{f"F_{name}": F[name] for name in NAMES}}


def zipf_gains() -> list[Row]:
    """The rows of ``zipf_gains.csv``."""
    return [zipf_row(a, d, k) for a in ZIPF_A for d in ZIPF_D for k in ZIPF_K]


def sweep_row(d: int, n: int, a: float) -> Row:
    """One row of ``skew_sweep.csv``."""
    sigma, p = power_law(d, a), 1.0 / n
    sopt = dpsum.analytic_sigma(EPS, DELTA)
    F = {name: error_factor(sigma, p, b) for name, b in contenders(sigma, p).items()}
    return {"d": d, "n": n, "a": a, **{f"F_{name}": F[name] for name in NAMES},
            "theory": d * np.sum(sigma**2) / np.sum(sigma) ** 2,
            "F_theorem5": float(bounds.bernstein_error_bound(sigma, n, EPS, DELTA, strict=False))
            / (4 * sopt**2),
            "condition": int(bool(bounds.bernstein_error_condition_holds(sigma, n)))}


def skew_sweep() -> list[Row]:
    """The rows of ``skew_sweep.csv``."""
    return [sweep_row(d, n, a) for d in SWEEP_D for n in SWEEP_N for a in SKEWS]


OPTIMUM_SETTINGS = ((10, 1.0, 1e-3), (10, 2.0, 1e-1), (10, 1.0, 1e-9), (30, 1.0, 1e-6))


def optimum_row(d: int, a: float, p: float) -> Row:
    """One row of ``optimum_gaps.csv``."""
    sigma = power_law(d, a)
    F_all = error_factor(sigma, p, design.error_optimal_scaling(sigma, p, family="all"))
    b_pow = design.error_optimal_scaling(sigma, p, family="power")
    return {"d": d, "a": a, "p": p,
            "lemma_over_all": error_factor(sigma, p, design.gaussian_data_scaling(sigma))
            / F_all,
            "power_over_all": error_factor(sigma, p, b_pow) / F_all,
            "alpha": np.log(b_pow[0] / b_pow[-1]) / np.log(sigma[-1] / sigma[0]),
            "tilted_over_all": error_factor(sigma, p, design.error_optimal_scaling(sigma, p))
            / F_all}


def optimum_gaps() -> list[Row]:
    """The rows of ``optimum_gaps.csv``."""
    return [optimum_row(*s) for s in OPTIMUM_SETTINGS]


MEASURED_SETTINGS = ([(a, n, EPS) for a in (0.5, 1.0, 2.0) for n in SWEEP_N]
                     + [(1.0, 10**6, 0.1), (1.0, 10**6, 10.0)])


def _noise(sigma: np.ndarray, eps: float, p: float, b: np.ndarray) -> float:
    return float(accuracy.gaussian_data_error(sigma, eps, DELTA, p, scaling=b))


def measured_errors(R: int = 300) -> list[Row]:
    """The rows of ``measured_errors.csv``: ``R`` releases per setting and scaling."""
    rng = np.random.default_rng(SEED + 1)
    rows: list[Row] = []
    bias_cache: dict[tuple[float, int, str], tuple[float, float]] = {}
    for a, n, eps in MEASURED_SETTINGS:
        sigma, p = power_law(100, a), 1.0 / n
        for name, b in contenders(sigma, p).items():
            if (a, n, name) not in bias_cache:  # the bias does not depend on epsilon
                C = float(dpsum.clip_radius(sigma, p, b))
                bias_cache[a, n, name] = bias_term(sigma, b, C, n, 1000, rng)
            nb, nb_se = bias_cache[a, n, name]
            e = simulate_errors(sigma, b, n, eps, p, R, rng)
            rows.append({"a": a, "n": n, "epsilon": eps, "scaling": name,
                         "noise": _noise(sigma, eps, p, b),
                         "bias": nb, "bias_se": nb_se, "releases": R,
                         "mean": e.mean(), "se": e.std(ddof=1) / math.sqrt(R)})
    return rows


def full_datasets(R: int = 250) -> list[Row]:
    """The rows of ``full_datasets.csv``: ``R`` releases of whole datasets."""
    n, d, eps = 2000, 100, 10.0
    sigma = power_law(d, 1.0)
    rng = np.random.default_rng(SEED + 2)
    plans = []
    for p in (1.0 / n, 0.1):
        for name, b in contenders(sigma, p).items():
            C = float(dpsum.clip_radius(sigma, p, b))
            nb, nb_se = bias_term(sigma, b, C, n, 4000, rng)
            plans.append((p, name, b, _noise(sigma, eps, p, b), nb, nb_se))
    errors = np.empty((len(plans), R))
    for r in range(R):
        X = rng.standard_normal((n, d)) * sigma  # one dataset, released with every scaling
        truth = X.sum(axis=0)
        for i, (p, _, b, *_) in enumerate(plans):
            release = dpsum.gaussian_data_mechanism(X, epsilon=eps, delta=DELTA, stds=sigma,
                                                    clip_probability=p, scaling=b, rng=rng, center=0)
            errors[i, r] = np.sum((release.estimate - truth) ** 2)
    return [{"p": p, "scaling": name, "noise": noise, "bias": nb, "bias_se": nb_se,
             "releases": R, "mean": e.mean(), "se": e.std(ddof=1) / math.sqrt(R)}
            for (p, name, _, noise, nb, nb_se), e in zip(plans, errors)]


P_GRID = 10.0 ** -np.arange(1, 10)


def clip_probability() -> list[Row]:
    """The rows of ``clip_probability.csv``."""
    n, d = 10**6, 100
    sigma = power_law(d, 1.0)
    rng = np.random.default_rng(SEED + 3)
    rows: list[Row] = []
    for name in ("square-root", "best b"):
        for p in P_GRID:
            b = contenders(sigma, p)[name]
            C = float(dpsum.clip_radius(sigma, p, b))
            nb, nb_se = bias_term(sigma, b, C, n, 1000, rng)
            rows.append({"scaling": name, "p": p, "F": error_factor(sigma, p, b),
                         "bias": nb, "bias_se": nb_se})
    return rows


#: file stem -> the experiment that computes its rows
EXPERIMENTS: dict[str, Callable[[], list[Row]]] = {
    "zipf_gains": zipf_gains,
    "skew_sweep": skew_sweep,
    "optimum_gaps": optimum_gaps,
    "measured_errors": measured_errors,
    "full_datasets": full_datasets,
    "clip_probability": clip_probability,
}
