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

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as V
from ._deprecation import renamed_keyword, warn_deprecated
from .calibration import analytic_sigma, classic_sigma
from .clipping import clamped_sum, clipped_sum
from .gaussian_data import gaussian_data_setup
from .privacy import Neighbouring, clipped_sum_sensitivity
from .release import Calibration, Mechanism, Release
from .scaling import elliptical_scaling

__all__ = [
    "gaussian_mechanism",
    "elliptical_gaussian_mechanism",
    "gaussian_data_mechanism",
    "clipped_gaussian_mechanism",
    "release_diagnostics",
    "laplace_mechanism",
]


def _sigma_opt(epsilon: float, delta: float, calibration: Calibration) -> float:
    """Noise multiplier for unit sensitivity (the calibration memoises scalar calls)."""
    if calibration is Calibration.CLASSIC:
        return float(classic_sigma(epsilon, delta))
    return float(analytic_sigma(epsilon, delta))


def _privacy(epsilon: Any, delta: Any) -> tuple[float, float]:
    return V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)


def _diagnostics_flag(return_diagnostics: Any, func: str) -> bool:
    """The deprecated ``return_diagnostics`` switch: a real bool, warned about."""
    flag = V.check_bool(return_diagnostics, "return_diagnostics")
    if flag:
        warn_deprecated(f"{func}(..., return_diagnostics=True)",
                        "dpsum.mechanisms.release_diagnostics(X, release)", stacklevel=4)
    return flag


def _finite_noise(noise_std: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(noise_std)):
        raise ValueError(f"the noise standard deviation overflows: {what} is too large")
    return noise_std


def gaussian_mechanism(value: ArrayLike, *, epsilon: float, delta: float, sensitivity: float,
                       calibration: str = "analytic",
                       neighbouring: Neighbouring | str = "replace",
                       rng: Any = None) -> Release:
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

    Examples
    --------
    >>> r = gaussian_mechanism([10.0, 20.0], epsilon=1.0, delta=1e-5, sensitivity=1.0, rng=0)
    >>> round(float(r.noise_std[0]), 6), str(r.calibration)
    (3.730632, 'analytic')
    """
    eps, dlt = _privacy(epsilon, delta)
    sens = V.check_positive(sensitivity, "sensitivity", scalar=True)
    relation = Neighbouring.parse(neighbouring)
    calib = Calibration(V.check_choice(calibration, "calibration", ("analytic", "classic")))
    sopt = _sigma_opt(eps, dlt, calib)
    std = sens * sopt
    if not math.isfinite(std):
        raise ValueError("the noise standard deviation overflows: sensitivity is too large")
    x = V.check_finite_array(value, "value")
    gen = V.check_rng(rng)
    estimate = x + gen.normal(0.0, std, size=x.shape)
    return Release(
        estimate=estimate,
        noise_std=np.full(x.shape, std),
        scaling=None,
        clip_norm=None,
        epsilon=eps,
        delta=dlt,
        neighbouring=relation,
        sigma_opt=sopt,
        sensitivity=sens,
        mechanism=(Mechanism.GAUSSIAN_CLASSIC if calib is Calibration.CLASSIC
                   else Mechanism.GAUSSIAN_ANALYTIC),
        calibration=calib,
    )


@renamed_keyword("bounds", "widths")
def elliptical_gaussian_mechanism(X: ArrayLike, *, epsilon: float, delta: float,
                                  widths: ArrayLike, rng: Any = None,
                                  return_diagnostics: bool = False) -> Any:
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
    widths : array_like, shape (d,)
        The widths ``Delta_j > 0``; public. (Formerly ``bounds=``, which
        still works with a DeprecationWarning.)
    rng : numpy.random.Generator, int or None
        Source of randomness.
    return_diagnostics : bool
        Deprecated: if True, also return ``{"clamped_values": k}``. Call
        :func:`release_diagnostics` instead. **That count depends on the
        private data and is not differentially private**; do not publish it.

    Returns
    -------
    Release
        ``widths`` records ``Delta``; ``scaling`` is Theorem 4's ``b``.

    Examples
    --------
    >>> X = [[0.2, 5.0], [-0.1, 0.3]]
    >>> r = elliptical_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, widths=[1.0, 4.0], rng=0)
    >>> r.mechanism, r.estimate.shape
    (<Mechanism.ELLIPTICAL_GAUSSIAN: 'elliptical gaussian'>, (2,))
    """
    eps, dlt = _privacy(epsilon, delta)
    data = V.check_data_matrix(X, finite=False)  # finiteness checked in the pass below
    width = V.check_vector(widths, "widths", data.shape[1], positive=True)
    diagnostics = _diagnostics_flag(return_diagnostics, "elliptical_gaussian_mechanism")
    gen = V.check_rng(rng)
    b = elliptical_scaling(width)
    sopt = _sigma_opt(eps, dlt, Calibration.ANALYTIC)
    noise_std = _finite_noise(sopt * width / b, "widths")
    total, clamped = clamped_sum(data, width / 2.0)
    d = data.shape[1]
    release = Release(
        estimate=total + gen.normal(0.0, 1.0, size=d) * noise_std,
        noise_std=noise_std,
        scaling=b,
        clip_norm=None,
        epsilon=eps,
        delta=dlt,
        neighbouring=Neighbouring.REPLACE,
        sigma_opt=sopt,
        sensitivity=1.0,
        mechanism=Mechanism.ELLIPTICAL_GAUSSIAN,
        widths=width,
    )
    if diagnostics:
        return release, {"clamped_values": clamped}
    return release


def _clipped_release(data: np.ndarray, *, clip_norm: float, scaling: np.ndarray,
                     center: np.ndarray | None, sensitivity: float, sigma_opt: float,
                     noise_std: np.ndarray, neighbouring: Neighbouring, epsilon: float,
                     delta: float, clip_probability: float | None, mechanism: Mechanism,
                     gen: np.random.Generator, diagnostics: bool) -> Any:
    """Shared tail of Algorithm 3 and the clipping baseline: clip, sum, add noise."""
    n, d = data.shape
    scaled_sum, n_clipped = clipped_sum(data, clip_norm, scaling, center)
    estimate = scaled_sum / scaling + gen.normal(0.0, 1.0, size=d) * noise_std
    if center is not None:
        # each record contributes c + b^{-1} clip(x̂_i); under add-remove the
        # sensitivity covers the c term, so the private n never leaks
        estimate = estimate + n * center
    release = Release(
        estimate=estimate,
        noise_std=noise_std,
        scaling=scaling,
        clip_norm=clip_norm,
        epsilon=epsilon,
        delta=delta,
        neighbouring=neighbouring,
        sigma_opt=sigma_opt,
        sensitivity=sensitivity,
        mechanism=mechanism,
        center=center,
        clip_probability=clip_probability,
    )
    if diagnostics:
        return release, {"clipped_rows": n_clipped}
    return release


def gaussian_data_mechanism(X: ArrayLike, *, epsilon: float, delta: float, stds: ArrayLike,
                            center: ArrayLike | None = None,
                            clip_probability: float | None = None,
                            scaling: str | ArrayLike = "optimal",
                            neighbouring: Neighbouring | str = "replace", rng: Any = None,
                            return_diagnostics: bool = False) -> Any:
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
        Deprecated: if True, also return ``{"clipped_rows": k}``. Call
        :func:`release_diagnostics` instead. **That count depends on the
        private data and is not differentially private.**

    Returns
    -------
    Release
        With ``clip_norm`` (C), ``scaling`` (b), ``center``,
        ``clip_probability`` and the sensitivity: everything the guarantee
        depends on (computed by :func:`dpsum.gaussian_data.gaussian_data_setup`).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(0.0, [4.0, 1.0], size=(1000, 2))
    >>> r = gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[4.0, 1.0], rng=rng)
    >>> r.clip_probability, r.sensitivity == 2 * r.clip_norm
    (0.001, True)
    """
    _privacy(epsilon, delta)  # the public arguments are checked before the data is read
    Neighbouring.parse(neighbouring)
    data = V.check_data_matrix(X, finite=False)  # finiteness checked in the clipping pass
    n, d = data.shape
    V.check_vector(stds, "stds", d, positive=True)
    if center is not None:
        V.check_vector(center, "center", d)
    setup = gaussian_data_setup(stds, epsilon=epsilon, delta=delta, center=center,
                                clip_probability=clip_probability, n=n, scaling=scaling,
                                neighbouring=neighbouring)
    diagnostics = _diagnostics_flag(return_diagnostics, "gaussian_data_mechanism")
    gen = V.check_rng(rng)
    assert setup.noise_std is not None and setup.sigma_opt is not None
    assert setup.epsilon is not None and setup.delta is not None
    return _clipped_release(data, clip_norm=setup.clip_norm, scaling=setup.scaling,
                            center=setup.center, sensitivity=setup.sensitivity,
                            sigma_opt=setup.sigma_opt, noise_std=setup.noise_std,
                            neighbouring=setup.neighbouring, epsilon=setup.epsilon,
                            delta=setup.delta, clip_probability=setup.clip_probability,
                            mechanism=Mechanism.GAUSSIAN_DATA, gen=gen,
                            diagnostics=diagnostics)


def clipped_gaussian_mechanism(X: ArrayLike, *, epsilon: float, delta: float, clip_norm: float,
                               neighbouring: Neighbouring | str = "replace", rng: Any = None,
                               return_diagnostics: bool = False) -> Any:
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
        Deprecated: if True, also return ``{"clipped_rows": k}`` (not
        differentially private); call :func:`release_diagnostics` instead.

    Returns
    -------
    Release

    Examples
    --------
    >>> r = clipped_gaussian_mechanism([[3.0, 4.0]], epsilon=1.0, delta=1e-6, clip_norm=1.0,
    ...                                neighbouring="add-remove", rng=0)
    >>> r.sensitivity, r.mechanism == "clipped gaussian"
    (1.0, True)
    """
    eps, dlt = _privacy(epsilon, delta)
    relation = Neighbouring.parse(neighbouring)
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    data = V.check_data_matrix(X, finite=False)  # finiteness checked in the clipping pass
    diagnostics = _diagnostics_flag(return_diagnostics, "clipped_gaussian_mechanism")
    gen = V.check_rng(rng)
    d = data.shape[1]
    sens = clipped_sum_sensitivity(C, relation)
    sopt = _sigma_opt(eps, dlt, Calibration.ANALYTIC)
    noise = _finite_noise(np.full(d, sens * sopt), "clip_norm")
    return _clipped_release(data, clip_norm=C, scaling=np.ones(d), center=None,
                            sensitivity=sens, sigma_opt=sopt, noise_std=noise,
                            neighbouring=relation, epsilon=eps, delta=dlt,
                            clip_probability=None, mechanism=Mechanism.CLIPPED_GAUSSIAN,
                            gen=gen, diagnostics=diagnostics)


def release_diagnostics(X: ArrayLike, release: Release) -> dict[str, int]:
    """Data-dependent counts of a release: **not differentially private**.

    Recomputes, from ``X`` and the public parameters recorded in ``release``,
    how many rows the clipping mechanisms clipped (``{"clipped_rows": k}``)
    or how many values Algorithm 2 clamped (``{"clamped_values": k}``), with
    the same kernel and rounding the mechanism used. These counts depend on
    the private data: use them to study a mechanism, never publish them. The
    call reads ``X`` once more; nothing random is drawn.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The dataset the release was computed from.
    release : Release
        A release of :func:`elliptical_gaussian_mechanism`,
        :func:`gaussian_data_mechanism` or :func:`clipped_gaussian_mechanism`.

    Returns
    -------
    dict

    Examples
    --------
    >>> X = [[3.0, 4.0], [0.1, 0.2]]
    >>> r = clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0, rng=0)
    >>> release_diagnostics(X, r)
    {'clipped_rows': 1}
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpsum Release, got {type(release).__name__}")
    data = V.check_data_matrix(X, finite=False)
    d = release.estimate.shape[-1] if release.estimate.ndim else 0
    if data.shape[1] != d:
        raise ValueError(f"X must have {d} columns, as the release, got {data.shape[1]}")
    if release.mechanism is Mechanism.ELLIPTICAL_GAUSSIAN:
        assert release.widths is not None
        return {"clamped_values": clamped_sum(data, release.widths / 2.0)[1]}
    if release.mechanism in (Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN):
        assert release.clip_norm is not None
        return {"clipped_rows": clipped_sum(data, release.clip_norm, release.scaling,
                                            release.center)[1]}
    raise ValueError(f"release_diagnostics has nothing to count for a {release.mechanism} "
                     "release (it neither clips nor clamps)")
    C = check_positive(clip_norm, "clip_norm")
    if np.ndim(C):
        raise ValueError("clip_norm must be a scalar")
    data = check_data_matrix(X, finite=False)  # finiteness checked in the clipping pass
    gen = check_rng(rng)
    return _clipped_release(data, eps=eps, dlt=dlt, C=C, b=np.ones(data.shape[1]),
                            center=None, relation=relation, gen=gen,
                            name="clipped gaussian", return_diagnostics=return_diagnostics)


def laplace_mechanism(value: ArrayLike, *, epsilon: float, sensitivity: float,
                      neighbouring: Neighbouring | str = "replace", rng: Any = None) -> Release:
    """The Laplace mechanism: add i.i.d. ``Laplace(0, sensitivity / epsilon)`` noise.

    If the statistic has L1 sensitivity ``Delta_1`` (the largest L1 distance
    between its values on neighbouring datasets), adding independent Laplace
    noise of scale ``b = Delta_1 / epsilon`` to every coordinate is
    epsilon-DP, with ``delta = 0`` (Dwork, McSherry, Nissim and Smith 2006;
    book, chapter "Laplace or Gaussian?", theorem ``laplace-thm-laplace``).
    Each coordinate's noise has variance ``2 b^2``, so the expected squared
    L2 error is ``2 d Delta_1^2 / epsilon^2``.

    Parameters
    ----------
    value : array_like
        The exact statistic: a scalar or an array of any shape (``d``
        entries in all).
    epsilon : float
        The privacy parameter, > 0 and finite.
    sensitivity : float
        The **L1** sensitivity of the statistic under ``neighbouring``.
    neighbouring : {"replace", "add-remove"}
        The relation under which ``sensitivity`` was computed; recorded.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    Release
        ``delta`` is 0.0; ``noise_std`` is ``sqrt(2) b`` in every coordinate;
        ``sensitivity`` is the L1 sensitivity and ``sigma_opt`` the noise
        standard deviation per unit of it, ``sqrt(2) / epsilon``;
        ``mechanism`` and ``calibration`` are ``"laplace"``.

    Notes
    -----
    Like the Gaussian mechanisms here, the noise comes from NumPy's
    floating-point sampler, which does not defend against floating-point
    attacks (Mironov 2012, who showed them first on exactly this mechanism).
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    sens = V.check_positive(sensitivity, "sensitivity", scalar=True)
    relation = Neighbouring.parse(neighbouring)
    scale = sens / eps
    if not math.isfinite(scale):
        raise ValueError("sensitivity / epsilon overflows: the noise scale is not a finite float")
    x = V.check_finite_array(value, "value")
    gen = V.check_rng(rng)
    estimate = x + gen.laplace(0.0, scale, size=x.shape)
    return Release(
        estimate=estimate,
        noise_std=np.full(x.shape, np.sqrt(2.0) * scale),
        scaling=None,
        clip_norm=None,
        epsilon=eps,
        delta=0.0,
        neighbouring=relation,
        sigma_opt=math.sqrt(2.0) / eps,
        sensitivity=sens,
        mechanism=Mechanism.LAPLACE,
        calibration=Calibration.LAPLACE,
    )
