"""The machinery of the chapter "The Bernstein bound and other closed-form clip radii".

The chapter calls each function in one line: the exact absolute moments of a
centred squared normal (:func:`abs_central_moments`), every closed-form bound
on the squared clip radius next to the exact one (:func:`ratio_curves`), and
the chapter's one comparison figure (:func:`comparison_figure`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import sympy as sp
from matplotlib.figure import Figure

from dpsum import bounds, design
from dpsum_book.style import figure

__all__ = ["BOUND_NAMES", "abs_central_moments", "comparison_figure", "ratio_curves"]

#: the bounds :func:`ratio_curves` returns, with the labels of the figure
BOUND_NAMES = {
    "BE": r"$C^2_{\mathrm{BE}}$ (Bernstein error bound)",
    "B": r"$C^2_{\mathrm{B}}$ (Bernstein, every $p_C$)",
    "LM": r"$C^2_{\mathrm{LM}}$ (Laurent-Massart)",
    "Cantelli": "Cantelli",
}


def abs_central_moments(k_max: int) -> dict[int, Any]:
    """``E|Z^2 - 1|^k`` for ``k = 1..k_max`` as exact SymPy expressions.

    Even powers are polynomials in the moments ``(2i-1)!!``. For odd ``k``,
    ``|Z^2-1|^k = (Z^2-1)^k + 2 (1-Z^2)^k 1{Z^2<1}``, and the truncated moments
    ``E[Z^(2i) 1{Z^2<1}]`` follow from ``Pr[Z^2<1] = erf(1/sqrt 2)`` by the
    recurrence ``T_i = (2i-1) T_(i-1) - 2 phi(1)`` (integration by parts).

    Parameters
    ----------
    k_max : int
        The largest power, at least 1.

    Returns
    -------
    dict
        ``{k: E|Z^2 - 1|^k}``, SymPy expressions in ``erf(1/sqrt 2)`` and
        ``exp(-1/2)/sqrt(2 pi)``.
    """
    if isinstance(k_max, bool) or not isinstance(k_max, int):
        raise TypeError(f"k_max must be an integer, got {type(k_max).__name__}")
    if k_max < 1:
        raise ValueError(f"k_max must be at least 1, got {k_max}")
    phi1 = sp.exp(-sp.Rational(1, 2)) / sp.sqrt(2 * sp.pi)
    trunc = [sp.erf(1 / sp.sqrt(2))]
    for i in range(1, k_max + 1):
        trunc.append(sp.expand((2 * i - 1) * trunc[-1] - 2 * phi1))
    full = [sp.Integer(1)] + [sp.factorial2(2 * i - 1) for i in range(1, k_max + 1)]
    out: dict[int, Any] = {}
    for k in range(1, k_max + 1):
        central = sum(sp.binomial(k, i) * (-1) ** (k - i) * full[i]
                      for i in range(k + 1))
        if k % 2 == 0:
            out[k] = sp.Integer(central)
        else:
            below = sum(sp.binomial(k, i) * (-1) ** i * trunc[i] for i in range(k + 1))
            out[k] = sp.expand(central + 2 * below)
    return out


def ratio_curves(stds: npt.ArrayLike, n_grid: npt.ArrayLike) -> dict[str, np.ndarray]:
    """Each closed-form bound on ``C^2`` over the exact ``C^2``, at ``p_C = 1/n``.

    All radii are for the scaling lemma's scaling
    (:func:`dpsum.design.gaussian_data_scaling`), so each ratio is also the
    ratio of the noise errors.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations of the data, all > 0.
    n_grid : array_like
        Numbers of records, all > 1.

    Returns
    -------
    dict of ndarray
        ``"exact"`` (the exact ``C^2``), the ratios ``"BE"`` (the Bernstein
        error bound's formula, evaluated even where its condition fails),
        ``"B"``, ``"LM"``, ``"Cantelli"``, ``"Chebyshev"``, and ``"holds"``
        (where the Bernstein error bound's condition holds).
    """
    sd = np.asarray(stds, dtype=float)
    ns = np.asarray(n_grid, dtype=float)
    if ns.ndim != 1 or ns.size == 0 or not np.all(ns > 1):
        raise ValueError("n_grid must be a non-empty 1-d array of numbers above 1")
    b = design.gaussian_data_scaling(sd)
    exact = np.array([design.clip_radius(sd, 1 / n, b) ** 2 for n in ns])

    def radius2(fn: Any, **kw: Any) -> np.ndarray:
        return np.array([fn(sd, 1 / n, b, **kw) ** 2 for n in ns])

    rows = {
        "BE": np.asarray(bounds.bernstein_error_clip_radius_squared(sd, ns, strict=False)),
        "B": np.array([bounds.bernstein_alpha(sd, 1 / n) for n in ns]),
        "LM": radius2(bounds.laurent_massart_clip_radius),
        "Cantelli": radius2(bounds.chebyshev_clip_radius, one_sided=True),
        "Chebyshev": radius2(bounds.chebyshev_clip_radius),
    }
    out = {key: value / exact for key, value in rows.items()}
    out["exact"] = exact
    out["holds"] = np.asarray(bounds.bernstein_error_condition_holds(sd, ns), dtype=bool)
    return out


def comparison_figure(panels: dict[str, dict[str, np.ndarray]],
                      n_grid: npt.ArrayLike,
                      titles: list[str] | None = None) -> Figure:
    """The chapter's figure: each bound over the exact ``C^2`` against ``n``.

    Parameters
    ----------
    panels : dict
        Panel title -> the output of :func:`ratio_curves`; one to three panels.
    n_grid : array_like
        The numbers of records the curves were computed at.
    titles : list of str, optional
        The panels' titles (mathtext allowed); the keys of ``panels`` by default.

    Returns
    -------
    matplotlib.figure.Figure
    """
    ns = np.asarray(n_grid, dtype=float)
    fig, axes = figure(ncols=len(panels), sharey=True)
    axes = np.atleast_1d(axes)
    names = list(panels) if titles is None else list(titles)
    if len(names) != len(panels):
        raise ValueError("titles must have one entry per panel")
    for ax, title, r in zip(axes, names, panels.values()):
        ok = r["holds"]
        ax.plot(ns[ok], r["BE"][ok], color="C4", ls="-", lw=2.2,
                label=BOUND_NAMES["BE"])
        ax.plot(ns[~ok], r["BE"][~ok], color="C4", ls=":", lw=1.6,
                label="its formula, condition failing")
        for key, colour, style in (("B", "C1", "--"), ("LM", "C3", "-"),
                                   ("Cantelli", "C5", "-.")):
            ax.plot(ns, r[key], color=colour, ls=style, label=BOUND_NAMES[key])
        ax.axhline(1.0, color="C0", lw=1.0)
        ax.set_xscale("log")
        ax.set_ylim(0.8, 2.6)
        ax.set_xlabel("n  (clip probability 1/n)")
        ax.set_title(title)
    axes[0].set_ylabel("bound on $C^2$ / exact $C^2$")
    axes[0].legend(loc="upper left")
    return fig
