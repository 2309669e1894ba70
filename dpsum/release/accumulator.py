"""Mergeable accumulators: the private pass of a vector mechanism, split across machines.

Every vector mechanism of :mod:`dpsum.mechanisms` that reads a dataset is the
same two steps: a *pass* over the rows (clip or clamp each row, add it to a
sum) and a *release* (add noise once, map back to the data's units). The pass
is a sum, so it can be cut into pieces: an :class:`Accumulator` holds the
partial result of some rows, ``update(block)`` adds a block of rows,
``merge(other)`` adds two partial results, and ``release(rng)`` adds the
noise, once, to the merged total (the appendix :ref:`At scale <at-scale>`,
:prf:ref:`at-scale-def-accumulator`).

Everything the pass needs is fixed before it starts and is public: the
mechanism's scaling, clip radius or widths, sensitivity and noise level come
from the same functions the in-memory mechanisms call
(:func:`dpsum.design.gaussian_data_setup` for the Gaussian-data mechanism). The
partial results hold private sums; they travel between the workers that
hold the data and are never released. Only :meth:`Accumulator.release`
produces something publishable, and it draws exactly the noise the
in-memory mechanism draws, from the same ``rng`` in the same order, so the
two releases are the same floats.

**Exact sums.** Every pass clips (or clamps) each row and rounds it to a
fine public grid, each row by itself in an order the kernel fixes, and adds
the rows as integers (:mod:`dpsum.kernels.grid`): the partial results are
integers, ``merge`` adds them exactly, and the noise is added to the exact
statistic in rational arithmetic and rounded once. A release is therefore
the same float whatever the row order, the split into blocks, the engine or
the machine, and its sensitivity is exactly the mechanism's (``2C`` under
replace-one, ``C + ||b ⊙ c||`` under add-remove, the box's width per
coordinate); only a fixed per-row margin (``2^-32`` of ``C``) is given up to
the grid, and nothing grows with ``n`` (the chapter :ref:`Floating point
<fp-sum-rounding>`, :prf:ref:`fp-thm-grid`).

Accumulators are immutable values: ``update`` and ``merge`` return new
accumulators, so a retried task of a distributed engine can never add a
block twice into a shared object. They pickle, so dask, Spark or Beam can
ship them; :mod:`dpsum.engines.dask` is the dask driver.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import secrets
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.design.gaussian_data import gaussian_data_setup
from dpsum.design.scaling import elliptical_scaling
from dpsum.distributions.discrete import (
    discrete_gaussian,
    discrete_gaussian_std,
    discrete_laplace,
    discrete_laplace_std,
)
from dpsum._special import norm_plus
from dpsum.kernels._exact import dyadic_sum, noisy_estimate
from dpsum.kernels._rows import rows_outside
from dpsum.kernels.grid import (
    EXACT_CHARGE,
    accumulate_clamped,
    accumulate_grid,
    make_clamp_plan,
    grid_clamped_sum,
    grid_exponent,
    make_grid_plan,
    round_to_grid,
)
from dpsum.privacy.calibration import analytic_sigma
from dpsum.privacy.discrete import discrete_gaussian_sigma
from dpsum.privacy.neighbouring import Neighbouring, clipped_sum_sensitivity
from dpsum.release.discrete_noise import grid_gaussian_noise
from dpsum.release.records import DIAGNOSTICS_SHARE, Calibration, Mechanism, Release
from dpsum.session import (
    DiscreteGaussianEvent,
    GaussianEvent,
    PrivacyEvent,
    PureEvent,
    Session,
    as_session,
)
from dpsum.session import charge as charge_session

_FLOAT_MAX = V.FLOAT_MAX
_MIN_WIDTH = 2.0 ** -1021        # widths / 2 is then a normal float, computed exactly

__all__ = [
    "Accumulator",
    "gaussian_data_accumulator",
    "clipped_gaussian_accumulator",
    "elliptical_gaussian_accumulator",
    "shaped_laplace_accumulator",
    "accumulator_for",
]


_IDS = itertools.count()


def _new_id() -> tuple[int, int]:
    """A process-unique tag (process id, counter): for blocks."""
    return (os.getpid(), next(_IDS))


def _same_public(a: Release, b: Release) -> bool:
    """Whether two release templates fix the same public parameters."""
    for field in dataclasses.fields(Release):
        if field.name == "estimate":
            continue
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                    and x.shape == y.shape and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


class Accumulator:
    """The partial result of a vector mechanism's pass over some rows.

    Build one with :func:`gaussian_data_accumulator`,
    :func:`clipped_gaussian_accumulator` or
    :func:`elliptical_gaussian_accumulator`: the empty accumulator of a
    mechanism, with every public parameter fixed. Then

    - ``acc.update(block)`` returns the accumulator with the rows of
      ``block`` (shape ``(m, d)``, ``m >= 0``) added;
    - ``acc.merge(other)`` returns the accumulator of the rows of both;
    - ``acc.release(rng)`` adds the mechanism's noise to the total, once, and
      returns the same :class:`~dpsum.release.Release` as the in-memory
      mechanism on the same rows with the same ``rng``, bit for bit.

    The accumulated sum and row count are private: ship an accumulator
    between the machines that hold the data, never publish it.
    """

    def __init__(self, template: Release, n: int | None) -> None:
        self._template = template
        self._n = n                        # the public row count (replace-one), or None
        self._d = int(template.noise_std.shape[0])
        self._total: Any = self._zero()
        self._rows = 0
        self._count = 0                    # rows clipped / values clamped: not private
        # the plan (this public set-up): a random id carried by every accumulator
        # derived from it, pickled along; blocks of two plans are never merged
        self._plan_id = secrets.token_hex(16)
        self._blocks: frozenset[tuple[int, int]] = frozenset()   # the blocks it holds
        self._clip_rows = 0                # rows clipped / rows outside the box: not private
        self._outside = 0                  # rows outside a clipped sum's box: not private
        # a sum of deviations from the centre (the centre is not added back: the
        # private pipeline adds its own count times the centre), and the grid
        # path's discrete Gaussian scale when calibrated by a zCDP multiplier
        self._deviations = False
        self._zcdp_sigma: float | None = None

    # -- to be provided by each kind of pass
    def _zero(self) -> Any:
        raise NotImplementedError

    def _pass(self, block: np.ndarray) -> tuple[Any, int, int]:
        """The block's partial result, the values clipped or clamped, and the
        rows the pass changed (clipped rows; rows outside the box): the two
        counts are **not** private."""
        raise NotImplementedError

    def _estimate(self, gen: Any, noise_std: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _generator(self, rng: Any) -> Any:
        return V.check_rng(rng)

    def _outside_of(self, block: np.ndarray) -> int:
        """Rows of ``block`` outside the template's box, for a sum of
        deviations built with one (the private pipeline's diagnostics); 0
        otherwise."""
        t = self._template
        if not self._deviations or t.lower is None or t.upper is None:
            return 0
        return rows_outside(block, t.lower, t.upper)

    # -- the public interface
    @property
    def d(self) -> int:
        """The number of columns."""
        return self._d

    @property
    def neighbouring(self) -> Neighbouring:
        """The plan's neighbouring relation."""
        return self._template.neighbouring

    @property
    def mechanism(self) -> Mechanism:
        """The mechanism whose pass this accumulates."""
        return self._template.mechanism

    @property
    def rows(self) -> int:
        """Rows accumulated so far. **Private** under add-remove neighbouring."""
        return self._rows

    @property
    def rows_outside(self) -> int:
        """Rows outside the public box ``[lower, upper]`` of a clipped sum built
        with one (the private pipeline's last step); 0 otherwise. **Not
        differentially private**: do not publish."""
        return self._outside

    @property
    def diagnostic_count(self) -> int:
        """Rows clipped (the Gaussian-data mechanism, clipping baseline) or values clamped
        (the Elliptical Gaussian mechanism) so far. **Not differentially private**: do not publish."""
        return self._count

    def sum_before_noise(self) -> np.ndarray:
        """The accumulated statistic before noise, exactly: the clipped sum in
        the scaled space (the Gaussian-data mechanism, clipping baseline) or
        the clamped sum (the Elliptical Gaussian and shaped Laplace mechanisms)
        as rationals (``Fraction``), on the grid path the integer sum (Python
        ints) in grid units. **Not private**: it is the data's own sum, for
        tests and checks only; never publish it."""
        return self._statistic()

    def _statistic(self) -> np.ndarray:
        raise NotImplementedError

    def empty(self) -> Accumulator:
        """The empty accumulator of the same set-up (no rows; the same plan)."""
        return self._with(self._zero(), 0, 0, frozenset())

    @property
    def is_empty(self) -> bool:
        """Whether no block of rows was folded in (a property of the calls
        made, not of the data)."""
        return not self._blocks

    def _with(self, total: Any, rows: int, count: int,
              blocks: frozenset[tuple[int, int]], clip_rows: int = 0,
              outside: int = 0) -> Accumulator:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._total, new._rows, new._count, new._blocks = total, rows, count, blocks
        new._clip_rows, new._outside = clip_rows, outside
        return new

    def update(self, block: ArrayLike) -> Accumulator:
        """The accumulator with the rows of ``block`` added.

        Parameters
        ----------
        block : array_like, shape (m, d)
            Real rows (converted to float64); ``m = 0`` is allowed. NaN or
            infinite values raise ``ValueError``.

        Returns
        -------
        Accumulator
            A new accumulator; ``self`` is unchanged.
        """
        arr = V.as_real_array(block, "block")
        if arr.ndim != 2 or arr.shape[1] != self._d:
            raise ValueError(f"block must be 2-dimensional with {self._d} columns, "
                             f"got shape {arr.shape}")
        if arr.shape[0] == 0:
            return self
        partial, count, hit = self._pass(arr)
        return self._with(self._total + partial, self._rows + arr.shape[0], self._count + count,
                          self._blocks | {_new_id()},
                          self._clip_rows + hit, self._outside + self._outside_of(arr))

    def merge(self, other: Accumulator) -> Accumulator:
        """The accumulator of the rows of ``self`` and ``other``.

        Both must come from the same plan: the same empty accumulator (by
        ``update``, ``merge`` and ``empty``; pickling keeps the plan). Blocks of
        two plans built separately, even with the same parameters, are
        refused: each plan is released on its own, so their merged rows would
        be released twice. Returns a new accumulator; neither input changes.

        **Rows counted once.** Every non-empty ``update`` tags its block;
        merging two accumulators that hold a block in common (an
        accumulator with itself, or with one of its ancestors, as in
        ``acc.update(X).merge(acc.update(X).merge(...))`` built from one
        ``update``) is refused, since the merged sum would count those rows
        twice and move by more than the sensitivity. Two *different*
        ``update`` calls on the same rows (``a.update(X).merge(a.update(X))``)
        cannot be told apart from two disjoint blocks of a map-reduce: that
        the blocks hold different rows is the caller's promise, as in every
        map-reduce DP engine.

        Raises
        ------
        ValueError
            For a different set-up or plan, or a block held by both.
        """
        if not isinstance(other, Accumulator):
            raise TypeError(f"other must be an Accumulator, got {type(other).__name__}")
        if type(other) is not type(self) or not _same_public(self._template, other._template) \
                or self._n != other._n or self._deviations != other._deviations:
            raise ValueError("other accumulates a different mechanism or different public "
                             "parameters; only accumulators from one set-up can be merged")
        if self._plan_id != other._plan_id:
            raise ValueError("other belongs to another plan (an accumulator built separately, "
                             "even with the same parameters): merging would release its rows "
                             "twice, once by each plan; derive both from one empty "
                             "accumulator")
        if self._blocks & other._blocks:
            raise ValueError("other holds rows that self already holds (an accumulator merged "
                             "with itself or with one of its ancestors): the merged sum would "
                             "count them twice")
        return self._with(self._total + other._total, self._rows + other._rows,
                          self._count + other._count, self._blocks | other._blocks,
                          self._clip_rows + other._clip_rows, self._outside + other._outside)

    @property
    def privacy_event(self) -> PrivacyEvent:
        """What a release of this plan spends: a Gaussian of the plan's noise
        multiplier (with diagnostics, the estimate's and the count's Gaussians
        together, one of multiplier ``sigma_opt sqrt(1 - share)``), or on the
        grid path the discrete Gaussian of the same zCDP."""
        t = self._template
        s = t.sigma_opt * math.sqrt(1.0 - t.diagnostics_share)
        return DiscreteGaussianEvent(s) if t.secure else GaussianEvent(s)

    def public_parameters(self) -> dict:
        """The plan's public parameters, as its ledger entries record them."""
        t = self._template
        return {"plan": self._plan_id, "d": self._d, "epsilon": t.epsilon, "delta": t.delta,
                "sigma_opt": t.sigma_opt, "sensitivity": t.sensitivity, "secure": t.secure,
                "statistic": t.statistic, "diagnostics_share": t.diagnostics_share}

    def release(self, rng: Any = None, *, session: Session | None = None) -> Release:
        """Add the noise, once, and return the release.

        Draws exactly what the in-memory mechanism draws (``d`` standard
        normals from ``rng``, or on the grid path ``d`` discrete Gaussians),
        so the same ``rng`` gives the same noise. On the grid path
        ``rng=None`` draws from the operating system's secure generator.

        **Every release is charged.** With a ``session`` the release's
        :attr:`privacy_event` is checked against what remains and its ledger
        entry written before the noise is drawn; a plan released twice in a
        session is two entries, composed by the session. Without one the
        release is its own one-off session, and its record's ``accounting``
        says so: releasing a plan twice without a session spends its budget
        twice, with no one counting.

        Parameters
        ----------
        rng : numpy.random.Generator, SeedSequence, int or None
            The noise's source.
        session : dpsum.session.Session, optional
            The analysis's budget.

        Raises
        ------
        ValueError
            Under replace-one, if no row was accumulated, or if the number of
            rows differs from the ``n`` the accumulator was built with; if the
            session refuses the release.
        """
        sess = as_session(session)
        gen = self._generator(rng)
        if self._template.neighbouring is Neighbouring.REPLACE:
            if self._rows == 0:
                raise ValueError("X must hold at least one row under replace-one "
                                 "neighbouring (the empty dataset has no replace-one "
                                 "neighbour); use neighbouring='add-remove'")
            if self._n is not None and self._rows != self._n:
                raise ValueError(f"the accumulator was built for n = {self._n} rows but "
                                 f"accumulated {self._rows}")
        tag = charge_session(sess, self.privacy_event, mechanism=f"{self.mechanism} accumulator",
                             parameters=self.public_parameters(),
                             neighbouring=self._template.neighbouring)
        template = self._template
        estimate = self._estimate(gen, template.noise_std)
        t = template
        public_n = self._rows if t.neighbouring is Neighbouring.REPLACE else None
        rel = dataclasses.replace(t, estimate=estimate, n=public_n, accounting=tag)
        if t.diagnostics_share > 0:
            # the count's noise is drawn after the estimate's, so the estimate is
            # the same draw whether or not the count is released
            std = float(t.clip_count_std) if t.clip_count_std is not None else 0.0
            noisy = self._clip_rows + _count_noise(gen, std, t.secure)
            # clamped at 0: post-processing, counts are never negative
            rel = dataclasses.replace(rel, clip_count=max(float(noisy), 0.0))
        if t.statistic == "mean":
            assert public_n is not None           # refused at set-up under add-remove
            rel = dataclasses.replace(
                rel, estimate=np.asarray(rel.estimate) / public_n,
                noise_std=np.asarray(t.noise_std) / public_n,
                discrete_scale=(None if t.discrete_scale is None
                                else np.asarray(t.discrete_scale) / public_n))
        return rel


    def __repr__(self) -> str:
        return f"<Accumulator of {self.mechanism}: d = {self._d}>"


class _ClippedSum(Accumulator):
    """The Gaussian-data mechanism and the clipping baseline on the float path,
    both relations: rows summed exactly, noise added exactly.

    1. each row is clipped to ``C_in = C - sqrt(d) 2^(K-1) >= C (1 - 2^-32)``
       and rounded to the public grid ``2^K`` (``K`` from ``C`` and ``d``
       only), each row by itself (:func:`dpsum.kernels.grid.accumulate_grid`):
       its rounded row has exact norm at most ``C`` (:prf:ref:`fp-thm-grid`);
    2. the integer rows are summed exactly (``merge`` adds integers, so neither
       the order, the number of blocks nor the engine changes the sum);
    3. the statistic in the scaled space is the exact rational
       ``S 2^K + n (b ⊙ c)`` (the centre term folded in *before* the noise:
       under add-remove ``n`` is private);
    4. ``d`` standard normals are drawn (the same draws as the in-memory
       mechanism), scaled by ``sigma = Delta sigma_opt``, added to the exact
       statistic in rational arithmetic, divided by ``b`` and rounded once,
       saturating at the largest float (:func:`dpsum.kernels._exact.noisy_estimate`).

    **Proof sketch.** Replacing a row moves the exact statistic by at most
    ``2C`` (``n`` is public, the centre terms cancel); adding or removing one
    moves it by ``q 2^K + b ⊙ c`` with ``||q 2^K|| <= C``, so by at most
    ``Delta = C + ||b ⊙ c||`` (evaluated exactly and rounded up). Step 2 adds
    no error whatever ``n`` and the blocks are, and the release is a function
    of ``statistic + noise`` and public inputs only (step 4): the Gaussian
    mechanism on the exact statistic followed by post-processing. No charge,
    cap or exception depends on ``n``. The noise is NumPy's floating-point
    Gaussian, as on every float path (``secure=True`` replaces it by an exact
    discrete Gaussian).
    """

    def __init__(self, template: Release, n: int | None, deviations: bool = False) -> None:
        assert template.clip_norm is not None and template.scaling is not None
        b = np.array(template.scaling)
        c = None if template.center is None else np.array(template.center)
        self._plan, self._K, self._k = make_grid_plan(float(template.clip_norm), b, c, b.size,
                                                      EXACT_CHARGE)
        self._offset = None if deviations else _center_offset(template)
        super().__init__(template, n)
        self._deviations = deviations

    def _zero(self) -> np.ndarray:
        return np.array([0] * self._d, dtype=object)

    def _pass(self, block: np.ndarray) -> tuple[np.ndarray, int, int]:
        total, clipped = accumulate_grid(block, self._plan, self._k)
        return total, clipped, clipped

    def _ratios(self) -> list[tuple[int, int]]:
        """The exact statistic in the scaled space as (numerator, denominator)
        integer pairs: ``S 2^K + n (b ⊙ c)``, or ``S 2^K`` for a sum of
        deviations (:func:`dpsum.kernels._exact.dyadic_sum`)."""
        if self._offset is None:
            return [dyadic_sum(int(s), self._K) for s in self._total]
        return [dyadic_sum(int(s), self._K, self._rows, o)
                for s, o in zip(self._total, self._offset)]

    def _statistic(self) -> np.ndarray:
        """The exact statistic in the scaled space (``Fraction`` entries)."""
        return np.array([Fraction(a, b) for a, b in self._ratios()], dtype=object)

    def _estimate(self, gen: np.random.Generator, noise_std: np.ndarray) -> np.ndarray:
        t = self._template
        # the noise in the scaled space: Delta sigma_opt in every coordinate
        # (with diagnostics, sigma_opt already carries the estimate's share)
        sigma = t.sensitivity * t.sigma_opt
        z = gen.normal(0.0, 1.0, size=self._d) * sigma
        return noisy_estimate(self._ratios(), z, t.scaling)


def _exact_template(template: Release) -> Release:
    """The add-remove float path's record: the sensitivity ``C + ||b ⊙ c||``
    evaluated exactly and rounded up (:func:`dpsum._special.norm_plus`), the
    noise recomputed from it when it rose. Records from
    :func:`dpsum.design.gaussian_data_setup` already carry that value; this
    guards a record rebuilt by :func:`accumulator_for`."""
    assert template.clip_norm is not None
    pairs = _center_offset(template)
    offset = None if pairs is None else [Fraction(p, q) for p, q in pairs]
    sens = norm_plus(float(template.clip_norm), offset)
    if not math.isfinite(sens):
        raise ValueError("center * scaling overflows: the sensitivity is not finite")
    if sens <= template.sensitivity:
        return template
    with np.errstate(over="ignore"):
        noise = sens * template.sigma_opt / np.asarray(template.scaling)
    if not np.all(np.isfinite(noise)):
        raise ValueError("the noise standard deviation overflows: stds or scaling are "
                         "too extreme")
    return dataclasses.replace(template, sensitivity=sens, noise_std=noise)


def _box_parts(template: Release) -> tuple[np.ndarray, np.ndarray]:
    """The half-widths and the midpoint of the Elliptical Gaussian mechanism's box."""
    assert template.widths is not None
    half = np.array(template.widths) / 2.0
    mid = np.zeros(half.size) if template.center is None else np.array(template.center)
    return half, mid


def _outside(block: np.ndarray, template: Release) -> int:
    """Rows of ``block`` with a coordinate outside the box (not private)."""
    if template.lower is None or template.upper is None:
        half, mid = _box_parts(template)
        lo, hi = mid - half, mid + half
    else:
        lo, hi = template.lower, template.upper
    return rows_outside(block, lo, hi)


class _ClampedSum(Accumulator):
    """The Elliptical Gaussian mechanism's float path: coordinate ``j`` of
    ``x - m`` clamped into the box's half-width ``h_j`` and rounded to a
    power-of-two grid ``g_j <= h_j 2^-32`` (:func:`dpsum.kernels.grid.accumulate_clamped`),
    the integers summed exactly; the noise is added to the exact statistic
    ``sum_i q_i g + n m`` (``n`` is public: replace-one) in rational arithmetic
    and the estimate rounded once. Each coordinate of a rounded row lies in
    ``[-h_j, h_j]`` exactly, so a replaced row moves the statistic by at most
    the box's width per coordinate: the mechanism's sensitivity, with no
    rounding charge and no cap on ``n``."""

    def __init__(self, template: Release, n: int | None) -> None:
        half, mid = _box_parts(template)
        self._clamp = make_clamp_plan(half, mid, template.lower, template.upper)
        self._mid_q = [float(m).as_integer_ratio() for m in mid]
        super().__init__(template, n)

    def _zero(self) -> np.ndarray:
        return np.array([0] * self._clamp.half.size, dtype=object)

    def _pass(self, block: np.ndarray) -> tuple[np.ndarray, int, int]:
        return accumulate_clamped(block, self._clamp)

    def _ratios(self) -> list[tuple[int, int]]:
        """The exact clamped sum ``sum_i q_i g`` as (numerator, denominator)
        integer pairs (:func:`dpsum.kernels._exact.dyadic_sum`)."""
        return [dyadic_sum(int(t), int(g))
                for t, g in zip(self._total, self._clamp.G)]

    def _statistic(self) -> np.ndarray:
        """The exact clamped sum (``Fraction`` entries), ``sum_i q_i g``."""
        return np.array([Fraction(a, b) for a, b in self._ratios()], dtype=object)

    def _estimate(self, gen: np.random.Generator, noise_std: np.ndarray) -> np.ndarray:
        # in integers: one exact dyadic per coordinate, no fraction arithmetic
        stat = [dyadic_sum(int(t), int(g), self._rows, m)
                for t, g, m in zip(self._total, self._clamp.G, self._mid_q)]
        z = gen.normal(0.0, 1.0, size=self._d) * noise_std
        return noisy_estimate(stat, z)


def _laplace_scales(epsilon: float, S: float, b: np.ndarray) -> np.ndarray:
    """The shaped Laplace scales ``t_j = S / (epsilon b_j)`` (floats)."""
    return np.array([float(Fraction(float(S)) / (Fraction(float(epsilon)) * Fraction(float(x))))
                     for x in b])


def _grid_laplace_scales(epsilon: float, widths: np.ndarray, scales: np.ndarray,
                         G: np.ndarray) -> list[Fraction]:
    """The grid path's discrete Laplace scales ``s_j = t_j / g_j`` (rationals),
    raised together when ``sum_j D_j / s_j`` exceeds ``epsilon`` exactly,
    ``D_j = floor(Delta_j / g_j)`` the integer sensitivity of coordinate ``j``."""
    eps = Fraction(float(epsilon))
    g = [Fraction(2) ** int(x) for x in G]
    D = [int(Fraction(float(w)) / gj) for w, gj in zip(widths, g)]
    s = [Fraction(float(t)) / gj for t, gj in zip(scales, g)]
    loss = sum((Fraction(Dj) / sj for Dj, sj in zip(D, s)), Fraction(0))
    return [sj * loss / eps for sj in s] if loss > eps else s


class _ShapedLaplaceSum(_ClampedSum):
    """The shaped Laplace mechanism: the exact clamped sum of :class:`_ClampedSum`
    (box ``[-Delta/2, Delta/2]``) and independent Laplace noise of scale
    ``t_j = Delta_j^(1/3) S / epsilon`` per coordinate, added exactly.

    On the grid path (``secure=True``) coordinate ``j``'s integers (units
    ``g_j``, :func:`dpsum.kernels.grid.make_clamp_plan`) move by at most
    ``D_j = floor(Delta_j / g_j)`` for a replaced row, and the noise is an exact
    discrete Laplace of scale ``s_j = t_j / g_j`` (a rational), so the privacy
    loss is at most ``sum_j D_j / s_j <= sum_j Delta_j / t_j = epsilon``; the
    scales are checked against ``epsilon`` in exact arithmetic and raised
    together if the floats ``t_j`` rounded the sum above it.
    """

    def __init__(self, template: Release, n: int | None) -> None:
        super().__init__(template, n)
        assert template.widths is not None and template.scaling is not None
        assert template.epsilon is not None          # pure epsilon-DP: always given
        self._scales = _laplace_scales(template.epsilon, template.sensitivity,
                                       template.scaling)
        if template.secure:
            self._grid_scales = _grid_laplace_scales(template.epsilon, template.widths,
                                                     self._scales, self._clamp.G)

    @property
    def privacy_event(self) -> PrivacyEvent:
        """What a release of this plan spends: a pure ``epsilon``-DP release."""
        eps = self._template.epsilon
        assert eps is not None
        return PureEvent(eps)

    def _generator(self, rng: Any) -> Any:
        return V.check_secure_rng(rng) if self._template.secure else V.check_rng(rng)

    def _estimate(self, gen: Any, noise_std: np.ndarray) -> np.ndarray:
        if self._template.secure:
            # the noisy integers in units g: exact, rounded once
            Y = [int(S) + int(discrete_laplace(sj, rng=gen))
                 for S, sj in zip(self._total, self._grid_scales)]
            return noisy_estimate([dyadic_sum(y, int(g))
                                   for y, g in zip(Y, self._clamp.G)], np.zeros(self._d))
        return noisy_estimate(self._ratios(),
                              gen.laplace(0.0, 1.0, size=self._d) * self._scales)


class _GridSum(Accumulator):
    """The grid path (``secure=True``): integer partial sums on the public grid
    ``2^K``, which merge exactly, and exact discrete Gaussian noise."""

    def _zero(self) -> np.ndarray:
        return np.array([0] * self._d, dtype=object)

    def _statistic(self) -> np.ndarray:
        return np.array(self._total, dtype=object)

    def _generator(self, rng: Any) -> Any:
        return V.check_secure_rng(rng)

    def _noisy(self, S: np.ndarray, gen: Any) -> np.ndarray:
        t = self._template
        assert t.grid_exponent is not None
        if self._zcdp_sigma is not None:
            # calibrated in zCDP: N_Z(0, sigma^2) with sigma = s units (rounded up)
            sigma = self._zcdp_sigma
            Z = discrete_gaussian(sigma * sigma, size=self._d, rng=gen)
            return np.array([int(a) + int(z) for a, z in zip(S, np.ravel(Z))], dtype=object)
        assert t.epsilon is not None and t.delta is not None
        units = math.ldexp(t.sensitivity, -t.grid_exponent)      # exact: a power of two
        Y, _ = grid_gaussian_noise(S, 0, units, epsilon=t.epsilon, delta=t.delta, rng=gen)
        return Y


class _GridClippedSum(_GridSum):
    """The Gaussian-data mechanism and the clipping baseline on the grid path
    (:func:`dpsum.kernels.grid_clipped_sum`)."""

    def __init__(self, template: Release, n: int | None, deviations: bool = False) -> None:
        assert template.clip_norm is not None and template.scaling is not None
        b = np.array(template.scaling)
        c = None if template.center is None else np.array(template.center)
        self._plan, self._K, self._k = make_grid_plan(float(template.clip_norm), b, c, b.size)
        super().__init__(template, n)
        self._deviations = deviations

    def _pass(self, block: np.ndarray) -> tuple[np.ndarray, int, int]:
        total, clipped = accumulate_grid(block, self._plan, self._k)
        return total, clipped, clipped

    def _offset(self) -> bool:
        t = self._template
        return t.neighbouring is Neighbouring.ADD_REMOVE and t.center is not None \
            and not self._deviations

    def _statistic(self) -> np.ndarray:
        """The exact integer statistic in grid units; under add-remove with a
        centre it includes ``n rint(b ⊙ c / 2^K)`` (``n`` is private there, so
        the centre term is noised with the sum)."""
        S = np.array(self._total, dtype=object)
        if self._offset():
            t = self._template
            # as in memory: every record also contributes rint(b ⊙ c / 2^K)
            S = S + self._rows * round_to_grid(np.asarray(t.scaling) * t.center, self._K)
        return S

    def _estimate(self, gen: Any, noise_std: np.ndarray) -> np.ndarray:
        t = self._template
        Y = self._noisy(self._statistic(), gen)
        # a function of the noisy integers: exact, rounded once, saturated
        estimate = noisy_estimate([dyadic_sum(int(y), self._K) for y in Y],
                                  np.zeros(self._d), t.scaling)
        if t.center is not None and not self._offset() and not self._deviations:
            with np.errstate(over="ignore"):              # replace-one: n is public
                estimate = np.clip(estimate + self._rows * t.center, -_FLOAT_MAX, _FLOAT_MAX)
        return estimate


class _GridClampedSum(_GridSum):
    """The Elliptical Gaussian mechanism on the grid path (:func:`dpsum.kernels.grid_clamped_sum`)."""

    def __init__(self, template: Release, n: int | None) -> None:
        assert template.widths is not None and template.scaling is not None
        assert template.grid_exponent is not None
        self._half, self._mid = _box_parts(template)
        self._unit = np.array(template.widths) / np.array(template.scaling)
        self._K = int(template.grid_exponent)
        super().__init__(template, n)

    def _pass(self, block: np.ndarray) -> tuple[np.ndarray, int, int]:
        with np.errstate(over="ignore"):     # an overflow to inf is clamped to the box
            shifted = block - self._mid if np.any(self._mid) else block
        total, count = grid_clamped_sum(shifted, self._half, self._unit, self._K)
        return total, count, _outside(block, self._template)

    def _estimate(self, gen: Any, noise_std: np.ndarray) -> np.ndarray:
        Y = self._noisy(self._total, gen)
        # a function of the noisy integers (n is public: replace-one), saturated
        # y u 2^K exactly, in integers (u = p / q, q a power of two)
        stat = []
        for y, u in zip(Y, self._unit):
            p, q = float(u).as_integer_ratio()
            num, den = dyadic_sum(int(y) * p, self._K)
            stat.append((num, den * q))
        est = noisy_estimate(stat, np.zeros(self._d))
        if not np.any(self._mid):
            return est
        with np.errstate(over="ignore"):
            return np.clip(est + self._rows * self._mid, -_FLOAT_MAX, _FLOAT_MAX)


def _norm_upper(v: np.ndarray) -> float:
    """An upper bound on ``||v||`` (rounded up by a relative ``2^-50``)."""
    return math.sqrt(math.fsum(float(x) * float(x) for x in v)) * (1 + 2.0 ** -50)


def _grid_template(template: Release, K: int, units: float) -> Release:
    """The grid path's release parameters: the discrete Gaussian calibrated to
    the integer statistic's sensitivity ``units`` (grid units), as in memory."""
    assert template.epsilon is not None and template.delta is not None
    sigma = discrete_gaussian_sigma(template.epsilon, template.delta, units)
    scale = math.ldexp(sigma, K)
    if template.widths is not None:              # the Elliptical Gaussian mechanism: per-coordinate units
        assert template.scaling is not None
        noise = sigma * np.ldexp(template.widths / template.scaling, K)
    else:
        assert template.scaling is not None
        noise = scale / template.scaling
    std = noise * (discrete_gaussian_std(sigma) / sigma)
    return dataclasses.replace(
        template, noise_std=std, sigma_opt=sigma / units, sensitivity=math.ldexp(units, K),
        calibration=Calibration.DISCRETE, secure=True, grid_exponent=K, discrete_scale=noise)


def _clipped_grid_template(template: Release) -> Release:
    """Grid units of the Gaussian-data mechanism and the clipping baseline (as
    :func:`dpsum.mechanisms.gaussian_data_mechanism` with ``secure=True``)."""
    assert template.clip_norm is not None and template.scaling is not None
    K = grid_exponent(template.clip_norm, template.scaling.size)
    units = math.ldexp(template.clip_norm, -K) * (1 + 2.0 ** -50)
    if template.neighbouring is Neighbouring.REPLACE:
        units *= 2
    elif template.center is not None:
        v = round_to_grid(template.scaling * template.center, K)
        units += _norm_upper(np.array([float(x) for x in v]))
    return _grid_template(template, K, units)


def _clamped_grid_template(template: Release) -> Release:
    """Grid units of the Elliptical Gaussian mechanism (as
    :func:`dpsum.mechanisms.elliptical_gaussian_mechanism` with ``secure=True``)."""
    assert template.scaling is not None
    d = template.scaling.size
    K = grid_exponent(1.0, d)               # a replaced row moves x ⊙ b / Delta by ||b|| = 1
    units = math.ldexp(_norm_upper(template.scaling), -K) + math.sqrt(d)
    return _grid_template(template, K, units)


def _row_count(n: Any, relation: Neighbouring) -> int | None:
    if n is None:
        return None
    if relation is Neighbouring.ADD_REMOVE:
        raise ValueError("n must not be given under add-remove neighbouring: the number of "
                         "rows is private there")
    return V.check_integer(n, "n")


def _privacy(epsilon: Any, delta: Any) -> tuple[float, float]:
    return V.check_epsilon(epsilon, scalar=True), V.check_delta(delta, scalar=True)


def _count_noise(gen: Any, std: float, secure: bool) -> float:
    """Noise of a diagnostic count: Gaussian, or on the grid path the exact
    discrete Gaussian of the same scale (the same zCDP)."""
    if secure:
        return float(discrete_gaussian(std * std, rng=gen))
    return float(gen.normal(0.0, std))


def _statistic_choice(statistic: Any, relation: Neighbouring) -> str:
    stat = V.check_choice(statistic, "statistic", ("sum", "mean"))
    if stat == "mean" and relation is Neighbouring.ADD_REMOVE:
        raise ValueError("statistic='mean' needs the number of rows, which is private under "
                         "add-remove neighbouring: release the sum, or use "
                         "dpsum.private_mean(..., neighbouring='add-remove'), which spends part "
                         "of the budget on a private count")
    return stat


def _diagnostics_share(diagnostics: Any, relation: Neighbouring) -> float:
    """The share of the budget the diagnostic count takes: 0 when off."""
    if isinstance(diagnostics, (bool, np.bool_)):
        share = DIAGNOSTICS_SHARE if diagnostics else 0.0
    else:
        share = float(V.check_open_interval(diagnostics, "diagnostics", 0.0, 1.0, scalar=True))
    if share > 0 and relation is Neighbouring.ADD_REMOVE:
        raise ValueError("diagnostics compare the clipped rows with the design's expectation "
                         "for the public n: use replace-one neighbouring, or "
                         "dpsum.private_mean, whose diagnostics work under add-remove")
    return share


def _finish_template(template: Release, statistic: str, share: float) -> Release:
    """Record the statistic; with diagnostics, move ``share`` of the budget
    (of ``1 / sigma^2``: the Gaussian mechanisms compose exactly as one with
    the original multiplier) to a count of sensitivity 1."""
    out = dataclasses.replace(template, statistic=statistic)
    if share <= 0:
        return out
    keep = 1.0 / math.sqrt(1.0 - share)
    return dataclasses.replace(
        out, noise_std=np.asarray(template.noise_std) * keep,
        sigma_opt=template.sigma_opt * keep,
        discrete_scale=(None if template.discrete_scale is None
                        else np.asarray(template.discrete_scale) * keep),
        clip_count_std=template.sigma_opt / math.sqrt(share), diagnostics_share=share)


def _center_offset(template: Release) -> list[tuple[int, int]] | None:
    """The shift ``b ⊙ c`` every row brings to the scaled clipped sum, exactly,
    as (numerator, denominator) pairs (floats are dyadic: each denominator
    is a power of two, and no fraction arithmetic is needed); None without
    a nonzero centre."""
    c = template.center
    if c is None or not np.any(c):
        return None
    assert template.scaling is not None
    out = []
    for bj, cj in zip(template.scaling, c):
        p, q = float(bj).as_integer_ratio()
        r, t = float(cj).as_integer_ratio()
        out.append((p * r, q * t))
    return out


def gaussian_data_accumulator(stds: ArrayLike, *, epsilon: float, delta: float,
                              center: ArrayLike,
                              clip_probability: float | None = None, n: int | None = None,
                              scaling: str | ArrayLike = "scaled",
                              neighbouring: Neighbouring | str = "replace",
                              secure: bool = False, statistic: str = "sum",
                              diagnostics: bool | float = False,
                              objective: str | ArrayLike = "total") -> Accumulator:
    """The empty accumulator of the Gaussian-data mechanism
    (:func:`dpsum.mechanisms.gaussian_data_mechanism`).

    The scaling ``b``, clip radius ``C``, sensitivity and noise come from
    :func:`dpsum.design.gaussian_data_setup`, as in memory.

    Parameters
    ----------
    stds, center, clip_probability, scaling, neighbouring, epsilon, delta
        As for :func:`dpsum.mechanisms.gaussian_data_mechanism`; all public.
    n : int, optional
        The number of rows, public under replace-one: it gives the default
        ``p_C = 1/n``, and :meth:`Accumulator.release` checks that exactly
        ``n`` rows were accumulated. Refused under add-remove.
    secure : bool
        The grid path, as ``secure=True`` of the mechanism: rows rounded to a
        public grid and summed exactly in integers (so merging is exact and
        the release equals the in-memory one bit for bit), exact discrete
        Gaussian noise.
    statistic, diagnostics
        As for :func:`dpsum.mechanisms.gaussian_data_mechanism`.
    objective : {"total", "relative"} or array_like, shape (d,)
        What ``scaling="scaled"`` minimises (:func:`dpsum.design.gaussian_data_scaling`);
        ``"total"`` here (the accumulator sees no DataFrame: the mechanism
        passes its own default).

    Returns
    -------
    Accumulator

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(0.0, [4.0, 1.0], size=(1000, 2))
    >>> acc = gaussian_data_accumulator([4.0, 1.0], epsilon=1.0, delta=1e-6, center=0, n=1000)
    >>> left, right = acc.update(X[:600]), acc.update(X[600:])
    >>> r = left.merge(right).release(rng=1)
    >>> from dpsum.mechanisms import gaussian_data_mechanism
    >>> m = gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=[4.0, 1.0], center=0, rng=1,
    ...                             diagnostics=False)      # the accumulator's default
    >>> bool(np.array_equal(r.estimate, m.estimate))        # exact sums: the same bits
    True
    >>> bool(np.array_equal(r.noise_std, m.noise_std))
    True
    """
    _privacy(epsilon, delta)
    relation = Neighbouring.parse(neighbouring)
    secure_ = V.check_bool(secure, "secure")
    stat = _statistic_choice(statistic, relation)
    share = _diagnostics_share(diagnostics, relation)
    nn = _row_count(n, relation)
    if center is None:
        raise TypeError("center is required: the public centre of the data model (an explicit "
                        "0 is fine); a wrong centre makes every row look far out and be clipped")
    d = V.check_vector(stds, "stds", positive=True).size
    center = V.check_center(center, d)
    obj = V.check_objective(objective, d)
    setup = gaussian_data_setup(stds, epsilon=epsilon, delta=delta, center=center,
                                clip_probability=clip_probability, n=nn, scaling=scaling,
                                neighbouring=relation, objective=obj)
    assert setup.noise_std is not None and setup.sigma_opt is not None
    assert setup.epsilon is not None and setup.delta is not None
    if nn is not None and setup.center is not None:
        with np.errstate(over="ignore"):     # the estimate adds n * center (n public)
            V.representable(nn * np.asarray(setup.center), "center", "n * center",
                            "n * |center| must be at most 1.8e308")
    template = Release(
        estimate=np.zeros(setup.scaling.size), noise_std=setup.noise_std,
        scaling=setup.scaling, clip_norm=setup.clip_norm, epsilon=setup.epsilon,
        delta=setup.delta, neighbouring=setup.neighbouring, sigma_opt=setup.sigma_opt,
        sensitivity=setup.sensitivity, mechanism=Mechanism.GAUSSIAN_DATA,
        center=setup.center, clip_probability=setup.clip_probability,
        stds=V.check_vector(stds, "stds", positive=True), **V.objective_record(obj))
    return _clipped_accumulator(template, secure_, stat, share, nn)


def _clipped_accumulator(template: Release, secure: bool, statistic: str, share: float,
                         n: int | None) -> Accumulator:
    """The pass of the Gaussian-data mechanism and the clipping baseline: the
    grid path, the exact float path (add-remove) or the float path (replace-one)."""
    if secure:
        return _GridClippedSum(_finish_template(_clipped_grid_template(template), statistic,
                                                share), n)
    if template.neighbouring is Neighbouring.ADD_REMOVE:
        template = _exact_template(template)
    return _ClippedSum(_finish_template(template, statistic, share), n)


def clipped_gaussian_accumulator(d: int, *, epsilon: float, delta: float, clip_norm: float,
                                 neighbouring: Neighbouring | str = "replace",
                                 n: int | None = None, secure: bool = False,
                                 statistic: str = "sum",
                                 diagnostics: bool | float = False) -> Accumulator:
    """The empty accumulator of the clipping baseline
    (:func:`dpsum.mechanisms.clipped_gaussian_mechanism`) on ``d`` columns.

    ``n`` (replace-one only) is checked at release and ``secure`` takes the
    grid path, as in :func:`gaussian_data_accumulator`.

    Examples
    --------
    >>> acc = clipped_gaussian_accumulator(2, epsilon=1.0, delta=1e-6, clip_norm=1.0)
    >>> round(acc.update([[3.0, 4.0]]).release(rng=0).sensitivity, 9)  # 2 C, charged for rounding
    2.0
    """
    eps, dlt = _privacy(epsilon, delta)
    relation = Neighbouring.parse(neighbouring)
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    dd = V.check_integer(d, "d")
    secure_ = V.check_bool(secure, "secure")
    stat = _statistic_choice(statistic, relation)
    share = _diagnostics_share(diagnostics, relation)
    nn = _row_count(n, relation)
    sens = clipped_sum_sensitivity(C, relation)
    sopt = float(analytic_sigma(eps, dlt))
    noise = np.full(dd, sens * sopt)
    if not np.all(np.isfinite(noise)):
        raise ValueError("the noise standard deviation overflows: clip_norm is too large")
    if np.any(noise < np.finfo(np.float64).tiny):
        raise ValueError("clip_norm is too small for this epsilon and delta: the noise "
                         "standard deviation would be subnormal (below 2.2e-308)")
    template = Release(
        estimate=np.zeros(dd), noise_std=noise, scaling=np.ones(dd), clip_norm=float(C),
        epsilon=eps, delta=dlt, neighbouring=relation, sigma_opt=sopt, sensitivity=sens,
        mechanism=Mechanism.CLIPPED_GAUSSIAN)
    return _clipped_accumulator(template, secure_, stat, share, nn)


def elliptical_gaussian_accumulator(lower: ArrayLike, upper: ArrayLike, *, epsilon: float,
                                    delta: float, n: int | None = None, secure: bool = False,
                                    statistic: str = "sum",
                                    diagnostics: bool | float = False,
                                    objective: str | ArrayLike = "total") -> Accumulator:
    """The empty accumulator of the Elliptical Gaussian mechanism
    (:func:`dpsum.mechanisms.elliptical_gaussian_mechanism`) on the box
    ``[lower, upper]``, replace-one; ``n``, ``secure``, ``statistic`` and
    ``diagnostics`` as in :func:`gaussian_data_accumulator`; ``objective``
    as in :func:`dpsum.design.elliptical_scaling` (``"total"`` here: the
    accumulator sees no DataFrame, and the mechanism passes its own default).

    Examples
    --------
    >>> acc = elliptical_gaussian_accumulator([-0.5, -2.0], [0.5, 2.0], epsilon=1.0, delta=1e-6)
    >>> r = acc.update([[0.2, 5.0]]).merge(acc.update([[-0.1, 0.3]])).release(rng=0)
    >>> r.mechanism
    <Mechanism.ELLIPTICAL_GAUSSIAN: 'elliptical gaussian'>
    """
    eps, dlt = _privacy(epsilon, delta)
    V.check_real(lower, "lower")
    V.check_real(upper, "upper")
    if np.ndim(lower) == 0 and np.ndim(upper) == 0:
        raise ValueError("lower or upper must have one entry per column: the accumulator "
                         "has no data to take the number of columns from")
    for end, name in ((lower, "lower"), (upper, "upper")):
        if np.ndim(end) > 1:
            raise ValueError(f"{name} must be a scalar or a 1-d vector (one entry per column), "
                             f"got shape {np.shape(end)}")
    d = int(max(np.size(lower), np.size(upper)))
    lo, hi = V.check_box(lower, upper, d)
    if np.any(hi - lo < _MIN_WIDTH):
        # below it, width / 2 is rounded (a subnormal): the clamp would let a
        # replaced row move by more than the width
        raise ValueError("the box width upper - lower must be at least 2^-1021 (about "
                         "4.5e-308) in every coordinate, so that the half-widths are exact; "
                         "rescale the data")
    secure_ = V.check_bool(secure, "secure")
    stat = _statistic_choice(statistic, Neighbouring.REPLACE)
    share = _diagnostics_share(diagnostics, Neighbouring.REPLACE)
    nn = _row_count(n, Neighbouring.REPLACE)
    obj = V.check_objective(objective, d)
    width = hi - lo
    mid = lo + width / 2.0
    sopt = float(analytic_sigma(eps, dlt))
    with np.errstate(over="ignore"):             # an overflow is refused just below
        b = elliptical_scaling(width, obj)
        noise = sopt * width / b
    if not np.all(np.isfinite(noise)):
        raise ValueError("the noise standard deviation overflows: upper - lower is too wide")
    if np.any(noise < np.finfo(np.float64).tiny):
        raise ValueError("the box is too narrow for this epsilon and delta: a noise standard "
                         "deviation would be subnormal (below 2.2e-308); rescale the data")
    template = Release(
        estimate=np.zeros(width.size), noise_std=noise, scaling=b, clip_norm=None,
        epsilon=eps, delta=dlt, neighbouring=Neighbouring.REPLACE, sigma_opt=sopt,
        sensitivity=1.0, mechanism=Mechanism.ELLIPTICAL_GAUSSIAN, widths=width,
        center=mid if np.any(mid) else None, lower=lo, upper=hi, **V.objective_record(obj))
    if secure_:
        return _GridClampedSum(_finish_template(_clamped_grid_template(template), stat, share),
                               nn)
    return _ClampedSum(_finish_template(template, stat, share), nn)


def shaped_laplace_accumulator(widths: ArrayLike, *, epsilon: float, n: int | None = None,
                               secure: bool = False, statistic: str = "sum") -> Accumulator:
    """The empty accumulator of the shaped Laplace mechanism
    (:func:`dpsum.mechanisms.shaped_laplace_mechanism`) on the box
    ``[-widths/2, widths/2]``, replace-one; ``n``, ``secure`` and
    ``statistic`` as in :func:`gaussian_data_accumulator`.

    Examples
    --------
    >>> acc = shaped_laplace_accumulator([1.0, 8.0], epsilon=1.0)
    >>> r = acc.update([[0.2, 5.0]]).merge(acc.update([[-0.1, 0.3]])).release(rng=0)
    >>> r.mechanism, [round(float(s), 6) for s in r.noise_std / 2**0.5]
    (<Mechanism.SHAPED_LAPLACE: 'shaped laplace'>, [5.0, 10.0])
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    width = V.check_vector(widths, "widths", None, positive=True)
    secure_ = V.check_bool(secure, "secure")
    stat = _statistic_choice(statistic, Neighbouring.REPLACE)
    nn = _row_count(n, Neighbouring.REPLACE)
    if np.any(width < _MIN_WIDTH):
        raise ValueError("widths must be at least 2^-1021 (about 4.5e-308) in every "
                         "coordinate, so that the half-widths are exact; rescale the data")
    with np.errstate(over="ignore", under="ignore"):   # an overflow is refused below
        b = width ** (-1.0 / 3.0)
        S = float(np.sum(width * b))
        scales = S / (eps * b)
    if not (math.isfinite(S) and np.all(np.isfinite(scales)) and np.all(scales > 0)):
        raise ValueError("the noise scale sum(widths^(2/3)) widths^(1/3) / epsilon overflows "
                         "or underflows: epsilon or widths is out of range")
    template = Release(
        estimate=np.zeros(width.size), noise_std=math.sqrt(2.0) * scales, scaling=b,
        clip_norm=None, epsilon=eps, delta=0.0, neighbouring=Neighbouring.REPLACE,
        sigma_opt=math.sqrt(2.0) / eps, sensitivity=S, mechanism=Mechanism.SHAPED_LAPLACE,
        calibration=Calibration.LAPLACE, widths=width, lower=-width / 2.0, upper=width / 2.0,
        statistic=stat)
    if secure_:
        G = make_clamp_plan(width / 2.0, None).G
        s = _grid_laplace_scales(eps, width, _laplace_scales(eps, S, b), G)
        std = np.array([discrete_laplace_std(sj) * math.ldexp(1.0, int(Gj))
                        for sj, Gj in zip(s, G)])
        template = dataclasses.replace(template, secure=True, noise_std=std)
    return _ShapedLaplaceSum(template, nn)


def deviation_accumulator(clip_norm: float, scaling: np.ndarray, center: np.ndarray, *,
                          multiplier: float, neighbouring: Neighbouring, secure: bool,
                          lower: np.ndarray | None = None, upper: np.ndarray | None = None
                          ) -> Accumulator:
    r"""The empty accumulator of a clipped sum of deviations, calibrated in zCDP.

    On trusted, validated inputs (the private pipeline's last step and its box
    path, ``dpsum.pipeline.mean``; not part of the public lists). The pass
    is the clipped sum's of :func:`~dpsum.release.gaussian_data_accumulator`: each row's
    ``(x - c) ⊙ b`` clipped at ``C`` and rounded to the grid, the integers
    summed exactly, but the centre is **not** added back (``n c`` is the
    caller's: the pipeline adds its own count times ``c``), so the sensitivity
    is ``2C`` under replace-one and ``C`` under add-remove. The noise is
    calibrated by the noise multiplier ``s`` (the Gaussian mechanism of
    sensitivity 1 with noise ``s`` is ``1 / (2 s^2)``-zCDP, the record's
    ``rho``), not by ``(epsilon, delta)``:

    - float path: Gaussian noise ``s Delta`` per coordinate of the scaled sum,
      added exactly, divided by ``b`` and rounded once;
    - grid path (``secure=True``): the exact discrete Gaussian of scale
      ``sigma = s u (1 + 10^-12)`` (``u`` the integer sensitivity in grid units,
      rounded up: never less noise), the same zCDP, added to the integers.

    The release's ``estimate`` is the noisy sum of deviations in the data's
    units; ``noise_std`` its standard deviation (on the grid path
    ``discrete_scale`` is the discrete Gaussian's scale, ``2^K / b`` one grid
    unit). With ``lower``, ``upper`` the accumulator also counts the rows
    outside the box (:attr:`~dpsum.release.Accumulator.rows_outside`, not private).
    """
    C = float(clip_norm)
    b = np.asarray(scaling, dtype=float)
    d = b.size
    s = float(multiplier)
    base: dict[str, Any] = dict(estimate=np.zeros(d), scaling=b, clip_norm=C, epsilon=None,
                                delta=None,
                neighbouring=neighbouring, mechanism=Mechanism.CLIPPED_GAUSSIAN,
                center=center, lower=lower, upper=upper, rho=0.5 / (s * s))
    if not secure:
        sens = clipped_sum_sensitivity(C, neighbouring)
        with np.errstate(over="ignore"):
            std = np.clip(s * sens / b, -_FLOAT_MAX, _FLOAT_MAX)
        template = Release(noise_std=std, sigma_opt=s, sensitivity=sens,
                           calibration=Calibration.ZCDP, **base)
        return _ClippedSum(template, None, deviations=True)
    K = grid_exponent(C, d)
    units = math.ldexp(C, -K) * (1 + 2.0 ** -50)
    if neighbouring is Neighbouring.REPLACE:
        units *= 2
    sigma = s * units * (1 + 1e-12)              # rounded up: never less noise
    scale = math.ldexp(sigma, K) / b
    template = Release(noise_std=scale * (discrete_gaussian_std(sigma) / sigma),
                       sigma_opt=sigma / units, sensitivity=math.ldexp(units, K),
                       calibration=Calibration.DISCRETE, secure=True, grid_exponent=K,
                       discrete_scale=scale, **base)
    acc = _GridClippedSum(template, None, deviations=True)
    assert acc._K == K                           # the kernel's grid is the template's
    acc._zcdp_sigma = sigma
    return acc


def accumulator_for(release: Release, n: int | None = None) -> Accumulator:
    """The empty accumulator of the set-up recorded in ``release``.

    A release of a dataset mechanism records every public parameter of its
    pass, so the same pass can be run again (for
    :func:`dpsum.mechanisms.release_diagnostics`).

    Examples
    --------
    >>> acc = clipped_gaussian_accumulator(2, epsilon=1.0, delta=1e-6, clip_norm=1.0)
    >>> r = acc.update([[3.0, 4.0]]).release(rng=0)
    >>> accumulator_for(r).update([[3.0, 4.0], [0.1, 0.0]]).diagnostic_count
    1
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpsum Release, got {type(release).__name__}")
    if release.epsilon is None or release.delta is None:
        raise ValueError("release was calibrated in zCDP (rho) without an (epsilon, delta) "
                         "guarantee: its set-up is not one of the accumulators' mechanisms")
    if release.mechanism is Mechanism.ELLIPTICAL_GAUSSIAN:
        return _GridClampedSum(release, n) if release.secure else _ClampedSum(release, n)
    if release.mechanism in (Mechanism.GAUSSIAN_DATA, Mechanism.CLIPPED_GAUSSIAN):
        if release.secure:
            return _GridClippedSum(release, n)
        if release.neighbouring is Neighbouring.ADD_REMOVE:
            return _ClippedSum(_exact_template(release), n)
        return _ClippedSum(release, n)
    raise ValueError(f"release comes from the {release.mechanism} mechanism, which does not "
                     "read a dataset row by row: it has no accumulator")
