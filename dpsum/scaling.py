"""Scaling vectors ``b`` for the Elliptical Gaussian mechanism and Algorithm 3.

A scaling vector maps a record ``x`` to ``x ⊙ b``; noise is added to the sum in
that space and mapped back by ``b^{-1}``, so coordinate ``j`` receives noise
proportional to ``1 / b_j`` (book chapters 3 and 4).
"""

from __future__ import annotations

import numpy as np

from .privacy import check_finite_array, check_vector

__all__ = [
    "elliptical_scaling",
    "gaussian_data_scaling",
    "power_scaling",
    "whitening_scaling",
]


def _positive_vector(values, name: str) -> np.ndarray:
    v = check_finite_array(values, name, ndim=1)
    if not np.all(v > 0):
        raise ValueError(f"{name} must be > 0 in every coordinate")
    return v


def elliptical_scaling(bounds) -> np.ndarray:
    """Optimal scaling of the Elliptical Gaussian mechanism (Theorem 4).

    ``b_j = sqrt(Delta_j / sum_i Delta_i)``, so that ``||b|| = 1`` and the
    expected squared error ``sigma_opt^2 sum_j (Delta_j / b_j)^2`` attains its
    minimum ``sigma_opt^2 ||Delta||_1^2`` (equation (6)).

    Parameters
    ----------
    bounds : array_like, shape (d,)
        Per-coordinate sensitivities ``Delta_j > 0`` (the width of the interval
        each coordinate is clamped to).

    Returns
    -------
    numpy.ndarray
        The unit-norm scaling vector ``b``.
    """
    delta = _positive_vector(bounds, "bounds")
    return np.sqrt(delta / delta.sum())


def power_scaling(stds, alpha: float) -> np.ndarray:
    """Scaling ``b_j ∝ sigma_j^{-alpha}`` normalised so that ``E||x ⊙ b||^2 = 1``.

    The normalisation is the report's constraint (10),
    ``sum_j (b_j sigma_j)^2 = 1``. ``alpha = 0`` is isotropic clipping,
    ``alpha = 1/2`` is Lemma 3.1 and ``alpha = 1`` is whitening (book chapter 6).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations ``sigma_j > 0``.
    alpha : float
        The exponent; any finite real number.
    """
    sigma = _positive_vector(stds, "stds")
    alpha = float(alpha)
    if not np.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha!r}")
    # work in logs so that extreme exponents neither overflow nor underflow
    log_b = -alpha * np.log(sigma)
    log_b -= log_b.max()
    b = np.exp(log_b)
    return b / np.sqrt(np.sum((b * sigma) ** 2))


def gaussian_data_scaling(stds) -> np.ndarray:
    """The scaling of Lemma 3.1: ``b_j = 1 / (sqrt(sigma_j) sqrt(sum_i sigma_i))``.

    It is the stationary point of the Lagrangian that minimises equation (9)
    under the constraint ``E||x ⊙ b||^2 = 1`` (equation (10)) with the clip
    radius held fixed (book chapter 4, Lemma 3.1).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations ``sigma_j > 0``.
    """
    sigma = _positive_vector(stds, "stds")
    return 1.0 / (np.sqrt(sigma) * np.sqrt(sigma.sum()))


def whitening_scaling(stds) -> np.ndarray:
    """Whitening, ``b_j = 1 / (sigma_j sqrt(d))``: every scaled coordinate has
    variance ``1/d`` and ``E||x ⊙ b||^2 = 1`` (book chapter 6)."""
    sigma = _positive_vector(stds, "stds")
    return 1.0 / (sigma * np.sqrt(sigma.size))


def check_scaling(scaling, d: int) -> np.ndarray:
    """Validate an explicit scaling vector of length ``d`` (all entries > 0)."""
    return check_vector(scaling, "scaling", d, positive=True)
