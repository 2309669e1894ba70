"""The vector-sum mechanisms of the book: Algorithms 1, 2 and 3, and the
isotropic clipping baseline.

Every mechanism validates all its arguments before it reads the data, never
modifies its input, draws noise only from the ``rng`` it is given, and returns
a :class:`~dpsum.release.Release` whose fields are the private estimate and
functions of public inputs only.

.. warning::
   The noise is drawn with NumPy's floating-point Gaussian sampler, which is
   not protected against floating-point attacks on the low-order bits of the
   output (Mironov 2012). Use these functions to study and simulate the
   mechanisms; a production release needs a hardened sampler.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .calibration import analytic_sigma, classic_sigma
from .clipping import clamped_sum, clip_radius, clipped_sum
from . import _validation as V
from .privacy import Neighbouring, clipped_sum_sensitivity
from .release import Release
from .scaling import elliptical_scaling, resolve_scaling

__all__ = [
    "gaussian_mechanism",
    "elliptical_gaussian_mechanism",
    "gaussian_data_mechanism",
    "clipped_gaussian_mechanism",
]

@lru_cache(maxsize=256)
def _sigma_opt(epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """Noise multiplier for unit sensitivity; cached, as it depends on public
    inputs only and repeated releases (simulations, audits) reuse it."""
    if calibration == "classic":
        return float(classic_sigma(epsilon, delta))
    return float(analytic_sigma(epsilon, delta))


def gaussian_mechanism(value, *, epsilon: float, delta: float, sensitivity: float,
                       calibration: str = "analytic",
                       neighbouring: Neighbouring | str = "replace",
                       rng=None) -> Release:
    """Algorithm 1: add ``N(0, sigma^2 I)`` noise to a precomputed statistic.

    ``sigma = sensitivity * sigma_opt`` with ``sigma_opt`` from the analytic
    calibration (Theorem 3, the default) or the classic one (Theorem 2, only
    for ``epsilon < 1``).

    Parameters
    ----------
    value : array_like
        The exact statistic ``g(X)``: a scalar or an array of any shape.
    epsilon, delta : float
        The privacy guarantee.
    sensitivity : float
        The L2 sensitivity of ``g`` under the chosen neighbouring relation.
    calibration : {"analytic", "classic"}
        Which theorem fixes the noise multiplier.
    neighbouring : {"replace", "add-remove"}
        The relation under which ``sensitivity`` was computed; recorded in the
        release.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    Release
        ``estimate`` has the shape of ``value``; ``noise_std`` is
        ``sensitivity * sigma_opt`` in every coordinate.
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    sens = V.check_positive(sensitivity, "sensitivity", scalar=True)
    relation = Neighbouring.parse(neighbouring)
    calibration = V.check_choice(calibration, "calibration", ("analytic", "classic"))
    sopt = _sigma_opt(eps, dlt, calibration)
    x = V.check_finite_array(value, "value")
    gen = V.check_rng(rng)
    std = sens * sopt
    estimate = x + gen.normal(0.0, std, size=x.shape)
    return Release(
        estimate=estimate,
        noise_std=np.full(x.shape, std),
        scaling=None,
        clip_norm=None,
        epsilon=eps,
        delta=dlt,
        neighbouring=relation,
        sigma_opt=float(sopt),
        sensitivity=float(sens),
        mechanism=f"gaussian ({calibration})",
    )


def elliptical_gaussian_mechanism(X, *, epsilon: float, delta: float, bounds, rng=None,
                                  return_diagnostics: bool = False):
    """Algorithm 2, the Elliptical Gaussian mechanism, on the sum of the rows of ``X``.

    Each coordinate ``j`` of every row is clamped to ``[-Delta_j/2, Delta_j/2]``,
    so a replaced row moves the sum by at most ``Delta_j`` in coordinate ``j``
    (equation (3)). Noise ``N(0, (sigma_opt Delta_j / b_j)^2)`` with the
    optimal ``b`` of Theorem 4 is added to coordinate ``j``; the expected
    squared error is ``sigma_opt^2 ||Delta||_1^2`` (equation (6)).
    Neighbouring relation: replace-one, as in the report.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The dataset; finite reals.
    epsilon, delta : float
        The privacy guarantee.
    bounds : array_like, shape (d,)
        The widths ``Delta_j > 0``; public.
    rng : numpy.random.Generator, int or None
        Source of randomness.
    return_diagnostics : bool
        If True, also return ``{"clamped_values": k}``, the number of values
        that were clamped. **That count depends on the private data and is not
        differentially private**; do not publish it.

    Returns
    -------
    Release or (Release, dict)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    data = V.check_data_matrix(X, finite=False)  # finiteness checked in the pass below
    width = V.check_vector(bounds, "bounds", data.shape[1], positive=True)
    gen = V.check_rng(rng)
    b = elliptical_scaling(width)
    sopt = _sigma_opt(eps, dlt)
    total, clamped = clamped_sum(data, width / 2.0)
    d = data.shape[1]
    noise_std = sopt * width / b
    release = Release(
        estimate=total + gen.normal(0.0, 1.0, size=d) * noise_std,
        noise_std=noise_std,
        scaling=b,
        clip_norm=None,
        epsilon=eps,
        delta=dlt,
        neighbouring=Neighbouring.REPLACE,
        sigma_opt=float(sopt),
        sensitivity=1.0,
        mechanism="elliptical gaussian",
    )
    if return_diagnostics:
        return release, {"clamped_values": clamped}
    return release


def _clipped_release(data, *, eps, dlt, C, b, center, relation, gen, name,
                     return_diagnostics):
    """Shared tail of Algorithm 3 and the clipping baseline: clip, sum, add noise."""
    n, d = data.shape
    sens = clipped_sum_sensitivity(C, relation)
    if relation is Neighbouring.ADD_REMOVE and center is not None:
        # an added row contributes b ⊙ center plus a clipped deviation of norm <= C
        sens = C + float(np.linalg.norm(b * center))
    sopt = _sigma_opt(eps, dlt)
    scaled_sum, n_clipped = clipped_sum(data, C, b, center)
    noise_std = sens * sopt / b
    estimate = scaled_sum / b + gen.normal(0.0, 1.0, size=d) * noise_std
    if center is not None:
        # each record contributes c + b^{-1} clip(x̂_i); under add-remove the
        # sensitivity above covers the c term, so the private n never leaks
        estimate = estimate + n * center
    release = Release(
        estimate=estimate,
        noise_std=noise_std,
        scaling=b,
        clip_norm=float(C),
        epsilon=eps,
        delta=dlt,
        neighbouring=relation,
        sigma_opt=float(sopt),
        sensitivity=float(sens),
        mechanism=name,
    )
    if return_diagnostics:
        return release, {"clipped_rows": n_clipped}
    return release


def gaussian_data_mechanism(X, *, epsilon: float, delta: float, stds, center=None,
                            clip_probability: float | None = None, scaling="optimal",
                            neighbouring: Neighbouring | str = "replace", rng=None,
                            return_diagnostics: bool = False):
    """Algorithm 3: the Elliptical Gaussian mechanism for Gaussian data.

    Each record is centred and scaled, ``x̂_i = (x_i - c) ⊙ b``, clipped to the
    ball of radius ``C`` and summed; isotropic noise ``N(0, (Delta sigma_opt)^2)``
    with ``Delta = 2C`` (replace-one) or ``C`` (add-remove) is added in the
    scaled space and everything is mapped back by ``b^{-1}``. The expected
    squared error against the clipped sum is ``(2 C sigma_opt)^2 sum_j b_j^{-2}``
    (equation (9)).

    ``C`` is the exact clip radius: the smallest radius with
    ``Pr[||x̂|| > C] <= p_C`` for ``x ~ N(c, diag(stds^2))``, from the
    generalized chi-square quantile (:func:`dpsum.clipping.clip_radius`).

    ``stds`` and ``center`` are **public** inputs describing the data model.
    They must come from prior knowledge or a separate private release, never
    be estimated from ``X`` itself: the privacy guarantee assumes they do not
    depend on the data.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The dataset; finite reals.
    epsilon, delta : float
        The privacy guarantee.
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations, all > 0.
    center : array_like, shape (d,), optional
        Public center ``c`` of the data model; 0 when omitted.
    clip_probability : float, optional
        ``p_C`` in (0, 1). Defaults to ``1/n`` under replace-one, where ``n``
        is public. Under add-remove ``n`` is private, so ``p_C`` must be given.
    scaling : {"optimal", "none"} or array_like, shape (d,)
        Lemma 3.1's ``b`` (default), ``b = 1`` (isotropic clipping), or an
        explicit positive vector (its overall scale does not matter).
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation. Under add-remove with a nonzero center the
        sensitivity is ``C + ||b ⊙ c||``, since a whole record, center
        included, enters or leaves the sum.
    rng : numpy.random.Generator, int or None
        Source of randomness.
    return_diagnostics : bool
        If True, also return ``{"clipped_rows": k}``. **That count depends on
        the private data and is not differentially private.**

    Returns
    -------
    Release or (Release, dict)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    relation = Neighbouring.parse(neighbouring)
    data = V.check_data_matrix(X, finite=False)  # finiteness checked in the clipping pass
    n, d = data.shape
    sigma = V.check_vector(stds, "stds", d, positive=True)
    c = None if center is None else V.check_vector(center, "center", d)
    if c is not None and not np.any(c):
        c = None
    if clip_probability is None:
        if relation is Neighbouring.ADD_REMOVE:
            raise ValueError(
                "clip_probability must be given under add-remove neighbouring: the "
                "default 1/n would use the private number of rows n")
        if n < 2:
            raise ValueError("clip_probability defaults to 1/n, which needs n >= 2 rows; "
                             "pass clip_probability explicitly")
        p = 1.0 / n
    else:
        p = V.check_probability(clip_probability, "clip_probability", scalar=True)
    b = resolve_scaling(scaling, sigma)
    gen = V.check_rng(rng)
    C = clip_radius(sigma, p, b)
    return _clipped_release(data, eps=eps, dlt=dlt, C=C, b=b, center=c, relation=relation,
                            gen=gen, name="gaussian data (Algorithm 3)",
                            return_diagnostics=return_diagnostics)


def clipped_gaussian_mechanism(X, *, epsilon: float, delta: float, clip_norm: float,
                               neighbouring: Neighbouring | str = "replace", rng=None,
                               return_diagnostics: bool = False):
    """The isotropic clipping baseline: clip every row to norm ``C``, sum, add
    ``N(0, (Delta sigma_opt)^2 I)`` with ``Delta = 2C`` (replace-one) or ``C``
    (add-remove).

    Parameters
    ----------
    X : array_like, shape (n, d)
        The dataset; finite reals.
    epsilon, delta : float
        The privacy guarantee.
    clip_norm : float
        The clip radius ``C > 0``; public.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation.
    rng : numpy.random.Generator, int or None
        Source of randomness.
    return_diagnostics : bool
        If True, also return ``{"clipped_rows": k}`` (not differentially private).

    Returns
    -------
    Release or (Release, dict)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    relation = Neighbouring.parse(neighbouring)
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    data = V.check_data_matrix(X, finite=False)  # finiteness checked in the clipping pass
    gen = V.check_rng(rng)
    return _clipped_release(data, eps=eps, dlt=dlt, C=C, b=np.ones(data.shape[1]),
                            center=None, relation=relation, gen=gen,
                            name="clipped gaussian", return_diagnostics=return_diagnostics)
