"""The clipping loss under the Gaussian model: one implementation, exact by default.

For a row ``x ~ N(c, diag(stds^2))`` with scaled norm ``R = ||(x - c) ⊙ b||``,
clipping at radius ``C`` removes ``(1 - C/R)_+ (x - c)``
(:prf:ref:`gaussian-data-prop-clip-error`). Its second
moment is the model's expected clipping loss per row; ``n`` rows centred at the
model's mean lose ``n`` times it in squared L2 norm.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.distributions.gchisq import GeneralizedChiSquare

__all__ = ["clipping_loss_moment"]

#: Gauss-Laguerre nodes of the loss integral (24 and 64 nodes agree to about
#: 1e-9 relative on the test grid; tests/test_accuracy.py checks it).
LAGUERRE_NODES = 24


def clipping_loss_moment(stds: ArrayLike, scaling: ArrayLike, clip_norm: float, *,
                         levels: int | None = None) -> float:
    r"""Second moment of one row's clipping loss, ``E[(1 - C/R)_+^2 ||x - c||^2]``.

    By size-biasing, ``E[(x_j - c_j)^2 g(R^2)] = stds_j^2 E[g(Q_j)]`` where
    ``Q_j`` adds two more terms of weight ``w_j = (b_j stds_j)^2`` to ``R^2``,
    and ``E[g(Q_j)] = int_{C^2}^inf g'(q) Pr[Q_j > q] dq`` with
    ``g(q) = (1 - C/sqrt(q))^2``; the integral is evaluated by Gauss-Laguerre
    quadrature on the generalized chi-square tail, once per distinct weight.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public standard deviations of the model, all > 0.
    scaling : array_like, shape (d,)
        The scaling ``b`` (all > 0).
    clip_norm : float
        The clip radius ``C`` in the scaled space.
    levels : int, optional
        None (the default): the exact value, one integral per distinct weight.
        An integer ``L``: a cheaper **upper bound** with at most ``L``
        integrals: ``Pr[Q_j > q]`` increases with the added weight, so each
        added weight is rounded *up* to one of ``L`` geometric levels (exact
        when there are at most ``L`` distinct weights).

    Returns
    -------
    float
        The per-row moment, in the squared units of the data.

    Examples
    --------
    >>> m = clipping_loss_moment([1.0, 1.0], [1.0, 1.0], 3.0)  # chi-square 2 clipped at 9
    >>> 0.0 < m < 0.01
    True
    >>> s = np.geomspace(0.1, 10.0, 12)                       # 12 distinct weights
    >>> b = 1.0 / np.sqrt(s)
    >>> exact = clipping_loss_moment(s, b, 1.5)
    >>> exact <= clipping_loss_moment(s, b, 1.5, levels=4)
    True
    """
    sigma = V.check_vector(stds, "stds", positive=True)
    b = V.check_vector(scaling, "scaling", sigma.size, positive=True)
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    lv = None if levels is None else V.check_integer(levels, "levels")
    s_top = float(np.max(sigma))
    sig = sigma / s_top
    with np.errstate(over="ignore", under="ignore"):
        u = b * sig
        u_top = float(np.max(u))
        w = (u / u_top) ** 2  # in (0, 1]; the loss is scale-free in (b, C) jointly
        ratio = float(np.float64(C) / u_top / s_top)
    if not (math.isfinite(u_top) and float(np.min(w)) >= np.finfo(np.float64).tiny):
        raise ValueError("stds and scaling: out of the representable range, the model's "
                         "weights (scaling * stds)^2 relative to the largest are not normal "
                         "floats; each product must be finite and within a factor 1.5e154 of "
                         "the largest")
    with np.errstate(over="ignore"):
        total = float(np.sum(sig ** 2) * np.float64(s_top) ** 2)
    if ratio > 1e150:
        # C^2 beyond 1e300 variances: the chi-square tail there, about
        # exp(-1e300 / 2), is 0 in floating point, and so is the loss
        return 0.0
    if ratio < 1e-150:
        # C^2 below 1e-300 variances: every row is clipped to (almost) the
        # centre, and the loss is E||x - c||^2 = sum stds^2 to 1e-150 relative
        # (an upper bound: the loss never exceeds it)
        return V.representable(total, "stds", "the clipping loss sum(stds^2)",
                               "the stds must be below about 1e154")
    c2 = ratio ** 2  # C^2 in the units of w
    with np.errstate(over="ignore"):
        out = float(_loss_moment(sig, w, c2, lv) * np.float64(s_top) ** 2)
    return V.representable(out, "stds", "the clipping loss",
                           "the stds must be below about 1e154")


def _loss_moment(sig: np.ndarray, w: np.ndarray, c2: float, levels: int | None) -> float:
    """``sum_j sig_j^2 E[g(Q_j)]`` for weights ``w`` (max 1) and ``C^2 = c2``."""
    distinct = np.unique(w)
    if levels is None or distinct.size <= levels:
        grid, idx = distinct, np.searchsorted(distinct, w)
    else:
        grid = np.geomspace(distinct[0], 1.0, levels)
        grid[-1] = 1.0
        idx = np.minimum(np.searchsorted(grid, w * (1.0 - 1e-12)), levels - 1)
    per_level = np.zeros(grid.size)
    np.add.at(per_level, idx, sig**2)
    nodes, weights = np.polynomial.laguerre.laggauss(LAGUERRE_NODES)
    scale = 2.0  # Pr[Q_j > q] decays like exp(-q / (2 max w)), and max w = 1
    q = c2 + scale * nodes
    C = math.sqrt(c2)
    g_prime = C * (1.0 - C / np.sqrt(q)) * q**-1.5
    total = 0.0
    for level, mass in zip(grid, per_level):
        if mass == 0.0:
            continue
        Q = GeneralizedChiSquare(np.append(w, [level, level]))
        tail = np.exp(Q.logsf(q) + nodes)
        total += mass * scale * float(np.dot(weights, g_prime * tail))
    return total
