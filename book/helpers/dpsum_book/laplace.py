"""Laplace noise in the chapter "Laplace or Gaussian?": errors and a privacy profile.

- :func:`shaped_laplace_error`, :func:`unshaped_laplace_error`: the expected
  squared errors of Laplace noise on a sum of vectors in a box, with scales
  shaped to the widths (``t_j`` proportional to ``Delta_j^(1/3)``) and equal.
- :func:`last_win`: the largest dimension at which one error is below another.
- :func:`product_laplace_delta`: lower and upper bounds on the privacy profile
  ``delta(epsilon)`` of independent Laplace noise, for one pair of neighbours
  whose outputs differ by a given shift, by discretising the privacy loss.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.signal import fftconvolve

__all__ = ["last_win", "product_laplace_delta", "shaped_laplace_error",
           "unshaped_laplace_error"]


def _widths(widths: ArrayLike) -> np.ndarray:
    w = np.asarray(widths, dtype=float)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("widths must be a non-empty vector of positive finite numbers")
    return w


def shaped_laplace_error(widths: ArrayLike, epsilon: float) -> float:
    """``2 (sum_j Delta_j^(2/3))^3 / epsilon^2``: Laplace scales shaped to the box.

    Parameters
    ----------
    widths : array_like
        The widths ``Delta_j > 0`` of the box.
    epsilon : float
        The privacy parameter, > 0.

    Returns
    -------
    float
    """
    w = _widths(widths)
    return float(2 * np.sum(w ** (2 / 3)) ** 3 / epsilon**2)


def unshaped_laplace_error(widths: ArrayLike, epsilon: float) -> float:
    """``2 d ||Delta||_1^2 / epsilon^2``: one Laplace scale for every coordinate.

    Parameters
    ----------
    widths : array_like
        The widths ``Delta_j > 0`` of the box.
    epsilon : float
        The privacy parameter, > 0.

    Returns
    -------
    float
    """
    w = _widths(widths)
    return float(2 * w.size * np.sum(w) ** 2 / epsilon**2)


def last_win(first: Callable[[np.ndarray], float], second: Callable[[np.ndarray], float],
             widths: Callable[[int], np.ndarray], d_max: int = 1000) -> int:
    """The largest ``d <= d_max`` with ``first(widths(d)) < second(widths(d))``.

    Parameters
    ----------
    first, second : callable
        Errors, functions of the width vector.
    widths : callable
        ``widths(d)``: the width vector of dimension ``d``.
    d_max : int
        The largest dimension tried.

    Returns
    -------
    int
        0 if ``first`` wins at no dimension.
    """
    wins = [d for d in range(1, d_max + 1) if first(widths(d)) < second(widths(d))]
    return max(wins, default=0)


def _coordinate_loss(a: float, step: float, up: bool) -> tuple[int, np.ndarray]:
    """The privacy loss of one Laplace coordinate shifted by ``a`` scales, on the
    grid ``k * step``, each value rounded up (``up``) or down; returns the
    first grid index and the probabilities."""
    rnd = math.ceil if up else math.floor
    lo, hi = rnd(-a / step), rnd(a / step)
    k = np.arange(lo, hi + 1)
    left, right = ((k - 1) * step, k * step) if up else (k * step, (k + 1) * step)
    cdf = lambda x: 0.5 * np.exp(-(a - np.clip(x, -a, a)) / 2)  # noqa: E731
    p = cdf(right) - cdf(left)  # the loss a - 2y for y in (0, a)
    p[-1] += 0.5  # y <= 0: loss a
    p[0] += 0.5 * math.exp(-a)  # y >= a: loss -a
    return lo, p


def product_laplace_delta(shifts: ArrayLike, epsilon: float,
                          step: float = 2e-5) -> tuple[float, float]:
    """Bounds on ``delta(epsilon)`` of independent Laplace noise for one pair of outputs.

    Coordinate ``j`` of the two outputs differs by ``shifts[j]`` noise scales
    (``|g(X)_j - g(X')_j| / t_j``). The privacy loss is the sum of the
    coordinates' losses, each with an atom at ``+a_j`` (probability 1/2), an
    atom at ``-a_j`` (probability ``e^(-a_j)/2``) and a density between; its
    law is discretised on a grid of ``step``, rounding every value up (an
    upper bound on ``delta``) or down (a lower bound), and the coordinates'
    laws are convolved.

    Parameters
    ----------
    shifts : array_like
        The shifts ``a_j >= 0`` in units of the noise scale.
    epsilon : float
        Where to evaluate the profile, >= 0.
    step : float
        The grid of the privacy loss, > 0; the bounds differ by about
        ``len(shifts) * step`` in epsilon.

    Returns
    -------
    (float, float)
        A lower and an upper bound on ``delta(epsilon) = E[(1 - e^(epsilon - L))_+]``.
    """
    a = np.asarray(shifts, dtype=float)
    if a.ndim != 1 or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("shifts must be a vector of non-negative finite numbers")
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError("epsilon must be finite and >= 0")
    if not (math.isfinite(step) and step > 0):
        raise ValueError("step must be finite and > 0")
    bounds = []
    for up in (False, True):
        first, pmf = 0, np.array([1.0])
        for aj in a[a > 0]:
            lo, p = _coordinate_loss(float(aj), step, up)
            pmf = np.clip(fftconvolve(pmf, p), 0.0, None)
            first += lo
        loss = (first + np.arange(pmf.size)) * step
        over = loss > epsilon
        bounds.append(float(np.sum(pmf[over] * -np.expm1(epsilon - loss[over]))))
    return bounds[0], bounds[1]
