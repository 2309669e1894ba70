"""Closed-form expected squared L2 errors of the mechanisms.

The error measure of the book (:prf:ref:`definitions-def-error`) is
``E||M(X) - f(X)||^2``. For a mechanism that adds independent Gaussian noise
with standard deviations ``s_j`` to an exact statistic it equals
``sum_j s_j^2`` (:prf:ref:`the expected-norm corollary
<definitions-cor-expected-norm>`). For the clipping mechanisms the formulas
below are the error against the *clipped* sum; the clipping bias comes on top
(:ref:`gaussian-data-clip-bias`, :func:`gaussian_data_clipping_error`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.design.clipping_loss import clipping_loss_moment
from dpsum.design.gaussian_data import gaussian_data_setup
from dpsum.design.scaling import elliptical_scaling
from dpsum.privacy.calibration import analytic_sigma
from dpsum.privacy.neighbouring import Neighbouring, clipped_sum_sensitivity

__all__ = [
    "isotropic_noise_error",
    "gaussian_sum_error",
    "elliptical_noise_error",
    "clipped_noise_error",
    "gaussian_data_error",
    "gaussian_data_clipping_error",
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
    """``d sigma^2``: expected squared norm of ``N(0, sigma^2 I_d)`` noise (:prf:ref:`definitions-cor-expected-norm`).

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


def gaussian_sum_error(widths: ArrayLike, epsilon: float, delta: float) -> float:
    """``d sigma_opt^2 ||Delta||^2``: the Gaussian mechanism on a sum of rows
    clamped to a box of side lengths ``Delta_j``.

    The L2 sensitivity of the sum is ``||Delta||``
    (:prf:ref:`gaussian-prop-box-sensitivity`) and the noise
    ``sigma_opt ||Delta||`` per coordinate (:prf:ref:`gaussian-thm-analytic`).

    Examples
    --------
    >>> round(gaussian_sum_error([1.0, 1.0], 1.0, 1e-5) / analytic_sigma(1.0, 1e-5) ** 2, 9)
    4.0
    """
    w = V.check_vector(widths, "widths", positive=True)
    sopt = analytic_sigma(V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True))
    return _finite(float(w.size * sopt**2 * _sum_of_squares(w)), "widths are")


def elliptical_noise_error(widths: ArrayLike, epsilon: float, delta: float,
                           scaling: ArrayLike | None = None) -> float:
    """``sigma_opt^2 sum_j (Delta_j / b_j)^2``: the error of the Elliptical Gaussian mechanism.

    With the optimal scaling of :prf:ref:`the optimal-scaling theorem
    <elliptical-thm-optimal>` (the default) this is
    ``sigma_opt^2 ||Delta||_1^2``. An explicit ``scaling`` is used as given
    after normalising it to unit norm, as the Elliptical Gaussian mechanism
    requires.

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
    """``(2 C sigma_opt)^2 sum_j b_j^{-2}``: the Gaussian-data mechanism's noise error.

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
        return _finite(float(_sum_of_squares(sens * sopt / b)),
                       "clip_norm / scaling is")


def gaussian_data_error(stds: ArrayLike, epsilon: float, delta: float, clip_probability: float,
                        scaling: str | ArrayLike = "scaled",
                        neighbouring: Neighbouring | str = "replace",
                        center: ArrayLike | None = None) -> float:
    """The Gaussian-data mechanism's noise error ``(2 C sigma_opt)^2 sum_j b_j^{-2}`` with the exact clip radius.

    The noise of :func:`dpsum.mechanisms.gaussian_data_mechanism` with the
    same arguments, from the same set-up
    (:func:`dpsum.design.gaussian_data_setup`): ``sum_j noise_std_j^2``.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations.
    epsilon, delta : float
        The privacy guarantee.
    clip_probability : float
        Target clipping probability ``p_C``.
    scaling : {"scaled", "isotropic"} or array_like
        the scaling lemma's scaling, no scaling, or an explicit positive vector.
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


#: Gauss–Laguerre nodes for the clipping-error integral: 24 agree with 64 to
#: about 1e-13 relative on the case-study chapter's datasets; 16 can be off by
#: 1e-6 (one coordinate, p_C = 0.05).


def gaussian_data_clipping_error(stds: ArrayLike, n: int, clip_probability: float | None = None,
                                 scaling: str | ArrayLike = "scaled") -> float:
    """The expected clipping error ``B`` of the Gaussian-data mechanism on Gaussian data.

    For ``n`` records ``x_i ~ N(mu, diag(stds^2))`` centred at ``c = mu``,
    ``B = E||f(X) - f̄(X)||^2 = n E[(1 - C/R)_+^2 ||x - mu||^2]`` with
    ``R = ||(x - mu) ⊙ b||``: the squared distance between the sum and the
    clipped sum to which the Gaussian-data mechanism adds noise. The error of the Gaussian-data mechanism
    over the model is its noise error (:func:`gaussian_data_error`) plus
    ``B``. Evaluated with :prf:ref:`gaussian-data-prop-clip-error`:
    ``sum_j stds_j^2 E g(Q_j)``, each expectation a
    one-dimensional integral of a generalized chi-square survival function,
    computed by :func:`dpsum.accuracy.clipping_loss_moment` (exact).

    It is a statement about the model. On real data, compare it with the
    clipping error actually incurred (computable, non-privately, from
    :func:`dpsum.kernels.clipped_sum`) to see how far the data are from the model.

    Parameters
    ----------
    stds : array_like, shape (d,)
        The public standard deviations of the data model, all > 0.
    n : int
        The number of records (public under replace-one neighbours), >= 1.
    clip_probability : float, optional
        ``p_C`` in (0, 1); defaults to ``1/n`` (then ``n >= 2``), as in
        :func:`dpsum.mechanisms.gaussian_data_mechanism`.
    scaling : {"scaled", "isotropic"} or array_like, shape (d,)
        the scaling lemma's ``b`` (default), ``b = 1``, or an explicit positive vector.

    Returns
    -------
    float
        ``B`` in the squared units of the data (divide by ``n^2`` for the mean).

    Examples
    --------
    >>> B = gaussian_data_clipping_error([4.0, 1.0], 1000)
    >>> 0 < B < gaussian_data_error([4.0, 1.0], 1.0, 1e-6, 1e-3)
    True
    """
    nn = V.check_integer(n, "n")
    setup = gaussian_data_setup(stds, clip_probability=clip_probability, n=nn,
                                scaling=scaling)
    sd, b, C = setup.stds, setup.scaling, setup.clip_norm
    per_record = clipping_loss_moment(sd, b, C)
    return _finite(nn * per_record, "stds are")


def elliptical_improvement_ratio(widths: ArrayLike) -> float:
    """``d ||Delta||_2^2 / ||Delta||_1^2``: error of the Gaussian mechanism over the Elliptical Gaussian mechanism.

    By Cauchy–Schwarz it lies in ``[1, d]``, with 1 exactly when all
    ``Delta_j`` are equal; for positive ``Delta`` it is strictly below ``d``
    when ``d > 1`` (:prf:ref:`elliptical-prop-ratio`).

    Examples
    --------
    >>> elliptical_improvement_ratio([1.0, 1.0, 1.0]), round(elliptical_improvement_ratio([1.0, 3.0]), 6)
    (1.0, 1.25)
    """
    w = V.check_vector(widths, "widths", positive=True)
    r = w / np.max(w)
    return float(r.size * np.sum(r**2) / np.sum(r) ** 2)
