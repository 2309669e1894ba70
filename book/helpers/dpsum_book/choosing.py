"""The machinery of the chapter "Choosing the scaling and the clip probability".

The chapter calls each function in one line: the quantile's derivative
(:func:`boundary_moments`), the quantile factor (:func:`kappa`), the skew
sweep of ``book/data/skew_sweep.csv`` as a dict (:func:`skew_table`), the
exact total error against the clip probability (:func:`total_error_curves`),
the paired study of the private pipeline's clip probability
(:func:`pipeline_pairs`) and the chapter's figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure

import dpsum
from dpsum import accuracy, design
from dpsum_book.data import read_columns
from dpsum_book.evaluation import DELTA, NAMES
from dpsum_book.style import figure

__all__ = [
    "boundary_moments", "gain_figure", "kappa", "kappa_figure", "pipeline_pairs",
    "quantile_gradient_fd", "scalings", "skew_table", "total_error_curves",
    "total_error_figure",
]

#: markers of the scalings in the chapter's figures
MARKERS = {"square-root": "o", "whitening": "s", "best b": "^", "isotropic": "x"}


def boundary_moments(w: npt.ArrayLike, q: float) -> np.ndarray:
    """``g_j = E[Z_j^2 | Q = q]`` for ``Q = sum_j w_j Z_j^2``: the density of
    ``Q + w_j chi2_2`` at ``q`` over that of ``Q`` (the derivative of the
    quantile ``q`` in ``w_j``)."""
    w = np.asarray(w, dtype=float)
    f0 = float(dpsum.GeneralizedChiSquare(w).pdf(q))
    return np.array([float(dpsum.GeneralizedChiSquare(np.append(w, [wj, wj])).pdf(q))
                     for wj in w]) / f0


def quantile_gradient_fd(w: npt.ArrayLike, p: float, h: float = 1e-4) -> np.ndarray:
    """Central differences, relative step ``h``, of the upper ``p`` quantile of
    ``sum_j w_j Z_j^2`` in each weight."""
    w = np.asarray(w, dtype=float)
    out = np.empty(w.size)
    for j, e in enumerate(np.eye(w.size)):
        up = dpsum.GeneralizedChiSquare(w * (1 + h * e)).isf(p)
        down = dpsum.GeneralizedChiSquare(w * (1 - h * e)).isf(p)
        out[j] = (up - down) / (2 * h * w[j])
    return out


def scalings(stds: npt.ArrayLike, p: float) -> dict[str, np.ndarray]:
    """The scalings the chapter compares: isotropic, square-root, whitening, best b."""
    s = np.asarray(stds, dtype=float)
    return {"isotropic": np.ones(s.size), "square-root": design.gaussian_data_scaling(s),
            "whitening": design.whitening_scaling(s),
            "best b": design.error_optimal_scaling(s, p)}


def kappa(stds: npt.ArrayLike, b: npt.ArrayLike, p: float) -> float:
    """The quantile factor ``C(b)^2 / E||x_hat||^2`` of a scaling ``b``."""
    w = (np.asarray(b, dtype=float) * np.asarray(stds, dtype=float)) ** 2
    Q = dpsum.GeneralizedChiSquare(w)
    return float(Q.isf(p)) / float(w.sum())


def kappa_figure(stds: npt.ArrayLike, p_axis: npt.ArrayLike, n: int) -> Figure:
    """The quantile factor of isotropic clipping, the square-root scaling and
    whitening against the clip probability."""
    fig, ax = figure()
    p_axis = np.asarray(p_axis, dtype=float)
    for name, b in scalings(stds, 0.01).items():
        if name == "best b":
            continue
        ax.loglog(p_axis, [kappa(stds, b, p) for p in p_axis], label=name,
                  marker=MARKERS[name], markevery=10)
    ax.axvline(1 / n, color="0.5", lw=0.8, ls="-.", label="$p_C = 1/n$")
    ax.set_xlabel("clip probability $p_C$")
    ax.set_ylabel(r"quantile factor $\kappa(b)$")
    ax.legend()
    return fig


def skew_table() -> dict[tuple[int, int, float], dict[str, float]]:
    """``book/data/skew_sweep.csv`` by ``(d, n, a)``: the error factors of the
    four scalings and the theory ratio ``d ||sigma||^2 / ||sigma||_1^2``."""
    data = read_columns("skew_sweep.csv")
    table = {}
    for i in range(data["d"].size):
        key = (int(data["d"][i]), int(data["n"][i]), float(data["a"][i]))
        table[key] = {name: float(data[f"F_{name}"][i]) for name in NAMES}
        table[key]["theory"] = float(data["theory"][i])
    return table


def gain_figure(table: dict[tuple[int, int, float], dict[str, float]], n: int,
                dims: Sequence[int] = (10, 100, 1000)) -> Figure:
    """Error of isotropic clipping over that of each scaling, against the skew,
    one panel per dimension, ``p_C = 1/n``."""
    fig, axes = figure(len(dims), sharey=True)
    for ax, d in zip(axes, dims):
        skews = sorted(a for (dd, nn, a) in table if dd == d and nn == n)
        rows = [table[d, n, a] for a in skews]
        for name in ("square-root", "whitening", "best b"):
            ax.plot(skews, [r["isotropic"] / r[name] for r in rows],
                    marker=MARKERS[name], label=name)
        ax.plot(skews, [r["theory"] for r in rows], color="0.4", ls=":",
                label="mean-norm ratio")
        ax.set_yscale("log")
        ax.set_xlabel("skew $a$")
        ax.set_title(f"d = {d}")
    axes[0].set_ylabel("gain over isotropic")
    axes[0].legend(loc="upper left")
    return fig


def total_error_curves(stds: npt.ArrayLike, n: int, p_grid: npt.ArrayLike,
                       epsilons: Sequence[float], names: Sequence[str] = ("square-root",
                                                                         "best b"),
                       delta: float = DELTA) -> dict[str, Any]:
    """Exact noise error and clipping error ``B`` of the Gaussian-data mechanism
    against the clip probability.

    Returns
    -------
    dict
        ``noise[name, epsilon]`` and ``clipping[name]``: arrays over ``p_grid``
        (the clipping error does not depend on epsilon).
    """
    s = np.asarray(stds, dtype=float)
    grid = [float(p) for p in np.asarray(p_grid, dtype=float)]
    noise: dict[tuple[str, float], np.ndarray] = {}
    clipping: dict[str, np.ndarray] = {}
    for name in names:
        bs = [scalings(s, p)[name] for p in grid]
        clipping[name] = np.array([accuracy.gaussian_data_clipping_error(
            s, n, p, scaling=b) for p, b in zip(grid, bs)])
        for eps in epsilons:
            noise[name, eps] = np.array([accuracy.gaussian_data_error(
                s, eps, delta, p, scaling=b) for p, b in zip(grid, bs)])
    return {"noise": noise, "clipping": clipping}


def total_error_figure(curves: dict[str, Any], p_grid: npt.ArrayLike, n: int,
                       epsilons: Sequence[float]) -> Figure:
    """Noise error plus clipping error against ``p_C``, one panel per epsilon."""
    fig, axes = figure(len(epsilons))
    for ax, eps in zip(axes, epsilons):
        for name in curves["clipping"]:
            noise = curves["noise"][name, eps]
            ax.loglog(p_grid, noise + curves["clipping"][name], marker=MARKERS[name],
                      label=f"{name}: total")
            ax.loglog(p_grid, noise, color=ax.lines[-1].get_color(), ls=":", lw=1.0,
                      label=f"{name}: noise")
        ax.axvline(1 / n, color="0.5", lw=0.8)
        ax.set_xlabel("clip probability $p_C$")
        ax.set_title(rf"$\varepsilon = {eps:g}$")
    axes[0].set_ylabel("expected squared error")
    axes[0].legend(loc="lower left")
    return fig


def pipeline_pairs(n: int, d: int, rho: float, p_pair: tuple[float, float], R: int,
                   rng: np.random.Generator) -> np.ndarray:
    """``R`` pairs of squared errors of :func:`dpsum.private_mean` against the
    data's own mean, on the same standard normal dataset at two clip
    probabilities; shape ``(R, 2)``."""
    out = np.empty((R, 2))
    for r in range(R):
        X = rng.standard_normal((n, d))
        truth = X.mean(axis=0)
        for k, p in enumerate(p_pair):
            est = dpsum.private_mean(X, lower=-100, upper=100, rho=rho, clip_probability=p,
                                     rng=rng).estimate
            out[r, k] = float(np.sum((est - truth) ** 2))
    return out
