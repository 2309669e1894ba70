"""Experiments of the chapter "Binary sums": which mechanism has the smallest
error where, and simulations that check the closed forms.

The three mechanisms are those of :mod:`dpsum.binary` with their published
calibrations: randomized response, additive binomial noise (the shuffle
model) and sample-and-threshold.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from dpsum import binary as B

__all__ = ["LABEL", "MARKED", "MECHS", "REGIMES", "SHORT", "decision_map", "exact_min_users", "legend_handles", "mse_grid",
           "simulate_point"]

MECHS = ("randomized response", "binomial", "sample and threshold")
LABEL = {"randomized response": "randomized response", "binomial": "binomial noise",
         "sample and threshold": "sample-and-threshold"}
_COLOURS = ("#0072B2", "#009E73", "#D55E00")
_PALE = ("#9ECAE9", "#A1DAB4", "#F4B183")

SHORT = {"randomized response": "RR", "binomial": "Bin", "sample and threshold": "S&T"}

#: the three regimes of a count: few users and many ones; many users and very
#: few ones; roughly as many ones as zeros
REGIMES = {"I": "not sparse, few users", "II": "very sparse, many users",
           "III": "roughly as many ones as zeros"}

#: points checked by simulation: (epsilon, delta, n, n_1, regime)
MARKED = [(0.1, 1e-3, 30_000, 5_000, "I"), (0.1, 1e-3, 500_000, 20_000, "II"),
          (0.1, 1e-3, 1_000_000, 500_000, "III"),
          (0.1, 1e-9, 50_000, 10_000, "I"), (0.1, 1e-9, 1_000_000, 10_000, "II"),
          (1.0, 1e-3, 500, 250, "I"), (1.0, 1e-3, 100_000, 1_000, "II"),
          (1.0, 1e-9, 1_000, 900, "I"), (1.0, 1e-9, 1_000_000, 300, "II"),
          (1.0, 1e-9, 100_000, 50_000, "III")]


def mse_grid(eps: float, delta: float, ns: np.ndarray,
             ks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Closed-form mean squared errors of the three mechanisms on the grid
    ``ns x ks`` (users x ones); ``valid`` marks ``k <= n``; binomial noise is
    ``inf`` where it may not run."""
    N, K = np.meshgrid(ns, ks)
    valid = K <= N
    Kc = np.where(valid, K, 1)
    mse = np.stack([np.asarray(B.binary_mse(m, n=N, k=Kc, epsilon=eps, delta=delta),
                               dtype=float) for m in MECHS])
    return N, K, valid, mse


def decision_map(ax: Any, eps: float, delta: float,
                 winners: dict[int, str] | None = None) -> None:
    """Draw on ``ax`` which mechanism has the smallest closed-form RMSE at each
    ``(n, n_1)``; pale where even the best RMSE exceeds ``n_1 / 2``. The points
    of :data:`MARKED` at ``(eps, delta)`` are labelled with their number and
    regime, and with the measured winner ``winners[number]`` if given."""
    ns = np.unique(np.round(np.logspace(2, 7, 101)).astype(np.int64))
    ks = np.unique(np.round(np.logspace(0, 7, 141)).astype(np.int64))
    N, K, valid, mse = mse_grid(eps, delta, ns, ks)
    best = mse.argmin(axis=0)
    pale = np.sqrt(mse.min(axis=0)) > 0.5 * K
    code = np.where(valid, best + 3 * pale, np.nan)
    cmap = ListedColormap(list(_COLOURS) + list(_PALE))
    ax.pcolormesh(ns, ks, code, cmap=cmap, vmin=-0.5, vmax=5.5, shading="nearest")
    ax.axvline(float(B.binomial_min_users(eps, delta)), color="k", ls="--", lw=1)
    for i, (e, d, n, k, regime) in enumerate(MARKED, start=1):
        if (e, d) == (eps, delta):
            ax.plot(n, k, "ko", ms=4)
            text = f"{i} {regime}"
            if winners is not None and i in winners:
                text += f": {SHORT[winners[i]]}"
            ax.annotate(text, (n, k), textcoords="offset points", xytext=(3, 3),
                        fontsize=8, bbox=dict(boxstyle="round,pad=0.15", fc="white",
                                              ec="none", alpha=0.8))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(rf"$\varepsilon$ = {eps}, $\delta$ = {delta:g}")


def legend_handles() -> list[Patch]:
    """Legend entries of :func:`decision_map`."""
    handles = [Patch(color=c, label=LABEL[m]) for c, m in zip(_COLOURS, MECHS)]
    handles.append(Patch(color="#dddddd", label="pale: best RMSE > $n_1/2$"))
    return handles


def simulate_point(eps: float, delta: float, n: int, k: int, reps: int,
                   rng: np.random.Generator) -> dict[str, tuple[float, float, float]]:
    """Per available mechanism: (closed-form MSE, simulated MSE, its standard
    error) over ``reps`` releases on ``n`` users with ``k`` ones."""
    bits = np.zeros(n, dtype=bool)
    bits[:k] = True
    run = {"randomized response": lambda: B.randomized_response(bits, epsilon=eps, rng=rng),
           "binomial": lambda: B.binomial_noise_mechanism(bits, epsilon=eps, delta=delta,
                                                          rng=rng),
           "sample and threshold": lambda: B.sample_and_threshold(bits, epsilon=eps,
                                                                  delta=delta, rng=rng)}
    out: dict[str, tuple[float, float, float]] = {}
    for m in MECHS:
        cf = float(B.binary_mse(m, n=n, k=k, epsilon=eps, delta=delta))
        if not np.isfinite(cf):
            continue
        sq = np.array([(run[m]().estimate - k) ** 2 for _ in range(reps)])
        out[m] = (cf, float(sq.mean()), float(sq.std(ddof=1) / math.sqrt(reps)))
    return out


def exact_min_users(eps: float, delta: float) -> int:
    """The smallest ``n`` for which ``Binomial(n, 1/2)`` noise is exactly
    ``(eps, delta)``-DP (bisection on the exact privacy profile)."""
    lo, hi = 1, int(B.binomial_min_users(eps, delta))
    assert B.binomial_privacy_delta(hi, 0.5, eps) <= delta
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if B.binomial_privacy_delta(mid, 0.5, eps) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
