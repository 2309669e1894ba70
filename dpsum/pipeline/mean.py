"""The private pipeline: the Gaussian-data mechanism when the data model is unknown.

:func:`dpsum.mechanisms.gaussian_data_mechanism` needs a public center and
public per-coordinate scales. :func:`private_mean` and :func:`private_sum`
estimate them from the data, privately, and spend the rest of one privacy
budget on the scaled, clipped sum (the chapter
:ref:`When the data model is unknown <unknown-model>`, :prf:ref:`unknown-alg-pipeline`). Given only the data, the privacy parameters and a public box that
bounds every coordinate, they run these steps, each private:

0. (add-remove only) a Gaussian count ``ñ`` of the rows;
1. ``center`` — the coordinate-wise median on the ``asinh`` scale
   (:func:`dpsum.pipeline.private_center`);
2. ``radius`` — the median row norm ``R`` around the center
   (:func:`dpsum.pipeline.private_norm_quantile`): since
   ``|x_j - c_j| <= ||x - c||``, no coordinate's median absolute deviation
   exceeds it;
3. ``scales`` — the coordinate-wise median absolute deviation on the log
   scale, searched up to ``1.25 R`` (:func:`dpsum.pipeline.private_scales`);
4. the scaling ``b`` of :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`
   from the scales, regularised
   (:func:`robust_scaling`), a function of private outputs only;
5. ``clip`` — a quantile of the scaled rows' norms, at the median or, with
   many rows, at the higher *anchor level* :func:`anchor_level` (where the
   adaptive choice is isotropic clipping, the radius serves as the median
   and the step runs only when it is anchored, in the isotropic metric; the
   isotropic baseline keeps the median),
   extrapolated to the clip probability with the generalized chi-square
   model of the estimated scales (:func:`calibrated_clip_radius`);
5b. ``check`` (``scaling="adaptive"``, the default split) — the bias check
   (:func:`_bias_check`): a private, exactly summed bound on how far clipping
   at ``C`` moves the rows, and its veto (:func:`_veto`): the exact sum of
   the signed displacements capped at the clip region's longest semi-axis,
   which sees whether they cancel, decide, as post-processing, between the
   clipped sum and the box's Elliptical Gaussian mechanism (the book's
   appendix :ref:`the bias check <a3-bias-check>`);
6. ``mean`` — the Gaussian-data mechanism's clipped sum with Gaussian noise, calibrated to
   what is left of the budget.

With ``scaling="isotropic"`` steps 2-4 are skipped: isotropic clipping with a
private radius, the baseline of the chapter.

One path for the data. ``X`` enters once, at the boundary
(:func:`dpsum.data.as_data`: numpy, pandas or dask), and every step that reads
it is a pass (:mod:`dpsum.pipeline.passes`): a frozen plan whose ``update``
maps a block of rows to a partial state and whose ``merge`` is exact
(integer sums, or per-row values that the step sorts), applied by one runner
(:func:`dpsum.engines.dask.run_pass`) in memory or on a dask cluster; each
step's noise is drawn after its pass, from the same ``rng`` in the same
order on both engines. The last step, the box fallback and the whole-vector
center's moves are the same release as every vector mechanism's: an
accumulator's ``update`` (folded over the blocks by the runner,
:class:`~dpsum.pipeline.passes.Fold`) and ``release``
(:func:`dpsum.release.accumulator.deviation_accumulator`: the exact clipped
sum of the deviations from the centre, calibrated by a zCDP noise
multiplier); the last step's accumulator also counts the diagnostics'
clipped rows and rows outside the box.

Accounting. Every step is zero-concentrated DP: an exponential-mechanism
quantile with parameter ``epsilon`` is ``epsilon^2/8``-zCDP (it is
bounded-range), a Gaussian release with multiplier ``s`` is
``1/(2 s^2)``-zCDP, and rhos add (Bun and Steinke 2016). The budget is a
total ``rho``, or an ``(epsilon, delta)`` turned into the largest ``rho``
whose conversion (Canonne, Kamath and Steinke 2020) gives it (under a one-off
``(epsilon, delta)`` two box paths are calibrated in that currency instead:
the box known from public ``n`` exactly, and the box chosen by the first
count alone by a bound over all paths, the book's appendix
:ref:`the bias check <a3-bias-check>`). The split of
``rho`` over the steps (:func:`default_budget`) gives the per-coordinate
quantile steps just enough to be reliable, capped, and the rest to the mean.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from functools import lru_cache
from typing import Any, Mapping, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from dpsum import _validation as V
from dpsum._units import UnitRows, unit_rows
from dpsum.design.scaling import Scaling, elliptical_scaling, gaussian_data_scaling
from dpsum.distributions.discrete import discrete_gaussian
from dpsum.distributions.gchisq import GeneralizedChiSquare
from dpsum.data import Dataset, RowCount, RowValues, as_data
from dpsum.engines.dask import run_pass
from dpsum.pipeline.adaptive import (
    MAX_PREPARATION_SHARE,
    VECTOR_CLIP_PROBABILITY,
    VECTOR_MAX_STEPS,
    VECTOR_POLISH,
    VECTOR_POLISH_SHARE,
    VECTOR_STEPS,
    VECTOR_STOP,
    break_even_radius,
    center_mode,
    decision_share,
    heterogeneity,
    log_scale_noise_variance,
    prefer_scaled,
    reliable_share,
    shrink_log_scales,
    vector_center_shares,
)
from dpsum.pipeline.passes import (CheckAndVeto, Displacement, Fold, NearCount,
                                   SignedDisplacement)
from dpsum.pipeline.quantiles import (
    ASINH_RESOLUTION,
    MAD_TO_STD,
    center_from_values,
    center_values,
    check_domain,
    l1_values,
    log_quantile_from_values,
    norm_values,
    quantile_sensitivity,
    scales_from_values,
    scales_values,
)
from dpsum.privacy.calibration import analytic_sigma
from dpsum.privacy.composition import (
    ComposedGuarantee,
    PrivacyStep,
    bounded_range_step,
    branch_delta,
    branch_gaussian_mu,
    compose,
    compose_gaussian_multipliers,
    gaussian_step,
    zcdp_gaussian_multiplier,
    zcdp_rho,
)
from dpsum.privacy.neighbouring import Neighbouring, clipped_sum_sensitivity
from dpsum.session import ONE_OFF, ZCDPEvent, as_session
from dpsum.session import charge as charge_session
from dpsum.release.accumulator import Accumulator, deviation_accumulator
from dpsum.release.records import (
    DIAGNOSTICS_SHARE,
    BudgetSplit,
    Calibration,
    Mechanism,
    PipelineRelease,
    PublicInputWarning,
    Release,
    clipping_excess,
    clipping_message,
)

__all__ = [
    "CENTER_MARGIN",
    "SCALE_MARGIN",
    "SCALAR_MARGIN",
    "MAX_COORDINATE_SHARE",
    "SCALAR_SHARE",
    "REGULARIZATION",
    "RADIUS_MARGIN",
    "default_clip_probability",
    "default_budget",
    "robust_scaling",
    "calibrated_clip_radius",
    "private_mean",
    "private_sum",
]


#: Reliability margin of the center step: the per-coordinate parameter is
#: ``epsilon = 4 Delta_u CENTER_MARGIN / n``, so that the exponential weight of
#: an output half the data away from the median is ``exp(-CENTER_MARGIN)``.
#: A center that escapes into an empty stretch of the box makes the
#: deviations of its coordinate a narrow cluster far from 0, so that the scale
#: step lands below them too, and the release is private but useless; with a
#: margin of 20 that happened in one run of 20 in two of PLAN's settings
#: (n = 10^4, d = 512 and 1024). 30 makes it about e^-10 times rarer, for
#: at most a few percent more noise where the share is not capped.
CENTER_MARGIN = 30.0


#: The same margin for the scale step (the log scale has shorter empty tails).
SCALE_MARGIN = 12.0


#: The margin of a scalar quantile (radius, spread, clip; the whole-vector
#: center's radii): one mechanism, not d, so a smaller margin than the
#: center's. It decides when the whole-vector center is possible at all
#: (:func:`dpsum.pipeline.adaptive.center_mode`). With n in the thousands
#: and rho >= 1/16 (PLAN's settings) the scalar share is the floor
#: ``SCALAR_SHARE`` either way.
SCALAR_MARGIN = 12.0


#: Largest share of the budget a per-coordinate step may take.
MAX_COORDINATE_SHARE = 0.15


#: Share of each scalar step (count, radius, clip).
SCALAR_SHARE = 0.01


#: ``lambda`` of :func:`robust_scaling`.
REGULARIZATION = 0.1
#: The largest ``regularization`` the pipeline takes: with ``lambda`` above it
#: every ``b_j`` is within ``1e-6`` relatively of the isotropic scaling.
MAX_REGULARIZATION = 1e6


#: The scale step searches median absolute deviations up to this multiple of
#: the private median norm.
RADIUS_MARGIN = 1.25


#: The bias check's share of ``rho`` (taken from the mean's) lies in this
#: range: inside it, the share that makes the check's noise (on the clipping
#: displacement of the mean) as large as the box mechanism's own error
#: (:func:`_check_share`).
CHECK_SHARE_RANGE = (0.02, 0.1)

#: The bias check's per-row terms are quantised to ``2^-CHECK_BITS`` of the
#: box diameter and summed exactly as integers.
CHECK_BITS = 20

#: The veto's share of ``rho``, taken from the mean's with the check's. It is
#: released in the check's pass on every clipping path: the veto reads it
#: when the check says box, and the second way to the box
#: (:func:`_signed_exceeds`) when it does not (:func:`_veto`).
VETO_SHARE = 0.02

#: The veto caps each row's signed displacement at this multiple of the
#: clip region's longest semi-axis ``C / min_j b_j`` (and at the box's
#: diameter) (:func:`_veto`).
VETO_CAP = 1.0

#: The veto's margin, in standard deviations of each noisy term it reads
#: (:func:`_vetoes`).
VETO_Z = 2.0

#: The clip step's anchor leaves this many times ``1/epsilon`` rows above
#: its level (:func:`anchor_level`, ``epsilon`` the step's exponential-
#: mechanism parameter): far more than the quantile's rank error, so the
#: private quantile stays inside the data, and ``O(1/(epsilon n))`` of
#: them, so the rows clipped, and the clipping bias, fall like ``1/n``
#: whatever the tails (the appendix's
#: :prf:ref:`pipeline-design-prop-anchor`). Measured on the realistic
#: tables, 60 is near the best: 40 loses on the Student-t tables (the
#: quantile's noise), 150 on the lognormal and customer tables (a lower
#: radius, more rows clipped).
ANCHOR_RANKS = 60.0

#: The anchor replaces the median only from this level up
#: (:func:`anchor_level`). Lower, on symmetric heavy tails (whose clipping
#: bias cancels) it raises the radius, and the noise, more than it removes
#: bias: at level 0.85 it cost 5-10 % on Student-t rows with 3 degrees of
#: freedom at 2,000 rows and with 2.5 at 10,000.
ANCHOR_MIN_LEVEL = 0.95


# density of log|Z| at its median log(Phi^{-1}(3/4)), Z standard normal:
# 2 m phi(m) with m = Phi^{-1}(3/4)
_LOG_MAD_DENSITY = float(2.0 / MAD_TO_STD * math.exp(-0.5 / MAD_TO_STD ** 2) / math.sqrt(2 * math.pi))


# ---------------------------------------------------------------------------
# public rules (pure functions of public quantities)
# ---------------------------------------------------------------------------
def default_clip_probability(n: float) -> float:
    """The default clip probability ``p_C = 1/n`` (at most 1/2; ``n`` may be a private count).

    Chosen by measurement (the chapter :ref:`When the data model is unknown <unknown-model>`): on
    Gaussian data a larger ``p_C`` (up to 1/2) lowers the error by a few
    percent, but on skewed data every clipped row is pulled towards the
    center, a median, and ``p_C = 1/sqrt(n)`` already costs a third more
    error on log-normal data. Pass ``clip_probability=0.5`` for data known to
    be symmetric.
    """
    nn = V.check_positive(n, "n", scalar=True)
    return float(min(0.5, 1.0 / max(nn, 1.0)))


def anchor_level(n: float, epsilon: float) -> float:
    """The clip step's quantile level: ``L = 1 - ANCHOR_RANKS / (epsilon n)``
    when that is at least ``ANCHOR_MIN_LEVEL``, else the median, 1/2.

    With few rows it is the median (reliable for a small budget, the book's
    :ref:`clip radius <unknown-clip-radius>`); with many, ``n (1 - L) = ANCHOR_RANKS /
    epsilon`` rows lie above it, so that the radius grows with ``n`` on
    heavy tails instead of following the Gaussian model's, and the rows
    clipped are ``O(1/(epsilon n))`` of the data
    (:prf:ref:`pipeline-design-prop-anchor`). ``n`` may be a private count
    and ``epsilon`` is a function of the public split: post-processing.

    Examples
    --------
    >>> anchor_level(10**4, 0.05), round(anchor_level(10**6, 0.05), 6)
    (0.5, 0.9988)
    """
    if not (epsilon > 0 and n > 0):
        return 0.5
    level = 1.0 - ANCHOR_RANKS / (epsilon * n)
    return level if level >= ANCHOR_MIN_LEVEL else 0.5


def default_budget(n: float, d: int, rho: float, *, neighbouring: Neighbouring | str = "replace",
                   scaling: str = "scaled") -> BudgetSplit:
    """The documented default split of a zCDP budget ``rho`` over the steps.

    *Reliable*: a per-coordinate quantile step gets at least the parameter
    ``epsilon = 4 Delta_u margin / n`` (``margin`` = ``CENTER_MARGIN`` or
    ``SCALE_MARGIN``, ``Delta_u`` from
    :func:`dpsum.pipeline.quantile_sensitivity`), i.e. the share
    ``d epsilon^2 / (8 rho)``: the exponential weight of an output half the
    data away from the median is then ``exp(-margin)``.
    *Accurate*: the scale step gets at least ``(Delta_u / f) sqrt(d / rho) / n``
    (``f`` the density of ``log|Z|`` at its median), the share that minimises
    the squared log-error of the scales plus the share itself.
    A scalar quantile (radius, spread, clip) gets the reliable share of one
    coordinate with the margin ``SCALAR_MARGIN``, at least
    ``SCALAR_SHARE``; the count (add-remove) gets
    ``SCALAR_SHARE``. All are capped at ``MAX_COORDINATE_SHARE``;
    the mean gets the rest.

    With ``scaling="adaptive"`` the center's reliable share decides the
    center's estimator (``dpsum.pipeline.adaptive.center_mode``): when it
    does not fit under the cap, the center is estimated for the whole vector
    at once, in ``VECTOR_STEPS`` clipped-mean
    moves (more, up to ``VECTOR_MAX_STEPS``, while it still converges, their
    shares taken from the mean), each with a radius quantile (scalar share)
    and a Gaussian move
    (``dpsum.pipeline.adaptive.vector_center_shares``), after a Gaussian
    count that decides between clipping and the box
    (``dpsum.pipeline.adaptive.decision_share``), and ``center`` is their
    total; when not even a scalar quantile's reliable share fits, the box is
    the model and the mean gets everything but the count. The steps before
    the mean are then scaled down, if needed, to ``MAX_PREPARATION_SHARE``.
    ``spread`` (the median L1 norm) runs only with ``"adaptive"``.
    ``n`` may be the private count (post-processing).

    Examples
    --------
    >>> b = default_budget(10_000, 512, 0.125)
    >>> round(b.center, 4), round(b.scales, 4), round(b.mean, 4)
    (0.0737, 0.0149, 0.8913)
    """
    nn = V.check_positive(n, "n", scalar=True)
    dd = V.check_integer(d, "d")
    total = V.check_positive(rho, "rho", scalar=True)
    relation = Neighbouring.parse(neighbouring)
    scaling = Scaling.parse(scaling, "scaling")
    return _default_split(float(nn), int(dd), float(total), relation, scaling).split


class _Plan(NamedTuple):
    """The default split with its center mode and, in the whole-vector mode,
    the share of the box-or-clip decision (part of ``center``) and the
    largest number of moves."""

    split: BudgetSplit
    mode: str
    decision: float = 0.0
    moves: int = 0


def _default_split(nn: float, dd: int, total: float, relation: Neighbouring, scaling: Scaling
                   ) -> _Plan:
    """:func:`default_budget` (validated inputs) with its center mode."""
    du = quantile_sensitivity(0.5, relation)

    def reliable(margin: float) -> float:
        return reliable_share(margin, nn, dd, total, du)

    # a scalar quantile (radius, clip) is one mechanism: d = 1 in the same rule
    scalar = min(max(SCALAR_SHARE, reliable(SCALAR_MARGIN) / dd), MAX_COORDINATE_SHARE)
    count = SCALAR_SHARE if relation is Neighbouring.ADD_REMOVE else 0.0
    mode = _center_mode(nn, dd, total, du, scaling)
    decision = 0.0
    box = _Plan(BudgetSplit(count, 0.0, 0.0, 0.0, 0.0, 1.0 - count, 0.0), "box")
    if mode == "box":
        return box
    moves = 0
    if mode == "coordinate":
        center = min(reliable(CENTER_MARGIN), MAX_COORDINATE_SHARE)
    else:
        move = vector_center_shares(nn, dd, total, relation, scalar, MAX_COORDINATE_SHARE)
        decision = decision_share(nn, total, MAX_COORDINATE_SHARE)
        moves = VECTOR_STEPS
        center = decision + moves * (scalar + move)
    radius = scales = spread = 0.0
    if scaling is not Scaling.ISOTROPIC:
        # the share that minimises (log-scale error)^2 + share, the first-order
        # loss of a scale step (the chapter "When the data model is unknown")
        accurate = du / _LOG_MAD_DENSITY * math.sqrt(dd / total) / max(nn, 1.0)
        radius = scalar
        scales = min(max(reliable(SCALE_MARGIN), accurate), MAX_COORDINATE_SHARE)
    if scaling is Scaling.ADAPTIVE:
        spread = scalar
    clip = scalar
    prep = count + center + radius + spread + scales + clip
    if mode == "vector" and prep > MAX_PREPARATION_SHARE:
        # too few rows to pay for the choice of scaled clipping as well:
        # the whole-vector center clips isotropically (no spread, scales,
        # clip), with fewer moves if they do not fit either
        spread = scales = clip = 0.0
        while moves > 1 and count + center + radius > MAX_PREPARATION_SHARE:
            moves -= 1
            center = decision + moves * (scalar + move)
        prep = count + center + radius
    if scaling is Scaling.ADAPTIVE and prep > MAX_PREPARATION_SHARE:
        # the count ran before the split was made: it keeps its share
        f = (MAX_PREPARATION_SHARE - count) / (prep - count)
        if mode == "vector" and f * radius < min(reliable(SCALAR_MARGIN) / dd,
                                                 MAX_COORDINATE_SHARE):
            # scaled down, the radii would no longer be reliable: the box
            return box
        center, radius, spread, scales, clip, decision = (
            f * center, f * radius, f * spread, f * scales, f * clip, f * decision)
        prep = MAX_PREPARATION_SHARE
    mean = 1.0 - prep
    return _Plan(BudgetSplit(count, center, radius, scales, clip, mean, spread), mode, decision,
                 moves)


def _center_mode(n: float, d: int, rho: float, du: float, scaling: Scaling) -> str:
    if scaling is not Scaling.ADAPTIVE:
        return "coordinate"
    return center_mode(n, d, rho, du, CENTER_MARGIN, MAX_COORDINATE_SHARE, SCALAR_MARGIN)


def _user_budget(budget: Mapping, relation: Neighbouring, scaling: Scaling) -> BudgetSplit:
    """Validate a user's shares: every running step but the mean, sum < 1."""
    if not isinstance(budget, Mapping):
        raise TypeError("budget must be a mapping from step names to shares, or None")
    needed = {"center", "clip"}
    if relation is Neighbouring.ADD_REMOVE:
        needed.add("count")
    if scaling is not Scaling.ISOTROPIC:
        needed |= {"radius", "scales"}
    if scaling is Scaling.ADAPTIVE:
        needed.add("spread")
    keys = set(budget)
    if keys != needed:
        raise ValueError(f"budget must give a share for exactly the steps {sorted(needed)} "
                         f"(the mean gets the rest), got {sorted(map(str, keys))}")
    shares = {}
    for key in sorted(needed):
        val = V.check_open_interval(budget[key], f"budget[{key!r}]", 0.0, 1.0, scalar=True)
        shares[key] = float(val)
    mean = 1.0 - sum(shares.values())
    if not mean > 0:
        raise ValueError("budget shares must sum to less than 1, leaving a share for the mean")
    return BudgetSplit(shares.get("count", 0.0), shares["center"], shares.get("radius", 0.0),
                       shares.get("scales", 0.0), shares["clip"], mean,
                       shares.get("spread", 0.0))


def robust_scaling(scales: ArrayLike, regularization: float = REGULARIZATION) -> np.ndarray:
    """The scaling lemma's scaling of regularised scales: ``b = gaussian_data_scaling(s + lambda mean(s))``.

    ``b_j`` is proportional to ``(s_j + lambda mean(s))^(-1/2)``. A scale
    estimated far too small would otherwise give its coordinate a huge weight
    in every row norm, so that the clip radius cuts every record; the floor
    ``lambda mean(s)`` bounds that weight by ``1/(lambda mean(s))``, at the
    price of a slightly flatter ``b`` when the scales are right.

    Parameters
    ----------
    scales : array_like, shape (d,)
        Positive (private) scales.
    regularization : float
        ``lambda >= 0``.

    Examples
    --------
    >>> robust_scaling([1.0, 1.0, 4.0], 0.0).round(4).tolist()
    [0.4082, 0.4082, 0.2041]
    """
    s = V.check_vector(scales, "scales", positive=True)
    lam = V.check_positive(regularization, "regularization", allow_zero=True, scalar=True)
    with np.errstate(over="ignore"):
        mean = float(np.mean(s))
        if not math.isfinite(mean):      # the mean without overflow
            top = float(np.max(s))
            mean = top * float(np.mean(s / top))
        regularised = s + lam * mean
    try:
        return gaussian_data_scaling(regularised)
    except ValueError:
        raise ValueError("scales (with regularization) is outside the representable range: "
                         "the scaling of s + lambda mean(s) is not a positive normal float "
                         "(the regularised scales must lie within about 1e-300 and 1e300)"
                         ) from None


def calibrated_clip_radius(norm_quantile: float, scales: ArrayLike, scaling: ArrayLike,
                           clip_probability: float, level: float = 0.5) -> float:
    """The clip radius from a private quantile of the norms and the estimated model.

    Under the model ``x ~ N(c, diag(s^2))`` the scaled squared norm
    ``||(x - c) ⊙ b||^2`` is generalized chi-square with weights ``(b_j s_j)^2``
    (:prf:ref:`gaussian-data-def-gchisq`). The returned radius is the private
    quantile of the norms at ``level`` times the model's ratio of the
    ``1 - p_C`` quantile to the one at ``level``:
    ``C = R_L sqrt(Q(1 - p_C) / Q(L))`` (the book's
    :ref:`clip radius <unknown-clip-radius>`). The quantile comes from the data, the
    shape of the tail beyond it from the model.

    Parameters
    ----------
    norm_quantile : float
        ``R_L > 0``, a private quantile of the scaled norms at ``level``.
    scales, scaling : array_like, shape (d,)
        The (private) scales ``s`` and the scaling ``b``, all > 0.
    clip_probability : float
        ``p_C`` in (0, 1).
    level : float, optional
        ``L`` in (0, 1), the quantile's level: the median by default, the
        pipeline's :func:`~dpsum.pipeline.mean.anchor_level` with many rows.

    Examples
    --------
    >>> round(calibrated_clip_radius(2.0, [1.0, 1.0], [1.0, 1.0], 0.5), 12)
    2.0
    >>> round(calibrated_clip_radius(2.0, [1.0], [1.0], 0.1, level=0.9), 12)
    2.0
    """
    r = V.check_positive(norm_quantile, "norm_quantile", scalar=True)
    s = V.check_vector(scales, "scales", positive=True)
    b = V.check_vector(scaling, "scaling", s.size, positive=True)
    p = V.check_probability(clip_probability, "clip_probability", scalar=True)
    lev = V.check_probability(level, "level", scalar=True)
    if p == 1.0 - lev:
        return float(r)
    with np.errstate(over="ignore", under="ignore"):
        bs = b * s
        top = float(np.max(bs))
        rel = bs / top
    if not (math.isfinite(top) and top > 0
            and float(np.min(rel)) ** 2 >= float(np.finfo(np.float64).tiny)):
        raise ValueError("scales and scaling: out of the representable range, the model's "
                         "weights (scales * scaling)^2 relative to the largest are not "
                         "normal floats; each product must be finite, positive and within a "
                         "factor 1.5e154 of the largest")
    radius = r * _quantile_ratio((rel ** 2).tobytes(), float(p), float(lev))
    return float(V.representable(radius, "norm_quantile", "the clip radius",
                                 "norm_quantile times the quantile ratio exceeds 1.8e308"))


def _clip_radius(norm_quantile: float, model: np.ndarray, b: np.ndarray, p: float,
                 level: float) -> float:
    """:func:`calibrated_clip_radius` of the pipeline's private model, without
    the coordinates whose weight ``(b_j s_j)^2`` is below the smallest normal
    float relative to the largest (on columns spanning hundreds of orders of
    magnitude): their share of the generalized chi-square is below 1e-308, so
    the radius is unchanged to within rounding, and no error depends on the
    private scales."""
    with np.errstate(over="ignore", under="ignore"):
        rel = model * b / float(np.max(model * b))
        keep = rel * rel >= float(np.finfo(np.float64).tiny)
    return calibrated_clip_radius(norm_quantile, model[keep], b[keep], p, level)


@lru_cache(maxsize=256)
def _quantile_ratio(weights_bytes: bytes, p: float, level: float) -> float:
    """``sqrt(Q(1 - p) / Q(level))`` of the generalized chi-square with these
    weights (cached: isotropic and one-dimensional models repeat)."""
    model = GeneralizedChiSquare(np.frombuffer(weights_bytes, dtype=np.float64))
    return math.sqrt(float(model.isf(p)) / float(model.isf(1.0 - level)))


# ---------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------
def _total_rho(epsilon: Any, delta: Any, rho: Any) -> tuple[float, float | None, float | None]:
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise TypeError("give the budget either as (epsilon, delta) or as rho, not both")
        return _rho_in_range(float(V.check_positive(rho, "rho", scalar=True)), "rho"), None, None
    if epsilon is None or delta is None:
        raise TypeError("give the budget as epsilon and delta, or as rho")
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    return _rho_in_range(_zcdp_rho(float(eps), float(dlt)), "epsilon (with delta)"), eps, dlt


#: Relative margin under the stated total budget: the steps are calibrated
#: to ``rho (1 - _SPEND_MARGIN)``. The float shares sum to 1 within a few
#: units in the last place and each multiplier ``1 / sqrt(2 share rho)`` or
#: parameter ``sqrt(8 share rho / k)`` is within a few more of its exact
#: value; ``2^-40`` (about ``9e-13``) covers all of them a thousand times,
#: so the exact zCDP spend of the steps that ran, on every path, is at most
#: the stated ``rho``.
_SPEND_MARGIN = 2.0 ** -40


#: The pipeline's total zCDP budget lies in [1e-250, 1e250]: it is split into
#: shares (some far below 1) whose noise multipliers 1 / sqrt(2 share rho)
#: must be positive normal floats.
_RHO_RANGE = (1e-250, 1e250)


def _rho_in_range(total: float, name: str) -> float:
    lo, hi = _RHO_RANGE
    if not lo <= total <= hi:
        raise ValueError(f"{name} gives a total zCDP budget rho = {total:.3g} outside "
                         f"[{lo:g}, {hi:g}], where the pipeline's shares of rho and their noise "
                         "multipliers stay normal floats")
    return total


# Both conversions are pure functions of public parameters; repeated releases
# (simulations, audits) reuse them.
@lru_cache(maxsize=256)
def _zcdp_rho(eps: float, dlt: float) -> float:
    return float(zcdp_rho(eps, dlt))


@lru_cache(maxsize=256)
def _compose(steps: tuple, dlt: float, method: str) -> ComposedGuarantee:
    return compose(steps, delta=dlt, method=method)


def _gaussian_noise(gen: np.random.Generator, std: Any, size: Any=None) -> Any:
    """Gaussian noise of standard deviation ``std`` (one place to draw it)."""
    return gen.normal(0.0, 1.0, size=size) * std


_FLOAT_MAX = V.FLOAT_MAX


#: The public worst case of the pipeline's clipped sums must stay below this
#: (about 7e305; a margin of 2^8 below the largest float covers the additions
#: that follow).
_WORST_LIMIT = 2.0 ** 1016


def _norm(v: np.ndarray) -> float:
    """``||v||_2`` without overflow or underflow of the squares (inf only when
    the norm itself is not a float)."""
    top = float(np.max(np.abs(v)))
    if top == 0.0:
        return 0.0
    with np.errstate(over="ignore"):
        return top * float(np.sqrt(np.sum((v / top) ** 2)))


def _l1(v: np.ndarray) -> float:
    """``||v||_1``, saturated at the largest float (an upper search bound)."""
    with np.errstate(over="ignore"):
        return min(float(np.sum(np.abs(v))), _FLOAT_MAX)


def _saturate(v: Any) -> Any:
    """Post-processing of released values: ``+-inf`` from an overflow of the
    last arithmetic becomes ``+-M`` (``M`` the largest float). A function of
    the released values only, the same whatever the data."""
    return np.clip(v, -_FLOAT_MAX, _FLOAT_MAX)


def _check_worst_case(lo: np.ndarray, hi: np.ndarray, n: int,
                      relation: Neighbouring) -> None:
    """Refuse, from public inputs only and before the data are read, a box whose
    worst-case clipped sums are not finite.

    Every private quantity of the pipeline is bounded by public ones: a
    radius or clip radius by ``2^6 ||hi - lo||`` in data units (the search's
    upper end times the largest quantile ratio, < 64 for ``p_C`` >= 5e-324)
    and by ``2^32 d max(w) / min(w)`` in the scaled units of the last step
    (every scale is at least ``w_j 2^-30``); a clipped sum by ``n`` times
    that (``n`` public under replace-one; under add-remove the sums are exact
    and saturate, and the centre's moves are clamped to the box). When that
    bound is below ``2^1016`` no clipped sum overflows, whatever the data;
    otherwise the box is refused here, naming ``lower`` and ``upper``. The
    noise is bounded by the public check on ``width sqrt(d / rho)`` before
    this one; adding it, and the post-processing after it, saturate at the
    largest float (:func:`_saturate`: rounding then clamping is a monotone
    rounding of the exact noisy value, a function of it alone).
    """
    w = hi - lo
    with np.errstate(over="ignore"):
        data_units = 2.0 ** 6 * _norm(w)
        scaled = 2.0 ** 32 * w.size * (float(np.max(w)) / float(np.min(w)))
        rows = float(max(n, 1)) if relation is Neighbouring.REPLACE else 1.0
        worst = max(data_units, scaled) * rows
    if not worst < _WORST_LIMIT:
        raise ValueError(
            "lower and upper are outside the representable range for this number of rows: "
            "the worst-case clipped sum, about n * 64 ||upper - lower|| (and, in the scaled "
            "units, n * 2^32 d max(width) / min(width)), must stay below 2^1016 (about "
            "7e305); rescale the data and the box, or use widths of similar magnitude")


def _box_wins(near_noisy: float, n_eff: float) -> bool:
    """The whole-vector center's decision, post-processing of the noisy count
    of rows within the break-even distance: the box unless more than half
    the rows are within it."""
    return near_noisy <= 0.5 * n_eff


def _exp_epsilon(rho_step: float, count: int) -> float:
    """Per-mechanism parameter of ``count`` exponential mechanisms spending ``rho_step``."""
    return math.sqrt(8.0 * rho_step / count)


class _Args(NamedTuple):
    """The public arguments of :func:`_run`, validated (before ``X``)."""

    stated: float
    total: float
    eps: float | None
    dlt: float | None
    relation: Neighbouring
    rule: Scaling
    lam: float
    p_given: float | None
    secure: bool
    diagnostics: bool
    split: BudgetSplit | None        # the user's shares, or None for the default


def _arguments(epsilon: Any, delta: Any, rho: Any, neighbouring: Any, budget: Any,
               scaling: Any, clip_probability: Any, regularization: Any, secure: Any,
               diagnostics: Any) -> _Args:
    stated, eps, dlt = _total_rho(epsilon, delta, rho)
    # every step is calibrated to its share of a budget a hair below the
    # stated one, so that the rounding of the shares, the multipliers and the
    # parameters never makes the exact total exceed it (``_SPEND_MARGIN``)
    total = stated * (1.0 - _SPEND_MARGIN)
    relation = Neighbouring.parse(neighbouring)
    rule = Scaling.parse(scaling, "scaling")
    lam = V.check_positive(regularization, "regularization", allow_zero=True, scalar=True)
    if lam > MAX_REGULARIZATION:
        raise ValueError(f"regularization must be at most {MAX_REGULARIZATION:g}: beyond it "
                         "the scaling is isotropic to within 1e-6; pass scaling='isotropic'")
    p_given = None if clip_probability is None else V.check_probability(
        clip_probability, "clip_probability", scalar=True)
    secure_ = V.check_bool(secure, "secure")
    diag_ = V.check_bool(diagnostics, "diagnostics")
    split = None if budget is None else \
        _with_diagnostics(_user_budget(budget, relation, rule), diag_)
    return _Args(stated, total, eps, dlt, relation, rule, float(lam),
                 None if p_given is None else float(p_given), secure_, diag_, split)


class _Counts(NamedTuple):
    """The last step's counts of rows clipped and outside the box (**not private**:
    only :meth:`_Context.diagnose` reads them, to release noisy counts)."""

    clipped: int
    outside: int


class _Context:
    """One run of the pipeline: the data, the box, the options, the rngs, and
    what the steps released so far (the steps' privacy, the count, the split,
    the warnings). Every read of the data is a pass (:meth:`run`)."""

    def __init__(self, a: _Args, data: Dataset, lo: np.ndarray, hi: np.ndarray, rng: Any,
                 statistic: str) -> None:
        self.a, self.data, self.lo, self.hi, self.statistic = a, data, lo, hi, statistic
        self.relation, self.total, self.secure = a.relation, a.total, a.secure
        self.diagnostics, self.columns = a.diagnostics, data.columns
        self.who = f"private_{statistic}"
        if a.secure:
            self.secure_gen = V.check_secure_rng(rng)
            # the preparation steps keep NumPy's floating-point samplers (see the Notes)
            self.gen = self.secure_gen if self.secure_gen is not None else \
                np.random.default_rng()
        else:
            self.gen = V.check_rng(rng)
            self.secure_gen = self.gen
        self.du = quantile_sensitivity(0.5, a.relation)
        self.notes: list[str] = []
        self.steps: list[PrivacyStep] = []
        self.accounting = ONE_OFF        # or the session's ledger entry
        self.count, self.n_eff, self.s_count = 0.0, 1.0, 0.0
        self.split = a.split if a.split is not None else BudgetSplit(0, 0, 0, 0, 0, 1.0)
        self.p = 0.5
        self.min_scale = (hi - lo) * ASINH_RESOLUTION
        self.mid = lo + 0.5 * (hi - lo)
        self.objective: str | np.ndarray = "total"      # set by _run
        self.exact = False                              # see _calibrate_exactly
        self.branch: tuple[int, float] | None = None    # see _calibrate_after_decision
        self.unit: str | None = None                    # the privacy unit, set by _run

    def warn(self, msg: str, stacklevel: int = 4) -> None:
        warnings.warn(msg, PublicInputWarning, stacklevel=stacklevel)
        self.notes.append(msg)

    def run(self, plan: Any) -> Any:
        """A pass over the data (:func:`dpsum.engines.dask.run_pass`)."""
        return run_pass(plan, self.data)

    def noise(self, std: Any, size: Any = None) -> Any:
        return _gaussian_noise(self.gen, std, size)

    def quantile(self, values: Any, args: tuple, share: float, name: str, lo: float,
                 hi: float, level: float = 0.5) -> float:
        """A scalar exponential-mechanism quantile (radius, spread, clip) of
        per-row log values at ``level``, spending ``share`` of ``rho``."""
        e = _exp_epsilon(share * self.total, 1)
        self.steps.append(bounded_range_step(name, e))
        t = self.run(RowValues(values, args))
        du = quantile_sensitivity(level, self.relation)
        return log_quantile_from_values(t, level, e, lo, hi, du, self.gen)

    def clip_quantile(self, args: tuple, share: float, lo: float, hi: float
                      ) -> tuple[float, float]:
        """Step 5 of scaled clipping, the clip step: the private quantile of
        the norms of ``(x - c) ⊙ b`` (``args = (c, b)``) at the
        :func:`anchor_level` of this share, and the level."""
        level = self.clip_level(share)
        return self.quantile(norm_values, args, share, "clip", lo, hi, level), level

    def clip_level(self, share: float) -> float:
        """The clip step's quantile level at ``share`` of ``rho``:
        :func:`anchor_level` of ``ñ`` and the step's exponential-mechanism
        parameter (public given ``ñ``)."""
        return anchor_level(self.n_eff, _exp_epsilon(share * self.total, 1))

    def radius(self, center: np.ndarray, share: float, name: str) -> float:
        """The median distance of the rows to ``center`` (isotropic)."""
        return self.quantile(norm_values, (center, None), share, name,
                             float(self.min_scale.min()), _norm(self.hi - self.lo))

    def clipped_sum(self, C: float, b: np.ndarray, center: np.ndarray, s: float, *,
                    secure: bool = False, box: bool = False) -> tuple[Release, Accumulator]:
        """A private clipped sum of the deviations from ``center``: an
        accumulator's ``update`` and ``release``
        (:func:`dpsum.release.accumulator.deviation_accumulator`, calibrated by
        the noise multiplier ``s``; on a dask array its ``update`` runs on every
        block and the partial results merge, :func:`run_pass`). Returns the
        release (the noisy sum of ``(x - c) ⊙ b`` clipped at ``C``, over ``b``,
        in the data's units) and the accumulator (its counts of rows clipped
        and, with ``box``, outside the box: **not private**)."""
        empty = deviation_accumulator(C, b, center, multiplier=s, neighbouring=self.relation,
                                      secure=secure, lower=self.lo if box else None,
                                      upper=self.hi if box else None)
        acc = self.run(Fold(empty))
        return acc.release(self.secure_gen if secure else self.gen), acc

    def last_step(self, C: float, b: np.ndarray, center: np.ndarray, s_mean: float
                  ) -> tuple[np.ndarray, np.ndarray, _Counts, np.ndarray | None]:
        """The noisy clipped sum over ``b`` (data units), its noise std per
        coordinate, the rows clipped and outside the box (not private) and the
        grid unit (``secure=True``) or None: :meth:`clipped_sum` on the float
        path (Gaussian noise added exactly) or the grid path (an exact discrete
        Gaussian of scale ``s_mean`` times the integer sensitivity, the same
        zCDP, added to the integers)."""
        rel, acc = self.clipped_sum(C, b, center, s_mean, secure=self.secure, box=True)
        counts = _Counts(acc.diagnostic_count, acc.rows_outside)
        if rel.discrete_scale is None:
            return rel.estimate, rel.noise_std, counts, None
        assert rel.grid_exponent is not None
        unit = np.ldexp(np.ones(b.size), rel.grid_exponent) / b
        return rel.estimate, rel.discrete_scale, counts, unit

    def diagnose(self, split: BudgetSplit, clipped: int, outside: int, expected: float
                 ) -> dict:
        """Step 7, the diagnostics: private counts of the rows clipped and of the
        rows outside the box, one Gaussian release of L2 sensitivity sqrt(2)
        (one row changes each count by at most 1); a warning when a count is far
        above the design's expectation."""
        if not self.diagnostics:
            return {}
        n_eff = self.n_eff
        s_diag = zcdp_gaussian_multiplier(split.diagnostics * self.total)
        std = s_diag * math.sqrt(2.0)
        if self.secure:
            z = discrete_gaussian(std * std * (1 + 1e-12), size=2, rng=self.secure_gen)
            k_clip, k_out = float(clipped + int(z[0])), float(outside + int(z[1]))
        else:
            k_clip = float(clipped + self.noise(std))
            k_out = float(outside + self.noise(std))
        k_clip, k_out = max(k_clip, 0.0), max(k_out, 0.0)   # post-processing: counts are >= 0
        self.steps.append(gaussian_step("diagnostics", s_diag))
        if clipping_excess(k_out, std, 0.0, n_eff):
            self.warn(clipping_message(
                self.who, "outside the box [lower, upper]", k_out, 0.0, n_eff,
                "the box is too small or misplaced for these data; the private centre and "
                "scales are then wrong and the estimate is biased. Widen the box (from public "
                "knowledge, not from X)"), stacklevel=5)
        elif clipping_excess(k_clip, std, expected, n_eff):
            self.warn(clipping_message(
                self.who, "clipped", k_clip, expected, n_eff,
                "the private scales or centre missed the data (too few rows, or heavy "
                "tails); the estimate is biased towards the private centre, and "
                "confidence_intervals cover the clipped rows' statistic, not the data's: "
                "use data_intervals (they add the clipping loss, assuming every row lies in "
                "the box), a larger budget, or elliptical_gaussian_mechanism on the box"),
                stacklevel=5)
        return {"clip_count": k_clip, "outside_count": k_out, "clip_count_std": std}


def _weighted_robust_scaling(scales: np.ndarray, lam: float, objective: str | np.ndarray,
                             widths: np.ndarray) -> np.ndarray | None:
    """The scaled path's ``b`` for an objective with weights ``pi``: the
    robust scaling in the units ``pi^(-1/2)`` of each column (the total
    objective there), mapped back, ``b = robust_scaling(s sqrt(pi)) sqrt(pi)``;
    without the floor it is ``b_j ∝ pi_j^(1/4) s_j^(-1/2)``, the weighted
    Lagrangian's point, and the floor ``lambda mean`` is taken in those units
    (on mixed units a floor in the data's units would lift the small columns'
    scales to the large ones'). ``"relative"`` has ``pi_j = w_j^-2`` (the
    box widths). Post-processing of the private scales and public weights;
    None when the result is not a vector of positive normal floats (weights
    spanning more than the floats' range: the caller warns and falls back to
    the total objective's scaling)."""
    if isinstance(objective, str) and objective == "total":
        return robust_scaling(scales, lam)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        if isinstance(objective, str):             # relative: pi^(1/2) ∝ 1 / w
            root = float(np.min(widths)) / widths
        else:
            root = np.sqrt(objective / float(np.max(objective)))
        try:
            b = robust_scaling(scales * root, lam) * root
        except ValueError:
            b = np.zeros_like(root)
    if np.all(np.isfinite(b)) and np.all(b >= np.finfo(np.float64).tiny):
        return b
    return None


def _box_noise_norm(widths: np.ndarray, relation: Neighbouring,
                    objective: str | np.ndarray = "total") -> float:
    """``sqrt(sum_j (Delta / b_j)^2)`` of the box path (the Elliptical Gaussian
    mechanism on the box, :func:`_box_release`): its noise's L2 norm on the
    sum per unit noise multiplier. A public function of the box."""
    b = elliptical_scaling(widths, objective) / widths
    return _norm(clipped_sum_sensitivity(0.5, relation) / b)


def _check_share(widths: np.ndarray, relation: Neighbouring, mean_share: float) -> float:
    """The bias check's share of ``rho``: ``mean_share (D / K)^2`` (``D`` the
    box's diameter, the check's sensitivity; ``K`` :func:`_box_noise_norm`),
    so that the check's noise on the displacement is about the box's error,
    clamped to :data:`CHECK_SHARE_RANGE`. Public."""
    lo, hi = CHECK_SHARE_RANGE
    ratio = _norm(widths) / _box_noise_norm(widths, relation)
    return float(min(max(mean_share * ratio * ratio, lo), hi))


def _bias_check(ctx: _Context, share: float, veto_share: float, rest: float, C: float,
                b: np.ndarray, center: np.ndarray) -> bool:
    """The bias check and its veto: whether the box (:func:`_box_release`) is
    predicted to beat clipping at ``C`` around ``center`` in the scaling ``b``
    (True for the box).

    The clipping displacement of row ``i`` in the data's units is
    ``r_i = (1 - min(1, C / ||x̂_i||)) ||x_i - c||`` (``x̂_i = (x_i - c) ⊙ b``), and
    the clipping bias of the mean has norm at most ``sum_i r_i / n``. Each term
    is capped at the box's diameter ``D`` and quantised down to the grid
    ``D 2^-CHECK_BITS``, so that it is an integer in ``[0, 2^CHECK_BITS]``
    computed from its own row only; the integers are summed exactly (the pass
    :class:`~dpsum.pipeline.passes.Displacement`), and
    Gaussian noise (exact discrete Gaussian with ``secure=True``) of scale
    ``s 2^CHECK_BITS`` is added, ``s`` the zCDP multiplier of
    ``share * rho``: a Gaussian mechanism of sensitivity ``2^CHECK_BITS``
    under either relation (one term in ``[0, 2^CHECK_BITS]`` changes, appears
    or disappears), ``share * rho``-zCDP. Only the decision is used (and
    released, as the strategy): post-processing of the noisy sum, of
    public quantities and of earlier private outputs (``C``, ``b``, ``c``,
    ``ñ``). The mean then gets ``rest`` of ``rho`` on either path (and the
    veto's share too when the veto does not run), so every path spends the
    same total.

    The rule: the box when ``bias^2 + v_clip > v_box``
    (:func:`_prefer_box`), with ``bias`` the noisy bound (at least 0) over
    ``ñ``, and ``v_clip``, ``v_box`` the two paths' expected squared noise on
    the mean at the share ``rest``; unless the veto (:func:`_veto`, spending
    ``veto_share``) bounds the signed bias below the same threshold.
    """
    relation, total = ctx.relation, ctx.total
    widths = ctx.hi - ctx.lo
    D = _norm(widths)
    K = min(D, VETO_CAP * C / float(np.min(b)))
    # the check's and the veto's sums in one pass (the same norms per row)
    S, veto_state = ctx.run(CheckAndVeto(Displacement(C, b, center, D, CHECK_BITS),
                                         SignedDisplacement(C, b, center, K, CHECK_BITS)))
    s_chk = zcdp_gaussian_multiplier(share * total)
    sigma = s_chk * 2.0 ** CHECK_BITS
    if ctx.secure:
        noisy = float(S + int(discrete_gaussian(sigma * sigma * (1 + 1e-12),
                                                rng=ctx.secure_gen)))
    else:
        noisy = float(S + ctx.noise(sigma))
    ctx.steps.append(gaussian_step("check", s_chk))
    signed, capped, veto_std = _veto(ctx, veto_share, veto_state, b.size, K)
    # everything relative to the box path's noise norm (no overflow: the
    # ratios are compared, and n cancels)
    s_rest = zcdp_gaussian_multiplier(rest * total)
    k_box = _box_noise_norm(widths, relation, ctx.objective)
    with np.errstate(over="ignore"):
        unit = math.ldexp(D / k_box, -CHECK_BITS) / s_rest   # one integer unit
        clip_ratio = _norm(clipped_sum_sensitivity(C, relation) / b) / k_box
        v_clip = clip_ratio * clip_ratio
        bound, bound_std = noisy * unit, sigma * unit
        threshold = math.sqrt(max(1.0 - v_clip, 0.0))
        if _prefer_box(bound, bound_std, v_clip, 1.0):
            # the veto, unless the box wins on clipping's noise alone
            return not (v_clip < 1.0 and _vetoes(signed, capped, b.size, bound, bound_std,
                                                 threshold))
        return _signed_exceeds(signed, b.size, veto_std / (k_box * s_rest), v_clip, threshold)


def _veto(ctx: _Context, share: float, state: tuple, d: int, K: float
          ) -> tuple[float, float, float]:
    """The veto's release: the norm of the noisy capped signed displacement
    sum ``V`` and the noisy ``U_K``, both in units of their noise's standard
    deviation, and that standard deviation in the data's units.

    With ``K = min(D, VETO_CAP C / min_j b_j)`` (public given the earlier
    outputs: the clip region's longest semi-axis in the data's units), row
    ``i``'s displacement ``delta_i`` (``||delta_i|| = r_i``) is capped to
    ``delta_i^K = delta_i min(1, K / r_i)``. The pass
    (:class:`~dpsum.pipeline.passes.SignedDisplacement`, read with the
    check's in :class:`~dpsum.pipeline.passes.CheckAndVeto`; its ``state``) sums ``V = sum_i delta_i^K``
    and ``U_K = sum_i min(r_i, K)`` exactly on the grid ``K 2^-CHECK_BITS``;
    per row the ``d + 1`` integers have L2 norm at most
    ``sqrt(2) 2^CHECK_BITS``, so one row changes the sums by at most
    ``sqrt(2) 2^CHECK_BITS`` under add-remove and ``sqrt(5) 2^CHECK_BITS``
    under replace-one (the vector by ``2``, the norm by ``1`` times
    ``2^CHECK_BITS``). Gaussian noise of that scale times ``s`` (the
    multiplier of ``share * rho``; discrete Gaussian with ``secure=True``) is
    added to each: ``share * rho``-zCDP. ``||V|| / U_K`` is the share of the
    capped displacements that does not cancel (:func:`_vetoes`,
    :func:`_signed_exceeds`: post-processing).
    """
    s_v = zcdp_gaussian_multiplier(share * ctx.total)
    sens = math.sqrt(5.0 if ctx.relation is Neighbouring.REPLACE else 2.0)
    sigma = s_v * sens * 2.0 ** CHECK_BITS
    if ctx.secure:
        z = discrete_gaussian(sigma * sigma * (1 + 1e-12), size=d + 1, rng=ctx.secure_gen)
        noisy = np.array([float(int(a) + int(e)) for a, e in zip(state, np.ravel(z))])
    else:
        noisy = np.array([float(a) for a in state]) + ctx.noise(sigma, size=d + 1)
    ctx.steps.append(gaussian_step("veto", s_v))
    with np.errstate(over="ignore"):
        return (_norm(noisy[:d] / sigma), float(noisy[d]) / sigma,
                math.ldexp(sigma * K, -CHECK_BITS))


def _vetoes(signed: float, capped: float, d: int, bound: float, bound_std: float,
            threshold: float) -> bool:
    """The veto's rule (post-processing). ``signed`` is the norm of the noisy
    capped vector sum ``V`` and ``capped`` the noisy ``U_K``, both in units of
    their noise's standard deviation (per coordinate); ``bound`` is the
    check's noisy bound (std ``bound_std``). With ``z = VETO_Z``, an upper
    value of ``||V||`` from the unbiased ``||Ṽ||^2 - d`` (variance
    ``2 d + 4 ||V||^2``), ``v = sqrt(max(0, ||Ṽ||^2 - d + z sqrt(2 d + 4 ||Ṽ||^2)))``,
    and a lower value ``U_K - z`` of ``U_K``, the signed bias is estimated as
    ``(bound + z bound_std) min(1, v / (U_K - z))`` (1 when ``U_K <= z``); the
    veto holds when this is below ``threshold``."""
    z = VETO_Z
    sq = signed * signed
    v = math.sqrt(max(0.0, sq - d + z * math.sqrt(2.0 * d + 4.0 * sq)))
    low = capped - z
    ratio = min(1.0, v / low) if low > 0 else 1.0
    return bool((bound + z * bound_std) * ratio < threshold)


def _signed_exceeds(signed: float, d: int, std: float, v_clip: float,
                    threshold: float) -> bool:
    """The second way to the box (post-processing): the capped signed sum's
    norm alone, ``signed`` in units of its noise's standard deviation per
    coordinate ``std`` (in the units of ``threshold``), exceeds the
    threshold by the check's margin. With ``z`` the check's quantile
    (:func:`_prefer_box`), a lower value of ``||V||`` from the unbiased
    ``||Ṽ||^2 - d`` is ``sqrt(max(0, ||Ṽ||^2 - d - z sqrt(2 d + 4 ||Ṽ||^2)))``;
    the box when it times ``std`` exceeds ``threshold``. Where the
    displacements do not cancel, ``V`` measures the bias with a noise of the
    cap's scale, far below the check's (of the box's diameter)."""
    z = _check_z(v_clip, 1.0)
    sq = signed * signed
    low = math.sqrt(max(0.0, sq - d - z * math.sqrt(2.0 * d + 4.0 * sq)))
    return bool(low * std > threshold)


#: The largest share of rho the second count may cost the box path (its
#: count, the first move and its radius; :func:`_vector_center`): at most
#: about 2 % of the box's error where the box wins after all.
PROBE_COST = 0.04


#: The bias check risks at most this fraction of the clipping path's noise
#: variance on a wrong switch to the box (:func:`_prefer_box`).
CHECK_RISK = 0.25


#: The bias check's risk is counted against at least this fraction of the
#: box's expected squared error (:func:`_check_z`).
CHECK_FLOOR = 1e-6


def _check_z(v_clip: float, v_box: float) -> float:
    """The check's number of standard deviations: the ``1 - CHECK_RISK v / v_box``
    normal quantile, ``v = max(v_clip, CHECK_FLOOR v_box)``. Without the
    floor a clip radius that collapsed (``v_clip`` near 0: no noise, all
    bias) would ask for infinite evidence and never reach the box; with it,
    ``z`` is at most about 5."""
    v = max(v_clip, CHECK_FLOOR * v_box)
    return float(ndtri(1.0 - CHECK_RISK * v / v_box))


def _prefer_box(bias: float, bias_std: float, v_clip: float, v_box: float) -> bool:
    """The bias check's rule (post-processing): the box when its expected
    squared error ``v_box`` is below clipping's noise ``v_clip`` alone, or
    when the noisy bias bound ``bias`` (noise std ``bias_std``) exceeds
    ``sqrt(v_box - v_clip)`` by ``z`` standard deviations, with ``z`` the
    ``1 - CHECK_RISK v_clip / v_box`` normal quantile: a switch to a box far
    worse than clipping must be rare enough that its expected cost,
    ``Pr[switch] v_box``, stays below ``CHECK_RISK v_clip``."""
    if not v_box > v_clip:
        return True
    z = _check_z(v_clip, v_box)
    return bool(bias - z * bias_std > math.sqrt(v_box - v_clip))


def _with_diagnostics(split: BudgetSplit, on: bool) -> BudgetSplit:
    """Move :data:`DIAGNOSTICS_SHARE` of the budget from the mean to the diagnostics."""
    if not on:
        return split
    if split.mean <= 2 * DIAGNOSTICS_SHARE:
        raise ValueError("budget leaves too little for the mean to also pay for the "
                         "diagnostics; lower the shares or pass diagnostics=False")
    return dataclasses.replace(split, diagnostics=DIAGNOSTICS_SHARE,
                               mean=split.mean - DIAGNOSTICS_SHARE)


def _open(a: _Args, data: Dataset, lower: Any, upper: Any, rng: Any, statistic: str,
          session: Any) -> _Context:
    """Everything before the first read of the data's values: the box and
    the public worst cases checked, the rngs, the strategy's warning when
    ``n`` is public, and the session charged."""
    sess = as_session(session)
    relation = a.relation
    d = data.d
    lo, hi = check_domain(lower, upper, d)
    # public, before the data: the noise of any step is at most about
    # sqrt(d) * width / sqrt(2 share rho) (share >= 5e-7), and must be a float
    with np.errstate(over="ignore"):
        reach = float(np.max(hi - lo)) * math.sqrt(d) * 1e3 / math.sqrt(a.total)
    V.representable(reach, "lower and upper", "the noise for a box this wide at this budget",
                    "the box width times sqrt(d / rho) must stay below about 1e305")
    n = data.n
    if n is None and relation is Neighbouring.REPLACE:
        n = run_pass(RowCount(), data)          # public under replace-one
    if n is not None:
        V.require_rows(n, relation is Neighbouring.REPLACE)
    _check_worst_case(lo, hi, n or 0, relation)
    ctx = _Context(a, dataclasses.replace(data, n=n), lo, hi, rng, statistic)
    if relation is Neighbouring.REPLACE and a.split is None and n is not None and \
            _center_mode(float(n), d, a.total, ctx.du, a.rule) != "coordinate":
        # n is public: the strategy is known before anything is spent
        ctx.warn(f"private_{statistic}: too few rows for this budget for a reliable "
                 "coordinate-wise center: the pipeline falls back to a center for the whole "
                 "vector or to the public box (see release.strategy); the error can be "
                 "many times a coordinate's scale. A box known in advance "
                 "(elliptical_gaussian_mechanism), a larger budget or fewer columns help",
                 stacklevel=5)
    # every path spends at most rho in zCDP: one event, before the data's values
    ctx.accounting = charge_session(sess, ZCDPEvent(a.stated), mechanism=ctx.who,
                                    neighbouring=relation,
                                    parameters={"rho": a.stated, "d": d, "secure": a.secure})
    data.require_finite()
    return ctx


def _count_and_split(ctx: _Context) -> _Plan:
    """Step 0, the count (add-remove: ``n`` is private; every later share and
    the clip probability are functions of it, the proof conditions on it),
    then the split of the budget and the clip probability."""
    a = ctx.a
    if ctx.relation is Neighbouring.ADD_REMOVE:
        n = ctx.data.n if ctx.data.n is not None else ctx.run(RowCount())
        count_share = a.split.count if a.split is not None else SCALAR_SHARE
        ctx.s_count = zcdp_gaussian_multiplier(count_share * ctx.total)
        ctx.count = float(n + ctx.noise(ctx.s_count))
        ctx.steps.append(gaussian_step("count", ctx.s_count))
        ctx.n_eff = max(ctx.count, 1.0)
    else:
        ctx.count = ctx.n_eff = float(ctx.data.n or 0)
    d = ctx.data.d
    plan = _Plan(a.split, "coordinate") if a.split is not None else \
        _default_split(ctx.n_eff, d, ctx.total, ctx.relation, a.rule)
    ctx.split = _with_diagnostics(plan.split, a.diagnostics) if a.split is None else a.split
    ctx.p = default_clip_probability(ctx.n_eff) if a.p_given is None else a.p_given
    if plan.mode == "coordinate" and a.rule is not Scaling.ADAPTIVE and a.split is None and \
            ctx.split.center >= MAX_COORDINATE_SHARE:
        ctx.warn(
            f"{ctx.who}: too few rows for this budget for a reliable coordinate-wise "
            "center (its share is capped); the center may escape the data. "
            "scaling='adaptive' (the default) estimates it for the whole vector instead",
            stacklevel=5)
    return plan


def _coordinate_center(ctx: _Context) -> np.ndarray:
    """Step 1, the coordinate-wise median on the asinh scale."""
    d = ctx.data.d
    eps_c = _exp_epsilon(ctx.split.center * ctx.total, d)
    t = ctx.run(RowValues(center_values, (ctx.lo, ctx.hi)))
    center = center_from_values(t, eps_c, ctx.lo, ctx.hi, ctx.du, ctx.gen)
    ctx.steps.append(bounded_range_step("center", eps_c, count=d))
    return center


def _box_decision(ctx: _Context, plan: _Plan, center: np.ndarray, spent: float) -> bool:
    """The box-or-clip decision of the whole-vector center: the box itself as
    the model, when clipping around ``center`` is predicted to lose to it.
    The rows within the public break-even distance of ``center`` are
    counted, privately (sensitivity 1, the share ``plan.decision``); the
    choice is post-processing of the count. ``spent`` is the share spent
    before the box would run, this count's included. True for the box."""
    split, total, d = ctx.split, ctx.total, ctx.data.d
    ones = np.ones(d)
    rest = 1.0 - split.count - spent - split.diagnostics
    r_star = break_even_radius(ctx.hi - ctx.lo, ctx.n_eff, d, rest * total, split.mean * total,
                               clipped_sum_sensitivity(1.0, ctx.relation),
                               calibrated_clip_radius(1.0, ones, ones, ctx.p))
    s_dec = zcdp_gaussian_multiplier(plan.decision * total)
    near = ctx.run(NearCount(center, r_star))
    near_noisy = float(near + ctx.noise(s_dec))
    ctx.steps.append(gaussian_step("decision", s_dec))
    return _box_wins(near_noisy, ctx.n_eff)


def _prep(split: BudgetSplit, center: float) -> float:
    """The share of the steps before the mean, with ``center`` for the center's."""
    return split.count + center + split.radius + split.spread + split.scales + split.clip


def _move(ctx: _Context, center: np.ndarray, radius: float, share: float) -> np.ndarray:
    """One move of the whole-vector center: the clipped mean of the
    deviations from ``center`` at the calibrated radius of the median
    distance ``radius`` (isotropic model, clip probability
    ``VECTOR_CLIP_PROBABILITY``), summed exactly, with Gaussian noise of
    ``share`` of rho (the multiplier times the sensitivity, ``2 c`` or
    ``c``) added exactly."""
    ones = np.ones(ctx.data.d)
    c_k = calibrated_clip_radius(radius, ones, ones, VECTOR_CLIP_PROBABILITY)
    s_move = zcdp_gaussian_multiplier(share * ctx.total)
    noisy_k = ctx.clipped_sum(c_k, ones, center, s_move)[0].estimate
    ctx.steps.append(gaussian_step("center", s_move))
    # post-processing: the move is clamped to the box (a centre outside it is
    # never better), which keeps every later quantity finite
    with np.errstate(over="ignore"):
        return np.clip(center + noisy_k / ctx.n_eff, ctx.lo, ctx.hi)


def _another_move(split: BudgetSplit, plan: _Plan, moves: int, spent: float,
                  cost: float) -> bool:
    """Whether the whole-vector center, still converging after ``moves``
    moves that with the decision counts spent ``spent`` of rho, makes one
    more (a function of the split and of earlier outputs): the planned
    ``plan.moves``, then more, up to :data:`VECTOR_MAX_STEPS`, while the
    steps before the mean together stay within :data:`MAX_PREPARATION_SHARE`
    (each extra move's ``cost`` comes from the mean). From the midpoint of a box a hundred times wider than
    the data, each move shrinks the distance by about
    ``VECTOR_CONTRACTION``, so the planned moves can stop with the center
    still far outside the data; the clipping that follows then cannot reach
    them (measured: 800 times the isotropic variant's error on Pareto rows
    at 2,000 rows in such a box)."""
    if moves < plan.moves:
        return True
    if moves >= VECTOR_MAX_STEPS:
        return False
    return _prep(split, spent + cost) <= MAX_PREPARATION_SHARE


def _vector_center(ctx: _Context, plan: _Plan) -> tuple[np.ndarray, float] | float:
    """Step 1 for few rows: clipped-mean moves from the box's midpoint, each
    clipping at a private (isotropic-model) radius around the last; it stops
    when the radius no longer shrinks, and the shares of the moves it skips
    go to the mean (every path spends at most rho). Returns the center and
    the last radius (the radius step's, around the final center), or, for
    the box, the share of rho left to it. A center still converging after
    the planned moves moves again (:func:`_another_move`), the extra shares
    taken from the mean. When the moves stop, a last one with
    ``VECTOR_POLISH`` times less noise for its radius runs if its share,
    ``VECTOR_POLISH^2`` times a move's, is at most ``VECTOR_POLISH_SHARE``
    and the steps before the mean stay within ``MAX_PREPARATION_SHARE``
    (also from the mean): a move's noise is a quarter of its radius, and
    where the model's radius clips many rows (strongly correlated columns)
    a center that far off makes the clipping one-sided.

    The box is chosen by two counts (:func:`_box_decision`): one around the
    midpoint, before anything moves; when it says box, a second one around
    the center after the first move, which the box must also win (data
    piled in a corner of the box are far from its midpoint but close to
    their own center). The second count's share comes from the mean, and
    runs only on that path; the box then gets everything not yet spent. The
    second count runs only when it and the first move cost the box path at
    most :data:`PROBE_COST` of rho (a public function of the split)."""
    split = ctx.split
    scalar_share = split.radius
    move_share = (split.center - plan.decision) / plan.moves - scalar_share
    center = ctx.mid.copy()
    probe = 2 * plan.decision + move_share + scalar_share
    rest = 1.0 - split.count - split.diagnostics      # the box's, less what is spent
    recheck = _box_decision(ctx, plan, center, plan.decision)
    if recheck and probe > PROBE_COST:
        return rest - plan.decision
    decisions = 1
    radius = ctx.radius(center, scalar_share, "center")
    moves = 0
    while True:
        center = _move(ctx, center, radius, move_share)
        moves += 1
        if recheck:
            recheck = False
            decisions = 2
            if _box_decision(ctx, plan, center, probe):
                return rest - probe
        last = radius
        radius = ctx.radius(center, scalar_share, "radius")
        spent = decisions * plan.decision + moves * (move_share + scalar_share)
        if radius > VECTOR_STOP * last or not _another_move(split, plan, moves, spent,
                                                            move_share + scalar_share):
            break
    # the last move, with VECTOR_POLISH times less noise for its radius,
    # when it is cheap; the radius is not measured again (the median distance
    # to the new center differs from the last by at most the move's length)
    polish = move_share * VECTOR_POLISH ** 2
    if polish <= VECTOR_POLISH_SHARE and _prep(split, spent + polish) <= MAX_PREPARATION_SHARE:
        center = _move(ctx, center, radius, polish)
        spent += polish
    ctx.split = dataclasses.replace(split, center=spent, mean=split.mean + split.center - spent)
    if ctx.relation is not Neighbouring.REPLACE or ctx.a.split is not None:
        ctx.warn(
            f"{ctx.who}: too few rows for this budget for a coordinate-wise center; "
            "the center was estimated for the whole vector at once (see "
            "release.strategy)", stacklevel=5)
    return center, radius


def _use_scales(ctx: _Context, center: np.ndarray, radius: float) -> bool:
    """Step 2b (``scaling="adaptive"``), the spread: the median L1 norm; with
    the radius it estimates how unequal the scales are, and the choice
    between scaled and isotropic clipping is post-processing. For isotropic
    clipping, moves the scales' share to the mean, and the clip step's too
    unless that step is anchored (:func:`anchor_level` above the median):
    with many rows the anchored quantile keeps the clipped rows few on heavy
    tails, which the radius, a median, does not. So on the isotropic path
    the clip step runs exactly when its share is left."""
    split, a = ctx.split, ctx.a
    if a.rule is not Scaling.ADAPTIVE or not split.spread > 0:
        return a.rule is Scaling.SCALED
    l1 = ctx.quantile(l1_values, (center,), split.spread, "spread",
                      float(ctx.min_scale.min()), _l1(ctx.hi - ctx.lo))
    g = heterogeneity(l1, radius, ctx.data.d)
    # above the median, isotropic clipping keeps the clip step
    anchored = ctx.clip_level(split.clip) > 0.5
    keep = split.clip if anchored else 0.0
    mean_isotropic = split.mean + split.scales + split.clip - keep
    use = prefer_scaled(g, split.mean, mean_isotropic)
    if not use:
        ctx.split = dataclasses.replace(split, scales=0.0, clip=keep, mean=mean_isotropic)
    return use


def _scaled_model(ctx: _Context, center: np.ndarray, radius: float
                  ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Steps 3-5: the scales (``|x_j - c_j| <= ||x - c||``, so every
    coordinate's median absolute deviation is at most the median norm: the
    radius, with a margin for its own noise, caps the search), the scaling
    (post-processing) and the private quantile of the scaled norms at the
    anchor level (:meth:`_Context.clip_quantile`). Returns
    ``(scales, b, norm_quantile, level)``."""
    split, d = ctx.split, ctx.data.d
    eps_s = _exp_epsilon(split.scales * ctx.total, d)
    cap = np.maximum(RADIUS_MARGIN * radius, 2.0 * ctx.min_scale)
    t = ctx.run(RowValues(scales_values, (center,)))
    scales = scales_from_values(t, eps_s, ctx.min_scale, cap, ctx.du, ctx.gen)
    ctx.steps.append(bounded_range_step("scales", eps_s, count=d))
    if ctx.a.rule is Scaling.ADAPTIVE:
        # shrink toward the pooled scale by their own noise level
        tau2 = log_scale_noise_variance(eps_s, ctx.n_eff, ctx.du, _LOG_MAD_DENSITY)
        scales, _ = shrink_log_scales(scales, tau2)
    b = _weighted_robust_scaling(scales, ctx.a.lam, ctx.objective, ctx.hi - ctx.lo)
    if b is None:
        ctx.warn(f"{ctx.who}: the objective's weights span more than the floats' range "
                 "together with the private scales; the scaled clipping minimises the total "
                 "error instead (weights fewer orders of magnitude apart avoid this)",
                 stacklevel=6)
        b = robust_scaling(scales, ctx.a.lam)
    r, level = ctx.clip_quantile((center, b), split.clip, float((ctx.min_scale * b).min()),
                                 _norm((ctx.hi - ctx.lo) * b))
    return scales, b, r, level


def _per_unit(units: UnitRows, data: Dataset, lower: Any, upper: Any, rng: Any
              ) -> tuple[Dataset, Any, Any, Any, str | None]:
    """With a privacy unit, the dataset of one vector per unit (its ids read,
    then its values), the box of one unit's vector, a Generator that has
    drawn the hashing key (None stays None: the key then comes from the OS)
    and the record's description of the unit; without one, the arguments
    unchanged and None."""
    if not units.active:
        return data, lower, upper, rng, None
    gen = None if rng is None else V.check_rng(rng)
    assert units.bounds is not None
    if units.bounds.per_unit == "sum":                   # a unit's sum: a wider box
        lower, upper = units.box(*V.check_box(lower, upper, data.d))
    units.count(data.n)
    vectors = units.collapse(data.rows, gen)
    return (Dataset(vectors, data.columns, int(vectors.shape[0]), data.d), lower, upper,
            rng if gen is None else gen, units.describe())


def _run(X: Any, *, lower: Any, upper: Any, epsilon: Any, delta: Any, rho: Any,
         neighbouring: Any, budget: Any, scaling: Any, clip_probability: Any,
         regularization: Any, rng: Any, statistic: str, secure: Any = False,
         diagnostics: Any = True, session: Any = None, objective: Any = None,
         units: tuple[Any, Any, Any] = (None, None, "sum")) -> PipelineRelease:
    a = _arguments(epsilon, delta, rho, neighbouring, budget, scaling, clip_probability,
                   regularization, secure, diagnostics)
    sess = as_session(session)
    if sess is not None:          # refused before the unit ids or the rows are read
        sess.check(ZCDPEvent(a.stated), neighbouring=a.relation)
    unit_rows_ = unit_rows(X, *units, statistic)
    # the boundary: type and shape, before anything reads the values; under
    # add-remove the empty dataset is data like any other
    data = as_data(unit_rows_.X, "X")
    obj = V.check_objective(objective, data.d, frame=data.columns is not None)
    data, lower, upper, rng, unit_text = _per_unit(unit_rows_, data, lower, upper, rng)
    ctx = _open(a, data, lower, upper, rng, statistic, session)
    ctx.objective, ctx.unit = obj, unit_text
    plan = _count_and_split(ctx)
    if plan.mode == "box":
        _calibrate_exactly(ctx)
        return _box_release(ctx, ctx.split.mean)
    if plan.mode == "vector":
        found = _vector_center(ctx, plan)
        if isinstance(found, float):
            _calibrate_after_decision(ctx, found)
            return _box_release(ctx, found)
        center, radius = found
        strategy = "vector center"
    else:
        center, radius = _coordinate_center(ctx), 0.0
        strategy = "coordinate center"
    if a.rule is not Scaling.ISOTROPIC and plan.mode == "coordinate":
        # 2. radius: the median distance to the center bounds every scale
        radius = ctx.radius(center, ctx.split.radius, "radius")
    ones = np.ones(ctx.data.d)
    scales: np.ndarray | None = None
    b, model = ones, ones
    if _use_scales(ctx, center, radius):
        scales, b, norm_q, level = _scaled_model(ctx, center, radius)
        model = scales
        strategy += ", scaled"
    elif a.rule is Scaling.ADAPTIVE and not ctx.split.clip > 0:
        norm_q, level = radius, 0.5     # the radius is the isotropic median norm
        strategy += ", isotropic"
    else:
        r_lo, r_hi = float(ctx.min_scale.min()), _norm(ctx.hi - ctx.lo)
        if a.rule is Scaling.ADAPTIVE:
            # many rows (its share was kept): the anchored clip step, unscaled norms
            norm_q, level = ctx.clip_quantile((center, None), ctx.split.clip, r_lo, r_hi)
        else:
            # the isotropic baseline keeps the chapter's median
            norm_q, level = ctx.quantile(norm_values, (center, None), ctx.split.clip, "clip",
                                         r_lo, r_hi), 0.5
        strategy += ", isotropic"
    C = _clip_radius(norm_q, model, b, ctx.p, level)
    mean_share = ctx.split.mean
    if a.rule is Scaling.ADAPTIVE and a.split is None:
        # 5b. the bias check: the box when clipping at C is predicted, from a
        # private bound on its displacement, to lose to it
        chk = _check_share(ctx.hi - ctx.lo, ctx.relation, mean_share)
        veto = min(VETO_SHARE, 0.25 * (mean_share - chk))
        mean_share = mean_share - chk - veto
        ctx.split = dataclasses.replace(ctx.split, mean=mean_share, check=chk + veto)
        if _bias_check(ctx, chk, veto, mean_share, C, b, center):
            return _box_release(ctx, mean_share,
                                reason="the private bias check predicts that clipping "
                                       "loses to the public box for these data")
    # 6. the clipped sum of deviations from the center, with Gaussian noise
    s_mean = zcdp_gaussian_multiplier(mean_share * ctx.total)
    noisy, dev_std, state, unit = ctx.last_step(C, b, center, s_mean)
    ctx.steps.append(gaussian_step("mean", s_mean))
    extra = ctx.diagnose(ctx.split, state.clipped, state.outside, ctx.p * ctx.n_eff)
    return _finish(ctx, center, noisy, dev_std, scales, b, C, ctx.split, strategy, unit,
                   extra, s_mean)


def _finish(ctx: _Context, center: np.ndarray, noisy: np.ndarray, dev_std: np.ndarray,
            scales: np.ndarray | None, b: np.ndarray, C: float, split: BudgetSplit,
            strategy: str, unit: np.ndarray | None, extra: dict, s_mean: float
            ) -> PipelineRelease:
    count, n_eff, s_count, statistic = ctx.count, ctx.n_eff, ctx.s_count, ctx.statistic
    # post-processing of released values, saturated at the largest float
    # (the same function whatever the data)
    with np.errstate(over="ignore"):
        if statistic == "mean":
            estimate = center + noisy / n_eff
            noise_std = dev_std / n_eff
            unit = None if unit is None else unit / n_eff
        else:
            estimate = count * center + noisy
            noise_std = dev_std
            if ctx.relation is Neighbouring.ADD_REMOVE:
                noise_std = np.hypot(dev_std, s_count * center)
    estimate, noise_std = _saturate(estimate), _saturate(noise_std)
    unprojected = None
    if statistic == "mean":
        # post-processing: the projection onto the public box (see _DOC_PARAMS)
        unprojected, estimate = estimate, np.clip(estimate, ctx.lo, ctx.hi)
    steps = tuple(ctx.steps)
    guarantee = None
    if ctx.branch is not None:
        assert ctx.a.eps is not None and ctx.a.dlt is not None   # _one_off_gaussian
        guarantee = _branch_guarantee(steps, *ctx.branch, ctx.a.eps, ctx.a.dlt)
    elif ctx.a.dlt is not None:
        guarantee = _compose(steps, ctx.a.dlt, "exact" if ctx.exact else "zcdp")
    used = 0.0
    for st in steps:
        assert st.rho is not None   # Gaussian and bounded-range steps all have one
        used += st.rho
    public_n = int(count) if ctx.relation is Neighbouring.REPLACE else None
    return PipelineRelease(
        estimate=estimate, noise_std=noise_std, scaling=b, clip_norm=float(C),
        epsilon=None if guarantee is None else guarantee.epsilon,
        delta=None if guarantee is None else guarantee.delta, neighbouring=ctx.relation,
        sigma_opt=s_mean, sensitivity=clipped_sum_sensitivity(C, ctx.relation),
        mechanism=Mechanism.PRIVATE_PIPELINE, center=center, clip_probability=float(ctx.p),
        calibration=Calibration.DISCRETE if ctx.secure else
        Calibration.ANALYTIC if ctx.exact or ctx.branch else Calibration.ZCDP,
        secure=ctx.secure, statistic=statistic, n=public_n, lower=ctx.lo, upper=ctx.hi,
        columns=ctx.columns, diagnostics_share=split.diagnostics if extra else 0.0,
        notes=tuple(ctx.notes), accounting=ctx.accounting, unprojected=unprojected, rho=used,
        count=count, scales=scales, budget=split, steps=steps, guarantee=guarantee,
        strategy=strategy, grid_unit=unit, **V.objective_record(ctx.objective),
        privacy_unit=ctx.unit, **extra)


def _calibrate_exactly(ctx: _Context) -> None:
    """The public box path's exact calibration (appendix A3).

    Under replace-one with the default split, ``n`` is public and so is the
    choice of the box (:func:`_default_split`): before anything is spent, the
    release is known to be two Gaussian releases, the clamped sum and the
    diagnostics' counts. Two Gaussian mechanisms of multipliers ``s_1, s_2``
    compose exactly into one of multiplier ``(s_1^-2 + s_2^-2)^-1/2``, which
    is ``(epsilon, delta)``-DP exactly when that multiplier is at least the
    analytic one (:prf:ref:`gaussian-thm-analytic`). So for a one-off
    ``(epsilon, delta)`` budget the shares are taken of ``1 / (2 s^2)``, ``s``
    the analytic multiplier of ``(epsilon, delta)``, instead of the zCDP
    conversion's ``rho``: the same arithmetic, a tight conversion (7-10 %
    less noise at epsilon from 0.25 to 4). The record's guarantee is then the
    exact composition of the Gaussian steps. Left as it is: a ``rho``
    budget (zCDP is then the user's own currency), ``secure=True`` (the
    discrete Gaussian's guarantee is stated in zCDP), a session (its ledger
    counts in zCDP), add-remove (the path follows a private count) and every
    path chosen after a private step (only a bound that holds on every path
    bounds the mixture, and the other paths' quantile steps are bounded-range,
    not Gaussian; the box chosen by the first count alone has such a bound,
    :func:`_calibrate_after_decision`)."""
    a = ctx.a
    if not _one_off_gaussian(a, ctx.accounting):
        return
    assert a.eps is not None and a.dlt is not None       # _one_off_gaussian
    s = float(analytic_sigma(a.eps, a.dlt))
    ctx.total = (1.0 - _SPEND_MARGIN) / (2.0 * s * s)
    ctx.exact = True


def _one_off_gaussian(a: _Args, accounting: Any) -> bool:
    """Whether the release may be calibrated in ``(epsilon, delta)`` rather
    than zCDP: replace-one, the default split, a one-off ``(epsilon, delta)``
    budget, the float path (see :func:`_calibrate_exactly`)."""
    return a.relation is Neighbouring.REPLACE and a.split is None and a.eps is not None \
        and a.dlt is not None and not a.secure and accounting == ONE_OFF


def _calibrate_after_decision(ctx: _Context, share: float) -> None:
    """The box chosen by the whole-vector center's first count, calibrated
    by the branch bound (appendix A3, :prf:ref:`pipeline-design-prop-branch`).

    When the count is the only step before the box (its second count does
    not run: :data:`PROBE_COST`), every path of the release begins with that
    Gaussian count, and the box is a branch chosen from its output: the box's
    two Gaussian steps (the clamped sum and the diagnostics' counts, mu_B-GDP
    together) on one side, every other path (at most the rest of rho,
    zCDP) on the other. The release is then ``(epsilon, delta)``-DP when the
    count's privacy loss averaged over the larger of the two branches'
    profiles is at most ``delta`` (:func:`~dpsum.privacy.composition.branch_delta`);
    the box gets the largest ``mu_B`` that keeps it so
    (:func:`~dpsum.privacy.composition.branch_gaussian_mu`), within about
    1 % of the Elliptical Gaussian mechanism's own noise, where zCDP
    leaves 7-10 % more. Only for the budgets of :func:`_calibrate_exactly`
    (one-off ``(epsilon, delta)``, replace-one, the float path); otherwise,
    or where the bound would not hold even at the zCDP calibration, the box
    keeps its zCDP share. Public: the shares, the count's multiplier and the
    budget."""
    a = ctx.a
    # the proposition's shape: the count, and nothing else, before the box
    if not _one_off_gaussian(a, ctx.accounting) or \
            [(st.name, st.kind) for st in ctx.steps] != [("decision", "gaussian")]:
        return
    assert a.eps is not None and a.dlt is not None       # _one_off_gaussian
    mu = _gdp_mu(ctx.steps)
    # every other path, in zCDP (rounded up: the count's rho mu^2/2 rounded down)
    other = a.stated - 0.5 * mu * mu * (1.0 - 1e-12)
    tail = share + ctx.split.diagnostics                 # the box's two steps' shares
    zcdp_mu = math.sqrt(2.0 * tail * ctx.total)
    mu_b = branch_gaussian_mu(mu, a.eps, a.dlt, other, zcdp_mu)
    if mu_b is None or not mu_b > zcdp_mu:
        return
    ctx.total = mu_b * mu_b / (2.0 * tail) * (1.0 - _SPEND_MARGIN)
    ctx.branch = (len(ctx.steps), other)


def _branch_guarantee(steps: tuple, prefix: int, other: float, eps: float, stated: float
                      ) -> ComposedGuarantee:
    """The record's guarantee on the branch path: ``(epsilon, delta)`` with
    ``delta`` the branch bound at the multipliers the steps used, with the
    calibration's tail (at most the ``stated`` delta;
    :func:`_calibrate_after_decision`)."""
    dlt = branch_delta(_gdp_mu(steps[:prefix]), eps, gaussian=[_gdp_mu(steps[prefix:])],
                       zcdp=[other], tail=1e-9 * stated)
    mu = _gdp_mu(steps)
    return ComposedGuarantee(steps=steps, epsilon=float(eps), delta=dlt, method="branch",
                             rho=0.5 * mu * mu, noise_multiplier=1.0 / mu)


def _gdp_mu(steps: Any) -> float:
    """The GDP parameter of Gaussian steps composed, ``1/s`` for their one
    equivalent multiplier ``s`` (:func:`compose_gaussian_multipliers`)."""
    mults: list[float] = []
    for st in steps:
        assert st.noise_multiplier is not None          # Gaussian steps only
        mults += [st.noise_multiplier] * st.count
    return 1.0 / compose_gaussian_multipliers(mults)


def _box_release(ctx: _Context, share: float, reason: str | None = None) -> PipelineRelease:
    """The box as the model: the Elliptical Gaussian mechanism's clamped sum.

    Coordinate ``j`` of ``x - m`` (``m`` the box's midpoint) is clamped to
    ``[-w_j/2, w_j/2]`` and scaled by ``b_j / w_j`` (``b`` the optimal
    scaling of the widths, ``||b|| = 1``): every scaled row lies in a ball of
    radius 1/2, so this is a clipped sum with ``C = 1/2`` and scaling
    ``b / w`` (sensitivity 1 under replace-one, 1/2 under add-remove).

    This step spends ``share`` of the context's total: the zCDP ``rho``
    like every other path when the box was chosen by a private step (only a
    bound that holds on every path bounds the mixture), or, when the box was
    known from public inputs before anything was spent, the exact Gaussian
    calibration of :func:`_calibrate_exactly`, or, when the first count alone
    chose it, the branch bound of :func:`_calibrate_after_decision`.

    The sum is the last step's (:meth:`_Context.last_step`, an accumulator's
    ``update`` and ``release``) at ``C = 1/2`` in the same
    scaled space (a row inside the box is unchanged, a row outside is shrunk
    towards the midpoint instead of clamped): summed exactly, with Gaussian
    noise added exactly, or with ``secure=True`` on the grid with exact
    discrete Gaussian noise.
    """
    ctx.warn(
        f"{ctx.who}: {reason or 'too few rows for this budget to improve on the public box'}"
        "; the release is the Elliptical Gaussian mechanism on the box (see release.strategy)",
        stacklevel=5)
    split = ctx.split
    widths = ctx.hi - ctx.lo
    mid = ctx.mid
    b = elliptical_scaling(widths, ctx.objective) / widths
    s_mean = zcdp_gaussian_multiplier(share * ctx.total)
    noisy, dev_std, state, unit = ctx.last_step(0.5, b, mid, s_mean)
    ctx.steps.append(gaussian_step("mean", s_mean))
    box_split = BudgetSplit(split.count,
                            1.0 - split.count - share - split.diagnostics - split.check, 0.0,
                            0.0, 0.0, share, 0.0, split.diagnostics, split.check)
    extra = ctx.diagnose(box_split, state.outside, state.outside, 0.0)
    return _finish(ctx, mid, noisy, dev_std, None, b, 0.5, box_split,
                   "box" if reason is None else "box (bias check)", unit, extra, s_mean)


def private_mean(X: ArrayLike, *, lower: Any, upper: Any, epsilon: float | None = None,
                 delta: float | None = None, rho: float | None = None,
                 neighbouring: Neighbouring | str = "replace",
                 budget: Mapping | None = None, scaling: str = "adaptive",
                 clip_probability: float | None = None,
                 regularization: float = REGULARIZATION, rng: Any = None,
                 secure: bool = False, diagnostics: bool = True,
                 session: Any = None, privacy_unit: Any = None,
                 max_rows: int | None = None,
                 per_unit: str | None = None,
                 objective: str | ArrayLike | None = None) -> PipelineRelease:
    """The private mean of the rows of ``X`` with no public data model.

    Runs the pipeline of :mod:`dpsum.pipeline`: private center, radius and
    scales, the regularised scaling of :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`, a calibrated clip radius,
    and the Gaussian-data mechanism's clipped sum with Gaussian noise, all under one budget.
    The estimate is ``c + b^{-1} (T + noise) / n`` with ``T`` the clipped sum
    of the scaled deviations ``(x_i - c) ⊙ b`` (``ñ`` for ``n`` under
    add-remove).

    Parameters
    ----------
    X : array_like, pandas.DataFrame, dask.array.Array or dask.dataframe.DataFrame, shape (n, d)
        The private data; finite reals. A DataFrame's column labels are kept
        (``columns``, :meth:`~dpsum.release.PipelineRelease.to_pandas`); an
        error names the column, never a row or a value. Under add-remove
        ``n = 0`` is data like any other (the release is noise of the same
        shape); under replace-one ``X`` needs a row. On a dask array or
        DataFrame every step's pass runs on the cluster, block by block
        (:func:`dpsum.engines.dask.run_pass`), and the release is the same
        floats as on the numpy array with the same ``rng``, whatever the
        chunking; only the steps' merged states (integer sums, and for the
        quantile steps one value per row) reach the client.
    lower, upper : float or array_like, shape (d,)
        A public box that should contain every row, known without looking at
        the data (a sensor's range, a plausible order of magnitude): scalars
        or length-d vectors with ``lower < upper``. The private steps search
        it, so a box that misses the data gives a confidently wrong answer
        (the diagnostics warn), and a box many orders of magnitude too wide
        costs accuracy. Data outside it are not an error: the quantile steps
        clamp them into the box; the clipped sum needs no box. A box whose
        worst-case clipped sums (about ``n * 64 ||upper - lower||``, and
        ``n 2^32 d`` times the ratio of the widest to the narrowest width)
        would not stay below 2^1016 is refused before the data are read, so that no
        overflow, and no exception, depends on the data.
    epsilon, delta : float, optional
        The budget as an (epsilon, delta) guarantee ...
    rho : float, optional
        ... or as rho-zCDP (give one form).
    neighbouring : {"replace", "add-remove"}
        Replace-one (``n`` public) or add-remove (``n`` private: a Gaussian
        count is released first and divides the sum).
    budget : mapping, optional
        Shares of the total rho for the steps other than the mean (keys among
        "count", "center", "radius", "scales", "clip"; exactly the steps that
        run); the mean gets the rest. Default :func:`default_budget`.
    scaling : {"adaptive", "scaled", "isotropic"}
        ``"adaptive"`` (default): choose privately between per-coordinate
        scales and isotropic clipping, and between clipping and the box (the
        bias check); ``"scaled"``: always estimate per-coordinate scales;
        ``"isotropic"``: clip isotropically with a private radius (the
        baseline).
    clip_probability : float, optional
        ``p_C`` in (0, 1); default :func:`default_clip_probability`.
    regularization : float
        ``lambda`` of :func:`robust_scaling`, in ``[0, 1e6]``
        (:data:`~dpsum.pipeline.mean.MAX_REGULARIZATION`).
    rng : numpy.random.Generator, int or None
        Source of randomness. With ``secure=True``, None draws the last
        step's noise from the operating system's secure generator.
    secure : bool
        The grid path for the final release: the clipped sum is rounded to a
        public grid and summed exactly in integers, and its noise (and the
        diagnostics') is an exact discrete Gaussian of the same zCDP. The
        preparation steps (centre, radius, spread, scales, clip) keep the
        floating-point exponential mechanism and Gaussian moves: an exact
        sampler for the exponential-mechanism quantile is not implemented
        (its weights are exponentials of ranks times data-dependent gap
        lengths, which would need exact arithmetic on those lengths); their
        outputs are public parameters of the last step, not values added to
        the released sum.
    diagnostics : bool
        True (the default): spend ``dpsum.release.DIAGNOSTICS_SHARE`` (0.02)
        of the budget (taken from the mean's share; part of the stated
        guarantee) on private counts of the rows the last step clipped and of
        the rows outside the box, and warn
        (:class:`~dpsum.release.PublicInputWarning`) when either is
        far above the design's expectation (``n p_C`` and 0). They also give
        :meth:`~dpsum.release.PipelineRelease.data_intervals`. False turns
        this off.
    session : dpsum.session.Session, optional
        The analysis's budget: the pipeline is one ``rho``-zCDP event (every
        path spends at most ``rho``), charged, or refused if it does not fit,
        before the data's values are read. Without one the release is a
        one-off (its record's ``accounting`` says so).
    privacy_unit, max_rows
        As for :func:`~dpsum.mechanisms.elliptical_gaussian_mechanism`: one vector per unit
        (at most ``max_rows`` rows, chosen by keyed hash); the pipeline then runs
        on one row per unit and ``neighbouring`` is over units (replace-one: the
        number of units ``n`` is public; add-remove: it is counted privately).
    per_unit : {"sum", "mean"}, optional
        How a unit's kept rows become its one vector (default: ``"mean"`` for
        :func:`private_mean`, ``"sum"`` for :func:`private_sum`). The mean over people
        needs ``"mean"`` (each unit weighs as one row, however many rows it has); the
        sum of all rows needs ``"sum"`` (a unit's share of the total is the sum of its
        rows), and ``"sum"`` with :func:`private_mean` is the mean per-unit total. With
        ``"sum"`` the box grows to hold a sum of up to ``m = max_rows`` rows,
        ``[min(lower, m lower), max(upper, m upper)]``; with ``"mean"`` it is unchanged.
    objective : {"total", "relative"}, array_like of shape (d,), or None
        What the last step's noise shape minimises: ``"total"``, the squared
        error of the whole vector in the data's units; ``"relative"``, each
        column's squared error relative to its box width, on every path
        (weights ``u_j ∝ (upper_j - lower_j)^-2``: on the box path equal
        relative noise, :func:`dpsum.design.elliptical_scaling`; on the
        scaled path :func:`robust_scaling` of the private scales measured in
        units of each column's width, mapped back, ``b_j ∝ u_j^(1/4)
        s_j^(-1/2)`` but for the floor, which is taken in those units); or
        positive per-column weights on the squared error, used the same
        way. (The box is public and in the user's units; the private scales
        are floored by a multiple of their mean, which in the data's units
        would lift the small columns' scales to the large ones'.) The isotropic path (``b = 1``) does
        not depend on it. None (the default) is ``"relative"`` for a pandas
        DataFrame and ``"total"`` otherwise: a DataFrame's columns are
        named quantities, often in different units (ages, incomes, ratios),
        whose squared errors do not add up to anything meaningful, and a
        user reads each column's error against its own range; an array is
        one vector in one space. The choice is recorded in
        ``release.objective``. (The bias check still compares the two
        paths by their total squared error.)


    Returns
    -------
    PipelineRelease
        Its ``confidence_intervals`` cover the mean (sum) of the *clipped*
        rows; its ``data_intervals`` the data mean (sum), assuming every row
        lies in the box (refused when the private count of rows outside the
        box contradicts that). A mean is projected onto the box
        (post-processing; under that assumption the data mean lies in the box,
        so the error can only fall); ``unprojected`` keeps the estimate before
        the projection, around which ``confidence_intervals`` are centred.
        ``notes`` holds the warnings raised, ``strategy`` the steps that ran.

    Warns
    -----
    PublicInputWarning
        Too few rows for a coordinate-wise centre (before anything is spent
        when ``n`` is public), a fallback, or the diagnostics above.

    Notes
    -----
    The rule for few rows or a small budget (``scaling="adaptive"``, the
    default). It is decided from ``n`` under replace-one (public: before
    anything is spent) and from the private count ``ñ`` under add-remove
    (post-processing of the count; every later share depends on it, and the
    privacy proof conditions on it). A quantile step with parameter
    ``epsilon`` is reliable when the exponential weight of an output half the
    data away from the median is at most ``exp(-margin)``, i.e.
    ``epsilon n >= 4 Delta_u margin``:

    1. *coordinate center* when the ``d`` coordinate-wise medians are
       reliable with ``CENTER_MARGIN`` (30) within ``MAX_COORDINATE_SHARE``
       (15%) of ``rho``;
    2. otherwise a *whole-vector center* when one scalar quantile is
       reliable with ``SCALAR_MARGIN`` (12) within that cap: first one
       Gaussian count (standard deviation ``0.1 n``) of the rows within the
       public break-even distance of the box's midpoint decides, as
       post-processing, whether clipping around a center can beat the box
       (more than half the rows within it); then up to three clipped-mean
       moves from the midpoint. When the count says box and the first move
       is cheap (``PROBE_COST``), a second count around the center after
       that move must say so too (data piled in a corner of the box are far
       from its midpoint). When the steps before the mean would take
       more than half of ``rho``, the whole-vector center clips
       isotropically (no spread, scales or clip steps) with fewer moves; if
       even one move does not fit with reliable radii, rule 3;
    3. otherwise the *box*: the Elliptical Gaussian mechanism on the box.

    Every path spends at most the stated ``rho`` in zCDP terms (the steps
    are calibrated to shares of ``rho`` a relative ``2^-40`` below it, so that
    no rounding makes the exact total exceed it); an ``(epsilon, delta)``
    budget is the largest ``rho`` that converts to it. One exception is exact
    instead: a one-off ``(epsilon, delta)`` release under replace-one (not
    ``secure``) whose box (rule 3) follows from public ``n`` is calibrated
    like the Elliptical Gaussian mechanism, by the analytic Gaussian
    calibration (:prf:ref:`pipeline-design-prop-public-box`;
    ``release.calibration`` is ``"analytic"``).

    4. after the clip radius, the *bias check*: a Gaussian release (share
       between 0.02 and 0.1 of ``rho``, taken from the mean's) of the rows'
       total clipping displacement, each row's capped at the box's diameter
       and summed exactly; when it says, beyond its noise, that clipping's
       bias and noise exceed the box's error, the release is the box's
       (strategy ``"box (bias check)"``). On skewed or heavy-tailed columns,
       where the model's clip radius leaves a bias that does not fall with
       ``n``, this makes the error fall like the box's.

    Each fallback warns and is recorded in ``release.strategy``. With
    ``scaling="scaled"`` or ``"isotropic"`` the coordinate-wise center always
    runs (with a warning when it is unreliable).

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(3.0, [1.0, 10.0], size=(20_000, 2))
    >>> r = private_mean(X, lower=-1000, upper=1000, epsilon=1.0, delta=1e-6, rng=1)
    >>> bool(np.all(np.abs(r.estimate - 3.0) < 0.5)), r.guarantee.epsilon <= 1.0
    (True, True)
    """
    return _run(X, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho,
                neighbouring=neighbouring, budget=budget, scaling=scaling,
                clip_probability=clip_probability, regularization=regularization, rng=rng,
                statistic="mean", secure=secure, diagnostics=diagnostics, session=session,
                objective=objective, units=(privacy_unit, max_rows, per_unit))


def private_sum(X: ArrayLike, *, lower: Any, upper: Any, epsilon: float | None = None,
                delta: float | None = None, rho: float | None = None,
                neighbouring: Neighbouring | str = "replace",
                budget: Mapping | None = None, scaling: str = "adaptive",
                clip_probability: float | None = None,
                regularization: float = REGULARIZATION, rng: Any = None,
                secure: bool = False, diagnostics: bool = True,
                session: Any = None, privacy_unit: Any = None,
                max_rows: int | None = None,
                per_unit: str | None = None,
                objective: str | ArrayLike | None = None) -> PipelineRelease:
    """The private sum of the rows of ``X`` with no public data model.

    The same pipeline as :func:`private_mean`; the estimate is
    ``n c + b^{-1} (T + noise)`` (``ñ c + ...`` under add-remove).

    Parameters
    ----------
    X, lower, upper, epsilon, delta, rho, neighbouring, budget, scaling, clip_probability, regularization, rng, secure, diagnostics, session, privacy_unit, max_rows, per_unit, objective
        As for :func:`private_mean` (``per_unit`` defaults to ``"sum"`` here).

    Returns
    -------
    PipelineRelease
        As for :func:`private_mean`, for the sum: its intervals cover the sum
        of the clipped rows, ``data_intervals`` the data's sum.
    """
    return _run(X, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho,
                neighbouring=neighbouring, budget=budget, scaling=scaling,
                clip_probability=clip_probability, regularization=regularization, rng=rng,
                statistic="sum", secure=secure, diagnostics=diagnostics, session=session,
                objective=objective, units=(privacy_unit, max_rows, per_unit))
