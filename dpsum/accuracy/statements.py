"""Total-error statements and planning: noise plus clipping loss, with the
probability they hold (the chapter :ref:`Accuracy you can publish <accuracy>`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from dpsum import _validation as V
from dpsum._lazy import interpolate, optimize
from dpsum.design.clip_radius import clip_radius
from dpsum.design.clipping_loss import clipping_loss_moment
from dpsum.design.gaussian_data import gaussian_data_setup
from dpsum.design.scaling import resolve_scaling
from dpsum.distributions.gchisq import GeneralizedChiSquare
from dpsum.privacy.neighbouring import Neighbouring
from dpsum.release.records import Mechanism, Release, require_gaussian_noise

__all__ = [
    "ErrorBound",
    "release_error_bound",
    "gaussian_data_error_bound",
    "plan_n",
    "plan_epsilon",
    "plan_d",
]


#: The subset that clips rows to a ball of radius ``clip_norm`` in the scaled space.
_CLIPPED_MECHANISMS = frozenset({Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN})




def _check_statistic(statistic: str) -> str:
    return V.check_choice(statistic, "statistic", ("sum", "mean"))


@dataclass(frozen=True)
class ErrorBound(V.Record):
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
    with weights ``shape^2``. The Gaussian-data mechanism's noise has the shape ``b_min / b``
    whatever ``n`` and ``epsilon`` are, so a planner builds this once.
    """

    def __init__(self, shape: np.ndarray, beta: float):
        with np.errstate(under="ignore"):
            weights = shape.ravel() ** 2
        if not np.all(weights >= np.finfo(np.float64).tiny):
            raise ValueError("stds (or the release's noise_std): out of the representable "
                             "range, the squared ratios of the smallest to the largest noise "
                             "level are not normal floats (the noise levels must lie within a "
                             "factor 1.5e154 of each other)")
        self.law = GeneralizedChiSquare(weights)
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
        tiny = float(np.finfo(np.float64).tiny)
        if not (beta * share >= tiny and beta * (1.0 - share) >= tiny):
            raise ValueError("beta and bias_share: the parts beta * bias_share and "
                             "beta * (1 - bias_share) must be normal floats (at least "
                             "2.2e-308); choose a bias_share further from 0 and 1")
        r_noise = s_max * self.unit_radius(beta * (1.0 - share))
        with np.errstate(over="ignore"):
            r_bias = float(np.sqrt(np.float64(loss_moment) / (beta * share)))
        V.representable(r_noise + r_bias, "stds, n and beta", "the error bound",
                        "the bound must stay below 1.8e308")
        return ErrorBound(r_noise + r_bias, beta, beta * (1.0 - share), beta * share,
                          r_noise, r_bias, float(loss_moment))


def _split_bound(noise_std: np.ndarray, loss_moment: float, beta: float,
                 bias_share: float | None) -> ErrorBound:
    """The bound of :class:`_NoiseRadius` for one noise vector."""
    s_max = float(np.max(noise_std))
    return _NoiseRadius(noise_std / s_max, beta).bound(s_max, loss_moment, bias_share)


def release_error_bound(release: Release, beta: float, *, stds: Any, n: int,
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
    >>> from dpsum.release import noise_norm_quantile
    >>> X = np.random.default_rng(0).normal(0.0, [1.0, 0.5], size=(1000, 2))
    >>> rel = dpsum.gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[1.0, 0.5], rng=0, center=0)
    >>> eb = release_error_bound(rel, 0.05, stds=[1.0, 0.5], n=1000)
    >>> eb.bound > noise_norm_quantile(rel.noise_std, 0.05), eb.noise_beta + eb.bias_beta
    (True, 0.05)
    """
    rel = require_gaussian_noise(release)
    if rel.mechanism not in _CLIPPED_MECHANISMS or rel.clip_norm is None or rel.scaling is None:
        raise ValueError("release must come from a clipping mechanism (the Gaussian-data mechanism or the "
                         "clipping baseline) to bound its error against the true sum")
    if rel.secure:
        raise ValueError("release took the grid path: its rows are rounded to the grid, an "
                         "error this bound does not include; use confidence_ball for the "
                         "error against the grid sum")
    b = float(V.check_failure_probability(beta))
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

    def __init__(self, stds: Any, *, epsilon: Any, delta: Any, beta: Any, center: Any, clip_probability: Any, scaling: Any,
                 neighbouring: Any, include_bias: Any, bias_share: Any, statistic: Any, n: Any=None) -> None:
        self.sigma = V.check_vector(stds, "stds", positive=True)
        self.epsilon = None if epsilon is None else V.check_epsilon(epsilon, scalar=True)
        self.delta = V.check_delta(delta, scalar=True)
        self.beta = float(V.check_failure_probability(beta))
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

    def bound(self, *, n: Any=None, epsilon: Any=None, d: Any=None) -> ErrorBound:
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
                # the planners search over many set-ups: the cheaper upper bound
                # (conservative: a planned error is never below the exact one)
                self._moment[key] = n * clipping_loss_moment(sigma, b, C, levels=8)
            moment = self._moment[key]
        else:
            moment = 0.0
        eb = self._radius[d].bound(float(np.max(noise_std)), moment, self.bias_share)
        if self.statistic == "mean":
            eb = ErrorBound(eb.bound / n, eb.beta, eb.noise_beta, eb.bias_beta,
                            eb.noise_radius / n, eb.bias_radius / n, eb.loss_moment / n**2,
                            "mean")
        return eb


def gaussian_data_error_bound(stds: Any, n: int, *, epsilon: float, delta: float, beta: float,
                              center: Any=None, clip_probability: float | None = None,
                              scaling: Any="scaled", neighbouring: Neighbouring | str = "replace",
                              include_bias: bool = True, bias_share: float | None = None,
                              statistic: str = "sum") -> ErrorBound:
    r"""The ``(1 - beta)`` error bound of the Gaussian-data mechanism before any data is touched.

    Runs the Gaussian-data mechanism's setup on the public inputs (the same ``b``, ``C`` and
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
    scaling : {"scaled", "isotropic"} or array_like
        The scaling of :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`,
        the isotropic clipping baseline, or any positive vector.
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


def _check_target(target: Any) -> float:
    return float(V.check_positive(target, "target", scalar=True))


def _check_share(share: Any) -> float:
    return float(V.check_probability(share, "bias_share", scalar=True))


def plan_n(target: float, *, stds: Any, epsilon: float, delta: float, beta: float,
           center: Any=None, clip_probability: float | None = None, scaling: Any="scaled",
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


def _solve_decreasing(f: Any, t: float, lo: int, hi_max: int) -> int:
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


def plan_epsilon(target: float, *, stds: Any, n: int, delta: float, beta: float,
                 center: Any=None, clip_probability: float | None = None, scaling: Any="scaled",
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


def plan_d(target: float, *, stds: Any, n: int, epsilon: float, delta: float, beta: float,
           center: Any=None, clip_probability: float | None = None, scaling: Any="scaled",
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
