"""The :class:`Release` record returned by every vector mechanism of :mod:`dpsum`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import ndtri

from dpsum import _validation as V
from dpsum._enums import _StrEnum
from dpsum.design.clipping_loss import clipping_loss_moment
from dpsum.privacy.composition import ComposedGuarantee
from dpsum.privacy.neighbouring import Neighbouring
from dpsum.session import ONE_OFF
from dpsum.release.noise import (
    ConfidenceBall,
    Intervals,
    grid_noise_law,
    log_sidak,
    noise_norm_quantile,
    pipeline_intervals,
    pipeline_radius,
    short_array,
    z_from_log,
)

__all__ = [
    "Mechanism",
    "Calibration",
    "Release",
    "PublicInputWarning",
    "DIAGNOSTICS_SHARE",
    "BudgetSplit",
    "PipelineRelease",
    "confidence_intervals",
    "confidence_ball",
    "require_gaussian_noise",
]


class Mechanism(_StrEnum):
    """Which mechanism produced a :class:`Release`.

    A ``str`` enum: ``release.mechanism == "clipped gaussian"`` still holds.

    Examples
    --------
    >>> Mechanism.CLIPPED_GAUSSIAN == "clipped gaussian"
    True
    >>> str(Mechanism.GAUSSIAN_DATA)
    'gaussian data'
    """

    #: the Gaussian mechanism with the analytic calibration (:prf:ref:`gaussian-thm-analytic`).
    GAUSSIAN_ANALYTIC = "gaussian (analytic)"
    #: the Gaussian mechanism with the classic calibration (:prf:ref:`gaussian-thm-classic`).
    GAUSSIAN_CLASSIC = "gaussian (classic)"
    #: the Elliptical Gaussian mechanism (a box known in advance).
    ELLIPTICAL_GAUSSIAN = "elliptical gaussian"
    #: the Gaussian-data mechanism (clipping in a scaled space for Gaussian data).
    GAUSSIAN_DATA = "gaussian data"
    #: The isotropic clipping baseline.
    CLIPPED_GAUSSIAN = "clipped gaussian"
    #: The Laplace mechanism (pure epsilon-DP, L1 sensitivity).
    LAPLACE = "laplace"
    #: The shaped Laplace mechanism: Laplace noise shaped to a box (pure epsilon-DP).
    SHAPED_LAPLACE = "shaped laplace"
    #: The private pipeline (:func:`dpsum.pipeline.private_mean`,
    #: :func:`dpsum.pipeline.private_sum`): a :class:`PipelineRelease`.
    PRIVATE_PIPELINE = "private pipeline"


class Calibration(_StrEnum):
    """Which theorem fixed the noise multiplier ``sigma_opt``.

    Examples
    --------
    >>> Calibration("classic") is Calibration.CLASSIC
    True
    """

    #: Balle and Wang's exact calibration (:prf:ref:`gaussian-thm-analytic`).
    ANALYTIC = "analytic"
    #: Dwork and Roth's classic calibration (:prf:ref:`gaussian-thm-classic`), epsilon < 1 only.
    CLASSIC = "classic"
    #: Laplace noise of scale L1-sensitivity / epsilon (pure DP; no delta).
    LAPLACE = "laplace"
    #: The grid path's discrete Gaussian: zCDP (Canonne, Kamath and Steinke
    #: 2020, Theorem 14) converted with their Proposition 12.
    DISCRETE = "discrete gaussian (zCDP)"
    #: The grid path's discrete Laplace: scale (integer L1 sensitivity) /
    #: epsilon on the grid, pure epsilon-DP.
    DISCRETE_LAPLACE = "discrete laplace"
    #: Zero-concentrated DP (Bun and Steinke 2016): Gaussian noise of
    #: multiplier ``sigma_opt`` is ``1 / (2 sigma_opt^2)``-zCDP (``rho``).
    ZCDP = "gaussian (zCDP)"



@dataclass(frozen=True)
class Release(V.Record):
    """What a mechanism releases, and the public parameters it used.

    Every field is either the private output (``estimate``) or a function of
    public inputs only, so the whole record may be published, and it holds
    everything needed to recompute the guarantee. Data-dependent counts (rows
    clipped, values clamped) are deliberately absent: they are not
    differentially private and come only from an explicit call of
    :func:`dpsum.mechanisms.release_diagnostics`.

    The record is immutable in fact: array fields are read-only float64
    copies, never the caller's arrays.

    Attributes
    ----------
    estimate : numpy.ndarray
        The differentially private estimate of the sum, shape ``(d,)``.
    noise_std : numpy.ndarray
        Standard deviation of the noise added to each coordinate (Gaussian,
        or Laplace for :func:`dpsum.mechanisms.laplace_mechanism`).
    scaling : numpy.ndarray or None
        The scaling vector ``b`` (the Elliptical Gaussian and Gaussian-data mechanisms), or None.
    clip_norm : float or None
        The clip radius ``C`` in the scaled space, or None if nothing is clipped.
    epsilon, delta : float or None
        The privacy guarantee; None for a release calibrated in zCDP
        (:attr:`rho`) without a conversion to ``(epsilon, delta)``.
    neighbouring : Neighbouring
        The neighbouring relation the guarantee refers to.
    sigma_opt : float
        The noise multiplier for unit L2 sensitivity (:prf:ref:`gaussian-thm-analytic`, or
        :prf:ref:`gaussian-thm-classic` when the classic calibration was requested).
    sensitivity : float
        The sensitivity of the released statistic in the space where the noise
        is added, in the norm :attr:`sensitivity_norm` names: L2 (noise
        ``sigma_opt * sensitivity``) for the Gaussian mechanisms, L1 for the
        Laplace mechanism.
    mechanism : Mechanism
        The mechanism that produced the release (a ``str`` enum).
    center : numpy.ndarray or None
        The public point the rows are measured from (None when zero or
        unused): the model's centre ``c`` for the Gaussian-data mechanism,
        the box's midpoint ``(lower + upper) / 2`` for the Elliptical Gaussian
        mechanism (its rows are clamped around it).
    clip_probability : float or None
        The clip probability ``p_C`` of the Gaussian-data mechanism (None otherwise).
    calibration : Calibration
        Which calibration gave ``sigma_opt``.
    widths : numpy.ndarray or None
        The box widths ``Delta_j`` of the Elliptical Gaussian mechanism (None otherwise).
    secure : bool
        True when the release took the grid path (``secure=True``): the
        statistic was rounded to the grid ``2^grid_exponent`` and summed
        exactly in integers, and the noise is exact discrete noise (its scale
        parameter in :attr:`discrete_scale`; ``noise_std`` is still its
        standard deviation). False: floating-point sum and NumPy's samplers,
        not safe against floating-point attacks.
    grid_exponent : int or None
        ``K`` of the grid path: the noisy statistic in the space where the
        noise was added (``estimate`` times ``scaling``, less ``n * center``
        under replace-one) is an integer multiple of ``2^K``. None on the
        floating-point path.
    discrete_scale : numpy.ndarray or None
        On the grid path with discrete Gaussian noise: the noise of coordinate
        ``j`` is ``u_j Z_j`` with ``Z_j ~ N_Z(0, sigma^2)``, and this field holds
        ``sigma u_j`` (the scale parameter in the units of ``estimate``; the
        standard deviation ``noise_std`` is slightly below it when ``sigma`` is
        small). None otherwise.
    statistic : {"sum", "mean"}
        What ``estimate`` estimates. A mean divides the sum, its noise and its
        intervals by the public ``n`` (replace-one only: under add-remove the
        row count is private, so a vector mechanism refuses ``statistic="mean"``;
        :func:`dpsum.pipeline.private_mean` releases a private count instead).
    n : int or None
        The public row count (replace-one), None under add-remove.
    lower, upper : numpy.ndarray or None
        The public box of the Elliptical Gaussian mechanism (None otherwise).
    stds : numpy.ndarray or None
        The public model scales of the Gaussian-data mechanism (None otherwise).
    columns : tuple or None
        The column labels of a pandas input (see :meth:`to_pandas`).
    clip_count, clip_count_std : float or None
        With ``diagnostics``: a private count of the rows clipped (or, for the
        Elliptical Gaussian mechanism, of the rows outside the box), clamped
        at 0, and the standard deviation of its Gaussian noise.
    diagnostics_share : float
        The share of the budget (of ``1 / sigma^2``, or of ``rho``) spent on
        ``clip_count``; ``epsilon`` and ``delta`` cover both releases.
    notes : tuple of str
        The warnings the release raised (about its public inputs).
    accounting : str
        Where the release's budget is accounted: ``"session <id>, entry <k>"``
        of a :class:`dpsum.session.Session`'s ledger, or ``"one-off: ..."`` for a
        release made without a session (accounted on its own).
    unprojected : numpy.ndarray or None
        For a mean with a public box (the Elliptical Gaussian mechanism): the
        estimate before it was projected onto the box ``[lower, upper]``
        (unbiased for the clamped mean); ``estimate`` is its projection (the
        clamped mean lies in the box, so the projection never increases the
        error), and the intervals are intersected with the box. None when
        nothing was projected.
    rho : float or None
        The zCDP of a release calibrated by a noise multiplier in zCDP (the
        private pipeline's steps: Gaussian noise ``sigma_opt * sensitivity``
        is ``1 / (2 sigma_opt^2)``-zCDP); None for a release calibrated in
        ``(epsilon, delta)``.
    objective : str
        What the noise's shape minimises: ``"total"`` (the expected squared
        error in the data's units), ``"relative"`` (relative to each
        coordinate's box width, or to its scale for the Gaussian-data
        mechanism) or ``"weights"`` (the per-column weights in
        :attr:`objective_weights`). The mechanisms without a choice of shape
        record ``"total"``.
    objective_weights : numpy.ndarray or None
        The weights ``u_j`` of ``objective="weights"`` (None otherwise).
    privacy_unit : str or None
        What one neighbouring step changes: None for one row; with
        ``privacy_unit=`` the contribution bound, for example
        ``"a privacy unit: at most 3 rows each, combined by their sum"`` (the
        relation is then over units, and ``n`` counts units).

    Examples
    --------
    >>> from dpsum.mechanisms import gaussian_mechanism
    >>> r = gaussian_mechanism([1.0, 2.0], epsilon=1.0, delta=1e-5, sensitivity=1.0, rng=0)
    >>> r.mechanism, r.estimate.flags.writeable
    (<Mechanism.GAUSSIAN_ANALYTIC: 'gaussian (analytic)'>, False)
    """

    estimate: np.ndarray
    noise_std: np.ndarray
    scaling: np.ndarray | None
    clip_norm: float | None
    epsilon: float | None
    delta: float | None
    neighbouring: Neighbouring
    sigma_opt: float
    sensitivity: float
    mechanism: Mechanism
    center: np.ndarray | None = None
    clip_probability: float | None = None
    calibration: Calibration = Calibration.ANALYTIC
    widths: np.ndarray | None = None
    secure: bool = False
    grid_exponent: int | None = None
    discrete_scale: np.ndarray | None = None
    statistic: str = "sum"
    n: int | None = None
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    stds: np.ndarray | None = None
    columns: tuple | None = None
    clip_count: float | None = None
    clip_count_std: float | None = None
    diagnostics_share: float = 0.0
    notes: tuple = ()
    accounting: str = ONE_OFF
    unprojected: np.ndarray | None = None
    rho: float | None = None
    objective: str = "total"
    objective_weights: np.ndarray | None = None
    privacy_unit: str | None = None

    def __post_init__(self) -> None:
        for name, value in _release_fields(self).items():
            object.__setattr__(self, name, value)

    @property
    def sensitivity_norm(self) -> str:
        """``"L1"`` for the Laplace mechanism, ``"L2"`` for the others: the norm
        in which :attr:`~dpsum.release.Release.sensitivity` is measured."""
        return "L1" if self.mechanism is Mechanism.LAPLACE else "L2"

    @property
    def expected_squared_error(self) -> float:
        """Expected squared L2 norm of the added noise, ``sum_j noise_std_j^2``
        (:prf:ref:`the expected-norm corollary <definitions-cor-expected-norm>`). This is the error against the clipped sum; clipping
        bias comes on top of it.

        Examples
        --------
        >>> from dpsum.mechanisms import gaussian_mechanism
        >>> r = gaussian_mechanism([1.0, 2.0], epsilon=1.0, delta=1e-5, sensitivity=1.0, rng=0)
        >>> round(r.expected_squared_error / r.noise_std[0] ** 2, 12)
        np.float64(2.0)
        """
        return float(np.sum(np.square(self.noise_std)))

    def confidence_ball(self, beta: float) -> ConfidenceBall:
        """The simultaneous ``(1 - beta)`` ball around the estimate that covers the
        protected sum; see :func:`dpsum.release.confidence_ball`."""
        return confidence_ball(self, beta)

    def confidence_intervals(self, beta: float = 0.05, *, simultaneous: bool = False
                             ) -> Intervals:
        """Per-coordinate ``(1 - beta)`` intervals for the protected statistic
        (:attr:`target`); see :func:`dpsum.release.confidence_intervals`."""
        return confidence_intervals(self, beta, simultaneous=simultaneous)

    @property
    def target(self) -> str:
        """The quantity :meth:`confidence_intervals` covers, in words."""
        stat = self.statistic
        if self.mechanism is Mechanism.ELLIPTICAL_GAUSSIAN:
            text = f"the {stat} of the rows clamped to the box [lower, upper]"
        elif self.mechanism in (Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN):
            text = f"the {stat} of the clipped rows"
        else:
            text = "the exact value"
        return text + (" rounded to the grid" if self.secure else "")

    def data_intervals(self, beta: float = 0.05, *, simultaneous: bool = False) -> Intervals:
        """Intervals for the **data** sum or mean, where the library can prove one.

        See :func:`dpsum.release.data_intervals`."""
        return data_intervals(self, beta, simultaneous=simultaneous)

    def __repr__(self) -> str:
        return _short_repr(self, "Release", self._who())

    # -- what differs between the records: the module's functions call these
    def _who(self) -> str:
        return str(self.mechanism)

    def _bites(self) -> bool:
        return _release_bites(self)

    def _intervals(self, beta: Any, simultaneous: Any) -> Intervals:
        return _release_intervals(self, beta, simultaneous)

    def _ball(self, beta: Any) -> ConfidenceBall:
        return _release_ball(self, beta)

    def _data_intervals(self, b: float, sim: bool) -> Intervals:
        return _release_data_intervals(self, b, sim)

    def summary(self, beta: float = 0.05, rows: int = 10) -> str:
        """A plain-text table: per coordinate the estimate, the ``(1 - beta)``
        interval's half-width and the noise std; then the public set-up and
        the guarantee, rounded. ``rows`` coordinates at most."""
        return _summary(self, beta, rows)

    def to_dict(self, beta: float = 0.05) -> dict:
        """The release as plain JSON-ready data: estimate, intervals, guarantee,
        neighbouring relation, public inputs and the accuracy statement."""
        return _to_dict(self, beta)

    def to_pandas(self, beta: float = 0.05) -> Any:
        """A :class:`pandas.DataFrame` indexed by the input's columns: estimate,
        lower, upper (the ``(1 - beta)`` intervals) and noise_std. Needs pandas."""
        return _to_pandas(self, beta)


def _box_fields(rec: Any, d: int) -> dict:
    lower = V.record_array(rec.lower, "lower", size=d)
    upper = V.record_array(rec.upper, "upper", size=d)
    if (lower is None) != (upper is None):
        raise ValueError("lower and upper must be given together (the public box)")
    if lower is not None and upper is not None and not np.all(lower < upper):
        raise ValueError("lower must be < upper in every coordinate")
    return {"lower": lower, "upper": upper}


def _release_fields(rec: Release) -> dict:
    """The checked fields of a :class:`Release`, each error naming its field."""
    estimate = V.record_array(rec.estimate, "estimate", finite=False, optional=False)
    noise_std = V.record_array(rec.noise_std, "noise_std", positive=True, optional=False)
    assert estimate is not None and noise_std is not None
    # the estimate has the noise's shape, after leading batch axes (the
    # audit's batched releases hold many estimates in one record)
    shape, d = noise_std.shape, noise_std.size
    if estimate.shape[estimate.ndim - noise_std.ndim:] != shape \
            or estimate.ndim < noise_std.ndim or (noise_std.ndim == 0 < estimate.ndim):
        raise ValueError(f"noise_std must have the shape of the estimate, got {shape} for an "
                         f"estimate of shape {estimate.shape}")
    out: dict = {"estimate": estimate, "noise_std": noise_std}
    out["scaling"] = V.record_array(rec.scaling, "scaling", positive=True, size=d)
    out["clip_norm"] = V.record_scalar(rec.clip_norm, "clip_norm", low=0.0, closed_low=False,
                                       optional=True)
    out["rho"] = None if rec.rho is None else V.check_positive(rec.rho, "rho", scalar=True)
    # calibrated in zCDP (rho), the (epsilon, delta) conversion is optional
    zcdp = out["rho"] is not None
    out["epsilon"] = None if zcdp and rec.epsilon is None else \
        V.check_epsilon(rec.epsilon, scalar=True)
    out["delta"] = None if zcdp and rec.delta is None else \
        V.check_delta(rec.delta, allow_zero=True, scalar=True)
    out["neighbouring"] = Neighbouring.parse(rec.neighbouring)
    out["sigma_opt"] = V.check_positive(rec.sigma_opt, "sigma_opt", scalar=True)
    out["sensitivity"] = V.check_positive(rec.sensitivity, "sensitivity", scalar=True)
    out["mechanism"] = Mechanism.parse(rec.mechanism, "mechanism")
    out["center"] = V.record_array(rec.center, "center", size=d)
    out["clip_probability"] = V.record_scalar(rec.clip_probability, "clip_probability",
                                              low=0.0, high=1.0, closed_low=False,
                                              closed_high=False, optional=True)
    out["calibration"] = Calibration.parse(rec.calibration, "calibration")
    out["widths"] = V.record_array(rec.widths, "widths", positive=True, size=d)
    out["secure"] = V.check_bool(rec.secure, "secure")
    out["grid_exponent"] = V.record_scalar(rec.grid_exponent, "grid_exponent", optional=True,
                                           integer=True)
    out["discrete_scale"] = V.record_array(rec.discrete_scale, "discrete_scale", positive=True,
                                           shape=shape)
    out["statistic"] = V.check_choice(rec.statistic, "statistic", ("sum", "mean"))
    out["n"] = V.record_scalar(rec.n, "n", low=1, optional=True, integer=True)
    out.update(_box_fields(rec, d))
    out["stds"] = V.record_array(rec.stds, "stds", positive=True, size=d)
    out["columns"] = V.record_choice_tuple(rec.columns, "columns", object, optional=True)
    out["clip_count"] = V.record_scalar(rec.clip_count, "clip_count", optional=True)
    out["clip_count_std"] = V.record_scalar(rec.clip_count_std, "clip_count_std", low=0.0,
                                            optional=True)
    out["diagnostics_share"] = V.record_scalar(rec.diagnostics_share, "diagnostics_share",
                                               low=0.0, high=1.0, closed_high=False)
    out["notes"] = V.record_choice_tuple(rec.notes, "notes")
    if not isinstance(rec.accounting, str):
        raise TypeError(f"accounting must be a str, got {V.describe(rec.accounting)}")
    out["unprojected"] = _unprojected_field(rec, estimate)
    out.update(_objective_fields(rec, d))
    if rec.privacy_unit is not None and not isinstance(rec.privacy_unit, str):
        raise TypeError(f"privacy_unit must be a str or None, got {V.describe(rec.privacy_unit)}")
    return out


def _objective_fields(rec: Any, d: int) -> dict:
    """``objective`` and ``objective_weights``: weights exactly with ``"weights"``."""
    obj = V.check_choice(rec.objective, "objective", ("total", "relative", "weights"))
    weights = V.record_array(rec.objective_weights, "objective_weights", positive=True,
                             size=d)
    if (obj == "weights") != (weights is not None):
        raise ValueError("objective_weights must be given exactly when objective is 'weights'")
    return {"objective": obj, "objective_weights": weights}


def _unprojected_field(rec: Any, estimate: np.ndarray) -> np.ndarray | None:
    """``unprojected``: the estimate's shape, and only with a box."""
    arr = V.record_array(rec.unprojected, "unprojected", shape=estimate.shape)
    if arr is not None and (rec.lower is None or rec.upper is None):
        raise ValueError("unprojected needs the box lower, upper it was projected onto")
    return arr


_STEPS = ("count", "center", "radius", "spread", "scales", "clip", "mean", "diagnostics",
          "check")


@dataclass(frozen=True)
class BudgetSplit(V.Record):
    """Shares of a total zCDP budget ``rho`` over the pipeline's steps.

    The shares are public (functions of ``n``, ``d``, ``rho`` and the
    options), non-negative and sum to 1; a step that does not run has share
    0. ``count`` runs only under add-remove, ``radius`` and ``scales`` only
    with private scaling, ``spread`` (the median L1 norm of the adaptive
    choice between scaled and isotropic clipping) only with
    ``scaling="adaptive"``. ``center`` is the total of the center's steps
    (several under the whole-vector center). ``check`` is the share of the
    adaptive pipeline's private choice between clipping and the box: the
    bias check and its veto together (both taken from the mean's share;
    ``release.steps`` lists them apart).
    """

    count: float
    center: float
    radius: float
    scales: float
    clip: float
    mean: float
    spread: float = 0.0
    diagnostics: float = 0.0
    check: float = 0.0

    def __post_init__(self) -> None:
        for name in _STEPS:
            V.record_scalar(getattr(self, name), name, low=0.0, high=1.0)
        total = math.fsum(getattr(self, name) for name in _STEPS)
        if not abs(total - 1.0) <= 1e-9:
            raise ValueError(f"the shares {', '.join(_STEPS)} of a BudgetSplit must sum to 1")

    def as_dict(self) -> dict:
        """The shares by step name."""
        return {name: getattr(self, name) for name in _STEPS}


@dataclass(frozen=True)
class PipelineRelease(Release):
    """What :func:`~dpsum.pipeline.private_mean` / :func:`~dpsum.pipeline.private_sum`
    release: a :class:`Release` plus the pipeline's steps.

    Every field is a private output or a function of public inputs and
    earlier private outputs; nothing is a non-private statistic of the data.
    The fields of :class:`Release` keep their meaning, with these values:

    - ``mechanism`` is :attr:`~dpsum.release.Mechanism.PRIVATE_PIPELINE`;
      ``calibration`` is :attr:`~dpsum.release.Calibration.ZCDP`, or
      :attr:`~dpsum.release.Calibration.DISCRETE` with ``secure=True``;
    - ``rho`` is the total zCDP of all steps; ``epsilon`` and ``delta`` the
      composed guarantee (``guarantee``) when the budget was given as
      ``(epsilon, delta)``, None for a ``rho`` budget;
    - ``center`` is the private center (step 1), ``scaling`` the scaling
      vector ``b`` (step 4; all ones for ``scaling="isotropic"``),
      ``clip_norm`` the clip radius ``C`` in the scaled space (step 5),
      ``clip_probability`` the model probability ``p_C`` that ``C`` targets;
      ``sigma_opt`` and ``sensitivity`` are the last step's noise multiplier
      and its sensitivity in the scaled space (``2C``, or ``C`` under
      add-remove);
    - ``noise_std`` is the standard deviation of the Gaussian noise in each
      coordinate of the estimate (for the mean under add-remove, relative to
      ``count``); with ``secure=True`` the discrete Gaussian's scale
      parameter (at least its standard deviation), see ``grid_unit``;
    - ``n`` is the public row count under replace-one (None under add-remove:
      see ``count``);
    - ``lower`` and ``upper`` are the public box;
    - with ``diagnostics=True`` (the default), ``clip_count`` is a private
      count of the rows the last step clipped and ``clip_count_std`` the
      standard deviation of its Gaussian noise (and of ``outside_count``'s),
      released with the share ``diagnostics_share`` of ``rho``;
    - ``unprojected``: for a mean, the estimate before its projection onto
      the box.

    Attributes
    ----------
    count : float
        The number of rows: public ``n`` under replace-one, the private
        Gaussian count under add-remove.
    scales : numpy.ndarray or None
        The private per-coordinate scales (step 3); None for ``scaling="isotropic"``.
    budget : BudgetSplit
        The shares of ``rho`` the steps used.
    steps : tuple of PrivacyStep
        Each step's mechanism parameters (``count`` = coordinates).
    guarantee : ComposedGuarantee or None
        The composed (epsilon, delta) guarantee when the budget was given as
        (epsilon, delta); None for a ``rho`` budget.
    strategy : str
        Which steps ran, a function of public inputs and earlier private
        outputs: ``"coordinate center, scaled"``, ``"coordinate center,
        isotropic"``, ``"vector center, scaled"``, ``"vector center,
        isotropic"`` or ``"box"`` (the Elliptical Gaussian mechanism on the
        public box); see :func:`dpsum.pipeline.private_mean`.
    outside_count : float or None
        With ``diagnostics=True``: a private count of the rows outside the box.
    grid_unit : numpy.ndarray or None
        With ``secure=True``: one grid unit of the last step per coordinate,
        in the units of the estimate. ``noise_std`` then holds the discrete
        Gaussian's scale parameter (at least its standard deviation), and the
        intervals and balls widen by one unit, since
        ``Pr[|Z| > t] <= 2 Phi(-t / sigma)`` at integers ``t``.
    """

    count: float = 0.0
    scales: np.ndarray | None = None
    budget: BudgetSplit | None = None
    steps: tuple = field(default=())
    guarantee: ComposedGuarantee | None = None
    strategy: str = "coordinate center, scaled"
    outside_count: float | None = None
    grid_unit: np.ndarray | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, value in _pipeline_fields(self).items():
            object.__setattr__(self, name, value)

    @property
    def target(self) -> str:
        """The quantity :meth:`confidence_intervals` covers, in words."""
        return f"the {self.statistic} of the clipped rows" + (
            " rounded to the grid" if self.secure else "")

    def __repr__(self) -> str:
        return _short_repr(self, "PipelineRelease", self._who())

    def _who(self) -> str:
        return f"private_{self.statistic}"

    def _bites(self) -> bool:
        if self.clip_count is None or self.clip_count_std is None:
            return False
        n = max(float(self.count), 1.0)
        assert self.clip_probability is not None
        return (clipping_excess(self.clip_count, self.clip_count_std,
                                self.clip_probability * n, n)
                or clipping_excess(self.outside_count or 0.0, self.clip_count_std, 0.0, n))

    def _intervals(self, beta: Any, simultaneous: Any) -> Intervals:
        b = float(V.check_probability(beta, "beta", scalar=True))
        sim = V.check_bool(simultaneous, "simultaneous")
        lo, hi = pipeline_intervals(_unprojected(self), b, sim)
        if self.grid_unit is not None:
            lo, hi = lo - self.grid_unit, hi + self.grid_unit
        return Intervals(lo, hi, target=self.target, level=1 - b, simultaneous=sim,
                         columns=self.columns)

    def _ball(self, beta: Any) -> ConfidenceBall:
        b = float(V.check_probability(beta, "beta", scalar=True))
        extra = 0.0 if self.grid_unit is None else float(np.linalg.norm(self.grid_unit))
        return ConfidenceBall(center=np.asarray(_unprojected(self).estimate, dtype=float),
                              radius=pipeline_radius(self, b) + extra, beta=b,
                              target=self.target)

    def _data_intervals(self, b: float, sim: bool) -> Intervals:
        stat = self.statistic
        if self.clip_count is None or self.clip_count_std is None:
            raise ValueError("release has no private clip count: run private_mean/private_sum "
                             "with diagnostics=True for intervals on the data mean")
        if self.neighbouring is Neighbouring.ADD_REMOVE and stat == "mean":
            raise ValueError("release is a private_mean under add-remove neighbouring: its "
                             "error is not a function of public quantities (see "
                             "confidence_intervals)")
        assert self.lower is not None and self.upper is not None and self.center is not None
        if clipping_excess(self.outside_count or 0.0, self.clip_count_std, 0.0,
                           max(float(self.count), 1.0)):
            raise ValueError("release's private count says many rows lie outside the box "
                             "[lower, upper], the assumption of these intervals: widen the "
                             "box (from public knowledge, not from X) and release again")
        b_count = b / 10.0
        lo, hi = self._intervals(b - b_count, sim)
        # the upper quantile from the lower tail: finite however small b_count
        k_up = max(float(self.clip_count) - self.clip_count_std * float(ndtri(b_count)), 0.0)
        reach = np.maximum(self.upper - self.center, self.center - self.lower)
        loss = k_up * np.maximum(reach, 0.0)
        if stat == "mean":
            loss = loss / max(float(self.count), 1.0)
        lo, hi = lo - loss, hi + loss
        if self.unprojected is not None:
            # under the assumption the data mean lies in the box (clamping is
            # monotone: the ends still bracket it and the projected estimate)
            lo, hi = np.clip(lo, self.lower, self.upper), np.clip(hi, self.lower, self.upper)
        return Intervals(lo, hi, target=f"the data {stat}",
                         level=1 - b, simultaneous=sim, columns=self.columns,
                         assumption="every row lies in the box [lower, upper]")


#: Mechanism names of the releases whose noise is a continuous Gaussian with
#: independent coordinates of standard deviation ``noise_std``.
_GAUSSIAN_MECHANISMS = frozenset({
    Mechanism.GAUSSIAN_ANALYTIC, Mechanism.GAUSSIAN_CLASSIC, Mechanism.ELLIPTICAL_GAUSSIAN,
    Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN,
})


def _unprojected(release: PipelineRelease) -> PipelineRelease:
    """The pipeline's record with its unprojected estimate: its noise
    statements hold for every dataset around that one (the clipped rows'
    mean lies in the box only when every row does)."""
    if release.unprojected is None:
        return release
    return dataclasses.replace(release, estimate=release.unprojected, unprojected=None)


def clipping_bites(release: Any) -> bool:
    """Whether the release's private diagnostic count is clearly above what its
    design expected (rows clipped, or rows outside the box): its confidence
    intervals then cover the clipped (clamped) rows' statistic, far from the
    data's. A function of released values only."""
    return isinstance(release, Release) and release._bites()


def _release_bites(release: Release) -> bool:
    if release.clip_count is None or release.clip_count_std is None or release.n is None:
        return False
    expected = 0.0
    if release.mechanism is Mechanism.GAUSSIAN_DATA and release.clip_probability is not None:
        expected = release.clip_probability * release.n
    elif release.mechanism is Mechanism.CLIPPED_GAUSSIAN:
        expected = CLIPPED_FRACTION * release.n
    return clipping_excess(release.clip_count, release.clip_count_std, expected, release.n)


def require_gaussian_noise(release: Any, *, laplace: bool = False) -> Release:
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
    if release.mechanism is Mechanism.PRIVATE_PIPELINE:
        raise ValueError("release comes from the private pipeline (private_mean or "
                         "private_sum), whose steps are private too: this statement is for "
                         "a single mechanism's release; use the release's own "
                         "confidence_intervals, confidence_ball or data_intervals")
    if release.mechanism not in _GAUSSIAN_MECHANISMS:
        raise ValueError(
            f"release comes from mechanism {str(release.mechanism)!r}, whose noise is not a "
            "continuous Gaussian; these intervals would not hold for it")
    return release


def confidence_intervals(release: Release | PipelineRelease, beta: float = 0.05, *,
                         simultaneous: bool = False) -> Intervals:
    r"""Per-coordinate ``(1 - beta)`` confidence intervals for the protected sum.

    ``estimate_j +- noise_std_j z`` covers the quantity the mechanism adds
    noise to (the clipped sum for the Gaussian-data mechanism and the clipping baseline, the
    clamped sum for the Elliptical Gaussian mechanism, the exact statistic for the Gaussian mechanism) with
    probability exactly ``1 - beta`` for every dataset. With
    ``simultaneous=True`` each coordinate uses level ``(1 - beta)^(1/m)`` for
    ``m`` coordinates (Šidák), so all ``m`` intervals cover at once with
    probability exactly ``1 - beta``: the noise coordinates are independent
    (:prf:ref:`accuracy-thm-noise`). For the Laplace mechanism (noise of scale
    ``noise_std / sqrt(2)``) the half-width is ``scale ln(1/beta)``, exact in the
    same way. For a release of the grid path (``secure=True``) the protected
    quantity is the statistic rounded to the grid, the noise is ``q_j Y_j`` with
    ``q_j`` the grid step and ``Y_j`` discrete Gaussian of scale ``tau_Z``, and the
    half-width is ``q_j ceil(tau_Z z)``: at least ``1 - beta``, since
    ``Pr[|Y| > r] <= 2 Phi(-r / tau_Z)`` at integers ``r``
    (:ref:`accuracy-ex-grid`).

    **The private pipeline** (a :class:`~dpsum.release.PipelineRelease` of
    :func:`~dpsum.pipeline.private_sum` or :func:`~dpsum.pipeline.private_mean`).
    The protected quantity is the sum (or mean) of the clipped rows in the
    original units, ``theta = n c + b^{-1} ⊙ T`` (``theta = c + b^{-1} ⊙ T / n``
    for the mean), where ``c``, ``b`` and ``C`` are the released ``center``,
    ``scaling`` and ``clip_norm`` and ``T = sum_i min(1, C / ||x̂_i||) x̂_i``
    with ``x̂_i = (x_i - c) ⊙ b`` (:func:`dpsum.kernels.clipped_sum`). The
    center, scaling and clip radius are themselves private outputs of earlier
    steps, computed from the data; they are released with the estimate, so
    the statements are made conditionally on them, which is legitimate: the
    last step's noise is drawn after them and independently of them and of the
    data, so given ``(c, b, C)`` the noise is still Gaussian with the recorded,
    public standard deviations (and a statement that holds conditionally on
    every value of ``(c, b, C)`` also holds on average over them).

    * Replace-one (``n`` public): ``estimate - theta`` has independent
      ``N(0, noise_std_j^2)`` coordinates, and the intervals are exact,
      marginal or Šidák-simultaneous, as for the Gaussian-data mechanism.
    * Add-remove, ``private_sum``: the estimate is ``ñ c + b^{-1} ⊙ (T + noise)``
      with the private count ``ñ = n + Z``, ``Z ~ N(0, sigma_count^2)``, so the
      error is ``Z c + nu`` with ``nu_j ~ N(0, s_j^2)``,
      ``s = sigma_mean Delta_2(C) / b`` (from ``release.steps``). ``c`` depends on
      ``ñ`` (the default budget split and clip probability are functions of
      ``ñ``), so ``Z c`` need not be Gaussian; instead a union bound spends
      ``PIPELINE_COUNT_SHARE * beta`` on ``|Z| <= sigma_count z`` and the rest
      on ``nu`` (marginal or Šidák), and the half-width is
      ``|c_j| sigma_count z_count + s_j z_nu``: coverage at least ``1 - beta``.
    * Add-remove, ``private_mean``: the estimate is ``c + b^{-1}(T + noise) / ñ``,
      so its error is ``nu - (theta - c) Z / ñ`` with ``nu_j ~ N(0, noise_std_j^2)``
      given ``ñ``. On ``|Z| <= sigma_count z`` (failure ``PIPELINE_COUNT_SHARE * beta``),
      with ``u = sigma_count z / ñ`` and ``|theta_j - c_j| <= |estimate_j - c_j| + |error_j|``,
      the half-width is ``(s_j z_nu + u |estimate_j - c_j|) / (1 - u)``: coverage at
      least ``1 - beta`` (a ValueError when ``u >= 1``).

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
    Intervals
        Lower and upper ends, shaped like ``release.estimate`` (it unpacks as
        ``lo, hi``), with ``target`` naming what they cover.

    Raises
    ------
    ValueError
        For a noise law these statements do not cover, or a ``private_mean``
        under add-remove whose private count is too small for one.

    Examples
    --------
    >>> import dpsum
    >>> from dpsum.release import noise_coordinate_quantile
    >>> rel = dpsum.gaussian_mechanism([10.0, 20.0], epsilon=1.0, delta=1e-6, sensitivity=1.0, rng=0)
    >>> lo, hi = confidence_intervals(rel, 0.05)
    >>> bool(np.allclose(hi - lo, 2 * noise_coordinate_quantile(rel.noise_std, 0.05)))
    True

    A release of the private pipeline under replace-one: the same exact intervals
    around its estimate, with its recorded ``noise_std``.

    >>> X = np.random.default_rng(0).normal(3.0, [1.0, 10.0], size=(20_000, 2))
    >>> pm = dpsum.private_mean(X, lower=-1000, upper=1000, epsilon=1.0, delta=1e-6, rng=1)
    >>> lo, hi = confidence_intervals(pm, 0.05, simultaneous=True)
    >>> bool(np.allclose(hi - lo, 2 * noise_coordinate_quantile(pm.noise_std, 1 - 0.95 ** 0.5)))
    True
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpsum Release, got {type(release).__name__}")
    return release._intervals(beta, simultaneous)


def _release_intervals(release: Release, beta: Any, simultaneous: Any) -> Intervals:
    rel = require_gaussian_noise(release, laplace=True)
    b = float(V.check_probability(beta, "beta", scalar=True))
    simultaneous = V.check_bool(simultaneous, "simultaneous")
    s = np.asarray(rel.noise_std, dtype=float)
    lb = math.log(b)
    if simultaneous:
        lb = log_sidak(lb, s.size)  # log of the per-coordinate failure probability
    grid = grid_noise_law(rel)
    if rel.mechanism is Mechanism.LAPLACE:
        # Laplace noise of scale s / sqrt(2): Pr[|e_j| > t] = exp(-t sqrt(2) / s)
        half = s / math.sqrt(2.0) * -lb
    elif grid is not None:
        # discrete Gaussian: Pr[|Z| > t] <= 2 Phi(-t / sigma) at integers t >= 0
        sigma, unit = grid
        half = unit * math.ceil(sigma * z_from_log(lb) * (1.0 + 1e-12))
    else:
        half = s * z_from_log(lb)
    est = np.asarray(rel.estimate, dtype=float)
    lo, hi = est - half, est + half
    if rel.unprojected is not None:
        # the projected estimate and the protected mean both lie in the box;
        # clamping is monotone, so the clamped ends still bracket both
        lo, hi = np.clip(lo, rel.lower, rel.upper), np.clip(hi, rel.lower, rel.upper)
    return Intervals(lo, hi, target=rel.target,
                     level=1 - float(V.check_probability(beta, "beta", scalar=True)),
                     simultaneous=simultaneous, columns=rel.columns)


def confidence_ball(release: Release | PipelineRelease, beta: float) -> ConfidenceBall:
    r"""The simultaneous ``(1 - beta)`` ball around the estimate.

    Its radius is :func:`noise_norm_quantile` of the release's noise, so it
    covers the protected sum with probability exactly ``1 - beta`` for every
    dataset (:prf:ref:`accuracy-thm-noise`). For a release of the grid path the
    radius is that quantile plus ``||q||``, the norm of one grid step per
    coordinate, and the coverage at least ``1 - beta``
    (:ref:`accuracy-ex-grid`).

    For the private pipeline (a :class:`~dpsum.release.PipelineRelease`) the
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
    >>> ps = dpsum.private_sum(X, lower=-1000, upper=1000, epsilon=1.0, delta=1e-6, rng=1)
    >>> confidence_ball(ps, 0.05).radius == noise_norm_quantile(ps.noise_std, 0.05)
    True
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpsum Release, got {type(release).__name__}")
    return release._ball(beta)


def _release_ball(release: Release, beta: Any) -> ConfidenceBall:
    rel = require_gaussian_noise(release)
    grid = grid_noise_law(rel)
    if grid is None:
        r = noise_norm_quantile(rel.noise_std, beta)
    else:  # |Z_j| is dominated by |X_j| + 1, X_j ~ N(0, sigma^2)
        sigma, unit = grid
        r = noise_norm_quantile(sigma * unit, beta) + float(np.linalg.norm(unit))
    return ConfidenceBall(center=np.asarray(rel.estimate, dtype=float), radius=r,
                          beta=float(V.check_probability(beta, "beta", scalar=True)),
                          target=rel.target)


# ---------------------------------------------------------------------------
# Warnings about public inputs, data intervals, and readable records
# ---------------------------------------------------------------------------
class PublicInputWarning(UserWarning):
    """A release's public inputs (box, centre, scales, n) look wrong for its data.

    Raised from a *private* diagnostic (a count released with a stated share of
    the budget) or from public quantities only (``n``, ``d``, the budget); never
    from a non-private statistic of the data.
    """


#: Default share of the budget spent on the diagnostic counts (of ``rho``, or
#: of ``1 / sigma^2`` for a single Gaussian mechanism).
DIAGNOSTICS_SHARE = 0.02

#: Without a data model, the clipping baseline's diagnostics warn when clearly
#: more than this fraction of the rows were clipped.
CLIPPED_FRACTION = 0.05

#: A count exceeds the design's expectation "much" when it exceeds it by this
#: many noise standard deviations plus this fraction of ``n``.
_WARN_SIGMAS = 4.0
_WARN_FRACTION = 0.01


def clipping_excess(count: float, count_std: float, expected: float, n: float) -> bool:
    """Whether a private count of clipped rows is clearly above what the design expected.

    Under the design the number of rows clipped is binomial with mean
    ``expected`` (out of ``n``), and the private count adds noise of standard
    deviation ``count_std``: "clearly above" is more than ``_WARN_SIGMAS``
    standard deviations of both together, plus ``_WARN_FRACTION`` of ``n``.
    """
    nn = max(n, 1.0)
    p = min(max(expected / nn, 0.0), 1.0)
    spread = math.sqrt(count_std * count_std + expected * (1.0 - p))
    return bool(count - expected > _WARN_SIGMAS * spread + _WARN_FRACTION * nn)


def _fraction(count: float, n: float) -> str:
    return f"{100.0 * min(max(count / max(n, 1.0), 0.0), 1.0):.3g}%"


def clipping_message(who: str, what: str, count: float, expected: float, n: float,
                     cause: str) -> str:
    """The warning text: the private share of rows affected, the design's
    expectation, the likely cause."""
    return (f"{who}: about {_fraction(count, n)} of the rows were {what} (a private count), "
            f"where the design expected {_fraction(expected, n)}: {cause}")


def data_intervals(release: Release | PipelineRelease, beta: float = 0.05, *,
                   simultaneous: bool = False) -> Intervals:
    r"""Intervals for the **data** sum or mean, with the assumption they rest on.

    :func:`confidence_intervals` covers the quantity the mechanism protects
    (for clipping mechanisms, the sum or mean of the *clipped* rows), exactly.
    These intervals cover the sum or mean of the data themselves, with
    probability at least ``1 - beta``, wherever a proof exists:

    * the Gaussian and Laplace mechanisms: the value itself (no assumption);
    * the Elliptical Gaussian mechanism: assuming every row lies in the box
      ``[lower, upper]`` (then clamping changes nothing);
    * the Gaussian-data mechanism (replace-one): assuming the rows are drawn
      independently from the model ``N(center, diag(stds^2))``; ``beta / 2``
      goes to the noise and ``beta / 2`` to the clipping loss, bounded by
      Chebyshev's inequality with its exact second moment ``n m``
      (:func:`dpsum.accuracy.clipping_loss_moment`; each coordinate's share is
      at most the total);
    * the private pipeline, with its diagnostics: assuming every row lies in
      the box ``[lower, upper]``; a clipped row moves coordinate ``j`` by at
      most ``max(upper_j - c_j, c_j - lower_j)``, and the number of clipped
      rows is at most the private count plus ``z sigma`` (``beta / 10`` spent
      on it).

    The clipping baseline (no model, no box) has none: ``ValueError``. Nor
    has a release whose private diagnostic count contradicts the assumption
    (far more rows clipped, or outside the box, than the design expected;
    the private pipeline: rows outside the box): ``ValueError`` saying so.
    A mean projected onto its box keeps its intervals inside the box.

    Examples
    --------
    >>> import dpsum
    >>> r = dpsum.gaussian_mechanism([1.0, 2.0], epsilon=1.0, delta=1e-6, sensitivity=1.0, rng=0)
    >>> data_intervals(r).target
    'the exact value'
    """
    V.check_record(release, "release", (Release, PipelineRelease))
    # beta is split in parts (noise, count or clipping loss): at least 1e-300
    b = float(V.check_failure_probability(beta, "beta"))
    sim = V.check_bool(simultaneous, "simultaneous")
    return release._data_intervals(b, sim)


def _release_data_intervals(release: Release, b: float, sim: bool) -> Intervals:
    est = np.asarray(release.estimate, dtype=float)
    m = est.size
    stat = release.statistic
    rel = require_gaussian_noise(release, laplace=True)
    if rel.mechanism in (Mechanism.ELLIPTICAL_GAUSSIAN, Mechanism.GAUSSIAN_DATA) and \
            clipping_bites(rel):
        raise ValueError(
            "release's private diagnostic count says far more rows were clipped (or lie "
            "outside the box) than its design expected, so the assumption these intervals "
            "rest on is false for these data; confidence_intervals cover "
            f"{rel.target}. Fix the public inputs (box, center, stds) from public "
            "knowledge, or use dpsum.private_mean")
    if rel.mechanism in (Mechanism.GAUSSIAN_ANALYTIC, Mechanism.GAUSSIAN_CLASSIC,
                         Mechanism.LAPLACE):
        iv = confidence_intervals(rel, b, simultaneous=sim)
        return Intervals(iv[0], iv[1], target="the exact value", level=1 - b,
                         simultaneous=sim, columns=rel.columns)
    if rel.mechanism is Mechanism.ELLIPTICAL_GAUSSIAN:
        iv = confidence_intervals(rel, b, simultaneous=sim)
        return Intervals(iv[0], iv[1], target=f"the data {stat}", level=1 - b,
                         simultaneous=sim, columns=rel.columns,
                         assumption="every row lies in the box [lower, upper]")
    if rel.mechanism is Mechanism.GAUSSIAN_DATA:
        if rel.n is None or rel.stds is None:
            raise ValueError("release has no public n (add-remove neighbouring) or no model "
                             "scales: the clipping loss of its data cannot be bounded")
        assert rel.scaling is not None and rel.clip_norm is not None
        b_noise = b / 2.0
        iv = confidence_intervals(rel, b_noise, simultaneous=sim)
        moment = clipping_loss_moment(rel.stds, rel.scaling, rel.clip_norm)
        # Chebyshev per coordinate (each coordinate's moment is at most the total);
        # with a union over m coordinates for a simultaneous statement
        share = b - b_noise
        per = share / m if sim else share
        loss = math.sqrt(rel.n * moment / per)
        if stat == "mean":
            loss /= rel.n
        return Intervals(iv[0] - loss, iv[1] + loss, target=f"the data {stat}", level=1 - b,
                         simultaneous=sim, columns=rel.columns,
                         assumption="the rows are independent draws from N(center, "
                                    "diag(stds^2)), the model of the design")
    raise ValueError(f"release comes from the {rel.mechanism} mechanism, which has neither a "
                     "data model nor a box: no statement on the data sum can be proved; "
                     "confidence_intervals covers the sum of the clipped rows")


def _rounded(x: float | None, digits: int = 4) -> float | None:
    """``x`` to ``digits`` significant digits, rounded **up**: a published
    epsilon or delta is never below the proved one."""
    if x is None:
        return None
    v = float(x)
    if v <= 0 or not math.isfinite(v):
        return v
    r = float(f"{v:.{digits}g}")
    if r < v:
        step = 10.0 ** (math.floor(math.log10(v)) - digits + 1)
        r = float(f"{r + step:.{digits}g}")
    return r


def _relation(rel: Any) -> str:
    return str(getattr(rel.neighbouring, "value", rel.neighbouring))


def _guarantee(rel: Any) -> dict:
    """epsilon, delta (rounded), neighbouring relation, and rho where there is one."""
    out: dict = {"epsilon": _rounded(rel.epsilon), "delta": _rounded(rel.delta),
                 "neighbouring": _relation(rel)}
    if rel.rho is not None:
        out["rho"] = _rounded(rel.rho)
    if rel.notes:
        out["warnings"] = list(rel.notes)
    return out


def _pipeline_fields(rec: PipelineRelease) -> dict:
    """The checked fields a :class:`PipelineRelease` adds (its :class:`Release`
    fields checked by :func:`_release_fields`), and the common fields it
    requires; each error names its field."""
    estimate = rec.estimate
    d = estimate.size
    if estimate.ndim != 1:
        raise ValueError(f"estimate must be a vector, got shape {estimate.shape}")
    for name in ("center", "scaling", "clip_norm", "clip_probability", "rho"):
        if getattr(rec, name) is None:
            raise TypeError(f"{name} must be given for a PipelineRelease, got None")
    out: dict = {"count": V.record_scalar(rec.count, "count")}
    out["scales"] = V.record_array(rec.scales, "scales", positive=True, size=d)
    if not isinstance(rec.budget, BudgetSplit):
        raise TypeError(f"budget must be a BudgetSplit, got {V.describe(rec.budget)}")
    out["steps"] = V.record_choice_tuple(rec.steps, "steps", object)
    if rec.guarantee is not None and not isinstance(rec.guarantee, ComposedGuarantee):
        raise TypeError(f"guarantee must be a ComposedGuarantee or None, "
                        f"got {V.describe(rec.guarantee)}")
    if not isinstance(rec.strategy, str):
        raise TypeError(f"strategy must be a str, got {V.describe(rec.strategy)}")
    out["outside_count"] = V.record_scalar(rec.outside_count, "outside_count", optional=True)
    out["grid_unit"] = V.record_array(rec.grid_unit, "grid_unit", positive=True, size=d)
    return out


def _short_repr(rel: Any, kind: str, who: str) -> str:
    d = int(np.size(rel.estimate))
    eps = "?" if rel.epsilon is None else f"{rel.epsilon:.4g}"
    dlt = "?" if rel.delta is None else f"{rel.delta:.3g}"
    if rel.epsilon is None and rel.rho is not None:
        eps, dlt = f"rho={rel.rho:.4g}", "-"
    secure = ", secure" if rel.secure else ""
    text = (f"{kind}({who}, {rel.statistic} of {d} coordinates, epsilon={eps}, delta={dlt}, "
            f"{_relation(rel)}{secure}; estimate {short_array(rel.estimate)}; "
            f"noise std {short_array(rel.noise_std, 1)}")
    if rel.notes:
        text += f"; {len(rel.notes)} warning(s), see .notes"
    return text + ")"


def _labels(rel: Any) -> list[str]:
    d = int(np.size(rel.estimate))
    if rel.columns is not None and len(rel.columns) == d:
        return [str(c) for c in rel.columns]
    return [str(j) for j in range(d)]


def _summary(rel: Any, beta: float, rows: int) -> str:
    beta = float(V.check_probability(beta, "beta", scalar=True))
    rows = V.check_integer(rows, "rows", 0)
    iv = rel.confidence_intervals(beta) if _has_intervals(rel) else None
    labels = _labels(rel)
    width = max(8, min(24, max(len(x) for x in labels)))
    level = f"{100 * (1 - float(beta)):.4g}%"
    lines = [f"{type(rel).__name__}: {rel.statistic} ({rel.target if hasattr(rel, 'target') else ''})",
             f"{'column':<{width}} {'estimate':>12} {'+-' + level:>12} {'noise std':>12}"]
    est = np.ravel(np.asarray(rel.estimate, dtype=float))
    std = np.ravel(np.asarray(rel.noise_std, dtype=float))
    half = None if iv is None else np.ravel(iv.half_width)
    for j in range(min(est.size, int(rows))):
        h = "" if half is None else f"{half[j]:.4g}"
        lines.append(f"{labels[j][:width]:<{width}} {est[j]:>12.5g} {h:>12} {std[j]:>12.4g}")
    if est.size > rows:
        lines.append(f"... {est.size - rows} more coordinates")
    g = _guarantee(rel)
    lines.append(f"guarantee: epsilon={g['epsilon']}, delta={g['delta']}, {g['neighbouring']}"
                 + (f", rho={g['rho']}" if "rho" in g else ""))
    if getattr(rel, "privacy_unit", None) is not None:
        lines.append(f"neighbours differ in {rel.privacy_unit}")
    if getattr(rel, "clip_norm", None) is not None:
        lines.append(f"clip radius (scaled space): {rel.clip_norm:.4g}")
    if getattr(rel, "budget", None) is not None:
        shares = ", ".join(f"{k} {v:.3g}" for k, v in rel.budget.as_dict().items() if v > 0)
        lines.append(f"budget by step (shares of rho): {shares}")
    if rel.clip_count is not None:
        lines.append(f"rows clipped (private count): {rel.clip_count:.1f}")
    if getattr(rel, "unprojected", None) is not None:
        lines.append("estimate projected onto the box [lower, upper] (post-processing; "
                     "the unprojected estimate is in .unprojected)")
    if clipping_bites(rel):
        lines.append(f"the intervals above cover {rel.target}, NOT the data {rel.statistic}: "
                     "the private count says many rows were clipped; see data_intervals")
    for note in rel.notes:
        lines.append(f"warning: {note}")
    return "\n".join(lines)


def _has_intervals(rel: Any) -> bool:
    try:
        rel.confidence_intervals(0.05)
    except ValueError:
        return False
    return True


def _jsonable(x: Any) -> Any:
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x)
    if isinstance(x, np.ndarray):
        return [_jsonable(v) for v in x.tolist()]
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return str(x)


def _to_dict(rel: Any, beta: float) -> dict:
    beta = float(V.check_probability(beta, "beta", scalar=True))  # with or without intervals
    out: dict = {
        "mechanism": rel._who(),
        "statistic": rel.statistic,
        "estimate": _jsonable(np.asarray(rel.estimate, dtype=float)),
        "columns": None if rel.columns is None else [str(c) for c in rel.columns],
        "guarantee": {"epsilon": _rounded(rel.epsilon), "delta": _rounded(rel.delta),
                      "neighbouring": _relation(rel),
                      "rounding": "epsilon and delta rounded up to 4 significant digits"},
        "secure": bool(rel.secure),
    }
    if rel.rho is not None:
        out["guarantee"]["rho"] = _rounded(rel.rho)
    if getattr(rel, "budget", None) is not None:
        out["guarantee"]["budget"] = rel.budget.as_dict()
    out["guarantee"]["accounting"] = rel.accounting
    if getattr(rel, "privacy_unit", None) is not None:
        out["guarantee"]["privacy_unit"] = rel.privacy_unit
    public = {}
    for name in ("noise_std", "scaling", "clip_norm", "center", "clip_probability", "widths",
                 "lower", "upper", "stds", "n", "sensitivity", "grid_exponent", "count",
                 "scales", "clip_count", "outside_count", "diagnostics_share", "unprojected",
                 "objective", "objective_weights"):
        if hasattr(rel, name) and getattr(rel, name) is not None:
            public[name] = _jsonable(getattr(rel, name))
    out["public"] = public
    if _has_intervals(rel):
        iv = rel.confidence_intervals(beta)
        out["accuracy"] = {"level": 1 - float(beta), "target": iv.target,
                           "lower": _jsonable(iv.lower), "upper": _jsonable(iv.upper),
                           "statement": ("each interval covers its coordinate of "
                                         f"{iv.target} with probability {1 - float(beta):g}")}
    out["warnings"] = list(rel.notes)
    return out


def _to_pandas(rel: Any, beta: float) -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_pandas needs pandas: pip install pandas") from None
    beta = float(V.check_probability(beta, "beta", scalar=True))
    data = {"estimate": np.asarray(rel.estimate, dtype=float),
            "noise_std": np.asarray(rel.noise_std, dtype=float)}
    if _has_intervals(rel):
        iv = rel.confidence_intervals(beta)
        data["lower"], data["upper"] = iv.lower, iv.upper
    index = list(rel.columns) if rel.columns is not None else None
    return pd.DataFrame(data, index=index)
