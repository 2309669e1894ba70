"""Closed-form expected squared L2 errors of the mechanisms.

The error measure of the book (chapter 1) is ``E||M(X) - f(X)||^2``. For a
mechanism that adds independent Gaussian noise with standard deviations
``s_j`` to an exact statistic it equals ``sum_j s_j^2`` (Corollary 1.1). For
the clipping mechanisms the formulas below are the error against the
*clipped* sum; the clipping bias comes on top (book chapters 4 and 6).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as V
from ._deprecation import renamed_keyword
from .calibration import analytic_sigma
from .gaussian_data import gaussian_data_setup
from .privacy import Neighbouring, clipped_sum_sensitivity
from .scaling import elliptical_scaling

__all__ = [
    "isotropic_noise_error",
    "gaussian_sum_error",
    "elliptical_noise_error",
    "clipped_noise_error",
    "gaussian_data_error",
    "elliptical_improvement_ratio",
]


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"the expected squared error overflows: {what} too large")
    return value


def _sum_of_squares(v: np.ndarray) -> float:
    """``sum v_j^2`` relative to the largest entry, so that it overflows only
    when the result does."""
    scale = float(np.max(np.abs(v)))
    return scale * scale * float(np.sum((v / scale) ** 2))


def isotropic_noise_error(noise_std: float, d: int) -> float:
    """``d sigma^2``: expected squared norm of ``N(0, sigma^2 I_d)`` noise (equation (1)).

    Parameters
    ----------
    noise_std : float
        Per-coordinate noise standard deviation ``sigma > 0``.
    d : int
        Dimension, ``d >= 1``.

    Examples
    --------
    >>> isotropic_noise_error(2.0, 5)
    20.0
    """
    s = V.check_positive(noise_std, "noise_std", scalar=True)
    d = V.check_integer(d, "d")
    return _finite(float(d * s * s), "noise_std is")


@renamed_keyword("bounds", "widths")
def gaussian_sum_error(widths: ArrayLike, epsilon: float, delta: float) -> float:
    """``d sigma_opt^2 ||Delta||^2``: the Gaussian mechanism on a sum of rows
    clamped to a box of side lengths ``Delta_j`` (equation (5)).

    The L2 sensitivity of the sum is ``||Delta||`` (equation (4)) and the
    noise ``sigma_opt ||Delta||`` per coordinate (Theorem 3). ``widths`` was
    called ``bounds`` (still accepted as a keyword, with a DeprecationWarning).

    Examples
    --------
    >>> round(gaussian_sum_error([1.0, 1.0], 1.0, 1e-5) / analytic_sigma(1.0, 1e-5) ** 2, 9)
    4.0
    """
    w = V.check_vector(widths, "widths", positive=True)
    sopt = analytic_sigma(V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True))
    return _finite(float(w.size * sopt**2 * _sum_of_squares(w)), "widths are")


@renamed_keyword("bounds", "widths")
def elliptical_noise_error(widths: ArrayLike, epsilon: float, delta: float,
                           scaling: ArrayLike | None = None) -> float:
    """``sigma_opt^2 sum_j (Delta_j / b_j)^2``: the Elliptical Gaussian mechanism (Algorithm 2).

    With the optimal scaling of Theorem 4 (the default) this is
    ``sigma_opt^2 ||Delta||_1^2`` (equation (6)). An explicit ``scaling`` is
    used as given after normalising it to unit norm, as Algorithm 2 requires.
    ``widths`` was called ``bounds`` (still accepted as a keyword, with a
    DeprecationWarning).

    Examples
    --------
    >>> sopt = analytic_sigma(1.0, 1e-5)
    >>> round(elliptical_noise_error([1.0, 3.0], 1.0, 1e-5) / sopt**2, 9)
    16.0
    """
    w = V.check_vector(widths, "widths", positive=True)
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    if scaling is None:
        b = elliptical_scaling(w)
    else:
        b = V.check_vector(scaling, "scaling", w.size, positive=True)
        b = b / np.linalg.norm(b)
    sopt = analytic_sigma(eps, dlt)
    return _finite(float(sopt**2 * _sum_of_squares(w / b)), "widths are")


def clipped_noise_error(clip_norm: float, scaling: ArrayLike, epsilon: float, delta: float,
                        neighbouring: Neighbouring | str = "replace") -> float:
    """``(2 C sigma_opt)^2 sum_j b_j^{-2}``: Algorithm 3's noise (equation (9)).

    Under add-remove the sensitivity is ``C`` instead of ``2C``, which divides
    the error by four (for a centred model; with a center use
    :func:`gaussian_data_error`, whose sensitivity covers it).

    Examples
    --------
    >>> r = clipped_noise_error(1.0, [1.0, 1.0], 1.0, 1e-5, "add-remove")
    >>> round(r / analytic_sigma(1.0, 1e-5) ** 2, 9)
    2.0
    """
    b = V.check_vector(scaling, "scaling", positive=True)
    sens = clipped_sum_sensitivity(clip_norm, neighbouring)
    sopt = analytic_sigma(V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True))
    with np.errstate(over="ignore"):
        return _finite(float(_sum_of_squares(sens * sopt / b)), "clip_norm is")


def gaussian_data_error(stds: ArrayLike, epsilon: float, delta: float, clip_probability: float,
                        scaling: str | ArrayLike = "optimal",
                        neighbouring: Neighbouring | str = "replace",
                        center: ArrayLike | None = None) -> float:
    """Equation (9) with the exact clip radius ``C`` for the given scaling.

    The noise of :func:`dpsum.mechanisms.gaussian_data_mechanism` with the
    same arguments, from the same set-up
    (:func:`dpsum.gaussian_data.gaussian_data_setup`): ``sum_j noise_std_j^2``.

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
        The neighbouring relation (sensitivity ``2C``, or ``C + ||b ⊙ c||``).
    center : array_like, shape (d,), optional
        The public center; it matters only under add-remove.

    Examples
    --------
    >>> e = gaussian_data_error([4.0, 1.0], 1.0, 1e-6, 1e-3)
    >>> e_ar = gaussian_data_error([4.0, 1.0], 1.0, 1e-6, 1e-3, neighbouring="add-remove")
    >>> round(e / e_ar, 9)
    4.0
    """
    setup = gaussian_data_setup(stds, epsilon=epsilon, delta=delta, center=center,
                                clip_probability=clip_probability, scaling=scaling,
                                neighbouring=neighbouring)
    return setup.expected_squared_error


@renamed_keyword("bounds", "widths")
def elliptical_improvement_ratio(widths: ArrayLike) -> float:
    """``d ||Delta||_2^2 / ||Delta||_1^2``: error of Algorithm 1 over Algorithm 2.

    By Cauchy–Schwarz it lies in ``[1, d]``, with 1 exactly when all
    ``Delta_j`` are equal; for positive ``Delta`` it is strictly below ``d``
    when ``d > 1`` (book chapter 3).

    Examples
    --------
    >>> elliptical_improvement_ratio([1.0, 1.0, 1.0]), round(elliptical_improvement_ratio([1.0, 3.0]), 6)
    (1.0, 1.25)
    """
    w = V.check_vector(widths, "widths", positive=True)
    r = w / np.max(w)
    return float(r.size * np.sum(r**2) / np.sum(r) ** 2)
