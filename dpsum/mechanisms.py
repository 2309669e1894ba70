"""The vector-sum mechanisms of the book: Algorithms 1, 2 and 3, and the
isotropic clipping baseline.

Every mechanism validates all its arguments before it reads the data, never
modifies its input, draws noise only from the ``rng`` it is given, and returns
a :class:`~dpsum.release.Release` whose fields are the private estimate and
functions of public inputs only.

.. warning::
   By default the sum is computed in floating point and the noise is drawn
   with NumPy's floating-point Gaussian sampler, which is not protected
   against floating-point attacks on the low-order bits of the output
   (Mironov 2012; Jin et al. 2022). Every mechanism takes ``secure=True`` for
   the grid path of :mod:`dpsum.grid`: the statistic is rounded to a public
   grid and summed exactly in integers, and the noise is an exact discrete
   Gaussian drawn from the operating system's secure generator (when
   ``rng`` is None).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as V
from ._validation import RandomLike
from . import dask as _dask
from ._deprecation import renamed_keyword, warn_deprecated
from .calibration import analytic_sigma, classic_sigma
from . import grid
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


def _secure_rng(rng: Any) -> Any:
    """The grid path's randomness: None means the OS's secure generator; a
    seed or Generator gives reproducible (not secure) draws."""
    return None if rng is None else V.check_rng(rng)


def _dataset(X: ArrayLike, relation: Neighbouring) -> np.ndarray:
    """The data matrix; under add-remove the empty dataset (n = 0) is a
    legitimate neighbour of every one-row dataset, so it is released too."""
    if relation is Neighbouring.ADD_REMOVE:
        arr = V.as_real_array(X, "X")
        if arr.ndim == 2 and arr.shape[0] == 0 and arr.shape[1] > 0:
            return arr
    return V.check_data_matrix(X, finite=False)  # finiteness checked in the clipping pass


def _grid_norm_upper(v: np.ndarray) -> float:
    """An upper bound on ``||v||`` (rounded up by a relative ``2^-50``)."""
    return math.sqrt(math.fsum(float(x) * float(x) for x in v)) * (1 + 2.0 ** -50)


def _finite_noise(noise_std: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(noise_std)):
        raise ValueError(f"the noise standard deviation overflows: {what} is too large")
    return noise_std


def gaussian_mechanism(value: ArrayLike, *, epsilon: float, delta: float, sensitivity: float,
                       calibration: str = "analytic",
                       neighbouring: Neighbouring | str = "replace",
                       rng: RandomLike = None, secure: bool = False) -> Release:
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
    secure : bool
        Take the grid path (:func:`dpsum.grid.secure_gaussian`): the value is
        rounded to a public grid ``2^K`` (the rounding charged to the
        sensitivity) and exact discrete Gaussian noise is added; with
        ``rng=None`` the noise comes from the OS's secure generator.
        ``calibration`` must then be ``"analytic"`` (it is not used).

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
    secure_ = V.check_bool(secure, "secure")
    if secure_ and calib is Calibration.CLASSIC:
        raise ValueError("calibration='classic' applies to the floating-point path; "
                         "secure=True calibrates the discrete Gaussian")
    sopt = _sigma_opt(eps, dlt, calib)
    std = sens * sopt
    if not math.isfinite(std):
        raise ValueError("the noise standard deviation overflows: sensitivity is too large")
    x = V.check_finite_array(value, "value")
    if secure_:
        est, K, gstd = grid.secure_gaussian(x, sensitivity=sens, epsilon=eps, delta=dlt,
                                            rng=_secure_rng(rng))
        return Release(estimate=est, noise_std=np.full(x.shape, gstd), scaling=None,
                       clip_norm=None, epsilon=eps, delta=dlt, neighbouring=relation,
                       sigma_opt=gstd / sens, sensitivity=sens,
                       mechanism=Mechanism.GAUSSIAN_ANALYTIC, calibration=Calibration.DISCRETE,
                       secure=True, grid_exponent=K)
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
                                  widths: ArrayLike, rng: RandomLike = None,
                                  return_diagnostics: bool = False,
                                  secure: bool = False) -> Any:
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
    secure : bool
        Take the grid path: clamped values divided by ``Delta_j / b_j`` are
        rounded to a public grid, summed exactly in integers
        (:func:`dpsum.grid.grid_clamped_sum`) and given exact discrete
        Gaussian noise.

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
    if _dask.is_dask_array(X):            # the pass on a dask cluster (dpsum.dask)
        return _dask.elliptical_gaussian_mechanism(X, epsilon=epsilon, delta=delta,
                                                   widths=widths, rng=rng,
                                                   return_diagnostics=return_diagnostics,
                                                   secure=secure)
    eps, dlt = _privacy(epsilon, delta)
    data = V.check_data_matrix(X, finite=False)  # finiteness checked in the pass below
    width = V.check_vector(widths, "widths", data.shape[1], positive=True)
    diagnostics = _diagnostics_flag(return_diagnostics, "elliptical_gaussian_mechanism")
    gen = V.check_rng(rng)
    with np.errstate(over="ignore"):              # an overflow is refused just below
        b = elliptical_scaling(width)
        sopt = _sigma_opt(eps, dlt, Calibration.ANALYTIC)
        noise_std = _finite_noise(sopt * width / b, "widths")
    d = data.shape[1]
    if V.check_bool(secure, "secure"):
        unit = width / b                        # scaled coordinates x_j b_j / Delta_j
        K = grid.grid_exponent(1.0, d)          # a replaced row moves them by ||b|| = 1
        S, clamped = grid.grid_clamped_sum(data, width / 2.0, unit, K)
        gsens = math.ldexp(_grid_norm_upper(b), -K) + math.sqrt(d)
        Y, sigma = grid.grid_gaussian_noise(S, 0, gsens, epsilon=eps, delta=dlt,
                                            rng=_secure_rng(rng))
        scale = np.ldexp(unit, K)
        release = Release(
            estimate=np.array([float(v) for v in Y]) * scale, noise_std=sigma * scale,
            scaling=b, clip_norm=None, epsilon=eps, delta=dlt,
            neighbouring=Neighbouring.REPLACE, sigma_opt=sigma / gsens,
            sensitivity=math.ldexp(gsens, K), mechanism=Mechanism.ELLIPTICAL_GAUSSIAN,
            widths=width, calibration=Calibration.DISCRETE, secure=True, grid_exponent=K)
        if diagnostics:
            return release, {"clamped_values": clamped}
        return release
    total, clamped = clamped_sum(data, width / 2.0)
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
                     gen: Any, diagnostics: bool, secure: bool = False) -> Any:
    """Shared tail of Algorithm 3 and the clipping baseline: clip, sum, add noise."""
    n, d = data.shape
    if secure:
        return _clipped_release_grid(data, clip_norm=clip_norm, scaling=scaling,
                                     center=center, neighbouring=neighbouring,
                                     epsilon=epsilon, delta=delta,
                                     clip_probability=clip_probability, mechanism=mechanism,
                                     rng=gen, diagnostics=diagnostics)
    if n == 0:                                   # add-remove only: the sum of no rows
        scaled_sum, n_clipped = np.zeros(d), 0
    else:
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


def _clipped_release_grid(data: np.ndarray, *, clip_norm: float, scaling: np.ndarray,
                          center: np.ndarray | None, neighbouring: Neighbouring,
                          epsilon: float, delta: float, clip_probability: float | None,
                          mechanism: Mechanism, rng: Any, diagnostics: bool) -> Any:
    """The grid path of Algorithm 3 and the clipping baseline.

    The rows' clipped, scaled deviations are rounded to the grid ``2^K`` and
    summed exactly (:func:`dpsum.grid.grid_clipped_sum`): each rounded row has
    norm at most ``C / 2^K`` grid units, so the integer sum has sensitivity
    ``2C / 2^K`` (replace-one) or ``C / 2^K`` (add-remove). Under add-remove
    with a center, every record also contributes ``v = rint(b ⊙ c / 2^K)``,
    so the statistic is ``S + n v`` with sensitivity ``C / 2^K + ||v||``.
    """
    n, d = data.shape
    S, K, n_clipped = grid.grid_clipped_sum(data, clip_norm, scaling, center)
    units = math.ldexp(clip_norm, -K)
    if neighbouring is Neighbouring.REPLACE:
        gsens = 2 * units * (1 + 2.0 ** -50)
        offset = None
    else:
        gsens = units * (1 + 2.0 ** -50)
        offset = None
        if center is not None:
            v = grid.round_to_grid(scaling * center, K)
            gsens += _grid_norm_upper(np.array([float(x) for x in v]))
            S = S + n * v
            offset = v
    Y, sigma = grid.grid_gaussian_noise(S, 0, gsens, epsilon=epsilon, delta=delta, rng=rng)
    scaled = np.array([math.ldexp(float(y), K) for y in Y])
    estimate = scaled / scaling
    if center is not None and offset is None:
        estimate = estimate + n * center          # replace-one: n is public
    release = Release(
        estimate=estimate, noise_std=math.ldexp(sigma, K) / scaling, scaling=scaling,
        clip_norm=clip_norm, epsilon=epsilon, delta=delta, neighbouring=neighbouring,
        sigma_opt=sigma / gsens, sensitivity=math.ldexp(gsens, K), mechanism=mechanism,
        center=center, clip_probability=clip_probability, calibration=Calibration.DISCRETE,
        secure=True, grid_exponent=K)
    if diagnostics:
        return release, {"clipped_rows": n_clipped}
    return release


def gaussian_data_mechanism(X: ArrayLike, *, epsilon: float, delta: float, stds: ArrayLike,
                            center: ArrayLike | None = None,
                            clip_probability: float | None = None,
                            scaling: str | ArrayLike = "optimal",
                            neighbouring: Neighbouring | str = "replace", rng: RandomLike = None,
                            return_diagnostics: bool = False, secure: bool = False) -> Any:
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
    secure : bool
        Take the grid path (:func:`dpsum.grid.grid_clipped_sum` and exact
        discrete Gaussian noise from the OS's secure generator when ``rng`` is
        None); the clipping time then does not depend on the data.

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
    if _dask.is_dask_array(X):            # the pass on a dask cluster (dpsum.dask)
        return _dask.gaussian_data_mechanism(
            X, epsilon=epsilon, delta=delta, stds=stds, center=center,
            clip_probability=clip_probability, scaling=scaling, neighbouring=neighbouring,
            rng=rng, return_diagnostics=return_diagnostics, secure=secure)
    _privacy(epsilon, delta)  # the public arguments are checked before the data is read
    relation = Neighbouring.parse(neighbouring)
    data = _dataset(X, relation)
    secure_ = V.check_bool(secure, "secure")
    n, d = data.shape
    V.check_vector(stds, "stds", d, positive=True)
    if center is not None:
        V.check_vector(center, "center", d)
    setup = gaussian_data_setup(stds, epsilon=epsilon, delta=delta, center=center,
                                clip_probability=clip_probability, n=n, scaling=scaling,
                                neighbouring=neighbouring)
    diagnostics = _diagnostics_flag(return_diagnostics, "gaussian_data_mechanism")
    gen = _secure_rng(rng) if secure_ else V.check_rng(rng)
    assert setup.noise_std is not None and setup.sigma_opt is not None
    assert setup.epsilon is not None and setup.delta is not None
    return _clipped_release(data, clip_norm=setup.clip_norm, scaling=setup.scaling,
                            center=setup.center, sensitivity=setup.sensitivity,
                            sigma_opt=setup.sigma_opt, noise_std=setup.noise_std,
                            neighbouring=setup.neighbouring, epsilon=setup.epsilon,
                            delta=setup.delta, clip_probability=setup.clip_probability,
                            mechanism=Mechanism.GAUSSIAN_DATA, gen=gen,
                            diagnostics=diagnostics, secure=secure_)


def clipped_gaussian_mechanism(X: ArrayLike, *, epsilon: float, delta: float, clip_norm: float,
                               neighbouring: Neighbouring | str = "replace", rng: RandomLike = None,
                               return_diagnostics: bool = False, secure: bool = False) -> Any:
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
    secure : bool
        Take the grid path (as in :func:`gaussian_data_mechanism`).

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
    if _dask.is_dask_array(X):            # the pass on a dask cluster (dpsum.dask)
        return _dask.clipped_gaussian_mechanism(X, epsilon=epsilon, delta=delta,
                                                clip_norm=clip_norm, neighbouring=neighbouring,
                                                rng=rng, return_diagnostics=return_diagnostics,
                                                secure=secure)
    eps, dlt = _privacy(epsilon, delta)
    relation = Neighbouring.parse(neighbouring)
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    data = _dataset(X, relation)
    diagnostics = _diagnostics_flag(return_diagnostics, "clipped_gaussian_mechanism")
    secure_ = V.check_bool(secure, "secure")
    gen = _secure_rng(rng) if secure_ else V.check_rng(rng)
    d = data.shape[1]
    sens = clipped_sum_sensitivity(C, relation)
    sopt = _sigma_opt(eps, dlt, Calibration.ANALYTIC)
    noise = _finite_noise(np.full(d, sens * sopt), "clip_norm")
    return _clipped_release(data, clip_norm=C, scaling=np.ones(d), center=None,
                            sensitivity=sens, sigma_opt=sopt, noise_std=noise,
                            neighbouring=relation, epsilon=eps, delta=dlt,
                            clip_probability=None, mechanism=Mechanism.CLIPPED_GAUSSIAN,
                            gen=gen, diagnostics=diagnostics, secure=secure_)


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
    if _dask.is_dask_array(X):
        return _dask.release_diagnostics(X, release)
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
        if release.secure:                       # the grid kernel clips a hair below C
            return {"clipped_rows": grid.grid_clipped_sum(data, release.clip_norm,
                                                          release.scaling, release.center)[2]}
        return {"clipped_rows": clipped_sum(data, release.clip_norm, release.scaling,
                                            release.center)[1]}
    raise ValueError(f"release_diagnostics has nothing to count for a {release.mechanism} "
                     "release (it neither clips nor clamps)")


def laplace_mechanism(value: ArrayLike, *, epsilon: float, sensitivity: float,
                      neighbouring: Neighbouring | str = "replace",
                      rng: RandomLike = None, secure: bool = False) -> Release:
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
        Source of randomness. With ``secure=True``, None means the operating
        system's secure generator; a seed or Generator gives reproducible,
        not secure, draws.
    secure : bool
        Take the grid path (:func:`dpsum.grid.secure_laplace`): the statistic
        is rounded to the public grid ``2^K`` with the rounding charged to the
        L1 sensitivity, and the noise is an exact discrete Laplace on the
        grid. Still ``epsilon``-DP with ``delta = 0`` (book, chapter on
        floating-point attacks, theorem ``fp-thm-discrete-laplace``), and
        immune to attacks on the low-order bits.

    Returns
    -------
    Release
        ``delta`` is 0.0; ``noise_std`` is ``sqrt(2) b`` in every coordinate;
        ``sensitivity`` is the L1 sensitivity and ``sigma_opt`` the noise
        standard deviation per unit of it, ``sqrt(2) / epsilon``;
        ``mechanism`` and ``calibration`` are ``"laplace"``. With
        ``secure=True``: ``sensitivity`` is the grid's integer L1 sensitivity
        ``D`` times ``2^K`` (slightly above the declared one),
        ``noise_std`` the discrete Laplace's standard deviation in the
        units of the statistic, ``calibration`` is ``"discrete laplace"``,
        ``secure`` is True and ``grid_exponent`` is ``K``.

    Notes
    -----
    By default the noise comes from NumPy's floating-point sampler, which
    does not defend against floating-point attacks (Mironov 2012, who showed
    them first on exactly this mechanism); ``secure=True`` does.

    Examples
    --------
    >>> r = laplace_mechanism([1.0, 2.0], epsilon=1.0, sensitivity=2.0, rng=0)
    >>> r.mechanism, r.delta, round(float(r.noise_std[0]), 6)  # sqrt(2) * 2 / 1
    (<Mechanism.LAPLACE: 'laplace'>, 0.0, 2.828427)
    >>> r = laplace_mechanism([3.0, 4.0], epsilon=1.0, sensitivity=1.0, rng=0, secure=True)
    >>> r.secure, r.delta, all(float(v / 2.0**r.grid_exponent).is_integer() for v in r.estimate)
    (True, 0.0, True)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    sens = V.check_positive(sensitivity, "sensitivity", scalar=True)
    relation = Neighbouring.parse(neighbouring)
    scale = sens / eps
    if not math.isfinite(scale):
        raise ValueError("sensitivity / epsilon overflows: the noise scale is not a finite float")
    secure_ = V.check_bool(secure, "secure")
    gen = _secure_rng(rng) if secure_ else V.check_rng(rng)
    x = V.check_finite_array(value, "value")
    if secure_:
        est, K, D, std = grid.secure_laplace(x, sensitivity=sens, epsilon=eps, rng=gen)
        grid_sens = math.ldexp(float(D), K)
        return Release(
            estimate=est, noise_std=np.full(x.shape, std), scaling=None, clip_norm=None,
            epsilon=eps, delta=0.0, neighbouring=relation, sigma_opt=std / grid_sens,
            sensitivity=grid_sens, mechanism=Mechanism.LAPLACE,
            calibration=Calibration.DISCRETE_LAPLACE, secure=True, grid_exponent=K)
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
