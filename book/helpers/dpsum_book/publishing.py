"""The machinery of the chapter "Accuracy you can publish".

The coverage study of the total-error bound (:func:`coverage_study`), the
exact coverage of two intervals for randomized response
(:func:`rr_coverage`), and the chapter's figures, each called in one line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure
from scipy import stats

import dpsum
from dpsum import accuracy, binary, bounds
from dpsum.release import noise_norm_quantile
from dpsum_book.style import figure

__all__ = ["bounds_figure", "coverage_figure", "coverage_study", "noise_radius_bounds",
           "plan_figure", "rr_coverage", "rr_figure"]


def noise_radius_bounds(tau: npt.ArrayLike, betas: npt.ArrayLike) -> dict[str, np.ndarray]:
    """Radii that ``||eta||`` exceeds with probability at most ``beta``: the
    exact quantile, Laurent and Massart's bound and Cantelli's inequality."""
    tau = np.asarray(tau, dtype=float)
    betas = np.asarray(betas, dtype=float)
    mean2, var2 = float(np.sum(tau**2)), 2 * float(np.sum(tau**4))
    return {
        "exact": np.array([noise_norm_quantile(tau, float(b)) for b in betas]),
        "Laurent-Massart": np.sqrt(bounds.laurent_massart_threshold(tau, np.log(1 / betas))),
        "Cantelli": np.sqrt(mean2 + np.sqrt((1 / betas - 1) * var2)),
    }


def bounds_figure(sim: np.ndarray, tau: npt.ArrayLike, betas: npt.ArrayLike,
                  radii: dict[str, np.ndarray]) -> Figure:
    """Histogram of simulated noise norms with the exact radii (left); the
    exact radius, simulated quantiles and the two bounds against beta (right)."""
    fig, (ax, bx) = figure(2)
    ax.hist(sim, bins=100, density=True, color="0.75")
    for b, ls in ((0.05, "-"), (1e-3, "--")):
        ax.axvline(noise_norm_quantile(tau, b), color="k", ls=ls,
                   label=rf"$r_\beta$, $\beta$ = {b:g}")
    ax.set_xlabel(r"$\Vert \eta \Vert$ (simulated)")
    ax.set_ylabel("density")
    ax.legend()
    betas = np.asarray(betas, dtype=float)
    for name, r in radii.items():
        bx.plot(betas, r, label=name if name != "exact" else r"exact $r_\beta$")
    emp = betas[betas >= 1e-3]
    bx.plot(emp, np.quantile(sim, 1 - emp), "k.", ms=4, ls="none", label="simulated")
    bx.set_xscale("log")
    bx.set_xlabel(r"failure probability $\beta$")
    bx.set_ylabel("radius")
    bx.legend()
    return fig


def coverage_study(stds: npt.ArrayLike, n: int, epsilon: float, delta: float,
                   p_grid: Sequence[float], R: int, beta: float,
                   rng: np.random.Generator) -> list[dict[str, Any]]:
    """For each clip probability, ``R`` releases of fresh model data with the
    Gaussian-data mechanism: the total-error bound, the noise quantile alone,
    the simulated quantile of the error and the coverage of both radii."""
    s = np.asarray(stds, dtype=float)
    rows = []
    for p in p_grid:
        errs = np.empty(R)
        for r in range(R):
            Y = rng.normal(0.0, s, size=(n, s.size))
            rel = dpsum.gaussian_data_mechanism(Y, epsilon=epsilon, delta=delta, stds=s,
                                                center=0, clip_probability=p, rng=rng)
            errs[r] = np.linalg.norm(rel.estimate - Y.sum(axis=0))
        eb = accuracy.release_error_bound(rel, beta, stds=s, n=n)
        noise_q = noise_norm_quantile(rel.noise_std, beta)
        rows.append({"p": p, "bound": eb, "noise_q": noise_q,
                     "sim_q": float(np.quantile(errs, 1 - beta)),
                     "cover_bound": float(np.mean(errs <= eb.bound)),
                     "cover_noise": float(np.mean(errs <= noise_q))})
    return rows


def coverage_figure(rows: list[dict[str, Any]]) -> Figure:
    """The total bound, its two parts, the noise quantile alone and the
    simulated quantile of the error against the clip probability."""
    fig, ax = figure()
    p = [r["p"] for r in rows]
    ax.plot(p, [r["bound"].bound for r in rows], marker="o", label="total bound")
    ax.plot(p, [r["bound"].noise_radius for r in rows], label="its noise part")
    ax.plot(p, [r["bound"].bias_radius for r in rows], label="its clipping part")
    ax.plot(p, [r["noise_q"] for r in rows], marker="s", label=r"noise quantile alone")
    ax.plot(p, [r["sim_q"] for r in rows], "k^", ls="none", label="simulated quantile")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("clip probability $p_C$")
    ax.set_ylabel(r"$\Vert \mathcal{M}(X) - f(X) \Vert$")
    ax.legend(ncol=2)
    return fig


_LABELS = {"scaled": "scaled", "isotropic": "isotropic"}


def plan_figure(plan: dict[str, tuple[int, Any]], stds: npt.ArrayLike, target: float,
                epsilon: float, delta: float) -> Figure:
    """The noise part of the 95% bound on the mean's error against ``n`` for each
    scaling, with the planned ``n`` and its total bound marked."""
    fig, ax = figure()
    n_grid = np.unique(np.geomspace(1000, 60000, 30).astype(int))
    for name, (n_star, at) in plan.items():
        curve = [accuracy.gaussian_data_error_bound(
            stds, int(m), epsilon=epsilon, delta=delta, beta=0.05, scaling=name,
            include_bias=False, statistic="mean").bound for m in n_grid]
        label = _LABELS.get(name, name)
        line = ax.plot(n_grid, curve, label=f"{label}: noise part")[0]
        ax.plot([n_star], [at.bound], "o", color=line.get_color(),
                label=f"{label}: n = {n_star}")
    ax.axhline(target, color="0.4", lw=0.8, ls="--", label=f"target {target}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of records $n$")
    ax.set_ylabel("95% bound, error of the mean")
    ax.legend()
    return fig


def rr_coverage(n: int, epsilon: float, beta: float) -> dict[str, np.ndarray]:
    """Exact coverage, for every true count, of the exact interval of
    randomized response and of the estimate plus or minus z standard deviations."""
    q = binary.randomized_response_keep_probability(epsilon)
    outputs = np.arange(n + 1)

    def release(y: int) -> binary.BinaryRelease:
        return binary.BinaryRelease(
            estimate=float(binary.randomized_response_estimate(y, n, epsilon=epsilon)),
            output=int(y), n=n, epsilon=epsilon, delta=0.0,
            mechanism=binary.BinaryMechanism("randomized response"), probability=float(q),
            threshold=None)

    exact = np.array([binary.count_interval(release(int(y)), beta) for y in outputs])
    half = stats.norm.isf(beta / 2) * math.sqrt(binary.randomized_response_variance(n, epsilon))
    est = np.array([release(int(y)).estimate for y in outputs])
    normal = np.stack([est - half, est + half], axis=1)
    cov_exact, cov_normal = np.empty(n + 1), np.empty(n + 1)
    for k in range(n + 1):
        pmf = np.convolve(stats.binom.pmf(np.arange(k + 1), k, q),
                          stats.binom.pmf(np.arange(n - k + 1), n - k, 1 - q))
        cov_exact[k] = pmf @ ((exact[:, 0] <= k) & (k <= exact[:, 1]))
        cov_normal[k] = pmf @ ((normal[:, 0] <= k) & (k <= normal[:, 1]))
    return {"exact": exact, "normal": normal, "cov_exact": cov_exact,
            "cov_normal": cov_normal}


def rr_figure(cov: dict[str, np.ndarray], beta: float) -> Figure:
    """The two exact coverages against the true count."""
    fig, ax = figure()
    k = np.arange(cov["cov_exact"].size)
    ax.plot(k, cov["cov_exact"], marker="o", ms=3, label="exact interval")
    ax.plot(k, cov["cov_normal"], marker="s", ms=3, label=r"estimate $\pm$ z sd")
    ax.axhline(1 - beta, color="0.4", lw=0.8)
    ax.set_xlabel("true count $k$")
    ax.set_ylabel("coverage (exact)")
    ax.legend()
    return fig
