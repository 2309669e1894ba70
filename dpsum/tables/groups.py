"""Per-group private sums and means of vectors, with privacy units.

``private_group_sums`` answers "the sum (or mean) of these columns per
region" while protecting every person with all of their rows:

1. **Bound** each unit (``dpsum.tables.bound_contributions``): at most
   ``max_groups`` groups, ``max_rows`` rows per group, one combined vector
   per (unit, group) cell.
2. **Sum exactly.** Each cell vector is clipped to ``C`` and rounded to the
   fine public grid of the exact path (``EXACT_CHARGE``: its rounded norm is
   at most ``C`` exactly, :prf:ref:`fp-thm-grid`) and the cells of a group
   are added as integers: the sums do not depend on the row order, the
   blocks or the machine.
3. **Add Gaussian noise** calibrated exactly (the analytic Gaussian,
   :func:`dpsum.privacy.analytic_sigma`) to the L2 sensitivity across
   groups: removing a unit moves at most ``max_groups`` group sums by one
   clipped vector each, so ``Delta = sqrt(max_groups) C`` under add-remove
   and ``2 C sqrt(max_groups)`` under replace-one (of a whole unit).

The released pieces are one Gaussian mechanism: the group sums (noise
``sigma_s``), the groups' unit counts (``sigma_c``; the denominator of a
mean, and the test of private group discovery) and the number of truncated
units (``sigma_t``, sensitivity 1). With budget shares ``w_s + w_c + w_t = 1``
of ``1 / sigma_opt^2`` and ``sigma_s = Delta_S sigma_opt / sqrt(w_s)`` (and
alike), the stacked release has sensitivity
``sqrt(w_s + w_c + w_t) / sigma_opt = 1 / sigma_opt`` in units of its noise,
so the whole release is ``(epsilon, delta_G)``-DP with
``sigma_opt = analytic_sigma(epsilon, delta_G)``. The unit counts move by 1
in at most ``max_groups`` groups (``Delta_N = sqrt(max_groups)``; under
replace-one ``sqrt(2 max_groups)``: one unit leaves up to ``k`` groups, the
other joins up to ``k``). Private group discovery
(``dpsum.tables.selection``) adds ``delta_tau``; ``delta_G + delta_tau``
is the caller's ``delta``.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpsum import _validation as V
from dpsum._special import sqrt_up
from dpsum.kernels.grid import EXACT_CHARGE, make_grid_plan
from dpsum.privacy.calibration import analytic_sigma
from dpsum.privacy.neighbouring import Neighbouring
from dpsum import _units as H
from dpsum.session import ONE_OFF, ApproximateEvent, GaussianEvent, as_session
from dpsum.session import charge as charge_session
from dpsum.tables._round import noisy_grid_sum
from dpsum.tables.selection import SELECTION_DELTA_SHARE, threshold_for_share
from dpsum.tables._sums import _statistics
from dpsum.tables.engine import dask_statistics, dask_structure, is_dask_frame
from dpsum.tables.units import ContributionBounds, check_groups, table_structure

__all__ = ["GroupRelease", "private_group_sums", "COUNT_SHARE", "TRUNCATION_SHARE"]

#: Default share of the budget (of ``1/sigma^2``) for the groups' unit counts,
#: when they are released (a mean, or private group discovery).
COUNT_SHARE = 0.2

#: Default share of the budget for the count of truncated units.
TRUNCATION_SHARE = 0.05

_UP = 1.0 + 2.0 ** -48          # covers the roundings of a product of three floats
_TINY = float(np.finfo(np.float64).tiny)


@dataclasses.dataclass(frozen=True)
class GroupRelease(V.Record):
    """The record of ``private_group_sums``: per-group noisy sums (and
    unit counts), and every public parameter of the release.

    Attributes
    ----------
    groups : tuple
        The released groups (all listed groups, or those that passed the
        threshold), in order.
    key_columns : tuple
        The names of the group key columns (``("group",)`` for an array key).
    columns : tuple
        The value columns' labels (their positions for an array ``X``).
    noisy_sum : numpy.ndarray, shape (len(groups), d)
        The noisy sum of the clipped cell vectors of each group.
    sum_std : float
        Its noise standard deviation (every entry).
    noisy_count : numpy.ndarray, shape (len(groups),), or None
        The noisy number of units of each group (when counts are released).
    count_std : float or None
        Its noise standard deviation.
    truncated_units : float or None
        The noisy number of units that lost a group or a row to the bounds
        (clamped at 0), and ``truncated_std`` its noise.
    statistic, per_unit : str
        ``"sum"`` or ``"mean"``; how rows became a unit's vector.
    epsilon, delta, neighbouring
        The guarantee, over privacy units (``"add-remove"`` or ``"replace"``
        of all rows of one unit).
    clip_norm, max_rows, max_groups, sensitivity
        The bounds and the L2 sensitivity of the sums across groups.
    sigma_opt : float
        The noise multiplier of the stacked Gaussian release.
    threshold : float or None
        The selection threshold (private group discovery), else None;
        ``selection_delta`` its share of ``delta``.
    shares : tuple of float
        The budget shares (sums, counts, truncated units) of ``1/sigma_opt^2``.
    accounting : str
        The session the release was charged to (its ledger entry), or that
        it was a one-off.
    """

    groups: tuple
    key_columns: tuple
    columns: tuple
    noisy_sum: np.ndarray
    sum_std: float
    noisy_count: np.ndarray | None
    count_std: float | None
    truncated_units: float | None
    truncated_std: float | None
    statistic: str
    per_unit: str
    epsilon: float
    delta: float
    neighbouring: str
    clip_norm: float
    max_rows: int
    max_groups: int
    sensitivity: float
    sigma_opt: float
    threshold: float | None
    selection_delta: float
    shares: tuple
    accounting: str = ONE_OFF

    def __post_init__(self) -> None:
        V.check_record_fields(self)
        G, d = len(self.groups), len(self.columns)
        if self.noisy_sum.shape != (G, d):
            raise ValueError(f"noisy_sum must have shape (len(groups), len(columns)) = "
                             f"{(G, d)}, got {self.noisy_sum.shape}")
        for name in ("sum_std", "clip_norm", "sensitivity", "sigma_opt"):
            V.record_scalar(getattr(self, name), name, low=0.0, closed_low=False)
        if (self.noisy_count is None) != (self.count_std is None):
            raise ValueError("noisy_count and count_std must both be given or both be None")
        if self.noisy_count is not None:
            if self.noisy_count.shape != (G,):
                raise ValueError(f"noisy_count must have shape (len(groups),) = {(G,)}, got "
                                 f"{self.noisy_count.shape}")
            V.record_scalar(self.count_std, "count_std", low=0.0, closed_low=False)
        if (self.truncated_units is None) != (self.truncated_std is None):
            raise ValueError("truncated_units and truncated_std must both be given or both "
                             "be None")
        if self.truncated_units is not None:
            V.record_scalar(self.truncated_units, "truncated_units", low=0.0)
            V.record_scalar(self.truncated_std, "truncated_std", low=0.0, closed_low=False)
        V.check_choice(self.statistic, "statistic", ("sum", "mean"))
        V.check_choice(self.per_unit, "per_unit", ("sum", "mean"))
        if self.statistic == "mean" and self.noisy_count is None:
            raise ValueError("noisy_count is required for statistic='mean' (the denominator)")
        V.record_scalar(self.epsilon, "epsilon", low=0.0, closed_low=False)
        V.record_scalar(self.delta, "delta", low=0.0, high=1.0, closed_low=False,
                        closed_high=False)
        Neighbouring.parse(self.neighbouring)
        V.record_scalar(self.max_rows, "max_rows", low=1, integer=True)
        V.record_scalar(self.max_groups, "max_groups", low=1, integer=True)
        V.record_scalar(self.selection_delta, "selection_delta", low=0.0, high=1.0,
                        closed_high=False)
        if len(self.shares) != 3:
            raise ValueError("shares must hold three budget shares (sums, counts, truncated "
                             "units)")
        for s in self.shares:
            V.record_scalar(s, "shares", low=0.0, high=1.0)
        if not isinstance(self.accounting, str):
            raise TypeError(f"accounting must be a str, got {V.describe(self.accounting)}")

    @property
    def estimate(self) -> np.ndarray:
        """Per group and column: the noisy sum, or for a mean the noisy sum
        over ``max(noisy count, 1)``, clamped to ``[-C, C]`` (each unit's
        vector has norm at most ``C``, so the mean's coordinates lie there)."""
        if self.statistic == "sum":
            return np.array(self.noisy_sum)
        assert self.noisy_count is not None
        den = np.maximum(self.noisy_count, 1.0)[:, None]
        C = self.clip_norm
        return np.clip(self.noisy_sum / den, -C, C)

    @property
    def noise_std(self) -> np.ndarray:
        """The noise standard deviation of each estimate: exact for a sum;
        for a mean the delta-method approximation
        ``sqrt(sigma_s^2 + m^2 sigma_c^2) / max(noisy count, 1)``."""
        G, d = self.noisy_sum.shape
        if self.statistic == "sum":
            return np.full((G, d), self.sum_std)
        assert self.noisy_count is not None and self.count_std is not None
        den = np.maximum(self.noisy_count, 1.0)[:, None]
        m = self.estimate
        return np.sqrt(self.sum_std ** 2 + (m * self.count_std) ** 2) / den

    def intervals(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Per-coordinate confidence intervals ``(lower, upper)`` at ``level``.

        A **sum**: ``noisy_sum -+ z sigma_s``, ``z`` the two-sided normal
        quantile; it covers the group's sum of clipped vectors with
        probability ``level`` exactly.

        A **mean** (two noises): with ``beta = 1 - level``, the sum lies in
        ``S^ -+ z' sigma_s`` and the unit count in ``N^ -+ z' sigma_c``, ``z'``
        the normal quantile of ``1 - beta/4``, each failing with probability
        ``beta/2`` (a union bound); on both events the mean ``S / N`` (``N >=
        1``) lies between the extreme ratios of the two intervals' ends, and
        in ``[-C, C]``. So the interval covers the group's mean of clipped
        unit vectors with probability at least ``level`` (a group without
        units has no mean to cover).
        """
        lev = float(V.check_open_interval(level, "level", 0.0, 1.0, scalar=True))
        beta = 1.0 - lev
        if self.statistic == "sum":
            z = float(-_ndtri(beta / 2.0))
            half = z * self.sum_std
            return self.noisy_sum - half, self.noisy_sum + half
        assert self.noisy_count is not None and self.count_std is not None
        z = float(-_ndtri(beta / 4.0))
        s_lo = self.noisy_sum - z * self.sum_std
        s_hi = self.noisy_sum + z * self.sum_std
        n_lo = np.maximum(self.noisy_count - z * self.count_std, 1.0)[:, None]
        n_hi = np.maximum(self.noisy_count + z * self.count_std, 1.0)[:, None]
        corners = np.stack([s_lo / n_lo, s_lo / n_hi, s_hi / n_lo, s_hi / n_hi])
        C = self.clip_norm
        return np.clip(corners.min(axis=0), -C, C), np.clip(corners.max(axis=0), -C, C)

    def to_pandas(self, level: float = 0.95) -> Any:
        """The tidy table: one row per (group, column) with the group key(s),
        ``column``, ``estimate``, ``noise_std``, ``lower`` and ``upper`` (the
        ``level`` interval of ``intervals``) and, when released, the
        group's noisy unit count ``units``. Needs pandas."""
        lower, upper = self.intervals(level)
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is in the test extra
            raise ImportError("to_pandas needs pandas: pip install pandas") from None
        G, d = self.noisy_sum.shape
        data: dict[str, Any] = {}
        for j, name in enumerate(self.key_columns):
            data[name] = [g[j] if isinstance(g, tuple) and len(self.key_columns) > 1 else g
                          for g in self.groups for _ in range(d)]
        data["column"] = [c for _ in range(G) for c in self.columns]
        data["estimate"] = self.estimate.ravel()
        data["noise_std"] = self.noise_std.ravel()
        data["lower"] = lower.ravel()
        data["upper"] = upper.ravel()
        if self.noisy_count is not None:
            data["units"] = np.repeat(self.noisy_count, d)
        return pd.DataFrame(data)


def _ndtri(p: float) -> float:
    from scipy.special import ndtri
    return float(ndtri(p))


def _share(value: Any, name: str) -> float:
    v = float(V.check_real(value, name, scalar=True))
    if not 0.0 <= v < 1.0:
        raise ValueError(f"{name} must lie in [0, 1), got {V.describe(value)}")
    return v


def _noise(sens: float, sopt: float, share: float, what: str) -> float:
    with np.errstate(over="ignore"):
        s = sens * sopt / math.sqrt(share) * _UP
    if not math.isfinite(s):
        raise ValueError(f"the noise of the {what} overflows: clip_norm is too large")
    if s < _TINY:
        raise ValueError(f"clip_norm is too small for this epsilon and delta: the noise of the "
                         f"{what} would be subnormal")
    return s


def private_group_sums(X: Any, *, privacy_unit: Any, clip_norm: float, max_rows: int,
                       epsilon: float, delta: float, by: Any = None, columns: Any = None,
                       max_groups: int = 1, groups: Any = None, statistic: str = "sum",
                       per_unit: str | None = None,
                       neighbouring: Neighbouring | str = "add-remove",
                       count_share: float | None = None,
                       truncation_share: float = TRUNCATION_SHARE,
                       rng: Any = None, session: Any = None) -> GroupRelease:
    """Private per-group sums or means of vectors, protecting each privacy
    unit with all of its rows.

    Each unit keeps at most ``max_groups`` groups and ``max_rows`` rows per
    group (chosen at random by keyed hash, ``dpsum.tables.units``); its
    kept rows in a group become one vector (``per_unit``), clipped to
    ``clip_norm`` and summed exactly per group; Gaussian noise calibrated to
    the L2 sensitivity across groups (``sqrt(max_groups) C``, or ``2 C
    sqrt(max_groups)`` under replace-one) is added. A mean divides by a
    noisy unit count; with ``groups=None`` the groups themselves are found
    privately (a group is released only if its noisy unit count passes a
    threshold, ``dpsum.tables.selection``).

    Parameters
    ----------
    X : numpy.ndarray, shape (n, d), pandas.DataFrame or dask.dataframe.DataFrame
        The rows. A DataFrame may hold the unit and group columns; its value
        columns' labels are kept. A dask DataFrame is shuffled by unit and
        bounded and summed partition by partition on its cluster; the sums
        are exact, so the release is the pandas release bit for bit (same
        ``rng``).
    privacy_unit : column label or array_like, shape (n,)
        Each row's unit id (integers or strings; no missing id, one kind).
    clip_norm : float
        ``C``, the L2 radius of one unit's vector in one group.
    max_rows : int
        Rows kept per unit and group.
    epsilon, delta : float
        The guarantee, over units.
    by : column label, list of labels or array_like, optional
        The group key(s); None: one group (the whole table).
    columns : list of labels, optional
        The value columns of a DataFrame (default: all but ``privacy_unit``
        and ``by``).
    max_groups : int
        Groups kept per unit.
    groups : list, optional
        Public groups (rows of other groups are dropped; a listed group with
        no rows is answered too). None: private group discovery
        (add-remove only).
    statistic : {"sum", "mean"}
        A mean is over units: the sum of unit vectors over the noisy number
        of units of the group.
    per_unit : {"sum", "mean"}, optional
        How a unit's rows become one vector (``ContributionBounds``);
        default ``statistic``.
    neighbouring : {"add-remove", "replace"}
        Add or remove all rows of one unit (the number of units is private),
        or replace all rows of one unit by another's.
    count_share : float, optional
        Budget share of the unit counts (default ``COUNT_SHARE`` when
        they are needed, a mean or private groups; else 0, no counts).
    truncation_share : float
        Budget share of the noisy count of truncated units (0: not released).
    rng : numpy.random.Generator, int, SeedSequence or None
        Draws the hashing key, then the noise.
    session : dpsum.session.Session, optional
        The analysis's budget, over units under ``neighbouring``: the
        release is refused if it does not fit before any value of the table
        is read, and charged (its ledger entry on disk) before the noise is
        drawn. With public groups it is one Gaussian event of noise
        multiplier ``sigma_opt`` (the stacked sums, counts and truncated
        count); private group discovery adds the threshold's
        ``selection_delta``, so it is charged as an ``(epsilon, delta)``
        event. Without one the release is a one-off (``accounting`` says
        so).

    Returns
    -------
    GroupRelease
        ``.to_pandas()`` gives the tidy table.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2))
    >>> users = rng.integers(0, 200, 600)
    >>> region = rng.integers(0, 3, 600)
    >>> rel = private_group_sums(X, privacy_unit=users, by=region, groups=[0, 1, 2],
    ...                          clip_norm=3.0, max_rows=2, max_groups=2,
    ...                          epsilon=1.0, delta=1e-6, rng=1)
    >>> rel.estimate.shape, rel.to_pandas().shape
    ((3, 2), (6, 6))
    """
    # 1. public parameters, before any data
    eps = float(V.check_epsilon(epsilon, scalar=True))
    dlt = float(V.check_delta(delta, scalar=True))
    C = float(V.check_positive(clip_norm, "clip_norm", scalar=True))
    stat = V.check_choice(statistic, "statistic", ("sum", "mean"))
    pu = stat if per_unit is None else per_unit
    bounds = ContributionBounds(max_rows, max_groups, pu)
    k = bounds.max_groups
    relation = Neighbouring.parse(neighbouring)
    listed = check_groups(groups, None)
    need_counts = stat == "mean" or listed is None
    w_c = (COUNT_SHARE if need_counts else 0.0) if count_share is None else \
        _share(count_share, "count_share")
    w_t = _share(truncation_share, "truncation_share")
    if need_counts and w_c == 0.0:
        raise ValueError("count_share must be > 0 for a mean or private groups (they need "
                         "the noisy unit counts)")
    w_s = 1.0 - w_c - w_t
    if not w_s > 0.0:
        raise ValueError("count_share + truncation_share must be below 1 (the sums need "
                         "a share of the budget)")
    if listed is None and relation is Neighbouring.REPLACE:
        raise ValueError("groups=None (private group discovery) is defined under "
                         "neighbouring='add-remove'; list the groups, or use add-remove")
    gen = V.check_rng(rng)
    sess = as_session(session)
    d_sel = dlt * SELECTION_DELTA_SHARE if listed is None else 0.0
    sopt = float(analytic_sigma(eps, dlt - d_sel))
    factor = 4 if relation is Neighbouring.REPLACE else 1
    sens = sqrt_up(Fraction(C) ** 2 * k * factor)
    sigma_s = _noise(sens, sopt, w_s, "sums")
    sigma_c = _noise(math.sqrt(k * (2 if factor == 4 else 1)) * _UP, sopt, w_c, "counts") \
        if w_c > 0 else None
    sigma_t = _noise(1.0, sopt, w_t, "truncated count") if w_t > 0 else None
    tau = None
    if listed is None:
        assert sigma_c is not None                      # need_counts: w_c > 0
        tau = threshold_for_share(sigma_c, k, d_sel)
    # 2. the table's structure (no value read yet)
    frame = is_dask_frame(X)
    table = dask_structure(X, privacy_unit, by, columns) if frame else \
        table_structure(X, privacy_unit, by, columns)
    if listed is not None:
        check_groups(listed, len(table.keys))
    K = make_grid_plan(C, np.ones(table.d), None, table.d, EXACT_CHARGE)[1]  # refuses a tiny C
    event = GaussianEvent(sopt) if listed is not None else ApproximateEvent(eps, dlt)
    if sess is not None:                     # refused before any value is read
        sess.check(event, neighbouring=relation)
    # 3. the data: bounding, exact sums (on a dask cluster: per partition, added exactly)
    key = H.draw_key(gen)
    if frame:
        labels, sums, counts, truncated = dask_statistics(
            X, table, privacy_unit, by, columns, listed, bounds, key, C)
    else:
        b, sums, K2, counts = _statistics(table, listed, bounds, key, C)
        assert K2 == K
        labels, truncated = b.groups, b.truncated_units
    G = len(labels)
    # 4. the ledger entry, then the noise, in a fixed order: sums, counts, truncated units
    tag = charge_session(sess, event, mechanism="private_group_sums",
                         parameters={"epsilon": eps, "delta": dlt, "clip_norm": C,
                                     "max_rows": bounds.max_rows, "max_groups": k,
                                     "statistic": stat, "per_unit": bounds.per_unit,
                                     "public_groups": listed is not None,
                                     "sigma_opt": sopt, "selection_delta": d_sel,
                                     "neighbours_differ_in": "all rows of one privacy unit"},
                         neighbouring=relation)
    z = gen.normal(size=(G, table.d)) * sigma_s
    # S 2^K + z formed exactly and rounded once (post-processing of the noisy value)
    noisy = np.array([[noisy_grid_sum(s, K, float(v)) for s, v in zip(sums[g], z[g])]
                      for g in range(G)]).reshape(G, table.d)
    noisy_count = None
    if sigma_c is not None:
        noisy_count = counts + gen.normal(size=G) * sigma_c
    trunc = None
    if sigma_t is not None:
        trunc = max(float(truncated + gen.normal() * sigma_t), 0.0)
    keep = np.arange(G)
    if tau is not None:
        assert noisy_count is not None
        keep = np.flatnonzero(noisy_count > tau)
    cols = table.columns if table.columns is not None else tuple(range(table.d))
    return GroupRelease(
        groups=tuple(labels[i] for i in keep), key_columns=table.by_names or ("group",),
        columns=tuple(cols), noisy_sum=noisy[keep].reshape(len(keep), table.d),
        sum_std=sigma_s,
        noisy_count=None if noisy_count is None else noisy_count[keep],
        count_std=sigma_c, truncated_units=trunc, truncated_std=sigma_t, statistic=stat,
        per_unit=bounds.per_unit, epsilon=eps, delta=dlt, neighbouring=relation.value,
        clip_norm=C, max_rows=bounds.max_rows, max_groups=k, sensitivity=sens,
        sigma_opt=sopt, threshold=tau, selection_delta=d_sel, shares=(w_s, w_c, w_t),
        accounting=tag)
