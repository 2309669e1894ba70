r"""Accuracy statements a user can publish, and planning before the release.

Every vector mechanism of :mod:`dpsum` releases ``estimate = s + e``, where
``s`` is the quantity it protects (the clipped or clamped sum, or the exact
statistic for Algorithm 1) and ``e`` is Gaussian noise with independent
coordinates ``e_j ~ N(0, noise_std_j^2)`` drawn independently of the data.
The law of ``e`` is public, so exact statements about the error
``estimate - s`` hold for **every** dataset (book chapter "Accuracy you can
publish", :doc:`08_accuracy`):

* :func:`noise_norm_quantile`: the exact ``(1 - beta)`` quantile of ``||e||``,
  the square root of a generalized chi-square quantile with weights
  ``noise_std^2`` (:class:`dpsum.gchisq.GeneralizedChiSquare`);
* :func:`noise_coordinate_quantile`: the ``(1 - beta)`` quantile of ``|e_j|``;
* :func:`confidence_intervals`: per-coordinate intervals, marginal or
  simultaneous (Šidák's level, exact because the coordinates are independent);
* :func:`confidence_ball`: the simultaneous ``(1 - beta)`` ball.

The private pipeline (:func:`dpsum.pipeline.private_sum`, :func:`dpsum.pipeline.private_mean`,
whose record is a :class:`~dpsum.pipeline.PipelineRelease`) has the same
structure once its released center, scaling and clip radius are fixed, and
:func:`confidence_intervals` and :func:`confidence_ball` accept its releases:
exactly under replace-one, at least ``1 - beta`` for the sum under add-remove,
and not at all for the mean under add-remove (see :func:`confidence_intervals`).

Against the true, unclipped sum ``f(X)`` the error also contains the clipping
loss, which depends on the data. Where the data model of Algorithm 3 is public
(rows ``N(c, diag(stds^2))``), the loss is bounded from the model alone:
:func:`clipping_loss_moment` is the exact second moment of one row's loss (an
upper bound when more than ``levels`` distinct weights must be grouped), and
:func:`release_error_bound` / :func:`gaussian_data_error_bound` split the
failure probability ``beta`` between the noise (exact quantile) and the loss
(Chebyshev on its second moment) and report the split.

Planning, before any data is touched: :func:`plan_n`, :func:`plan_epsilon`
and :func:`plan_d` return the smallest ``n``, the smallest ``epsilon`` (at
fixed ``delta``) and the largest ``d`` for which the ``(1 - beta)`` bound of
:func:`gaussian_data_error_bound` is at most a target, for Algorithm 3
(``scaling="optimal"``), the isotropic clipping baseline (``scaling="none"``)
or any other scaling.

Binary sums: :func:`count_interval` inverts the exact law of the released
count (binomial or randomized response), with no normal approximation.

Everything here is a function of public quantities only: the noise
standard deviations, the clip radius and scaling recorded in a
:class:`~dpsum.release.Release`, the public model, ``n``, ``epsilon``,
``delta`` and ``beta``. No function reads the data, and the only field of a
release a confidence set uses besides those is its private ``estimate``, as
its center.

.. note::
   The exact statements are for the continuous Gaussian noise of the
   floating-point path. For releases of the grid path (``secure=True``), whose
   noise is a discrete Gaussian, the intervals and the ball are proven bounds
   (coverage at least ``1 - beta``) for the statistic rounded to the grid; for
   the Laplace mechanism the per-coordinate intervals are exact and no ball is
   offered. Any other noise law is refused with a ``ValueError``.
"""

from __future__ import annotations

import math
from typing import Any, cast
from dataclasses import dataclass

import numpy as np
from scipy import interpolate, optimize, special, stats

from . import _validation as V
from .binary import BinaryRelease
from .clipping import clip_radius
from .gaussian_data import gaussian_data_setup
from .gchisq import GeneralizedChiSquare
from .pipeline import PipelineRelease
from .privacy import Neighbouring, clipped_sum_sensitivity
from .release import Mechanism, Release
from .scaling import resolve_scaling

__all__ = [
    "ConfidenceBall",
    "ErrorBound",
    "noise_norm_quantile",
    "noise_coordinate_quantile",
    "confidence_intervals",
    "confidence_ball",
    "clipping_loss_moment",
    "release_error_bound",
    "gaussian_data_error_bound",
    "plan_n",
    "plan_epsilon",
    "plan_d",
    "count_interval",
    "PIPELINE_COUNT_SHARE",
]

#: Mechanism names of the releases whose noise is a continuous Gaussian with
#: independent coordinates of standard deviation ``noise_std``.
_GAUSSIAN_MECHANISMS = frozenset({
    Mechanism.GAUSSIAN_ANALYTIC, Mechanism.GAUSSIAN_CLASSIC, Mechanism.ELLIPTICAL_GAUSSIAN,
    Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN,
})
#: The subset that clips rows to a ball of radius ``clip_norm`` in the scaled space.
_CLIPPED_MECHANISMS = frozenset({Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN})

#: Gauss-Laguerre nodes of the clipping-loss integral (16 and 64 nodes agree
#: to about 3e-7 relative or better; tests/test_accuracy.py checks it).
_LAGUERRE_NODES = 16


# ---------------------------------------------------------------------------
# argument checks


def _check_beta(beta) -> float:
    return float(V.check_probability(beta, "beta", scalar=True))


def _check_noise_std(noise_std) -> np.ndarray:
    return np.atleast_1d(np.asarray(V.check_positive(noise_std, "noise_std"), dtype=float))


def _gaussian_release(release, *, laplace: bool = False) -> Release:
    """The release, if its noise law is one these statements cover: continuous
    Gaussian, or (``laplace=True``, per-coordinate statements) Laplace."""
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpsum Release, got {type(release).__name__}")
    if laplace and release.mechanism is Mechanism.LAPLACE:
        return release
    if release.mechanism is Mechanism.LAPLACE:
        raise ValueError("release comes from the Laplace mechanism: the norm of Laplace noise "
                         "is not a generalized chi-square; use confidence_intervals, whose "
                         "per-coordinate and simultaneous statements are exact for it")
    if release.mechanism not in _GAUSSIAN_MECHANISMS:
        raise ValueError(
            f"release comes from mechanism {str(release.mechanism)!r}, whose noise is not a "
            "continuous Gaussian; these intervals would not hold for it")
    return release


def _grid_noise(release: Release) -> tuple[float, np.ndarray] | None:
    """``(sigma, u)`` for a release of the grid path, None otherwise.

    Its noise is ``u_j Z_j`` with independent ``Z_j ~ N_Z(0, sigma^2)`` on the
    integers and ``u_j`` the grid unit of coordinate ``j`` in the units of the
    estimate; the release records ``sigma_opt * sensitivity = sigma 2^K`` and
    ``noise_std = sigma u``.
    """
    if not release.secure or release.grid_exponent is None:
        return None
    sigma = math.ldexp(release.sigma_opt * release.sensitivity, -int(release.grid_exponent))
    return sigma, np.asarray(release.noise_std, dtype=float) / sigma


# ---------------------------------------------------------------------------
# the private pipeline


#: Share of ``beta`` that the add-remove statement for ``private_sum`` spends on
#: the private count; the rest goes to the noise of the clipped sum.
PIPELINE_COUNT_SHARE = 0.5


def _pipeline_step(release: PipelineRelease, name: str) -> float:
    """The noise multiplier of the pipeline's Gaussian step ``name``."""
    for step in release.steps:
        if step.name == name and step.noise_multiplier is not None:
            return float(step.noise_multiplier)
    raise ValueError(f"release.steps has no Gaussian {name!r} step; the release was not made "
                     "by dpsum.private_mean or dpsum.private_sum")


def _pipeline_law(release: PipelineRelease) -> tuple[np.ndarray, np.ndarray | None]:
    """``(s, a)``: the error of a pipeline release against its protected quantity is
    ``nu + Z a`` with ``nu_j ~ N(0, s_j^2)`` independent of everything before it,
    and ``a = c`` with ``Z = ñ - n ~ N(0, sigma_count^2)`` (add-remove sum), or
    no second term (``a`` None: replace-one).

    Refuses the mean under add-remove, whose error is not of this form.
    """
    if release.neighbouring is Neighbouring.REPLACE:
        return np.asarray(release.noise_std, dtype=float), None
    if release.statistic == "mean":
        raise ValueError(
            "release is a private_mean under add-remove neighbouring: it divides by the "
            "private count, so its error contains the unknown clipped sum times (1/ñ - 1/n) "
            "and has no law in public quantities; state the error of private_sum instead, "
            "or use replace-one neighbours (n public)")
    # estimate = ñ c + b^{-1} (T + noise): error against n c + b^{-1} T is
    # (ñ - n) c + b^{-1} noise; the sum's noise has std s_mean * Delta_2(C) / b
    s_mean = _pipeline_step(release, "mean")
    s_count = _pipeline_step(release, "count")
    sens = clipped_sum_sensitivity(release.clip_norm, release.neighbouring)
    s = s_mean * sens / np.asarray(release.scaling, dtype=float)
    return s, s_count * np.asarray(release.center, dtype=float)


def _sidak(beta: float, m: int) -> float:
    """Per-event failure probability ``1 - (1 - beta)^(1/m)`` of ``m`` independent events
    that all hold with probability ``1 - beta`` (Šidák)."""
    return float(-np.expm1(np.log1p(-beta) / m))


def _log_sidak(log_beta: float, m: int) -> float:
    """``log`` of :func:`_sidak`, from ``log beta``; below 1e-300 it is the
    conservative ``log(beta / m)`` (``1 - (1 - b)^(1/m) >= b / m``), so a
    subnormal ``beta`` gives a finite ``z`` instead of an underflow to 0."""
    b = math.exp(log_beta)
    v = _sidak(b, m) if b > 1e-300 else 0.0
    return math.log(v) if v >= 1e-300 else log_beta - math.log(m)


def _pipeline_intervals(release: PipelineRelease, beta: float, simultaneous: bool):
    s, a = _pipeline_law(release)
    lb = math.log(beta) if a is None else math.log(beta) + math.log1p(-PIPELINE_COUNT_SHARE)
    if simultaneous:
        lb = _log_sidak(lb, s.size)
    half = s * _z_log(lb)
    if a is not None:  # |ñ - n| <= sigma_count z with probability 1 - share * beta
        half = half + np.abs(a) * _z_log(math.log(beta) + math.log(PIPELINE_COUNT_SHARE))
    est = np.asarray(release.estimate, dtype=float)
    return est - half, est + half


def _pipeline_radius(release: PipelineRelease, beta: float) -> float:
    s, a = _pipeline_law(release)
    if a is None:
        return noise_norm_quantile(s, beta)
    return (noise_norm_quantile(s, beta * (1.0 - PIPELINE_COUNT_SHARE))
            + float(np.linalg.norm(a)) * _z_log(math.log(beta) + math.log(PIPELINE_COUNT_SHARE)))


def _check_statistic(statistic: str) -> str:
    return V.check_choice(statistic, "statistic", ("sum", "mean"))


# ---------------------------------------------------------------------------
# the noise alone: exact statements for every dataset


def _noise_law(s: np.ndarray) -> tuple[GeneralizedChiSquare, float]:
    """``||e||^2 / s_max^2`` as a generalized chi-square, and ``s_max``.

    Working relative to the largest standard deviation keeps the weights in
    ``(0, 1]`` for standard deviations anywhere in the floating-point range.
    """
    s_max = float(np.max(s))
    return GeneralizedChiSquare((s.ravel() / s_max) ** 2), s_max


def noise_norm_quantile(noise_std, beta: float) -> float:
    r"""Exact ``(1 - beta)`` quantile of the L2 norm of the noise.

    ``||e||^2 = sum_j noise_std_j^2 Z_j^2`` is a generalized chi-square with
    weights ``noise_std_j^2`` (:prf:ref:`accuracy-thm-noise`), so the
    quantile is ``sqrt(isf(beta))`` of
    :class:`~dpsum.gchisq.GeneralizedChiSquare` (relative accuracy about 1e-15).

    Parameters
    ----------
    noise_std : array_like
        Per-coordinate noise standard deviations, all > 0 (a
        ``Release.noise_std``; any shape, flattened).
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float
        ``r`` with ``Pr[||e|| > r] = beta``.

    Examples
    --------
    >>> round(noise_norm_quantile([1.0, 1.0], 0.05), 4)  # sqrt(-2 ln 0.05)
    2.4477
    """
    s = _check_noise_std(noise_std)
    b = _check_beta(beta)
    law, s_max = _noise_law(s)
    return s_max * math.sqrt(float(law.isf(b)))


def _two_sided_z(beta: float) -> float:
    """``z`` with ``Pr[|Z| > z] = beta`` for a standard normal ``Z``."""
    return _z_log(math.log(beta))


def _z_log(log_beta: float) -> float:
    """:func:`_two_sided_z` from ``log beta``: finite for every positive
    float ``beta``, subnormal ones included (``beta / 2`` would underflow)."""
    return float(-special.ndtri_exp(log_beta - math.log(2.0)))


def noise_coordinate_quantile(noise_std, beta: float):
    r"""``(1 - beta)`` quantile of ``|e_j|`` for each coordinate: ``noise_std_j z_{1-beta/2}``.

    Parameters
    ----------
    noise_std : array_like
        Per-coordinate noise standard deviations, all > 0.
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float or numpy.ndarray
        Same shape as ``noise_std``.

    Examples
    --------
    >>> round(noise_coordinate_quantile(2.0, 0.05), 4)
    3.9199
    """
    s = V.check_positive(noise_std, "noise_std")
    z = _two_sided_z(_check_beta(beta))
    return float(s * z) if np.ndim(s) == 0 else np.asarray(s) * z


def confidence_intervals(release: Release | PipelineRelease, beta: float, *,
                         simultaneous: bool = False) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-coordinate ``(1 - beta)`` confidence intervals for the protected sum.

    ``estimate_j +- noise_std_j z`` covers the quantity the mechanism adds
    noise to (the clipped sum for Algorithm 3 and the clipping baseline, the
    clamped sum for Algorithm 2, the exact statistic for Algorithm 1) with
    probability exactly ``1 - beta`` for every dataset. With
    ``simultaneous=True`` each coordinate uses level ``(1 - beta)^(1/m)`` for
    ``m`` coordinates (Šidák), so all ``m`` intervals cover at once with
    probability exactly ``1 - beta``: the noise coordinates are independent
    (:prf:ref:`accuracy-thm-noise`). For the Laplace mechanism (noise of scale
    ``noise_std / sqrt(2)``) the half-width is ``scale ln(1/beta)``, exact in the
    same way. For a release of the grid path (``secure=True``) the protected
    quantity is the statistic rounded to the grid, the noise is ``u_j Z_j`` with
    ``Z_j`` discrete Gaussian of scale ``sigma``, and the half-width is
    ``u_j ceil(sigma z)``: at least ``1 - beta``, since
    ``Pr[|Z| > t] <= 2 Phi(-t / sigma)`` at integers ``t``
    (:prf:ref:`accuracy-prop-grid`).

    **The private pipeline** (a :class:`~dpsum.pipeline.PipelineRelease` of
    :func:`~dpsum.pipeline.private_sum` or :func:`~dpsum.pipeline.private_mean`).
    The protected quantity is the sum (or mean) of the clipped rows in the
    original units, ``theta = n c + b^{-1} ⊙ T`` (``theta = c + b^{-1} ⊙ T / n``
    for the mean), where ``c``, ``b`` and ``C`` are the released ``center``,
    ``scaling`` and ``clip_norm`` and ``T = sum_i min(1, C / ||x̂_i||) x̂_i``
    with ``x̂_i = (x_i - c) ⊙ b`` (:func:`dpsum.clipping.clipped_sum`). The
    center, scaling and clip radius are themselves private outputs of earlier
    steps, computed from the data; they are released with the estimate, so
    the statements are made conditionally on them, which is legitimate: the
    last step's noise is drawn after them and independently of them and of the
    data, so given ``(c, b, C)`` the noise is still Gaussian with the recorded,
    public standard deviations (and a statement that holds conditionally on
    every value of ``(c, b, C)`` also holds on average over them).

    * Replace-one (``n`` public): ``estimate - theta`` has independent
      ``N(0, noise_std_j^2)`` coordinates, and the intervals are exact,
      marginal or Šidák-simultaneous, as for Algorithm 3.
    * Add-remove, ``private_sum``: the estimate is ``ñ c + b^{-1} ⊙ (T + noise)``
      with the private count ``ñ = n + Z``, ``Z ~ N(0, sigma_count^2)``, so the
      error is ``Z c + nu`` with ``nu_j ~ N(0, s_j^2)``,
      ``s = sigma_mean Delta_2(C) / b`` (from ``release.steps``). ``c`` depends on
      ``ñ`` (the default budget split and clip probability are functions of
      ``ñ``), so ``Z c`` need not be Gaussian; instead a union bound spends
      ``PIPELINE_COUNT_SHARE * beta`` on ``|Z| <= sigma_count z`` and the rest
      on ``nu`` (marginal or Šidák), and the half-width is
      ``|c_j| sigma_count z_count + s_j z_nu``: coverage at least ``1 - beta``.
    * Add-remove, ``private_mean``: refused (``ValueError``). The estimate
      divides by ``ñ``, so its error contains ``b^{-1} ⊙ T (1/ñ - 1/n)``, a
      product of the unknown clipped sum with the count's error, whose law is
      not a function of public quantities.

    Parameters
    ----------
    release : Release or PipelineRelease
        A release of a Gaussian vector mechanism, of the Laplace mechanism,
        or of the private pipeline.
    beta : float
        Failure probability in (0, 1).
    simultaneous : bool
        Marginal intervals (default) or a simultaneous box.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Lower and upper ends, shaped like ``release.estimate``.

    Raises
    ------
    ValueError
        For a noise law these statements do not cover, or a ``private_mean``
        under add-remove.

    Examples
    --------
    >>> import dpsum
    >>> rel = dpsum.gaussian_mechanism([10.0, 20.0], epsilon=1.0, delta=1e-6, sensitivity=1.0, rng=0)
    >>> lo, hi = confidence_intervals(rel, 0.05)
    >>> bool(np.allclose(hi - lo, 2 * noise_coordinate_quantile(rel.noise_std, 0.05)))
    True

    A release of the private pipeline under replace-one: the same exact intervals
    around its estimate, with its recorded ``noise_std``.

    >>> X = np.random.default_rng(0).normal(3.0, [1.0, 10.0], size=(20_000, 2))
    >>> pm = dpsum.private_mean(X, domain=(-1000, 1000), epsilon=1.0, delta=1e-6, rng=1)
    >>> lo, hi = confidence_intervals(pm, 0.05, simultaneous=True)
    >>> bool(np.allclose(hi - lo, 2 * noise_coordinate_quantile(pm.noise_std, 1 - 0.95 ** 0.5)))
    True
    """
    if isinstance(release, PipelineRelease):
        b = _check_beta(beta)
        return _pipeline_intervals(release, b, V.check_bool(simultaneous, "simultaneous"))
    rel = _gaussian_release(release, laplace=True)
    b = _check_beta(beta)
    simultaneous = V.check_bool(simultaneous, "simultaneous")
    s = np.asarray(rel.noise_std, dtype=float)
    lb = math.log(b)
    if simultaneous:
        lb = _log_sidak(lb, s.size)  # log of the per-coordinate failure probability
    grid = _grid_noise(rel)
    if rel.mechanism is Mechanism.LAPLACE:
        # Laplace noise of scale s / sqrt(2): Pr[|e_j| > t] = exp(-t sqrt(2) / s)
        half = s / math.sqrt(2.0) * -lb
    elif grid is not None:
        # discrete Gaussian: Pr[|Z| > t] <= 2 Phi(-t / sigma) at integers t >= 0
        sigma, unit = grid
        half = unit * math.ceil(sigma * _z_log(lb) * (1.0 + 1e-12))
    else:
        half = s * _z_log(lb)
    est = np.asarray(rel.estimate, dtype=float)
    return est - half, est + half


@dataclass(frozen=True)
class ConfidenceBall:
    """A confidence ball ``{y : ||y - center|| <= radius}`` of level ``1 - beta``.

    ``radius`` is a function of public quantities only; ``center`` is the
    private estimate.
    """

    center: np.ndarray
    radius: float
    beta: float

    def contains(self, point) -> bool:
        """Whether ``point`` lies in the ball."""
        p = np.asarray(point, dtype=float)
        if p.shape != np.shape(self.center):
            raise ValueError(f"point must have shape {np.shape(self.center)}, got {p.shape}")
        return bool(np.linalg.norm((p - self.center).ravel()) <= self.radius)


def confidence_ball(release: Release | PipelineRelease, beta: float) -> ConfidenceBall:
    r"""The simultaneous ``(1 - beta)`` ball around the estimate.

    Its radius is :func:`noise_norm_quantile` of the release's noise, so it
    covers the protected sum with probability exactly ``1 - beta`` for every
    dataset (:prf:ref:`accuracy-thm-noise`). For a release of the grid path the
    radius is that quantile plus ``||u||``, the norm of one grid unit per
    coordinate, and the coverage at least ``1 - beta``
    (:prf:ref:`accuracy-prop-grid`).

    For the private pipeline (a :class:`~dpsum.pipeline.PipelineRelease`) the
    ball covers the sum or mean of the clipped rows, ``theta`` of
    :func:`confidence_intervals`, given the released center, scaling and clip
    radius. Under replace-one its radius is the exact noise quantile
    (coverage exactly ``1 - beta``). For ``private_sum`` under add-remove it is
    ``sigma_count z ||c|| + q``, with ``|ñ - n| <= sigma_count z`` failing with
    probability ``PIPELINE_COUNT_SHARE * beta`` and ``q`` the noise quantile at
    the rest (coverage at least ``1 - beta``); ``private_mean`` under
    add-remove is refused with a ``ValueError``.

    Examples
    --------
    >>> import dpsum
    >>> rel = dpsum.gaussian_mechanism([10.0, 20.0], epsilon=1.0, delta=1e-6, sensitivity=1.0, rng=0)
    >>> ball = confidence_ball(rel, 0.05)
    >>> ball.radius == noise_norm_quantile(rel.noise_std, 0.05), ball.contains(rel.estimate)
    (True, True)

    The private pipeline's sum under replace-one:

    >>> X = np.random.default_rng(0).normal(3.0, [1.0, 10.0], size=(20_000, 2))
    >>> ps = dpsum.private_sum(X, domain=(-1000, 1000), epsilon=1.0, delta=1e-6, rng=1)
    >>> confidence_ball(ps, 0.05).radius == noise_norm_quantile(ps.noise_std, 0.05)
    True
    """
    if isinstance(release, PipelineRelease):
        b = _check_beta(beta)
        return ConfidenceBall(center=np.asarray(release.estimate, dtype=float),
                              radius=_pipeline_radius(release, b), beta=b)
    rel = _gaussian_release(release)
    r = noise_norm_quantile(rel.noise_std, beta)
    grid = _grid_noise(rel)
    if grid is not None:  # |Z_j| is dominated by |X_j| + 1, X_j ~ N(0, sigma^2)
        r += float(np.linalg.norm(grid[1]))
    return ConfidenceBall(center=np.asarray(rel.estimate, dtype=float), radius=r,
                          beta=_check_beta(beta))


# ---------------------------------------------------------------------------
# the clipping loss under the public model


def clipping_loss_moment(stds, scaling, clip_norm: float, *, levels: int = 8) -> float:
    r"""Second moment of one row's clipping loss under the model, ``E[(1 - C/R)_+^2 ||x - c||^2]``.

    For a row ``x ~ N(c, diag(stds^2))`` with scaled norm
    ``R = ||(x - c) ⊙ b||``, clipping removes ``(1 - C/R)_+ (x - c)``
    (book chapter 4, :ref:`gaussian-data-clip-bias`). By size-biasing,
    ``E[(x_j - c_j)^2 g(R^2)] = stds_j^2 E[g(Q_j)]`` where ``Q_j`` adds two
    more terms of weight ``w_j = (b_j stds_j)^2`` to ``R^2``, and
    ``E[g(Q_j)] = int_{C^2}^inf g'(q) Pr[Q_j > q] dq`` with
    ``g(q) = (1 - C/sqrt(q))^2``; the integral is evaluated by Gauss-Laguerre
    quadrature on the generalized chi-square tail.

    ``Pr[Q_j > q]`` increases with the added weight, so when there are more than
    ``levels`` distinct weights, each added weight is rounded *up* to one of
    ``levels`` geometric levels: the result is then an upper bound, exact
    otherwise (up to the quadrature, about 1e-7 relative).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public standard deviations of the model, all > 0.
    scaling : array_like, shape (d,)
        The scaling ``b`` (all > 0).
    clip_norm : float
        The clip radius ``C`` in the scaled space.
    levels : int
        Largest number of distinct added weights evaluated (cost grows linearly).

    Returns
    -------
    float
        The per-row moment; ``n`` rows give ``E||f(X) - clipped sum||^2 = n``
        times it when the model's mean is the center.

    Examples
    --------
    >>> m = clipping_loss_moment([1.0, 1.0], [1.0, 1.0], 3.0)  # chi-square 2 clipped at 9
    >>> 0.0 < m < 0.01
    True
    """
    sigma = V.check_vector(stds, "stds", positive=True)
    b = V.check_vector(scaling, "scaling", sigma.size, positive=True)
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    levels = V.check_integer(levels, "levels")
    s_top = float(np.max(sigma))
    sig = sigma / s_top
    u = b * sig
    u_top = float(np.max(u))
    w = (u / u_top) ** 2  # in (0, 1]; the loss is scale-free in (b, C) jointly
    c2 = (float(C) / (s_top * u_top)) ** 2  # C^2 in the units of w
    return float(_loss_moment(sig, w, c2, levels) * s_top**2)


def _loss_moment(sig: np.ndarray, w: np.ndarray, c2: float, levels: int) -> float:
    """``sum_j sig_j^2 E[g(Q_j)]`` for weights ``w`` (max 1) and ``C^2 = c2``."""
    distinct = np.unique(w)
    if distinct.size <= levels:
        grid, idx = distinct, np.searchsorted(distinct, w)
    else:
        grid = np.geomspace(distinct[0], 1.0, levels)
        grid[-1] = 1.0
        idx = np.minimum(np.searchsorted(grid, w * (1.0 - 1e-12)), levels - 1)
    per_level = np.zeros(grid.size)
    np.add.at(per_level, idx, sig**2)
    nodes, weights = np.polynomial.laguerre.laggauss(_LAGUERRE_NODES)
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


# ---------------------------------------------------------------------------
# the total error against the true sum


@dataclass(frozen=True)
class ErrorBound:
    r"""A ``(1 - beta)`` bound on the L2 error of a release, and how it was split.

    With probability at least ``1 - beta`` (over the noise and, when
    ``bias_beta > 0``, over data drawn from the public model),
    ``||estimate - target|| <= bound``. The failure probability is split as
    ``beta = noise_beta + bias_beta``: the noise exceeds ``noise_radius``
    with probability exactly ``noise_beta``, and the clipping loss exceeds
    ``bias_radius = sqrt(loss_moment / bias_beta)`` with probability at most
    ``bias_beta`` (Chebyshev; :prf:ref:`accuracy-thm-total`).

    Attributes
    ----------
    bound : float
        ``noise_radius + bias_radius``.
    beta, noise_beta, bias_beta : float
        The failure probability and its split.
    noise_radius, bias_radius : float
        The two parts of the bound.
    loss_moment : float
        ``E||clipping loss||^2 = n E[(1 - C/R)_+^2 ||x - c||^2]`` under the
        model (0 when the bound is against the clipped sum).
    statistic : str
        ``"sum"``, or ``"mean"`` when every quantity was divided by ``n``.
    """

    bound: float
    beta: float
    noise_beta: float
    bias_beta: float
    noise_radius: float
    bias_radius: float
    loss_moment: float
    statistic: str = "sum"


class _NoiseRadius:
    """Exact quantiles of ``||e||`` for noise of a fixed *shape*, at any overall scale.

    ``noise_std = s_max * shape`` with ``max(shape) = 1``; the radius at failure
    probability ``b`` is ``s_max * sqrt(isf(b))`` of the generalized chi-square
    with weights ``shape^2``. Algorithm 3's noise has the shape ``b_min / b``
    whatever ``n`` and ``epsilon`` are, so a planner builds this once.
    """

    def __init__(self, shape: np.ndarray, beta: float):
        self.law = GeneralizedChiSquare(shape.ravel() ** 2)
        self.beta = beta
        self._spline: Any = None

    def unit_radius(self, b_noise: float) -> float:
        return math.sqrt(float(self.law.isf(b_noise)))

    def share(self, ratio: float) -> float:
        """The bias share ``u`` minimising ``unit_radius(beta (1 - u)) + ratio / sqrt(u)``.

        The unit radius is interpolated (cubic spline in the logit of ``u``
        through 25 exact quantiles, computed once), so the chosen share is a
        smooth function of ``ratio``. Any share gives a valid bound: the
        bound itself is evaluated exactly at the share chosen here.
        """
        if self._spline is None:
            t = np.linspace(-14.0, 7.0, 25)
            r = [self.unit_radius(self.beta * float(special.expit(-x))) for x in t]
            self._spline = interpolate.CubicSpline(t, r)
        res = optimize.minimize_scalar(
            lambda t: float(self._spline(t)) + ratio / math.sqrt(special.expit(t)),
            bounds=(-14.0, 7.0), method="bounded", options={"xatol": 1e-9})
        return float(special.expit(res.x))

    def bound(self, s_max: float, loss_moment: float, bias_share: float | None) -> ErrorBound:
        """Union of the exact noise quantile and Chebyshev on the loss
        (:prf:ref:`accuracy-thm-total`)."""
        beta = self.beta
        if loss_moment == 0.0:
            r = s_max * self.unit_radius(beta)
            return ErrorBound(r, beta, beta, 0.0, r, 0.0, 0.0)
        if bias_share is None:
            share = self.share(math.sqrt(loss_moment / beta) / s_max)
        else:
            share = bias_share
        r_noise = s_max * self.unit_radius(beta * (1.0 - share))
        r_bias = math.sqrt(loss_moment / (beta * share))
        return ErrorBound(r_noise + r_bias, beta, beta * (1.0 - share), beta * share,
                          r_noise, r_bias, float(loss_moment))


def _split_bound(noise_std: np.ndarray, loss_moment: float, beta: float,
                 bias_share: float | None) -> ErrorBound:
    """The bound of :class:`_NoiseRadius` for one noise vector."""
    s_max = float(np.max(noise_std))
    return _NoiseRadius(noise_std / s_max, beta).bound(s_max, loss_moment, bias_share)


def release_error_bound(release: Release, beta: float, *, stds, n: int,
                        bias_share: float | None = None) -> ErrorBound:
    r"""``(1 - beta)`` bound on ``||estimate - f(X)||`` for a clipped release, ``f`` the true sum.

    Valid when the rows are independent draws from the public model
    ``N(c, diag(stds^2))``, ``c`` the release's center (0 when none was used):
    the clipping loss then has mean zero and second moment
    ``n`` :func:`clipping_loss_moment`, and the probability is over the data
    and the noise (:prf:ref:`accuracy-thm-total`). Only public quantities
    enter: the release's noise, scaling and clip radius, ``stds`` and ``n``.

    Parameters
    ----------
    release : Release
        A release of :func:`~dpsum.mechanisms.gaussian_data_mechanism` or
        :func:`~dpsum.mechanisms.clipped_gaussian_mechanism`.
    beta : float
        Failure probability in (0, 1).
    stds : array_like, shape (d,)
        The public model's standard deviations (those the mechanism used).
    n : int
        The number of rows (public under replace-one; under add-remove pass a
        public upper bound, which keeps the bound valid).
    bias_share : float, optional
        Fraction of ``beta`` spent on the clipping loss; by default the share
        that minimises the bound (it depends on public quantities only).

    Examples
    --------
    >>> import dpsum
    >>> X = np.random.default_rng(0).normal(0.0, [1.0, 0.5], size=(1000, 2))
    >>> rel = dpsum.gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[1.0, 0.5], rng=0)
    >>> eb = release_error_bound(rel, 0.05, stds=[1.0, 0.5], n=1000)
    >>> eb.bound > noise_norm_quantile(rel.noise_std, 0.05), eb.noise_beta + eb.bias_beta
    (True, 0.05)
    """
    rel = _gaussian_release(release)
    if rel.mechanism not in _CLIPPED_MECHANISMS or rel.clip_norm is None or rel.scaling is None:
        raise ValueError("release must come from a clipping mechanism (Algorithm 3 or the "
                         "clipping baseline) to bound its error against the true sum")
    if rel.secure:
        raise ValueError("release took the grid path: its rows are rounded to the grid, an "
                         "error this bound does not include; use confidence_ball for the "
                         "error against the grid sum")
    b = _check_beta(beta)
    n = V.check_integer(n, "n")
    sigma = V.check_vector(stds, "stds", np.size(rel.noise_std), positive=True)
    if rel.clip_probability is not None and not math.isclose(
            clip_radius(sigma, rel.clip_probability, rel.scaling), rel.clip_norm, rel_tol=1e-9):
        raise ValueError("stds is not the model the release was computed from: its clip "
                         "radius at the release's clip_probability differs from clip_norm")
    share = None if bias_share is None else _check_share(bias_share)
    moment = n * clipping_loss_moment(sigma, rel.scaling, rel.clip_norm)
    return _split_bound(np.asarray(rel.noise_std, dtype=float), moment, b, share)


class _Planner:
    """The bound of :func:`gaussian_data_error_bound` as a function of one of
    ``n``, ``epsilon`` or ``d``, with every argument validated once."""

    def __init__(self, stds, *, epsilon, delta, beta, center, clip_probability, scaling,
                 neighbouring, include_bias, bias_share, statistic, n=None):
        self.sigma = V.check_vector(stds, "stds", positive=True)
        self.epsilon = None if epsilon is None else V.check_epsilon(epsilon, scalar=True)
        self.delta = V.check_delta(delta, scalar=True)
        self.beta = _check_beta(beta)
        self.relation = Neighbouring.parse(neighbouring)
        self.center = None if center is None else V.check_vector(center, "center", self.sigma.size)
        if self.center is not None and not np.any(self.center):
            self.center = None
        if clip_probability is None:
            if self.relation is Neighbouring.ADD_REMOVE:
                raise ValueError("clip_probability must be given under add-remove neighbouring: "
                                 "the default 1/n uses the private number of rows")
            self.p = None
        else:
            self.p = V.check_probability(clip_probability, "clip_probability", scalar=True)
        resolve_scaling(scaling, self.sigma)  # validated once, before any planning
        self.scaling = scaling
        self.include_bias = V.check_bool(include_bias, "include_bias")
        self.bias_share = None if bias_share is None else _check_share(bias_share)
        self.statistic = _check_statistic(statistic)
        self.n = n
        self._radius: dict = {}
        self._moment: dict = {}

    def bound(self, *, n=None, epsilon=None, d=None) -> ErrorBound:
        n = self.n if n is None else n
        eps = self.epsilon if epsilon is None else epsilon
        d = self.sigma.size if d is None else d
        sigma = self.sigma[:d]
        scaling = self.scaling if isinstance(self.scaling, str) else self.scaling[:d]
        center = None if self.center is None else self.center[:d]
        setup = gaussian_data_setup(sigma, epsilon=eps, delta=self.delta, center=center,
                                    clip_probability=self.p, n=n, scaling=scaling,
                                    neighbouring=self.relation)
        b, C = setup.scaling, setup.clip_norm
        noise_std = np.asarray(setup.noise_std, dtype=float)  # set: epsilon was given
        if d not in self._radius:  # the noise has the shape b_min / b for every n and epsilon
            self._radius[d] = _NoiseRadius(np.min(b) / b, self.beta)
        if self.include_bias:
            key = (n, d)
            if key not in self._moment:  # the loss does not depend on epsilon
                self._moment[key] = n * clipping_loss_moment(sigma, b, C)
            moment = self._moment[key]
        else:
            moment = 0.0
        eb = self._radius[d].bound(float(np.max(noise_std)), moment, self.bias_share)
        if self.statistic == "mean":
            eb = ErrorBound(eb.bound / n, eb.beta, eb.noise_beta, eb.bias_beta,
                            eb.noise_radius / n, eb.bias_radius / n, eb.loss_moment / n**2,
                            "mean")
        return eb


def gaussian_data_error_bound(stds, n: int, *, epsilon: float, delta: float, beta: float,
                              center=None, clip_probability: float | None = None,
                              scaling="optimal", neighbouring: Neighbouring | str = "replace",
                              include_bias: bool = True, bias_share: float | None = None,
                              statistic: str = "sum") -> ErrorBound:
    r"""The ``(1 - beta)`` error bound of Algorithm 3 before any data is touched.

    Runs Algorithm 3's setup on the public inputs (the same ``b``, ``C`` and
    noise as :func:`~dpsum.mechanisms.gaussian_data_mechanism`) and returns
    the bound of :prf:ref:`accuracy-thm-total` against the true sum
    (``include_bias=True``) or the exact noise quantile against the clipped
    sum (``include_bias=False``).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public standard deviations of the model.
    n : int
        Number of rows.
    epsilon, delta : float
        The privacy guarantee.
    beta : float
        Failure probability in (0, 1).
    center : array_like, optional
        The public center (changes the noise only under add-remove).
    clip_probability : float, optional
        ``p_C``; ``1/n`` by default (replace-one only).
    scaling : {"optimal", "none"} or array_like
        Algorithm 3 (Lemma 3.1), the isotropic clipping baseline, or any
        positive vector.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation.
    include_bias : bool
        Bound the error against the true sum (default) or the clipped sum.
    bias_share : float, optional
        Fraction of ``beta`` spent on the clipping loss (default: optimised).
    statistic : {"sum", "mean"}
        Bound the error of the sum, or of the mean ``estimate / n``.

    Examples
    --------
    >>> eb = gaussian_data_error_bound([1.0, 0.5], 1000, epsilon=1.0, delta=1e-6, beta=0.05)
    >>> round(eb.bound, 2), round(eb.noise_radius, 2), round(eb.bias_radius, 2)
    (67.59, 63.64, 3.95)
    """
    planner = _Planner(stds, epsilon=epsilon, delta=delta, beta=beta, center=center,
                       clip_probability=clip_probability, scaling=scaling,
                       neighbouring=neighbouring, include_bias=include_bias,
                       bias_share=bias_share, statistic=statistic)
    n = V.check_integer(n, "n", minimum=2 if clip_probability is None else 1)
    return planner.bound(n=n)


# ---------------------------------------------------------------------------
# planning


def _check_target(target) -> float:
    return float(V.check_positive(target, "target", scalar=True))


def _check_share(share) -> float:
    return float(V.check_probability(share, "bias_share", scalar=True))


def plan_n(target: float, *, stds, epsilon: float, delta: float, beta: float,
           center=None, clip_probability: float | None = None, scaling="optimal",
           neighbouring: Neighbouring | str = "replace", include_bias: bool = True,
           bias_share: float | None = None, n_max: int = 10**12) -> int:
    r"""Smallest ``n`` whose ``(1 - beta)`` bound on the error of the **mean** is at most ``target``.

    The bound is that of :func:`gaussian_data_error_bound` with
    ``statistic="mean"``; it decreases with ``n`` (the noise of the sum grows
    only like ``sqrt(log n)`` through ``C`` when ``p_C = 1/n``, and the loss
    like ``sqrt(n)``). The answer ``n`` satisfies ``bound(n) <= target <
    bound(n - 1)``. Arguments as in :func:`gaussian_data_error_bound`.

    Raises
    ------
    ValueError
        If no ``n <= n_max`` reaches the target.

    Examples
    --------
    >>> plan_n(0.05, stds=[1.0, 0.5], epsilon=1.0, delta=1e-6, beta=0.05)
    1383
    """
    t = _check_target(target)
    n_max = V.check_integer(n_max, "n_max", minimum=2)
    planner = _Planner(stds, epsilon=epsilon, delta=delta, beta=beta, center=center,
                       clip_probability=clip_probability, scaling=scaling,
                       neighbouring=neighbouring, include_bias=include_bias,
                       bias_share=bias_share, statistic="mean")
    n_min = 2 if clip_probability is None else 1

    def f(n: float) -> float:
        return planner.bound(n=n).bound

    # The total bound is at least the noise radius at the whole beta, which is cheap
    # (no loss moment): solve with it first, then search upwards with the total.
    if not include_bias:
        return _solve_decreasing(f, t, n_min, n_max)
    noise_only = _Planner(stds, epsilon=epsilon, delta=delta, beta=beta, center=center,
                          clip_probability=clip_probability, scaling=scaling,
                          neighbouring=neighbouring, include_bias=False, bias_share=None,
                          statistic="mean")
    lo = _solve_decreasing(lambda n: noise_only.bound(n=n).bound, t, n_min, n_max)
    return _solve_decreasing(f, t, lo, n_max)


def _solve_decreasing(f, t: float, lo: int, hi_max: int) -> int:
    """Smallest integer ``x`` in ``[lo, hi_max]`` with ``f(x) <= t``, for ``f`` decreasing.

    A bracket grows geometrically, then shrinks by interpolation in
    ``(log x, log f)`` (the bound falls roughly like a power of ``x``), with a
    bisection step whenever interpolation stalls; values are memoised, as
    each evaluation of the total bound costs a loss moment.
    """
    memo: dict[int, float] = {}

    def g(x: int) -> float:
        if x not in memo:
            memo[x] = f(x)
        return memo[x]

    if g(lo) <= t:
        return lo
    a = lo
    while True:  # bracket: g(a) > t >= g(b)
        b = min(math.ceil(a * min(max(1.5, 1.1 * g(a) / t), 1e3)), hi_max)
        if g(b) <= t:
            break
        if b >= hi_max:
            raise ValueError(f"no n <= n_max = {hi_max} reaches target {t!r}")
        a = b
    stalled = 0
    while b - a > 1:
        fa, fb = math.log(g(a) / t), math.log(g(b) / t)  # fa > 0 >= fb
        la, lb = math.log(a), math.log(b)
        x = math.ceil(math.exp(la + fa * (lb - la) / (fa - fb)))
        if stalled >= 2:
            x, stalled = (a + b) // 2, 0
        x = min(max(x, a + 1), b - 1)
        if g(x) <= t:
            stalled = stalled + 1 if x == b - 1 or b - x < (b - a) // 4 else 0
            b = x
        else:
            stalled = stalled + 1 if x == a + 1 or x - a < (b - a) // 4 else 0
            a = x
    return int(b)


def plan_epsilon(target: float, *, stds, n: int, delta: float, beta: float,
                 center=None, clip_probability: float | None = None, scaling="optimal",
                 neighbouring: Neighbouring | str = "replace", include_bias: bool = True,
                 bias_share: float | None = None, statistic: str = "sum",
                 epsilon_max: float = 1e3) -> float:
    r"""Smallest ``epsilon`` (at fixed ``delta``) whose ``(1 - beta)`` bound is at most ``target``.

    The noise shrinks as ``epsilon`` grows while the clipping loss does not
    depend on it, so a target below the loss part alone is unreachable. The
    returned ``epsilon`` satisfies ``bound(epsilon) <= target`` and
    ``bound(epsilon (1 - 1e-9)) > target`` up to the optimiser's tolerance.
    Arguments as in :func:`gaussian_data_error_bound`.

    Raises
    ------
    ValueError
        If no ``epsilon <= epsilon_max`` reaches the target.

    Examples
    --------
    >>> round(plan_epsilon(20.0, stds=[1.0, 0.5], n=1000, delta=1e-6, beta=0.05), 4)
    4.3625
    """
    t = _check_target(target)
    eps_max = float(V.check_positive(epsilon_max, "epsilon_max", scalar=True))
    planner = _Planner(stds, epsilon=None, delta=delta, beta=beta, center=center,
                       clip_probability=clip_probability, scaling=scaling,
                       neighbouring=neighbouring, include_bias=include_bias,
                       bias_share=bias_share, statistic=statistic)
    planner.n = V.check_integer(n, "n", minimum=2 if clip_probability is None else 1)

    def f(eps: float) -> float:
        return planner.bound(epsilon=eps).bound

    if f(eps_max) > t:
        raise ValueError(f"no epsilon <= epsilon_max = {eps_max:g} reaches target {t!r}")
    lo = eps_max
    while f(lo) <= t:
        lo /= 10.0
        if lo < 1e-6:
            return lo * 10.0  # the target is met by any meaningful epsilon
    hi = lo * 10.0
    eps = optimize.brentq(lambda u: f(math.exp(u)) - t, math.log(lo), math.log(hi),
                          xtol=1e-13, rtol=1e-13)
    eps = math.exp(eps)
    while f(eps) > t:
        eps *= 1.0 + 1e-12
    return float(eps)


def plan_d(target: float, *, stds, n: int, epsilon: float, delta: float, beta: float,
           center=None, clip_probability: float | None = None, scaling="optimal",
           neighbouring: Neighbouring | str = "replace", include_bias: bool = True,
           bias_share: float | None = None, statistic: str = "sum") -> int:
    r"""Largest ``d`` such that releasing the first ``d`` coordinates meets ``target``.

    ``stds`` lists the public standard deviations of all candidate
    coordinates in the order they would be added (``center`` and an explicit
    ``scaling`` likewise); the model for dimension ``d`` is their first ``d``
    entries. The bound grows with ``d`` (every coordinate adds noise), and the
    answer satisfies ``bound(d) <= target < bound(d + 1)`` (or ``d =
    len(stds)``). Arguments as in :func:`gaussian_data_error_bound`.

    Raises
    ------
    ValueError
        If even ``d = 1`` misses the target.

    Examples
    --------
    >>> plan_d(71.0, stds=[1.0, 0.5, 0.3, 0.2, 0.1], n=1000, epsilon=1.0, delta=1e-6, beta=0.05)
    3
    """
    t = _check_target(target)
    planner = _Planner(stds, epsilon=epsilon, delta=delta, beta=beta, center=center,
                       clip_probability=clip_probability, scaling=scaling,
                       neighbouring=neighbouring, include_bias=include_bias,
                       bias_share=bias_share, statistic=statistic)
    planner.n = V.check_integer(n, "n", minimum=2 if clip_probability is None else 1)
    if not isinstance(scaling, str):
        planner.scaling = V.check_vector(scaling, "scaling", planner.sigma.size, positive=True)

    def f(d: int) -> float:
        return planner.bound(d=d).bound

    d_all = planner.sigma.size
    if f(1) > t:
        raise ValueError(f"even d = 1 misses target {t!r}")
    if f(d_all) <= t:
        return d_all
    lo, hi = 1, d_all  # f(lo) <= t < f(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if f(mid) <= t:
            lo = mid
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------------------
# binary sums


def _count_tails(release: BinaryRelease, k: int, y: int) -> tuple[float, float]:
    """``(Pr_k[Y <= y], Pr_k[Y >= y])`` for the released count ``Y`` when the true count is ``k``."""
    n, p = release.n, release.probability
    if release.mechanism == "binomial":  # Y = k + Binomial(n, p)
        return float(stats.binom.cdf(y - k, n, p)), float(stats.binom.sf(y - k - 1, n, p))
    if release.mechanism == "randomized_response":  # Y = Binomial(k, q) + Binomial(n - k, 1 - q)
        a = np.arange(k + 1)
        pa = stats.binom.pmf(a, k, p)
        le = float(np.dot(pa, stats.binom.cdf(y - a, n - k, 1.0 - p)))
        ge = float(np.dot(pa, stats.binom.sf(y - a - 1, n - k, 1.0 - p)))
        return min(le, 1.0), min(ge, 1.0)
    # sample-and-threshold: S ~ Binomial(k, p), Y = S if S >= t else 0
    t = math.ceil(float(cast(float, release.threshold)) - 1e-9)
    if y < t:  # suppressed: the lowest outcome
        return float(stats.binom.cdf(t - 1, k, p)), 1.0
    return float(stats.binom.cdf(y, k, p)), float(stats.binom.sf(y - 1, k, p))


def count_interval(release: BinaryRelease, beta: float) -> tuple[int, int]:
    r"""Exact ``(1 - beta)`` confidence interval for the true count ``k`` of a binary sum.

    For each mechanism the released count ``Y`` has a known law given ``k``
    (randomized response: ``Binomial(k, q) + Binomial(n - k, 1 - q)``;
    binomial noise: ``k + Binomial(n, p)``; sample-and-threshold:
    ``Binomial(k, p)`` suppressed below the threshold), stochastically
    increasing in ``k``. The interval is every ``k`` in ``{0, ..., n}`` for
    which neither tail at the observed ``y`` is at most ``beta / 2``, the
    Clopper-Pearson construction, or the nearest end of ``{0, ..., n}`` when
    that set is empty (an output improbable under every ``k``). It covers the
    true ``k`` with probability at least ``1 - beta`` for every ``k``
    (:prf:ref:`accuracy-thm-binary`).

    Parameters
    ----------
    release : BinaryRelease
        A release of :func:`~dpsum.binary.randomized_response`,
        :func:`~dpsum.binary.binomial_noise_mechanism` or
        :func:`~dpsum.binary.sample_and_threshold`.
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    (int, int)
        ``lower <= k <= upper`` with probability at least ``1 - beta``.

    Examples
    --------
    >>> import dpsum
    >>> bits = np.r_[np.ones(30, dtype=int), np.zeros(70, dtype=int)]
    >>> count_interval(dpsum.randomized_response(bits, epsilon=2.0, rng=0), 0.1)
    (20, 35)
    """
    if not isinstance(release, BinaryRelease):
        raise TypeError(f"release must be a BinaryRelease, got {type(release).__name__}")
    half = _check_beta(beta) / 2.0
    y, n = int(release.output), int(release.n)

    def first(pred) -> int:
        """Smallest k in [0, n + 1] with pred(k) true, for pred monotone false -> true."""
        lo, hi = -1, n + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if pred(mid):
                hi = mid
            else:
                lo = mid
        return hi

    lower = first(lambda k: _count_tails(release, k, y)[1] > half)  # Pr_k[Y >= y] increases in k
    upper = first(lambda k: _count_tails(release, k, y)[0] <= half) - 1  # Pr_k[Y <= y] decreases
    # An output improbable under every k leaves one condition false for all k; the
    # set is then empty, and the nearest end of {0, ..., n} is returned instead
    # (adding points to a confidence set never lowers its coverage).
    lower, upper = min(lower, n), max(upper, 0)
    if lower > upper:  # cannot happen here (one more 1-bit moves Y by at most one
        lower, upper = upper, lower  # outcome), and widening keeps the coverage
    return int(lower), int(upper)
