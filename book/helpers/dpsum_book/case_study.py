"""The machinery of the chapter "Case study: real data".

The public split, the three mechanisms with public inputs and the private
pipeline (:func:`private_means`, :func:`pipeline_mean`), the repeated-release
studies, the non-private diagnostics the chapter uses for study only, the
clip probability chosen on the public half, and the chapter's figures.
"""

from __future__ import annotations

import warnings

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure
from scipy import stats

import dpsum
from dpsum.release.records import PublicInputWarning
from dpsum import accuracy
from dpsum.kernels import clipped_sum
from dpsum_book.style import figure

__all__ = [
    "DELTA", "MECHANISMS", "clearly_below", "clipped_fraction", "clipping_error",
    "deterministic_bias", "digit_figure", "feature_figure", "fraction_figure",
    "laplace_sf", "load", "mean_se", "model_sf", "pipeline_mean", "pipeline_study",
    "prepare", "private_means", "public_split", "release_study", "tune_clip_probability",
]

DELTA = 1e-6
#: the three mechanisms with public inputs, by the names the chapter prints
MECHANISMS = ("Gaussian", "Elliptical", "Gaussian data")

Data = dict[str, Any]


def public_split(X: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random half of the rows is public, the rest private; the split ignores
    the data values."""
    order = np.random.default_rng(seed).permutation(len(X))
    half = len(X) // 2
    return X[order[:half]], X[order[half:]]


def prepare(X: npt.ArrayLike, seed: int, domain: tuple[float, float] | None = None,
            box: tuple[float, float] | None = None, std_floor: float = 0.0) -> Data:
    """The public inputs of each mechanism: the box (given, or the public range),
    the public standard deviations (floored) and the public mean (the center)."""
    X = np.asarray(X, dtype=float)
    public, private = public_split(X, seed)
    low, high = box if box is not None else (public.min(axis=0), public.max(axis=0))
    return {"public": public, "private": private,
            "low": np.broadcast_to(np.asarray(low, dtype=float), X.shape[1]),
            "high": np.broadcast_to(np.asarray(high, dtype=float), X.shape[1]),
            "stds": np.maximum(public.std(axis=0, ddof=1), std_floor),
            "center": public.mean(axis=0), "domain": domain}


def load(seed: int) -> dict[str, Data]:
    """The digits (pixel range [0, 16] as box and domain, standard deviations
    floored at 1/sqrt(12)) and breast cancer (public box; domain [0, 1e4])."""
    from sklearn.datasets import load_breast_cancer, load_digits

    return {"digits": prepare(load_digits().data, seed, domain=(0.0, 16.0), box=(0.0, 16.0),
                              std_floor=1 / math.sqrt(12)),
            "breast cancer": prepare(load_breast_cancer().data, seed, (0.0, 1e4))}


def private_means(D: Data, epsilon: float, rng: Any) -> tuple[dict[str, np.ndarray],
                                                              dict[str, Any]]:
    """One private mean of the private half per mechanism, and the releases."""
    X = D["private"]
    n = len(X)
    low, high = D["low"], D["high"]
    widths = high - low
    gauss = dpsum.gaussian_mechanism(np.clip(X, low, high).sum(axis=0), epsilon=epsilon,
                                     delta=DELTA, sensitivity=float(np.linalg.norm(widths)),
                                     rng=rng)
    # the comparison is of the mechanisms' own noise: no diagnostic count (it
    # would take 2% of each budget the Gaussian mechanism keeps whole)
    ellip = dpsum.elliptical_gaussian_mechanism(X, epsilon=epsilon, delta=DELTA, lower=low,
                                                upper=high, rng=rng, diagnostics=False)
    gdata = dpsum.gaussian_data_mechanism(X, epsilon=epsilon, delta=DELTA, stds=D["stds"],
                                          center=D["center"], rng=rng, diagnostics=False)
    means = {"Gaussian": gauss.estimate / n, "Elliptical": ellip.estimate / n,
             "Gaussian data": gdata.estimate / n}
    return means, {"Gaussian": gauss, "Elliptical": ellip, "Gaussian data": gdata}


def pipeline_mean(D: Data, epsilon: float, rng: Any) -> Any:
    """The private pipeline on the private half, with the domain box only.

    Its warning that the rows are too few for a coordinate-wise center is
    expected here (the chapter reads the strategy from the release)."""
    lower, upper = D["domain"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PublicInputWarning)
        return dpsum.private_mean(D["private"], lower=lower, upper=upper,
                                  epsilon=epsilon, delta=DELTA, rng=rng)


def mean_se(values: npt.ArrayLike) -> tuple[float, float]:
    """Mean and standard error of the mean."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def clearly_below(a: npt.ArrayLike, b: npt.ArrayLike, z: float = 5.0) -> bool:
    """Mean of ``a`` below mean of ``b`` by more than ``z`` standard errors of
    the difference."""
    (ma, sa), (mb, sb) = mean_se(a), mean_se(b)
    return mb - ma > z * math.hypot(sa, sb)


def deterministic_bias(D: Data, release: Any) -> np.ndarray:
    """The exact sum minus the clipped or clamped sum a release adds noise to
    (uses the private rows: for study only)."""
    X = D["private"]
    if str(release.mechanism) == "gaussian data":
        scaled, _ = clipped_sum(X, release.clip_norm, release.scaling, release.center)
        out: np.ndarray = X.sum(axis=0) - (len(X) * release.center + scaled / release.scaling)
        return out
    clamped: np.ndarray = X.sum(axis=0) - np.clip(X, D["low"], D["high"]).sum(axis=0)
    return clamped


def release_study(data: Mapping[str, Data], epsilons: Sequence[float], R: int,
                  seed: int) -> tuple[dict[Any, np.ndarray], dict[Any, np.ndarray],
                                      dict[Any, Any]]:
    """``R`` releases per dataset, epsilon and mechanism: the L2 errors of the
    private means, their squared coordinate errors, and one release of each."""
    errors, squared, records = {}, {}, {}
    for name, D in data.items():
        truth = D["private"].mean(axis=0)
        for eps in epsilons:
            rng = np.random.default_rng([seed, int(4 * eps), 99])
            draws: dict[str, list[np.ndarray]] = {m: [] for m in MECHANISMS}
            for _ in range(R):
                means, rel = private_means(D, eps, rng)
                for m in MECHANISMS:
                    draws[m].append(means[m] - truth)
            for m in MECHANISMS:
                diff = np.array(draws[m])
                errors[name, eps, m] = np.linalg.norm(diff, axis=1)
                squared[name, eps, m] = diff**2
                records[name, eps, m] = rel[m]
    return errors, squared, records


def pipeline_study(data: Mapping[str, Data], epsilons: Sequence[float], R: int,
                   seed: int) -> tuple[dict[Any, np.ndarray], dict[Any, np.ndarray],
                                       dict[Any, str]]:
    """``R`` pipeline releases per dataset and epsilon: L2 errors, squared
    coordinate errors, and the strategy its small-data rule chose (the most
    frequent one over the ``R`` releases; it is recorded in each release)."""
    errors, squared, center = {}, {}, {}
    for name, D in data.items():
        truth = D["private"].mean(axis=0)
        for eps in epsilons:
            rng = np.random.default_rng([seed, int(4 * eps), 99, 1])
            runs = [pipeline_mean(D, eps, rng) for _ in range(R)]
            diff = np.array([r.estimate for r in runs]) - truth
            errors[name, eps] = np.linalg.norm(diff, axis=1)
            squared[name, eps] = diff**2
            strategies = [r.strategy for r in runs]
            center[name, eps] = max(set(strategies), key=strategies.count)
    return errors, squared, center


def digit_figure(D: Data, epsilons: Sequence[float], seed: int) -> Figure:
    """The exact mean digit of the private half (top left) and one private
    mean per mechanism (rows) and privacy level (columns)."""
    rows = (*MECHANISMS, "Pipeline")
    fig, axes = figure(3, 3)
    fig.set_size_inches(6.8, 6.8)
    style = dict(cmap="gray_r", vmin=0, vmax=16, interpolation="nearest")
    for ax in axes.flat:
        ax.set_xticks([]), ax.set_yticks([])
        ax.grid(False)
    shown = {}
    for eps in epsilons:
        rng = np.random.default_rng([seed, int(4 * eps), 0])
        means, _ = private_means(D, eps, rng)
        means["Pipeline"] = pipeline_mean(D, eps, rng).estimate
        shown.update({(m, eps): means[m] for m in rows})
    for col, eps in enumerate(epsilons):
        for row, m in enumerate(("Gaussian", "Gaussian data", "Pipeline")):
            axes[row, col].imshow(shown[m, eps].reshape(8, 8), **style)
            axes[row, col].set_title(f"{m}, ε = {eps:g}", fontsize=9)
    return fig


def feature_figure(D: Data, squared: Mapping[Any, np.ndarray],
                   pipe_squared: Mapping[Any, np.ndarray], epsilon: float) -> Figure:
    """RMSE of each feature's private mean over its public standard deviation,
    features sorted by that standard deviation."""
    fig, ax = figure()
    order = np.argsort(D["stds"])
    x = np.arange(1, order.size + 1)
    for m, marker in zip(MECHANISMS, "osD"):
        rmse = np.sqrt(squared["breast cancer", epsilon, m].mean(axis=0))
        ax.plot(x, (rmse / D["stds"])[order], marker=marker, ms=4, label=m)
    rmse = np.sqrt(pipe_squared["breast cancer", epsilon].mean(axis=0))
    ax.plot(x, (rmse / D["stds"])[order], marker="v", ms=4, label="Pipeline")
    ax.set_yscale("log")
    ax.set_xlabel("feature, by public standard deviation")
    ax.set_ylabel("RMSE / public std")
    ax.legend()
    return fig


def clipped_fraction(X: np.ndarray, setup: Any) -> float:
    """The fraction of the rows of ``X`` the set-up clips (for study only)."""
    return float(clipped_sum(X, setup.clip_norm, setup.scaling, setup.center)[1]) / len(X)


def clipping_error(X: np.ndarray, setup: Any) -> float:
    """``||f(X) - f_bar(X)||^2`` for a set-up of the Gaussian-data mechanism."""
    scaled, _ = clipped_sum(X, setup.clip_norm, setup.scaling, setup.center)
    return float(np.sum((X.sum(axis=0) - len(X) * setup.center - scaled / setup.scaling)
                        ** 2))


def fraction_figure(data: Mapping[str, Data], setups: Mapping[str, Sequence[Any]],
                    p_grid: np.ndarray) -> Figure:
    """The fraction of rows clipped against the model's clip probability, for
    the private and the public half of each dataset."""
    fig, axes = figure(2, sharey=True)
    for ax, (name, D) in zip(axes, data.items()):
        for half, marker in (("private", "o"), ("public", "s")):
            frac = np.array([clipped_fraction(D[half], s) for s in setups[name]])
            ax.plot(p_grid[frac > 0], frac[frac > 0], marker=marker, ms=4,
                    label=f"{half} half")
        ax.plot(p_grid, p_grid, color="0.4", ls=":", label="model")
        ax.axvline(1 / len(D["private"]), color="0.5", lw=0.8)
        ax.set_xscale("log"), ax.set_yscale("log")
        ax.set_xlabel("model's $p_C$")
        ax.set_title(name)
    axes[0].set_ylabel("fraction clipped")
    axes[0].legend()
    return fig


def laplace_sf(x: npt.ArrayLike, scale: float) -> np.ndarray:
    """``P[L >= x]`` for ``L ~ Laplace(0, scale)``."""
    x = np.asarray(x, dtype=float)
    half = 0.5 * np.exp(-np.abs(x) / scale)
    out: np.ndarray = np.where(x >= 0, half, 1 - half)
    return out


def model_sf(t: float, n: int, p: float, scale: float) -> float:
    """``P[K + L >= t]`` for ``K ~ Binomial(n, p)`` and ``L ~ Laplace(0, scale)``."""
    k = np.arange(n + 1)
    return float(np.sum(stats.binom.pmf(k, n, p) * laplace_sf(t - k, scale)))


def tune_clip_probability(D: Data, epsilon: float, setups: Sequence[Any],
                          p_grid: np.ndarray) -> dict[str, float]:
    """Choose ``p_C`` on the public half (noise error plus the public half's
    clipping error) and evaluate it exactly on the private rows (study only),
    against ``p_C = 1/n`` and the Elliptical Gaussian mechanism."""
    X, public, stds = D["private"], D["public"], D["stds"]
    n = len(X)
    noise = np.array([accuracy.gaussian_data_error(stds, epsilon, DELTA, float(p))
                      for p in p_grid])
    best = int(np.argmin(noise + [clipping_error(public, s) for s in setups]))
    default = dpsum.gaussian_data_setup(stds, clip_probability=1 / n, center=D["center"])
    at_default = (accuracy.gaussian_data_error(stds, epsilon, DELTA, 1 / n)
                  + clipping_error(X, default))
    at_chosen = noise[best] + clipping_error(X, setups[best])
    ellip = (accuracy.elliptical_noise_error(D["high"] - D["low"], epsilon, DELTA)
             + float(np.sum((X.sum(axis=0) - np.clip(X, D["low"], D["high"]).sum(axis=0))
                            ** 2)))
    return {"p": float(p_grid[best]), "default": at_default / n**2,
            "chosen": at_chosen / n**2, "elliptical": ellip / n**2}
