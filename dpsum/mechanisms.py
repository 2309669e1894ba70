"""The vector-sum mechanisms of the book, each one call: validate the public
inputs, build the mechanism's public set-up (an empty accumulator,
:class:`dpsum.release.Accumulator`), pass the rows through it once and release.

- :func:`gaussian_mechanism`: a precomputed statistic plus calibrated Gaussian
  noise (:prf:ref:`gaussian-alg-gaussian`).
- :func:`laplace_mechanism`: the same with Laplace noise, pure DP
  (:prf:ref:`laplace-thm-laplace`).
- :func:`shaped_laplace_mechanism`: Laplace noise shaped to data in a known
  box, pure DP (book, chapter "Laplace or Gaussian?"); the pure-DP analogue
  of the Elliptical Gaussian mechanism.
- :func:`elliptical_gaussian_mechanism`: the Elliptical Gaussian mechanism on
  data in a known box (:prf:ref:`elliptical-alg-elliptical`).
- :func:`gaussian_data_mechanism`: clipping in a scaled space with the exact
  clip radius, for data with known scales
  (:prf:ref:`gaussian-data-alg-clipped`).
- :func:`clipped_gaussian_mechanism`: isotropic clipping at a given radius.

The in-memory release is the accumulator's pass on one block, and a
:class:`dask.array.Array` takes the same pass on a cluster
(:mod:`dpsum.engines.dask`): there is one release path.

Every mechanism validates all its arguments before it reads the data, never
modifies its input, draws noise only from the ``rng`` it is given, and returns
a :class:`~dpsum.release.Release` whose fields are the private
estimate and functions of public inputs only.

.. warning::
   By default the sum is computed in floating point and the noise is drawn
   with NumPy's floating-point samplers, which are not protected against
   floating-point attacks on the low-order bits of the output (Mironov 2012;
   Jin et al. 2022). ``secure=True`` takes the grid path: the statistic is
   rounded to a public grid and summed exactly in integers, and the noise is
   an exact discrete Gaussian (or Laplace) drawn from the operating system's
   secure generator when ``rng`` is None.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum._units import unit_rows
from dpsum._validation import RandomLike
from dpsum.distributions.discrete import discrete_gaussian_std
from dpsum.data import as_data
from dpsum.engines import dask as dask_engine
from dpsum.privacy.calibration import analytic_sigma, classic_sigma
from dpsum.privacy.neighbouring import Neighbouring
from dpsum.session import GaussianEvent, DiscreteGaussianEvent, PureEvent, as_session
from dpsum.session import charge as charge_session
from dpsum.release.accumulator import (
    Accumulator,
    accumulator_for,
    clipped_gaussian_accumulator,
    elliptical_gaussian_accumulator,
    gaussian_data_accumulator,
    shaped_laplace_accumulator,
)
from dpsum.release.discrete_noise import secure_gaussian, secure_laplace
from dpsum.release.records import (
    CLIPPED_FRACTION,
    Calibration,
    Mechanism,
    PublicInputWarning,
    Release,
    clipping_excess,
    clipping_message,
)

__all__ = [
    "gaussian_mechanism",
    "laplace_mechanism",
    "shaped_laplace_mechanism",
    "elliptical_gaussian_mechanism",
    "gaussian_data_mechanism",
    "clipped_gaussian_mechanism",
    "release_diagnostics",
]


#: Without a data model, the clipping baseline's diagnostics warn when clearly
#: more than this fraction of the rows were clipped.
CLIPPED_FRACTION_WARNING = CLIPPED_FRACTION


#: The smallest normal float: noise levels below it are refused.
_TINY = float(np.finfo(np.float64).tiny)


def _privacy(epsilon: Any, delta: Any) -> tuple[float, float]:
    return V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)


def _dataset(X: Any) -> tuple[Any, int | None, int, tuple | None]:
    """The dataset at the boundary (:func:`dpsum.data.as_data`): its rows (a
    numpy or dask array of float64), its shape ``(n, d)`` and its column
    labels; only its type and shape are checked here, its values in the pass
    (a DataFrame's column by column, so that an error names the column). No
    rows is accepted here as for an array; :func:`_public_rows` refuses it
    under replace-one (under add-remove it is data like any other)."""
    data = as_data(X, "X")
    return data.rows, data.n, data.d, data.columns


def _finish(rel: Release, columns: tuple | None, who: str, expected_fraction: float | None,
            what: str, cause: str) -> Release:
    """Attach the column labels; with a diagnostic count, warn when it is far
    above the design's expectation (``expected_fraction`` of the rows)."""
    if columns is not None:
        rel = dataclasses.replace(rel, columns=columns)
    if rel.clip_count is None or rel.n is None or expected_fraction is None:
        return rel
    assert rel.clip_count_std is not None
    expected = expected_fraction * rel.n
    if clipping_excess(rel.clip_count, rel.clip_count_std, expected, rel.n):
        msg = clipping_message(who, what, rel.clip_count, expected, rel.n, cause)
        warnings.warn(msg, PublicInputWarning, stacklevel=3)
        rel = dataclasses.replace(rel, notes=rel.notes + (msg,))
    return rel


def _diagnostics_on(diagnostics: Any, relation: Neighbouring) -> bool | float:
    """The ``diagnostics`` argument of a mechanism that clips or clamps: None
    (the default) is on under replace-one, where the count is compared with
    the design's expectation for the public ``n``, and off under add-remove,
    where ``n`` is private and there is nothing public to compare it with
    (:func:`dpsum.pipeline.private_mean` releases a private count for that)."""
    if diagnostics is None:
        return relation is Neighbouring.REPLACE
    return diagnostics


def _project_onto_box(rel: Release) -> Release:
    """Project a released mean onto its public box (post-processing).

    The mean of rows clamped to the box ``[lower, upper]`` lies in the box,
    and the box is convex, so the Euclidean projection (coordinate-wise
    clamping) never moves the estimate further from it: the error can only
    fall. The unprojected estimate is kept in ``release.unprojected`` (it is
    unbiased for the clamped mean; the projected one is not), and the
    confidence intervals are intersected with the box
    (:func:`dpsum.release.confidence_intervals`).
    """
    if rel.lower is None or rel.upper is None:
        return rel
    est = np.asarray(rel.estimate, dtype=float)
    return dataclasses.replace(rel, estimate=np.clip(est, rel.lower, rel.upper), unprojected=est)


def _public_rows(n: int | None, relation: Neighbouring) -> int | None:
    """The row count where it is public (replace-one), None under add-remove."""
    if relation is Neighbouring.ADD_REMOVE:
        return None
    if n is None:
        raise ValueError("X must have known chunk sizes under replace-one neighbouring (the "
                         "number of rows is public there): call X.compute_chunk_sizes()")
    if n == 0:
        raise ValueError("X must hold at least one row under replace-one neighbouring (the "
                         "empty dataset has no replace-one neighbour); use "
                         "neighbouring='add-remove'")
    return n


def _checked_session(session: Any, acc: Accumulator) -> Any:
    """The ``session`` argument, refused (with what remains) if the release
    would not fit: before the pass reads the data. The release charges it."""
    sess = as_session(session)
    if sess is not None:
        sess.check(acc.privacy_event, neighbouring=acc.neighbouring)
    return sess


def _pass(X: Any, acc: Accumulator) -> Accumulator:
    """The one pass over the rows: in memory, or on a dask cluster."""
    if dask_engine.is_dask_array(X):
        return dask_engine.accumulate(X, acc)
    return acc.update(X)


def gaussian_mechanism(value: ArrayLike, *, epsilon: float, delta: float, sensitivity: float,
                       calibration: str = "analytic",
                       neighbouring: Neighbouring | str = "replace",
                       rng: RandomLike = None, secure: bool = False,
                       session: Any = None) -> Release:
    """The Gaussian mechanism: add ``N(0, sigma^2 I)`` noise to a precomputed statistic.

    ``sigma = sensitivity * sigma_opt`` with ``sigma_opt`` from the analytic
    calibration (:prf:ref:`gaussian-thm-analytic`, the default) or the
    classic one (:prf:ref:`gaussian-thm-classic`, only for ``epsilon < 1``).

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
        Take the grid path (:func:`dpsum.release.secure_gaussian`): the value is
        rounded to a public grid ``2^K`` (the rounding charged to the
        sensitivity) and exact discrete Gaussian noise is added; with
        ``rng=None`` the noise comes from the OS's secure generator.
        ``calibration`` must then be ``"analytic"`` (it is not used).
    session : dpsum.session.Session, optional
        The analysis's budget: the release is charged to it, and refused if it
        does not fit, before the data's values are read; its ledger entry is
        written before the noise is drawn. Without one the release is a
        one-off, accounted on its own (its record's ``accounting`` says so).

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
    sopt = float(classic_sigma(eps, dlt) if calib is Calibration.CLASSIC
                 else analytic_sigma(eps, dlt))
    std = sens * sopt
    if not math.isfinite(std):
        raise ValueError("the noise standard deviation overflows: sensitivity is too large")
    if std < _TINY:
        raise ValueError("sensitivity is too small for this epsilon and delta: the noise "
                         "standard deviation would be below 2.2e-308 (a subnormal float), "
                         "where it cannot be represented within 1e-9 of the exact "
                         "calibration; rescale the value and the sensitivity")
    gen_ = V.check_secure_rng(rng) if secure_ else V.check_rng(rng)   # before the data
    sess = as_session(session)
    params = {"epsilon": eps, "delta": dlt, "sensitivity": sens, "secure": secure_,
              "calibration": calib.value}
    if secure_:
        shape = V.as_real_array(value, "value").shape      # type and shape only: public
        tag: list = []

        def charge(multiplier: float) -> None:     # the discrete Gaussian's, before its noise
            tag.append(charge_session(sess, DiscreteGaussianEvent(multiplier),
                                      mechanism="gaussian_mechanism", parameters=params,
                                      neighbouring=relation))

        est, K, gstd = secure_gaussian(value, sensitivity=sens, epsilon=eps, delta=dlt,
                                       rng=gen_, before_noise=charge)
        std = gstd * (discrete_gaussian_std(gstd / 2.0 ** K) / (gstd / 2.0 ** K))
        x = np.asarray(est).reshape(shape)
        labels = V.index_labels(value)
        return Release(estimate=est, noise_std=np.full(x.shape, std), scaling=None,
                       clip_norm=None, epsilon=eps, delta=dlt, neighbouring=relation,
                       sigma_opt=gstd / sens, sensitivity=sens,
                       mechanism=Mechanism.GAUSSIAN_ANALYTIC, calibration=Calibration.DISCRETE,
                       secure=True, grid_exponent=K, discrete_scale=np.full(x.shape, gstd),
                       columns=labels, accounting=tag[0])
    tag_ = charge_session(sess, GaussianEvent(sopt), mechanism="gaussian_mechanism",
                          parameters=params, neighbouring=relation)
    x = V.check_finite_array(value, "value")
    labels = V.index_labels(value)
    assert gen_ is not None
    estimate = x + gen_.normal(0.0, std, size=x.shape)
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
        columns=labels,
        accounting=tag_,
    )


def elliptical_gaussian_mechanism(X: ArrayLike, *, epsilon: float, delta: float,
                                  lower: ArrayLike, upper: ArrayLike, rng: RandomLike = None,
                                  secure: bool = False, statistic: str = "sum",
                                  diagnostics: bool | float | None = None,
                                  session: Any = None, privacy_unit: Any = None,
                                  max_rows: int | None = None,
                                  per_unit: str | None = None,
                                  objective: str | ArrayLike | None = None) -> Release:
    """The Elliptical Gaussian mechanism on the sum (or mean) of the rows of ``X``
    in the public box ``[lower, upper]`` (:prf:ref:`elliptical-alg-elliptical`).

    Coordinate ``j`` of every row is clamped to ``[lower_j, upper_j]`` (so a
    replaced row moves the sum by at most ``Delta_j = upper_j - lower_j`` in
    coordinate ``j``; the mechanism clamps ``x_j - m_j`` to
    ``[-Delta_j/2, Delta_j/2]`` around the midpoint ``m`` and adds ``n m``
    back, ``n`` being public). Noise ``N(0, (sigma_opt Delta_j / b_j)^2)`` with
    the optimal scaling ``b`` (:prf:ref:`elliptical-thm-optimal`) is added to
    coordinate ``j``; the expected squared error is ``sigma_opt^2 ||Delta||_1^2``.
    Neighbouring relation: replace-one.

    Choose the box from what is known before seeing the data (the range of a
    sensor, a questionnaire's scale), never from ``X``. A box that misses the
    data biases the estimate towards it without any sign in the output:
    ``diagnostics=True`` releases a private count of the rows outside the box
    and warns (:class:`~dpsum.release.PublicInputWarning`) when it is
    clearly above 0.

    Parameters
    ----------
    X : array_like, pandas.DataFrame or dask.array.Array, shape (n, d)
        The dataset; finite reals. A DataFrame's column labels are kept
        (:attr:`~dpsum.release.Release.columns`, :meth:`~dpsum.release.Release.to_pandas`).
    epsilon, delta : float
        The privacy guarantee (of everything released, the count included).
    lower, upper : float or array_like, shape (d,)
        The public box; scalars apply to every column. ``lower < upper``.
    rng : numpy.random.Generator, int, SeedSequence or None
        Source of randomness.
    secure : bool
        Take the grid path: clamped values divided by ``Delta_j / b_j`` are
        rounded to a public grid, summed exactly in integers
        (:func:`dpsum.kernels.grid_clamped_sum`) and given exact discrete
        Gaussian noise.
    statistic : {"sum", "mean"}
        Release the sum, or the mean (the sum, its noise and its intervals
        divided by the public ``n``).
    diagnostics : bool, float or None
        On by default (None is True here: the relation is replace-one). True
        (or a share in (0, 1); True is ``dpsum.release.DIAGNOSTICS_SHARE``
        (0.02)) spends that share of the budget, inside the stated
        ``epsilon`` and ``delta``, on a private count of the rows outside the
        box (``release.clip_count``), and warns
        (:class:`~dpsum.release.PublicInputWarning`, saying what to do) when
        it is clearly above 0; :func:`~dpsum.release.data_intervals` then
        refuse. False turns it off.

    session : dpsum.session.Session, optional
        The analysis's budget: the release is charged to it, and refused if it
        does not fit, before the data's values are read; its ledger entry is
        written before the noise is drawn. Without one the release is a
        one-off, accounted on its own (its record's ``accounting`` says so).
    privacy_unit : column label or array_like, shape (n,), optional
        Protect each **privacy unit** (a person with many rows) instead of each row: a
        column label of a DataFrame ``X`` (taken out of the values) or one integer or
        string id per row. Each unit keeps at most ``max_rows`` rows (chosen at random
        by keyed hash, the key drawn from ``rng``: never the first rows, and the same
        choice on any row order or split), combined into one vector by ``per_unit``; the
        mechanism then runs on one row per unit, and its neighbouring relation is over
        units (replace or add-remove all rows of one unit). Here the relation is
        replace-one, so the number of units is public: it is ``n`` (the ``Release.n``
        and a mean's denominator).
    max_rows : int, optional
        Rows kept per unit (``>= 1``); required with ``privacy_unit``.
    per_unit : {"sum", "mean"}, optional
        How a unit's kept rows become its one vector (default ``statistic``). The sum of
        all rows (``statistic="sum"``) needs ``"sum"`` (a unit's share of the total is
        the sum of its rows); the mean over people needs ``"mean"`` (each unit weighs as
        one row, whatever its number of rows); ``"sum"`` with ``statistic="mean"`` is
        the mean per-unit total. With ``"sum"`` the box grows to hold a sum of up to ``m
        = max_rows`` rows: ``[min(lower, m lower), max(upper, m upper)]``, the box the
        release records; with ``"mean"`` it is unchanged.
    objective : {"total", "relative"}, array_like of shape (d,), or None
        What the noise's shape minimises (:prf:ref:`elliptical-thm-weighted`):
        ``"total"``, the expected squared error of the whole vector in the
        data's units (noise ``sigma_opt sqrt(Delta_j ||Delta||_1)``: a wide
        column takes most of the budget); ``"relative"``, the squared error
        of each column relative to its width (``b_j = 1/sqrt(d)``, noise
        ``sigma_opt sqrt(d) Delta_j``: every column gets the same share of
        its width); or positive weights ``u_j`` on each column's squared
        error. None (the default) is ``"relative"`` for a pandas DataFrame
        and ``"total"`` otherwise: a DataFrame's columns are named
        quantities, often in different units (ages, incomes, ratios), where
        a sum of squared errors across units means nothing and a user reads
        each column's error against its own range; an array is one vector
        in one space, whose total error is the natural measure. The two
        objectives coincide when all widths are equal, and "relative" costs
        at most the gain of the theorem in total error.

    Returns
    -------
    Release
        ``lower``, ``upper`` and ``widths`` record the box; ``scaling`` is the
        optimal ``b`` for the objective, which ``objective`` records. A mean
        is projected onto the box (post-processing that never increases its error: the clamped mean lies in the box), its
        intervals intersected with the box; ``unprojected`` keeps the
        unbiased estimate. Its intervals cover the sum of the clamped rows; its
        :meth:`~dpsum.release.Release.data_intervals` the data sum, assuming every row lies
        in the box.

    Examples
    --------
    >>> X = [[0.2, 5.0], [-0.1, 0.3]]
    >>> r = elliptical_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, lower=[-0.5, 0.0],
    ...                                   upper=[0.5, 6.0], rng=0)
    >>> r.mechanism, r.estimate.shape, r.widths.tolist()
    (<Mechanism.ELLIPTICAL_GAUSSIAN: 'elliptical gaussian'>, (2,), [1.0, 6.0])
    """
    eps, dlt = _privacy(epsilon, delta)
    secure_ = V.check_bool(secure, "secure")
    units = unit_rows(X, privacy_unit, max_rows, per_unit, statistic)
    data, n, d, columns = _dataset(units.X)
    lo, hi = units.box(*V.check_box(lower, upper, d))
    obj = V.check_objective(objective, d, frame=V.column_labels(X) is not None)
    def plan(rows: int | None) -> Accumulator:
        return elliptical_gaussian_accumulator(lo, hi, epsilon=eps, delta=dlt,
                                               n=_public_rows(rows, Neighbouring.REPLACE),
                                               secure=secure_, statistic=statistic,
                                               diagnostics=_diagnostics_on(
                                                   diagnostics, Neighbouring.REPLACE),
                                               objective=obj)
    acc = plan(n)
    gen = V.check_secure_rng(rng) if secure_ else V.check_rng(rng)
    sess = _checked_session(session, acc)
    data, acc = units.fold(data, gen, plan, acc)
    rel = _pass(data, acc).release(gen, session=sess)
    if rel.statistic == "mean":
        rel = _project_onto_box(rel)
    rel = units.mark(rel)
    return _finish(rel, columns, "elliptical_gaussian_mechanism", 0.0, "outside the box",
                   "the box [lower, upper] probably does not contain the data; the estimate is "
                   "biased towards the box, and data_intervals refuse. Widen the box (from "
                   "public knowledge, not from X), or use dpsum.private_mean, which clips "
                   "around a private centre instead of clamping to the box")


def gaussian_data_mechanism(X: ArrayLike, *, epsilon: float, delta: float, stds: ArrayLike,
                            center: ArrayLike,
                            clip_probability: float | None = None,
                            scaling: str | ArrayLike = "scaled",
                            neighbouring: Neighbouring | str = "replace", rng: RandomLike = None,
                            secure: bool = False, statistic: str = "sum",
                            diagnostics: bool | float | None = None,
                            session: Any = None, privacy_unit: Any = None,
                            max_rows: int | None = None,
                            per_unit: str | None = None,
                            objective: str | ArrayLike | None = None) -> Release:
    """Clipping in a scaled space with the exact clip radius, for data with
    known scales (:prf:ref:`gaussian-data-alg-clipped`).

    Each record is centred and scaled, ``x̂_i = (x_i - c) ⊙ b``, clipped to the
    ball of radius ``C`` and summed; isotropic noise ``N(0, (Delta sigma_opt)^2)``
    with ``Delta = 2C`` (replace-one) or ``C`` (add-remove) is added in the
    scaled space and everything is mapped back by ``b^{-1}``. The expected
    squared error against the clipped sum is ``(2 C sigma_opt)^2 sum_j b_j^{-2}``.

    ``C`` is the exact clip radius: the smallest radius with
    ``Pr[||x̂|| > C] <= p_C`` for ``x ~ N(c, diag(stds^2))``, from the
    generalized chi-square quantile (:func:`dpsum.design.clip_radius`).

    ``stds`` and ``center`` are **public** inputs describing the data model.
    They must come from prior knowledge or a separate private release, never
    be estimated from ``X`` itself: the privacy guarantee assumes they do not
    depend on the data.

    Parameters
    ----------
    X : array_like or dask.array.Array, shape (n, d)
        The dataset; finite reals.
    epsilon, delta : float
        The privacy guarantee.
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations, all > 0.
    center : float or array_like, shape (d,)
        Public center ``c`` of the data model, **required** (an explicit 0 is
        fine): a centre far from the data's mean makes every row look far out,
        so that it is clipped, and the estimate is pulled towards ``n c``.
    clip_probability : float, optional
        ``p_C`` in (0, 1). Defaults to ``1/n`` under replace-one, where ``n``
        is public. Under add-remove ``n`` is private, so ``p_C`` must be given.
    scaling : {"scaled", "isotropic"} or array_like, shape (d,)
        The book's scaling for Gaussian data (:prf:ref:`the scaling lemma
        <gaussian-data-lem-scaling>`, the default), ``b = 1`` (isotropic
        clipping), or an explicit positive vector (its overall scale does not
        matter); see :class:`dpsum.design.Scaling`.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation. Under add-remove with a nonzero center the
        sensitivity is ``C + ||b ⊙ c||`` (evaluated exactly, rounded up),
        since a whole record, center included, enters or leaves the sum; the
        float path then sums exactly and folds ``n b ⊙ c`` in before the
        noise (``n`` is private), as in :func:`clipped_gaussian_mechanism`.
    rng : numpy.random.Generator, int, SeedSequence or None
        Source of randomness.
    secure : bool
        Take the grid path (:func:`dpsum.kernels.grid_clipped_sum` and exact
        discrete Gaussian noise from the OS's secure generator when ``rng`` is
        None); the clipping time then does not depend on the data.
    statistic : {"sum", "mean"}
        Release the sum, or the mean (divided by the public ``n``;
        replace-one only, since ``n`` is private under add-remove).
    diagnostics : bool, float or None
        None (the default) is on under replace-one and off under add-remove.
        True (or a share in (0, 1)) spends that share of the budget, inside
        the stated ``epsilon`` and ``delta``, on a private count of the
        clipped rows (``release.clip_count``) and warns
        (:class:`~dpsum.release.PublicInputWarning`, saying what to do) when
        it is far above the design's ``n p_C``: a wrong ``center`` or
        ``stds``; :func:`~dpsum.release.data_intervals` then refuse.
        Replace-one only: under add-remove ``n`` is private, so there is no
        public expectation to compare the count with
        (:func:`dpsum.pipeline.private_mean` releases a private count for that).
        False turns it off.

    session, privacy_unit, max_rows
        As for :func:`elliptical_gaussian_mechanism`. Under replace-one the
        number of units is public: it is ``n`` (the default
        ``clip_probability`` ``1/n``, a mean's denominator); under add-remove
        it is private.
    per_unit : {"sum", "mean"}, optional
        How a unit's kept rows become its one vector (default ``statistic``). ``stds``
        and ``center`` then model **one unit's vector**, not one row: with ``"mean"``
        and a unit's ``k`` rows independent draws of the row model, its mean has centre
        ``center`` and standard deviations ``stds / sqrt(k)``, so the row model's
        ``stds`` are conservative (a larger clip radius than needed); with ``"sum"`` the
        unit's vector is centred at ``k center`` with ``stds sqrt(k)``, which depends on
        ``k``: give the model of the sums (``center`` 0 suits rows centred at 0). The
        sum of all rows needs ``"sum"``, the mean over people ``"mean"``.
    objective : {"total", "relative"}, array_like of shape (d,), or None
        What ``scaling="scaled"`` minimises (:func:`dpsum.design.gaussian_data_scaling`,
        the clip radius held fixed as in the scaling lemma): ``"total"``,
        the squared error in the data's units (``b_j ∝ stds_j^(-1/2)``);
        ``"relative"``, each column's squared error relative to its std
        (whitening, ``b_j ∝ 1/stds_j``: every column's noise is the same
        multiple of its std); or positive weights ``u_j``
        (``b_j ∝ u_j^(1/4) stds_j^(-1/2)``). None (the default) is
        ``"relative"`` for a pandas DataFrame and ``"total"`` otherwise, as
        in :func:`elliptical_gaussian_mechanism`. Ignored by
        ``scaling="isotropic"`` and an explicit vector.

    Returns
    -------
    Release
        With ``clip_norm`` (C), ``scaling`` (b), ``objective``, ``center``, ``stds``,
        ``clip_probability`` and the sensitivity: everything the guarantee
        depends on (computed by :func:`dpsum.design.gaussian_data_setup`).
        Its intervals cover the sum (mean) of the clipped rows; its
        :meth:`~dpsum.release.Release.data_intervals` the data sum (mean) under the model.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(0.0, [4.0, 1.0], size=(1000, 2))
    >>> r = gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[4.0, 1.0], center=0,
    ...                             rng=rng)
    >>> r.clip_probability, r.sensitivity == 2 * r.clip_norm  # exact sums: no charge
    (0.001, True)
    """
    eps, dlt = _privacy(epsilon, delta)
    relation = Neighbouring.parse(neighbouring)
    secure_ = V.check_bool(secure, "secure")
    units = unit_rows(X, privacy_unit, max_rows, per_unit, statistic)
    data, n, d, columns = _dataset(units.X)
    V.check_vector(stds, "stds", d, positive=True)
    if center is None:
        raise TypeError("center is required: the public centre of the data model (an explicit "
                        "0 is fine); a wrong centre makes every row look far out and be clipped")
    c = V.check_center(center, d)
    obj = V.check_objective(objective, d, frame=V.column_labels(X) is not None)
    def plan(rows: int | None) -> Accumulator:
        return gaussian_data_accumulator(stds, epsilon=eps, delta=dlt, center=c,
                                         clip_probability=clip_probability,
                                         n=_public_rows(rows, relation), scaling=scaling,
                                         neighbouring=relation, secure=secure_,
                                         statistic=statistic,
                                         diagnostics=_diagnostics_on(diagnostics, relation),
                                         objective=obj)
    acc = plan(n)
    gen = V.check_secure_rng(rng) if secure_ else V.check_rng(rng)
    sess = _checked_session(session, acc)
    data, acc = units.fold(data, gen, plan, acc)
    rel = _pass(data, acc).release(gen, session=sess)
    rel = units.mark(rel)
    return _finish(rel, columns, "gaussian_data_mechanism", rel.clip_probability, "clipped",
                   "the public center or stds are probably wrong for these data (a centre "
                   "far from the data or scales too small); the estimate is biased towards "
                   "the center, its confidence_intervals cover the clipped rows' statistic, "
                   "not the data's, and data_intervals refuse. Give a center and stds that "
                   "fit the data (from public knowledge, not from X), or use "
                   "dpsum.private_mean, which estimates them privately")


def clipped_gaussian_mechanism(X: ArrayLike, *, epsilon: float, delta: float, clip_norm: float,
                               neighbouring: Neighbouring | str = "replace", rng: RandomLike = None,
                               secure: bool = False, statistic: str = "sum",
                               diagnostics: bool | float | None = None,
                               session: Any = None, privacy_unit: Any = None,
                               max_rows: int | None = None,
                               per_unit: str | None = None) -> Release:
    """Isotropic clipping: clip every row to norm ``C``, sum, add
    ``N(0, (Delta sigma_opt)^2 I)`` with ``Delta = 2C`` (replace-one) or ``C``
    (add-remove).

    Parameters
    ----------
    X : array_like or dask.array.Array, shape (n, d)
        The dataset; finite reals.
    epsilon, delta : float
        The privacy guarantee.
    clip_norm : float
        The clip radius ``C > 0``; public.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation. Under add-remove the number of rows is
        private, and the float path sums exactly (rows rounded to a public
        grid of spacing about ``2^-32 C``, added as integers, the noise added
        exactly and the result rounded once): no rounding charge, cap on the rows or
        refusal depends on it (:class:`~dpsum.release.Accumulator`).
    rng : numpy.random.Generator, int, SeedSequence or None
        Source of randomness.
    secure : bool
        Take the grid path (as in :func:`gaussian_data_mechanism`).
    statistic : {"sum", "mean"}
        As in :func:`gaussian_data_mechanism`.
    diagnostics : bool, float or None
        As in :func:`gaussian_data_mechanism` (on by default under
        replace-one); with no data model the warning
        comes when clearly more than :data:`~dpsum.mechanisms.CLIPPED_FRACTION_WARNING` of the
        rows were clipped.

    session, privacy_unit, max_rows
        As for :func:`elliptical_gaussian_mechanism`. Under replace-one the
        number of units is public (``n``); under add-remove it is private.
    per_unit : {"sum", "mean"}, optional
        How a unit's kept rows become its one vector (default ``statistic``). The unit's
        vector, not each row, is clipped to ``clip_norm``. The sum of all rows needs
        ``"sum"`` (``clip_norm`` then bounds a unit's total, up to ``max_rows`` rows);
        the mean over people ``"mean"`` (each unit weighs as one row).

    Returns
    -------
    Release
        Its intervals cover the sum (mean) of the clipped rows.

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
    secure_ = V.check_bool(secure, "secure")
    units = unit_rows(X, privacy_unit, max_rows, per_unit, statistic)
    data, n, d, columns = _dataset(units.X)
    def plan(rows: int | None) -> Accumulator:
        return clipped_gaussian_accumulator(d, epsilon=eps, delta=dlt, clip_norm=C,
                                            neighbouring=relation,
                                            n=_public_rows(rows, relation),
                                            secure=secure_, statistic=statistic,
                                            diagnostics=_diagnostics_on(diagnostics, relation))
    acc = plan(n)
    gen = V.check_secure_rng(rng) if secure_ else V.check_rng(rng)
    sess = _checked_session(session, acc)
    data, acc = units.fold(data, gen, plan, acc)
    rel = _pass(data, acc).release(gen, session=sess)
    rel = units.mark(rel)
    return _finish(rel, columns, "clipped_gaussian_mechanism", CLIPPED_FRACTION_WARNING,
                   "clipped", "clip_norm is probably too small for these data; the estimate "
                   "is biased towards 0 and its confidence_intervals cover the clipped rows' "
                   "statistic, not the data's. Raise clip_norm (from public knowledge, not "
                   "from X), or use dpsum.private_mean, which chooses its radius privately")


def release_diagnostics(X: ArrayLike, release: Release) -> dict[str, int]:
    """Data-dependent counts of a release: **not differentially private**.

    Recomputes, from ``X`` and the public parameters recorded in ``release``,
    how many rows the clipping mechanisms clipped (``{"clipped_rows": k}``)
    or how many values the Elliptical Gaussian mechanism clamped
    (``{"clamped_values": k}``), with the same pass the mechanism used (on a
    dask cluster for a dask array). These counts depend on the private data:
    use them to study a mechanism, never publish them. Nothing random is drawn.

    Parameters
    ----------
    X : array_like or dask.array.Array, shape (n, d)
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
    acc = accumulator_for(release)
    data, n, d, _ = _dataset(X)
    if d != acc.d:
        raise ValueError(f"X must have {acc.d} columns, as the release, got {d}")
    if release.n is not None and n is not None and n != release.n:
        # replace-one: the release records its public number of rows
        raise ValueError(f"X must have the release's n = {release.n} rows: the dataset the "
                         "release was computed from")
    key = "clamped_values" if release.mechanism is Mechanism.ELLIPTICAL_GAUSSIAN else "clipped_rows"
    return {key: _pass(data, acc).diagnostic_count}


def laplace_mechanism(value: ArrayLike, *, epsilon: float, sensitivity: float,
                      neighbouring: Neighbouring | str = "replace",
                      rng: RandomLike = None, secure: bool = False,
                      session: Any = None) -> Release:
    """The Laplace mechanism: add i.i.d. ``Laplace(0, sensitivity / epsilon)`` noise.

    If the statistic has L1 sensitivity ``Delta_1`` (the largest L1 distance
    between its values on neighbouring datasets), adding independent Laplace
    noise of scale ``b = Delta_1 / epsilon`` to every coordinate is
    epsilon-DP, with ``delta = 0`` (Dwork, McSherry, Nissim and Smith 2006;
    :prf:ref:`laplace-thm-laplace`).
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
        Take the grid path (:func:`dpsum.release.secure_laplace`): the statistic
        is rounded to the public grid ``2^K`` with the rounding charged to the
        L1 sensitivity, and the noise is an exact discrete Laplace on the
        grid. Still ``epsilon``-DP with ``delta = 0``
        (:prf:ref:`fp-thm-discrete-laplace`), and
        immune to attacks on the low-order bits.

    session : dpsum.session.Session, optional
        The analysis's budget: the release is charged to it, and refused if it
        does not fit, before the data's values are read; its ledger entry is
        written before the noise is drawn. Without one the release is a
        one-off, accounted on its own (its record's ``accounting`` says so).

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
    if scale < _TINY:
        raise ValueError("sensitivity is too small for this epsilon: the noise scale would be "
                         "a subnormal float (below 2.2e-308); rescale the value and the "
                         "sensitivity")
    secure_ = V.check_bool(secure, "secure")
    gen = V.check_secure_rng(rng) if secure_ else V.check_rng(rng)
    # the discrete Laplace on the grid is exactly epsilon-DP, as the float one
    tag = charge_session(as_session(session), PureEvent(eps), mechanism="laplace_mechanism",
                         parameters={"epsilon": eps, "sensitivity": sens, "secure": secure_},
                         neighbouring=relation)
    x = V.check_finite_array(value, "value")
    labels = V.index_labels(value)
    if secure_:
        est, K, D, std = secure_laplace(x, sensitivity=sens, epsilon=eps, rng=gen)
        grid_sens = math.ldexp(float(D), K)
        return Release(
            estimate=est, noise_std=np.full(x.shape, std), scaling=None, clip_norm=None,
            epsilon=eps, delta=0.0, neighbouring=relation, sigma_opt=std / grid_sens,
            sensitivity=grid_sens, mechanism=Mechanism.LAPLACE,
            calibration=Calibration.DISCRETE_LAPLACE, secure=True, grid_exponent=K,
            columns=labels, accounting=tag)
    assert gen is not None                      # the float path always has a Generator
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
        columns=labels,
        accounting=tag,
    )


def shaped_laplace_mechanism(X: ArrayLike, *, epsilon: float, widths: ArrayLike,
                             rng: RandomLike = None, secure: bool = False,
                             statistic: str = "sum", session: Any = None,
                             privacy_unit: Any = None, max_rows: int | None = None,
                             per_unit: str | None = None) -> Release:
    """The shaped Laplace mechanism on the sum of the rows of ``X`` (book,
    chapter "Laplace or Gaussian?"): the pure-DP analogue of the Elliptical
    Gaussian mechanism.

    Each coordinate ``j`` of every row is clamped to ``[-Delta_j/2, Delta_j/2]``,
    so a replaced row moves coordinate ``j`` of the sum by at most ``Delta_j``.
    Independent Laplace noise of scale ``t_j = Delta_j^(1/3) S / epsilon``,
    ``S = sum_k Delta_k^(2/3)``, is added to coordinate ``j``. The privacy loss
    of any output is at most ``sum_j Delta_j / t_j = epsilon``, so the release
    is epsilon-DP (``delta = 0``); its expected squared error
    ``sum_j 2 t_j^2 = 2 S^3 / epsilon^2`` is the smallest over all
    per-coordinate Laplace scales with that guarantee, and at most the
    ``2 d ||Delta||_1^2 / epsilon^2`` of equal scales (power-mean inequality;
    equal only on a cube). Neighbouring relation: replace-one.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The dataset; finite reals.
    epsilon : float
        The privacy parameter, > 0 and finite.
    widths : array_like, shape (d,)
        The widths ``Delta_j > 0`` of the box; public.
    rng : numpy.random.Generator, int, SeedSequence or None
        Source of randomness. With ``secure=True``, None means the operating
        system's secure generator.
    secure : bool
        Take the grid path: each coordinate's exact integer sum (on the grid
        of its half-width, ``2^-32`` of it) plus exact discrete Laplace noise
        of scale ``t_j`` in grid units; still ``epsilon``-DP, the scales
        checked against ``epsilon`` in exact arithmetic.
    statistic : {"sum", "mean"}
        The sum, or the mean (the noisy sum divided by the public ``n``).
    session, privacy_unit, max_rows
        As for :func:`elliptical_gaussian_mechanism` (replace-one: the number
        of units is public, ``n``).
    per_unit : {"sum", "mean"}, optional
        How a unit's kept rows become its one vector (default ``statistic``). The sum of
        all rows needs ``"sum"``, the mean over people ``"mean"`` (as for
        :func:`elliptical_gaussian_mechanism`). With ``"sum"`` the box ``[-Delta/2,
        Delta/2]`` grows to hold a sum of up to ``m = max_rows`` rows: the widths become
        ``m Delta`` (``[min(lo, m lo), max(hi, m hi)]`` of a box centred at 0), the
        widths the release records; with ``"mean"`` they are unchanged.

    Returns
    -------
    Release
        ``delta`` is 0.0; ``noise_std`` is ``sqrt(2) t_j``; ``widths`` records
        ``Delta``; ``scaling`` is ``b_j = Delta_j^(-1/3)`` (noise scale per
        coordinate proportional to ``1 / b_j``); ``sensitivity`` is the L1
        sensitivity ``sum_j Delta_j b_j = S`` in the scaled space and
        ``sigma_opt`` is ``sqrt(2) / epsilon``, so that
        ``noise_std = sigma_opt * sensitivity / b``; ``mechanism`` is
        ``"shaped laplace"``.

    Notes
    -----
    The clamped sum is exact (values rounded to a grid ``2^-32`` of the
    half-widths inside the box and added as integers, the noise added exactly
    and the result rounded once); without ``secure`` the noise is drawn with
    NumPy's Laplace sampler, as in :func:`laplace_mechanism`: not protected
    against floating-point attacks.

    Examples
    --------
    >>> r = shaped_laplace_mechanism([[0.2, 5.0], [-0.1, 0.3]], epsilon=1.0,
    ...                              widths=[1.0, 8.0], rng=0)
    >>> r.mechanism, [round(float(s), 6) for s in r.noise_std / 2**0.5]
    (<Mechanism.SHAPED_LAPLACE: 'shaped laplace'>, [5.0, 10.0])
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    secure_ = V.check_bool(secure, "secure")
    units = unit_rows(X, privacy_unit, max_rows, per_unit, statistic)
    data, n, d, columns = _dataset(units.X)
    width = units.widths(V.check_vector(widths, "widths", d, positive=True))
    def plan(rows: int | None) -> Accumulator:
        return shaped_laplace_accumulator(width, epsilon=eps,
                                          n=_public_rows(rows, Neighbouring.REPLACE),
                                          secure=secure_, statistic=statistic)
    acc = plan(n)
    gen = V.check_secure_rng(rng) if secure_ else V.check_rng(rng)
    sess = _checked_session(session, acc)
    data, acc = units.fold(data, gen, plan, acc)
    rel = _pass(data, acc).release(gen, session=sess)
    rel = units.mark(rel)
    return _finish(rel, columns, "shaped_laplace_mechanism", None, "", "")
