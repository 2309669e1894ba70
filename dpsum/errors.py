"""Closed-form expected squared L2 errors of the mechanisms.

The error measure of the book (chapter 1) is ``E||M(X) - f(X)||^2``. For a
mechanism that adds independent Gaussian noise with standard deviations
``s_j`` to an exact statistic it equals ``sum_j s_j^2`` (Corollary 1.1). For
the clipping mechanisms the formulas below are the error against the
*clipped* sum; the clipping bias comes on top (book chapters 4 and 6).
"""

from __future__ import annotations

import numpy as np

from .calibration import analytic_sigma
from .clipping import clip_radius
from . import _validation as V
from .privacy import Neighbouring, clipped_sum_sensitivity
from .scaling import elliptical_scaling, resolve_scaling

__all__ = [
    "isotropic_noise_error",
    "gaussian_sum_error",
    "elliptical_noise_error",
    "clipped_noise_error",
    "gaussian_data_error",
    "elliptical_improvement_ratio",
]


def isotropic_noise_error(noise_std: float, d: int) -> float:
    """``d sigma^2``: expected squared norm of ``N(0, sigma^2 I_d)`` noise (equation (1)).

    Parameters
    ----------
    noise_std : float
        Per-coordinate noise standard deviation ``sigma > 0``.
    d : int
        Dimension, ``d >= 1``.
    """
    s = V.check_positive(noise_std, "noise_std", scalar=True)
    d = V.check_integer(d, "d")
    return float(d * s * s)


def gaussian_sum_error(bounds, epsilon: float, delta: float) -> float:
    """``d sigma_opt^2 ||Delta||^2``: the Gaussian mechanism on a sum of rows
    clamped to a box of side lengths ``Delta_j`` (equation (5)).

    The L2 sensitivity of the sum is ``||Delta||`` (equation (4)) and the
    noise ``sigma_opt ||Delta||`` per coordinate (Theorem 3).
    """
    delta_vec = V.check_vector(bounds, "bounds", positive=True)
    sopt = analytic_sigma(epsilon, delta)
    return float(delta_vec.size * sopt**2 * np.sum(delta_vec**2))


def elliptical_noise_error(bounds, epsilon: float, delta: float, scaling=None) -> float:
    """``sigma_opt^2 sum_j (Delta_j / b_j)^2``: the Elliptical Gaussian mechanism (Algorithm 2).

    With the optimal scaling of Theorem 4 (the default) this is
    ``sigma_opt^2 ||Delta||_1^2`` (equation (6)). An explicit ``scaling`` is
    used as given after normalising it to unit norm, as Algorithm 2 requires.
    """
    delta_vec = V.check_vector(bounds, "bounds", positive=True)
    V.check_epsilon(epsilon)
    V.check_delta(delta)
    if scaling is None:
        b = elliptical_scaling(delta_vec)
    else:
        b = V.check_vector(scaling, "scaling", delta_vec.size, positive=True)
        b = b / np.linalg.norm(b)
    sopt = analytic_sigma(epsilon, delta)
    return float(sopt**2 * np.sum((delta_vec / b) ** 2))


def clipped_noise_error(clip_norm: float, scaling, epsilon: float, delta: float,
                        neighbouring: Neighbouring | str = "replace") -> float:
    """``(2 C sigma_opt)^2 sum_j b_j^{-2}``: Algorithm 3's noise (equation (9)).

    Under add-remove the sensitivity is ``C`` instead of ``2C``, which divides
    the error by four (for a centred model).
    """
    b = V.check_vector(scaling, "scaling", positive=True)
    sens = clipped_sum_sensitivity(clip_norm, neighbouring)
    sopt = analytic_sigma(epsilon, delta)
    return float((sens * sopt) ** 2 * np.sum(b**-2.0))


def gaussian_data_error(stds, epsilon: float, delta: float, clip_probability: float,
                        scaling="optimal", neighbouring: Neighbouring | str = "replace") -> float:
    """Equation (9) with the exact clip radius ``C`` for the given scaling.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations.
    epsilon, delta : float
        The privacy guarantee.
    clip_probability : float
        Target clipping probability ``p_C``.
    scaling : {"optimal", "none"} or array_like
        Lemma 3.1's scaling, no scaling, or an explicit positive vector.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation (sensitivity ``2C`` or ``C``).
    """
    sigma = V.check_vector(stds, "stds", positive=True)
    b = resolve_scaling(scaling, sigma)
    C = clip_radius(sigma, clip_probability, b)
    return clipped_noise_error(C, b, epsilon, delta, neighbouring)


def elliptical_improvement_ratio(bounds) -> float:
    """``d ||Delta||_2^2 / ||Delta||_1^2``: error of Algorithm 1 over Algorithm 2.

    By Cauchy–Schwarz it lies in ``[1, d]``, with 1 exactly when all
    ``Delta_j`` are equal; for positive ``Delta`` it is strictly below ``d``
    when ``d > 1`` (book chapter 3).
    """
    delta_vec = V.check_vector(bounds, "bounds", positive=True)
    return float(delta_vec.size * np.sum(delta_vec**2) / np.sum(delta_vec) ** 2)
