"""Intervals and balls for the noise a release added: exact statements about
the quantity the mechanism protects (the chapter :ref:`Accuracy you can publish <accuracy>`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpsum import _validation as V
from dpsum.distributions.gchisq import GeneralizedChiSquare
from dpsum.privacy.neighbouring import Neighbouring, clipped_sum_sensitivity

__all__ = [
    "PIPELINE_COUNT_SHARE",
    "ConfidenceBall",
    "Intervals",
    "short_array",
    "grid_noise_law",
    "noise_coordinate_quantile",
    "noise_norm_quantile",
    "norm_noise_law",
    "pipeline_intervals",
    "pipeline_noise_law",
    "pipeline_radius",
    "sidak",
    "two_sided_z",
]




def _check_noise_std(noise_std: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(V.check_positive(noise_std, "noise_std"), dtype=float))


_RELEASE_FIELDS = ("estimate", "noise_std", "secure", "neighbouring", "statistic")
_PIPELINE_FIELDS = _RELEASE_FIELDS + ("steps", "center", "count", "clip_norm", "scaling")


def _check_pipeline(release: Any) -> Any:
    return V.check_record(release, "release", attributes=_PIPELINE_FIELDS,
                          what="a PipelineRelease (of private_mean or private_sum)")


def grid_noise_law(release: Any) -> tuple[float, np.ndarray] | None:
    """``(sigma, u)`` for a release of the grid path, None otherwise.

    Its noise is ``u_j Z_j`` with independent ``Z_j ~ N_Z(0, sigma^2)`` on the
    integers and ``u_j`` the grid unit of coordinate ``j`` in the units of the
    estimate; the release records ``sigma_opt * sensitivity = sigma 2^K`` and
    ``discrete_scale = sigma u``.
    """
    V.check_record(release, "release", attributes=_RELEASE_FIELDS + ("grid_exponent",
                                                                     "discrete_scale"),
                   what="a dpsum Release")
    if not release.secure or release.grid_exponent is None or release.discrete_scale is None:
        return None
    sigma = math.ldexp(release.sigma_opt * release.sensitivity, -int(release.grid_exponent))
    return sigma, np.asarray(release.discrete_scale, dtype=float) / sigma


#: Share of ``beta`` that the add-remove statement for ``private_sum`` spends on
#: the private count; the rest goes to the noise of the clipped sum.
PIPELINE_COUNT_SHARE = 0.5


def _pipeline_step(release: Any, name: str) -> float:
    """The noise multiplier of the pipeline's Gaussian step ``name``."""
    for step in release.steps:
        if step.name == name and step.noise_multiplier is not None:
            return float(step.noise_multiplier)
    raise ValueError(f"release.steps has no Gaussian {name!r} step; the release was not made "
                     "by dpsum.private_mean or dpsum.private_sum")


def pipeline_noise_law(release: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``(s, a)``: the error of a pipeline release against its protected quantity is
    ``nu + Z a`` with ``nu_j ~ N(0, s_j^2)`` independent of everything before it,
    and ``a = c`` with ``Z = ñ - n ~ N(0, sigma_count^2)`` (add-remove sum), or
    no second term (``a`` None: replace-one). The mean under add-remove has
    its own statement (this module's private ``_mean_add_remove``).
    """
    _check_pipeline(release)
    if release.neighbouring is Neighbouring.REPLACE:
        return np.asarray(release.noise_std, dtype=float), None
    if release.statistic == "mean":
        return np.asarray(release.noise_std, dtype=float), None
    # estimate = ñ c + b^{-1} (T + noise): error against n c + b^{-1} T is
    # (ñ - n) c + b^{-1} noise; the sum's noise has std s_mean * Delta_2(C) / b
    s_mean = _pipeline_step(release, "mean")
    s_count = _pipeline_step(release, "count")
    sens = clipped_sum_sensitivity(release.clip_norm, release.neighbouring)
    s = s_mean * sens / np.asarray(release.scaling, dtype=float)
    return s, s_count * np.asarray(release.center, dtype=float)


def _mean_add_remove(release: Any, beta: float) -> tuple[float, np.ndarray]:
    """``(u, |estimate - c|)`` for the mean under add-remove, or a ValueError.

    The estimate is ``c + b^{-1}(T + noise) / ñ`` and the protected quantity
    ``theta = c + b^{-1} T / n``, so the error is ``nu - (theta - c) Z / ñ``
    with ``nu_j ~ N(0, noise_std_j^2)`` given ``ñ`` and ``Z = ñ - n``. On
    ``|Z| <= sigma_count z`` (failure ``PIPELINE_COUNT_SHARE * beta``),
    ``u = sigma_count z / ñ`` and ``|theta_j - c_j| <= |est_j - c_j| + |err_j|``
    give ``|err_j| <= (|nu_j| + u |est_j - c_j|) / (1 - u)`` (and the same with
    norms), valid for ``u < 1``.
    """
    s_count = _pipeline_step(release, "count")
    u = s_count * two_sided_z(beta * PIPELINE_COUNT_SHARE) / max(float(release.count), 1.0)
    if not u < 1.0:
        raise ValueError("release's private count is too small for an accuracy statement at "
                         "this beta (the count's error bound reaches the count)")
    dev = np.abs(np.asarray(release.estimate, dtype=float)
                 - np.asarray(release.center, dtype=float))
    return u, dev


def sidak(beta: float, m: int) -> float:
    """Per-event failure probability ``1 - (1 - beta)^(1/m)`` of ``m`` independent events
    that all hold with probability ``1 - beta`` (Šidák)."""
    b = float(V.check_probability(beta, "beta", scalar=True))
    mm = V.check_integer(m, "m")
    return float(-np.expm1(np.log1p(-b) / mm))


def log_sidak(log_beta: float, m: int) -> float:
    """``log`` of :func:`sidak`, from ``log beta``; below 1e-300 it is the
    conservative ``log(beta / m)`` (``1 - (1 - b)^(1/m) >= b / m``), so a
    subnormal ``beta`` gives a finite ``z`` instead of an underflow to 0."""
    b = math.exp(log_beta)
    v = sidak(b, m) if b > 1e-300 else 0.0
    return math.log(v) if v >= 1e-300 else log_beta - math.log(m)


def pipeline_intervals(release: Any, beta: float, simultaneous: bool
                       ) -> tuple[np.ndarray, np.ndarray]:
    beta = float(V.check_probability(beta, "beta", scalar=True))
    simultaneous = V.check_bool(simultaneous, "simultaneous")
    s, a = pipeline_noise_law(release)
    mean_ar = release.neighbouring is Neighbouring.ADD_REMOVE and release.statistic == "mean"
    lb = math.log(beta)
    if a is not None or mean_ar:
        lb += math.log1p(-PIPELINE_COUNT_SHARE)
    if simultaneous:
        lb = log_sidak(lb, s.size)
    half = s * z_from_log(lb)
    if a is not None:  # |ñ - n| <= sigma_count z with probability 1 - share * beta
        half = half + np.abs(a) * z_from_log(math.log(beta) + math.log(PIPELINE_COUNT_SHARE))
    if mean_ar:
        u, dev = _mean_add_remove(release, beta)
        half = (half + u * dev) / (1.0 - u)
    est = np.asarray(release.estimate, dtype=float)
    return est - half, est + half


def pipeline_radius(release: Any, beta: float) -> float:
    beta = float(V.check_probability(beta, "beta", scalar=True))
    s, a = pipeline_noise_law(release)
    if release.neighbouring is Neighbouring.ADD_REMOVE and release.statistic == "mean":
        u, dev = _mean_add_remove(release, beta)
        q = noise_norm_quantile(s, beta * (1.0 - PIPELINE_COUNT_SHARE))
        return (q + u * float(np.linalg.norm(dev))) / (1.0 - u)
    if a is None:
        return noise_norm_quantile(s, beta)
    return (noise_norm_quantile(s, beta * (1.0 - PIPELINE_COUNT_SHARE))
            + float(np.linalg.norm(a))
            * z_from_log(math.log(beta) + math.log(PIPELINE_COUNT_SHARE)))


def norm_noise_law(s: np.ndarray) -> tuple[GeneralizedChiSquare, float]:
    """``||e||^2 / s_max^2`` as a generalized chi-square, and ``s_max``.

    Working relative to the largest standard deviation keeps the weights in
    ``(0, 1]`` for standard deviations anywhere in the floating-point range.
    """
    s = np.asarray(V.check_positive(s, "s"))
    s_max = float(np.max(s))
    with np.errstate(under="ignore"):
        # a weight below the normal range (a std 1e154 times below the largest)
        # is rounded up to it: the law is then stochastically (negligibly) larger
        w = np.maximum((s.ravel() / s_max) ** 2, np.finfo(np.float64).tiny)
    return GeneralizedChiSquare(w), s_max


def noise_norm_quantile(noise_std: Any, beta: float) -> float:
    r"""Exact ``(1 - beta)`` quantile of the L2 norm of the noise.

    ``||e||^2 = sum_j noise_std_j^2 Z_j^2`` is a generalized chi-square with
    weights ``noise_std_j^2`` (:prf:ref:`accuracy-thm-noise`), so the
    quantile is ``sqrt(isf(beta))`` of
    :class:`~dpsum.distributions.GeneralizedChiSquare` (relative accuracy about 1e-15).

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
    b = float(V.check_probability(beta, "beta", scalar=True))
    law, s_max = norm_noise_law(s)
    return V.representable(s_max * math.sqrt(float(law.isf(b))), "noise_std",
                           "the quantile of the noise norm",
                           "noise_std times the quantile at beta exceeds 1.8e308")


def two_sided_z(beta: float) -> float:
    """``z`` with ``Pr[|Z| > z] = beta`` for a standard normal ``Z``."""
    return z_from_log(math.log(V.check_probability(beta, "beta", scalar=True)))


def z_from_log(log_beta: float) -> float:
    """:func:`two_sided_z` from ``log beta``: finite for every positive
    float ``beta``, subnormal ones included (``beta / 2`` would underflow)."""
    return float(-special.ndtri_exp(log_beta - math.log(2.0)))


def noise_coordinate_quantile(noise_std: ArrayLike, beta: float) -> float | np.ndarray:
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
    z = two_sided_z(float(V.check_probability(beta, "beta", scalar=True)))
    with np.errstate(over="ignore"):
        q = float(s * z) if np.ndim(s) == 0 else np.asarray(s) * z
    return V.representable(q, "noise_std", "the quantile of the noise",
                           "noise_std times the normal quantile at beta exceeds 1.8e308")


def _percent(level: float) -> str:
    return f"{100 * level:.4g}%"


def short_array(values: Any, k: int = 3, digits: int = 4) -> str:
    """The first ``k`` values of an array, rounded, for a short repr."""
    arr = np.ravel(np.asarray(values, dtype=float))
    head = ", ".join(f"{v:.{digits}g}" for v in arr[:k])
    return f"[{head}{', ...' if arr.size > k else ''}]"


class Intervals(tuple):
    """Per-coordinate confidence intervals: a pair ``(lower, upper)`` that
    also says what it covers.

    It unpacks as ``lo, hi = intervals``. ``target`` names the quantity the
    intervals cover (for example "the mean of the clipped rows" or "the data
    mean"), ``level`` is ``1 - beta``, ``simultaneous`` whether all
    coordinates cover at once, and ``assumption`` what the statement rests on
    beyond the mechanism's own noise ("" when nothing: exact for every dataset).
    """

    target: str
    level: float
    simultaneous: bool
    assumption: str
    columns: tuple | None

    def __new__(cls, lower: np.ndarray, upper: np.ndarray, *, target: str, level: float,
                simultaneous: bool = False, assumption: str = "",
                columns: tuple | None = None) -> Intervals:
        lo = V.record_array(lower, "lower", finite=False, optional=False)
        hi = V.record_array(upper, "upper", finite=False, optional=False)
        assert lo is not None and hi is not None
        if lo.shape != hi.shape:
            raise ValueError(f"lower and upper must have the same shape, got {lo.shape} and "
                             f"{hi.shape}")
        if not np.all(lo <= hi):
            raise ValueError("lower must be <= upper in every coordinate")
        self = super().__new__(cls, (lo, hi))
        if not isinstance(target, str) or not isinstance(assumption, str):
            raise TypeError("target and assumption must be str")
        self.target = target
        self.level = float(V.record_scalar(level, "level", low=0.0, high=1.0, closed_low=False))
        self.simultaneous = V.check_bool(simultaneous, "simultaneous")
        self.assumption = assumption
        self.columns = V.record_choice_tuple(columns, "columns", object, optional=True)
        return self

    def __reduce__(self) -> tuple:
        # pickle and deepcopy go through the constructor: read-only copies again
        return (_make_intervals, (self[0], self[1], {
            "target": self.target, "level": self.level, "simultaneous": self.simultaneous,
            "assumption": self.assumption, "columns": self.columns}))

    @property
    def lower(self) -> np.ndarray:
        """The lower ends."""
        return np.asarray(self[0])

    @property
    def upper(self) -> np.ndarray:
        """The upper ends."""
        return np.asarray(self[1])

    @property
    def half_width(self) -> np.ndarray:
        """Half the width of each interval."""
        return (self.upper - self.lower) / 2.0

    def covers(self, value: Any) -> np.ndarray:
        """Which coordinates of ``value`` lie in their interval (booleans)."""
        v = np.asarray(value, dtype=float)
        return (self.lower <= v) & (v <= self.upper)

    def __repr__(self) -> str:
        kind = "simultaneous" if self.simultaneous else "per coordinate"
        n = int(np.size(self[0]))
        first = f"[{float(np.ravel(self[0])[0]):.4g}, {float(np.ravel(self[1])[0]):.4g}]" if n else "[]"
        text = (f"Intervals({_percent(self.level)} {kind} for {self.target}; {n} coordinates; "
                f"first {first}")
        if self.assumption:
            text += f"; assuming {self.assumption}"
        return text + ")"


def _make_intervals(lower: np.ndarray, upper: np.ndarray, kw: dict) -> Intervals:
    return Intervals(lower, upper, **kw)


@dataclass(frozen=True)
class ConfidenceBall(V.Record):
    """A confidence ball ``{y : ||y - center|| <= radius}`` of level ``1 - beta``.

    ``radius`` is a function of public quantities only; ``center`` is the
    private estimate; ``target`` names the quantity the ball covers.
    """

    center: np.ndarray
    radius: float
    beta: float
    target: str = "the protected statistic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", V.record_array(self.center, "center",
                                                          optional=False))
        object.__setattr__(self, "radius", V.record_scalar(self.radius, "radius", low=0.0))
        object.__setattr__(self, "beta", V.check_probability(self.beta, "beta", scalar=True))
        if not isinstance(self.target, str):
            raise TypeError(f"target must be a str, got {V.describe(self.target)}")

    def __repr__(self) -> str:
        return (f"ConfidenceBall({_percent(1 - self.beta)} for {self.target}: radius {self.radius:.4g} "
                f"around {short_array(self.center)})")

    def contains(self, point: Any) -> bool:
        """Whether ``point`` lies in the ball."""
        p = np.asarray(point, dtype=float)
        if p.shape != np.shape(self.center):
            raise ValueError(f"point must have shape {np.shape(self.center)}, got {p.shape}")
        return bool(np.linalg.norm((p - self.center).ravel()) <= self.radius)
