"""The published evaluation of the Gaussian-data mechanism, re-examined.

The mechanism's author published an evaluation (repository TSPoulsen/egm,
``results.csv`` from ``generate.py``): squared clip radii for Zipf settings,
found by a quantile search on Davies' algorithm. The book compares them with
exact values; this module holds what the comparison and the chapter share:
the settings as the published script forms them, the published search
procedure, and an independent tail probability (Imhof's inversion) that
shares no code with :class:`dpsum.GeneralizedChiSquare`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import numpy.typing as npt
from scipy import integrate, stats

__all__ = ["check_imhof", "comparison_figure", "headline_figure", "imhof_sf", "published_search",
           "weights", "zipf_stds"]


def zipf_stds(d: int, a: float, total: float) -> np.ndarray:
    """``sigma_j = total * j^-a / sum_i i^-a``, exactly as the published script
    forms them (scipy's Zipf probability mass function)."""
    out: np.ndarray = stats.zipfian.pmf(np.arange(1, d + 1), a, d) * total
    return out


def weights(sigma: np.ndarray, scaled: bool) -> np.ndarray:
    """Generalized chi-square weights of ``||x||^2`` (``scaled=False``) or of
    the squared norm after the square-root scaling (``scaled=True``)."""
    return sigma / sigma.sum() if scaled else sigma**2


def imhof_sf(x: float, lam: npt.ArrayLike, epsabs: float = 1e-13) -> tuple[float, float]:
    """``P(sum_j lam_j Z_j^2 > x)`` and an error estimate, by Imhof (1961).

    Gil-Pelaez inversion of the characteristic function
    ``prod_j (1 - 2i lam_j t)^(-1/2)`` gives
    ``P(Q > x) = 1/2 + (1/pi) int_0^inf sin(theta(u)) / (u rho(u)) du`` with
    ``theta(u) = sum_j arctan(lam_j u) / 2 - x u / 2`` and
    ``rho(u) = prod_j (1 + lam_j^2 u^2)^(1/4)``. The integral is split at
    ``u0 = 100 / x`` (about eight periods of the carrier ``x u / 2``); beyond
    it ``sin(phi(u) - x u / 2) = sin(phi) cos(x u / 2) - cos(phi) sin(x u / 2)``
    with the slowly varying ``phi(u) = sum_j arctan(lam_j u) / 2`` is
    integrated by QUADPACK's Fourier routine (QAWF), which handles the slow
    decay ``u^(-1 - d/2)`` of a sum dominated by a few weights. The absolute
    error is about 1e-13, so relative errors stay below 1e-6 for tail
    probabilities down to 1e-6; far smaller tails lose their digits to
    cancellation.
    """
    lam = np.asarray(lam, dtype=float)
    lam = lam[lam > 0]
    w = 0.5 * x

    def phi(u: float) -> float:
        return 0.5 * float(np.sum(np.arctan(lam * u)))

    def amplitude(u: float) -> float:
        return math.exp(-0.25 * float(np.sum(np.log1p((lam * u) ** 2)))) / u

    def head(u: float) -> float:
        if u == 0.0:
            return 0.5 * (float(lam.sum()) - x)  # the limit of the integrand at 0
        return math.sin(phi(u) - w * u) * amplitude(u)

    u0 = 50.0 / w
    a, ea = integrate.quad(head, 0.0, u0, limit=2000, epsabs=epsabs, epsrel=1e-13)
    b, eb = integrate.quad(lambda u: math.sin(phi(u)) * amplitude(u), u0, np.inf,
                           weight="cos", wvar=w, limlst=200, limit=2000, epsabs=epsabs)
    c, ec = integrate.quad(lambda u: math.cos(phi(u)) * amplitude(u), u0, np.inf,
                           weight="sin", wvar=w, limlst=200, limit=2000, epsabs=epsabs)
    return 0.5 + (a + b - c) / math.pi, (ea + eb + ec) / math.pi


def check_imhof() -> None:
    """The inversion against closed forms: chi-square with 1, 10 and 100
    degrees of freedom, scaled, at tail probabilities 1e-1 to 1e-6."""
    for dof, scale in ((1, 2.0), (10, 1.0), (100, 0.3)):
        for p in (1e-1, 1e-3, 1e-6):
            x = scale * float(stats.chi2.isf(p, dof))
            value, _ = imhof_sf(x, np.full(dof, scale))
            assert abs(value / p - 1) < 1e-6, (dof, p, value)


def published_search(cdf: Callable[[float], tuple[float, int]], p: float) -> float:
    """The quantile search of the published script, rewritten: ``cdf(x)``
    returns ``(value, error_code)``; the target is ``1 - p`` and the
    tolerance on the distribution function is ``p / 10``."""
    prob, tol = 1.0 - p, p / 10.0
    lo, hi = 0.0, 1.0
    while True:  # double the upper end until it is above the target
        value, code = cdf(hi)
        if code == 0 and value < prob:
            lo, hi = hi, 2.0 * hi
        elif code == 0:
            break
        else:
            hi += 10.0
    value = 0.0
    while lo < hi and abs(value - prob) > tol:
        mid = 0.5 * (lo + hi)
        value, code = cdf(mid)
        while code != 0:
            mid += 1.0
            value, code = cdf(mid)
        if value < prob:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)  # the bracket's midpoint, not the probe that stopped the loop


# ------------------------------------------------------------ the appendix's figures

def comparison_figure(cmp: dict[str, np.ndarray], agree: np.ndarray) -> Any:
    """Published against exact gain of the square-root scaling (left), and the
    true clip probability at the published squared radii (right)."""
    from dpsum_book.style import figure

    fig, (ax, bx) = figure(2)
    for mask, label, marker in ((agree, "within 1%", "o"), (~agree, "off by > 1%", "x")):
        ax.loglog(cmp["dpsum_gain"][mask], cmp["published_gain"][mask], marker, ms=3,
                  ls="none", label=label)
    ax.plot([0.8, 1.3e3], [0.8, 1.3e3], color="0.4", lw=0.8)
    ax.set_xlabel("gain, exact")
    ax.set_ylabel("gain, published")
    ax.legend()
    for name, marker, label in (("isotropic", "o", "isotropic"),
                                ("lemma", "^", "square-root")):
        x = cmp[f"published_C2_{name}"] / cmp[f"dpsum_C2_{name}"]
        y = np.maximum(cmp[f"published_clip_over_pC_{name}"], 1e-12)
        bx.loglog(x, y, marker, ms=3, ls="none", alpha=0.7, label=label)
    bx.plot([1], [1], "k*", ms=10, ls="none", label="exact (every row)")
    bx.set_xlabel(r"published $C^2$ / exact $C^2$")
    bx.set_ylabel(r"clip probability / $p_C$")
    bx.set_ylim(1e-12, 1e4)
    bx.legend()
    return fig


def headline_figure(cmp: dict[str, np.ndarray], dims: tuple[int, ...] = (10, 100, 1000)
                    ) -> Any:
    """The published headline figure (gain against the Zipf exponent), with the
    published (crosses) and exact (lines) clip radii."""
    from dpsum_book.style import figure

    fig, axes = figure(len(dims), sharey=True)
    for ax, d in zip(axes, dims):
        for k in (2, 3, 6):
            m = (cmp["d"] == d) & (cmp["p_exponent"] == k) & (cmp["total"] == 1)
            order = np.argsort(cmp["zipf_exponent"][m])
            a = cmp["zipf_exponent"][m][order]
            line = ax.plot(a, cmp["dpsum_gain"][m][order], label=f"$n = 10^{k}$")[0]
            ax.plot(a, cmp["published_gain"][m][order], "x", color=line.get_color(), ms=4,
                    ls="none")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Zipf exponent $a$")
        ax.set_title(f"d = {d}")
    axes[0].set_ylabel("gain (x: published)")
    axes[0].legend(loc="upper left")
    return fig
