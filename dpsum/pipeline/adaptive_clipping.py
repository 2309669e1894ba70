"""Adaptive clipping across repeated releases (book chapter "Clipping without a model").

When the same kind of sum is released again and again (the steps of DP-SGD,
the rounds of federated learning), the clip radius can follow a target
quantile ``gamma`` of the norms with a tiny budget per release (Andrew,
Thakkar, McMahan and Ramaswamy 2021): count the rows whose norm is at most
the current radius ``C``, privately, and move ``C`` geometrically,

    b = (#{i : ||x_i|| <= C} + N(0, s^2)) / m,      C' = C exp(-eta (b - gamma)).

The count has sensitivity 1 under both neighbouring relations, so one
update is a Gaussian step with noise multiplier ``s``
(:attr:`ClipUpdate.privacy_step`); ``m`` is public (the number of rows under
replace-one, the expected batch size under add-remove). The new radius is a
post-processing of the noisy count and the old radius.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.session import GaussianEvent, as_session
from dpsum.session import charge as charge_session
from dpsum.pipeline.quantiles import row_norms
from dpsum.privacy.composition import PrivacyStep, gaussian_step

__all__ = ["ClipUpdate", "adaptive_clip_update"]


@dataclass(frozen=True)
class ClipUpdate(V.Record):
    """One adaptive-clipping update: the released fraction and the new radius.

    Every field is a private release or a function of one and of public inputs.

    Attributes
    ----------
    clip_radius : float
        The new radius ``C' = C exp(-learning_rate (fraction - target_quantile))``.
    fraction : float
        The noisy fraction of rows with norm at most the old radius (may fall
        outside [0, 1]: it is a noisy count divided by ``rows``).
    previous_radius : float
        The radius the rows were counted against.
    count_noise : float
        The standard deviation ``s`` of the count's Gaussian noise.
    rows : float
        The public denominator ``m``.
    """

    clip_radius: float
    fraction: float
    previous_radius: float
    count_noise: float
    rows: float

    @property
    def privacy_step(self) -> PrivacyStep:
        """The update as the accountant sees it: a Gaussian step with multiplier
        ``count_noise`` (the count's sensitivity is 1)."""
        return gaussian_step("unclipped count", self.count_noise)


def adaptive_clip_update(X: ArrayLike, clip_radius: float, *, target_quantile: float,
                         learning_rate: float, count_noise: float, rows: float | None = None,
                         rng: Any = None, session: Any = None) -> ClipUpdate:
    """One geometric update of the clip radius from a private count of unclipped rows.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The rows (per-example gradients, say) of this release; finite reals.
        With ``rows`` given it may have no rows (an empty Poisson batch is
        data like any other); without, it needs one.
    clip_radius : float
        The current radius ``C > 0``; public (an earlier update's output).
    target_quantile : float
        ``gamma`` in (0, 1): the fraction of rows the radius should leave unclipped.
    learning_rate : float
        ``eta > 0``; the radius moves by a factor ``exp(-eta (b - gamma))``.
    count_noise : float
        ``s > 0``: the standard deviation of the noise on the count.
    rows : float, optional
        The public denominator ``m >= 1``; default ``n``, the number of rows,
        which is public under replace-one. Under add-remove pass the expected
        batch size.
    rng : numpy.random.Generator, int or None
        Source of randomness.
    session : dpsum.session.Session, optional
        The analysis's budget: the update is a Gaussian of multiplier
        ``count_noise`` (the count's sensitivity is 1 under either relation),
        charged, or refused if it does not fit, before the rows are read.

    Returns
    -------
    ClipUpdate

    Examples
    --------
    >>> X = np.ones((1000, 1))
    >>> u = adaptive_clip_update(X, 2.0, target_quantile=0.5, learning_rate=0.2,
    ...                          count_noise=10.0, rng=0)
    >>> bool(u.clip_radius < 2.0), u.privacy_step.noise_multiplier
    (True, 10.0)
    """
    C = V.check_positive(clip_radius, "clip_radius", scalar=True)
    gamma = V.check_open_interval(target_quantile, "target_quantile", scalar=True)
    eta = V.check_positive(learning_rate, "learning_rate", scalar=True)
    s = V.check_positive(count_noise, "count_noise", scalar=True)
    if s > 1e300:      # a draw must stay finite whatever the count (no data-dependent overflow)
        raise ValueError(f"count_noise must be at most 1e300, got {V.describe(count_noise)}")
    m_public = None if rows is None else V.check_positive(rows, "rows", scalar=True)
    if m_public is not None and m_public < 1:
        # an expected number of rows below one: the noisy fraction could overflow
        raise ValueError(f"rows must be at least 1 (the public expected number of rows), "
                         f"got {V.describe(rows)}")
    gen = V.check_rng(rng)
    charge_session(as_session(session), GaussianEvent(s), mechanism="adaptive_clip_update",
                   parameters={"count_noise": s, "rows": m_public})
    # with a public rows (add-remove: the batch size is private), an empty
    # batch is data like any other; without, the row count is public
    data = V.check_data_matrix(X, empty_rows=m_public is not None)
    m = float(data.shape[0]) if m_public is None else float(m_public)
    count = float(np.count_nonzero(row_norms(data, None, None) <= C))
    fraction = (count + gen.normal(0.0, s)) / m
    # saturated to the positive normal floats: an overflow or underflow of the
    # update would otherwise be an exception that depends on the data (the
    # clamp is post-processing of the noisy fraction)
    tiny, top = float(np.finfo(np.float64).tiny), float(np.finfo(np.float64).max)
    step = -eta * (fraction - float(gamma))
    step = min(max(step, math.log(tiny) - math.log(C)), math.log(top) - math.log(C) - 1e-12)
    new = min(max(C * math.exp(step), tiny), top)
    return ClipUpdate(float(new), float(fraction), float(C), float(s), m)
