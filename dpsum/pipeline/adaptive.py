"""The adaptive parts of the private pipeline: public rules and post-processing.

Nothing here reads the data. Each function is either a rule on public
quantities (``n`` under replace-one, the private count under add-remove,
``d``, ``rho``, the box) or a function of earlier private outputs, so it
costs no budget (book chapter "When the data model is unknown"):

- :func:`center_mode` — the public rule that picks the center's estimator:
  the coordinate-wise median while its reliable share fits under the cap,
  otherwise a center estimated for the whole vector at once
  (:func:`vector_center_shares`), which needs no per-coordinate budget,
  while one scalar quantile's reliable share fits, otherwise the box;
- :func:`decision_share` and :func:`break_even_radius` — the private test,
  one Gaussian count, of whether clipping around a center can beat the box;
- :func:`heterogeneity` and :func:`prefer_scaled` — the private choice
  between scaled and isotropic clipping, from the private median L2 and L1
  norms around the center;
- :func:`log_scale_noise_variance` and :func:`shrink_log_scales` — the
  private log-scales shrunk toward their pooled mean by an amount chosen
  from their own noise level (positive-part James-Stein);
- :func:`box_error` and :func:`clip_error` — the predicted errors that
  decide between the public box and clipping around a center.
"""

from __future__ import annotations

import math

import numpy as np

from dpsum.privacy.neighbouring import Neighbouring

__all__ = [
    "ISOTROPY_MARGIN",
    "VECTOR_STEPS",
    "VECTOR_MAX_STEPS",
    "VECTOR_POLISH",
    "VECTOR_POLISH_SHARE",
    "VECTOR_STOP",
    "VECTOR_CONTRACTION",
    "VECTOR_CLIP_PROBABILITY",
    "MAX_PREPARATION_SHARE",
    "DECISION_NOISE",
    "center_mode",
    "vector_center_shares",
    "decision_share",
    "break_even_radius",
    "isotropic_l1_l2",
    "heterogeneity",
    "scaled_error_ratio",
    "prefer_scaled",
    "log_scale_noise_variance",
    "shrink_log_scales",
    "box_error",
    "clip_error",
]


#: Scaled clipping is chosen when its predicted error, times ``1 + margin``,
#: is below isotropic clipping's. The margin pays for the scales' own noise
#: and the regularisation of the scaling, which the prediction ignores, and
#: for the tails: the ratio of the median L1 and L2 norms that estimates
#: ``G`` (:func:`heterogeneity`) assumes Gaussian coordinates, and heavier
#: tails lower it as unequal scales would. On rows with equal scales it reads
#: ``G`` about 0.88 for Student-t with 5 degrees of freedom and 0.78 with 3
#: (d = 50; 0.73 at d = 200): with a margin of 0.05 such rows paid for scales
#: that could not help (the tails target's Student-t, 4 % behind the
#: isotropic variant), with 0.15 they stay isotropic up to d of a few hundred.
#: Choosing isotropic more often moves the pipeline towards its isotropic
#: variant, never far from it.
ISOTROPY_MARGIN = 0.15

#: Number of clipped-mean moves the budget plans for the whole-vector center.
VECTOR_STEPS = 3

#: The whole-vector center's last move has this many times less noise for
#: its radius than the others ...
VECTOR_POLISH = 4.0

#: ... when its share (``VECTOR_POLISH^2`` times a move's, from the mean) is
#: at most this. With few rows it is not worth it (the share grows like
#: ``d / n^2``); from a few thousand rows on it is a few per cent of rho and
#: takes the center's error from a quarter of the radius to a sixteenth.
VECTOR_POLISH_SHARE = 0.05

#: Largest number of moves of the whole-vector center: past ``VECTOR_STEPS``
#: it moves again only while its radius still shrinks and the steps before
#: the mean stay within ``MAX_PREPARATION_SHARE`` (the extra shares come
#: from the mean). From the midpoint of a box 100 times wider than the data
#: the distance shrinks by about ``VECTOR_CONTRACTION`` a move: about 8
#: moves reach the data's spread.
VECTOR_MAX_STEPS = 10

#: The whole-vector center stops moving when the private median distance to
#: it is more than this fraction of the one before the last move (it no
#: longer shrinks: the center is inside the data's spread).
VECTOR_STOP = 0.7

#: Each move of the whole-vector center shrinks the distance to the mean by
#: about this factor (its noise is this fraction of its clip radius).
VECTOR_CONTRACTION = 0.25

#: Clip probability (under the isotropic model) of a whole-vector center move.
VECTOR_CLIP_PROBABILITY = 0.05

#: The steps before the mean together take at most this share.
MAX_PREPARATION_SHARE = 0.5

#: Standard deviation, as a fraction of ``n``, of the Gaussian count that
#: decides between the box and clipping around a center.
DECISION_NOISE = 0.1


def reliable_share(margin: float, n: float, d: int, rho: float, du: float) -> float:
    """The share of ``rho`` that makes ``d`` quantiles (score sensitivity
    ``du``) reliable to ``margin``: ``d epsilon^2 / (8 rho)`` with
    ``epsilon = 4 du margin / n`` (see :func:`center_mode`)."""
    eps = 4.0 * du * margin / max(n, 1.0)
    return d * eps * eps / 8.0 / rho


def center_mode(n: float, d: int, rho: float, du: float, margin: float, cap: float,
                scalar_margin: float | None = None) -> str:
    """``"coordinate"`` if the coordinate-wise median's reliable share fits under
    ``cap``, else ``"vector"`` if one scalar quantile's does, else ``"box"``.

    The reliable share (``d epsilon^2 / (8 rho)`` with
    ``epsilon = 4 Delta_u margin / n``) keeps the exponential weight of an
    output half the data away from the median at ``exp(-margin)``. When it
    does not fit, the per-coordinate medians can escape the data (the
    chapter's escaped centers); the whole-vector center cannot, since each of
    its moves is a clipped mean (its noise is a fraction of its radius). When
    not even one scalar quantile (a radius, with ``scalar_margin``, default
    ``margin``) is reliable, the box itself is the model. A scalar quantile
    needs a smaller margin than the ``d`` coordinates of the center: it is
    one mechanism, not ``d``, and a radius that misses by a factor costs a
    factor in the error, not an escaped coordinate.
    ``n`` may be the private count (post-processing).

    Examples
    --------
    >>> center_mode(10_000, 64, 0.5, 1.0, 30.0, 0.15)
    'coordinate'
    >>> center_mode(899, 64, 0.03, 1.0, 30.0, 0.15)
    'vector'
    >>> center_mode(899, 64, 0.002, 1.0, 30.0, 0.15)
    'box'
    >>> center_mode(100, 8, 0.5, 1.0, 30.0, 0.15), center_mode(100, 8, 0.5, 1.0, 30.0, 0.15, 12.0)
    ('box', 'vector')
    """
    share = reliable_share(margin, n, d, rho, du)
    if share <= cap:
        return "coordinate"
    scalar = reliable_share(margin if scalar_margin is None else scalar_margin, n, 1, rho, du)
    return "vector" if scalar <= cap else "box"


def vector_center_shares(n: float, d: int, rho: float, relation: Neighbouring,
                         scalar: float, cap: float) -> float:
    """Share of each Gaussian move of the whole-vector center.

    A move adds to the center the clipped mean of the deviations at radius
    ``C`` with noise ``s Delta_2(C) / n`` per coordinate, about
    ``s Delta_2(C) sqrt(d) / n`` in norm; the share makes that
    ``VECTOR_CONTRACTION`` times ``C`` (``Delta_2(C) = 2C`` under
    replace-one, ``C`` under add-remove): ``s = kappa n / (k sqrt(d))``,
    ``rho_move = 1 / (2 s^2)``; capped at ``cap``.
    """
    k = 2.0 if relation is Neighbouring.REPLACE else 1.0
    s = VECTOR_CONTRACTION * max(n, 1.0) / (k * math.sqrt(d))
    return min(1.0 / (2.0 * s * s) / rho, cap)


def decision_share(n: float, rho: float, cap: float) -> float:
    """Share of the Gaussian count that decides between the box and clipping.

    The count has sensitivity 1 and standard deviation ``DECISION_NOISE n``:
    ``rho_decision = 1 / (2 (DECISION_NOISE n)^2)``, as a share of ``rho``,
    capped at ``cap``. It is tiny once ``n`` is in the thousands.

    Examples
    --------
    >>> round(decision_share(1000, 0.5, 0.15), 6)
    0.0001
    """
    sd = DECISION_NOISE * max(n, 1.0)
    return min(1.0 / (2.0 * sd * sd) / rho, cap)


def break_even_radius(widths: np.ndarray, n: float, d: int, rho_box: float, rho_mean: float,
                      sensitivity_factor: float, ratio: float) -> float:
    """The median distance to the box's midpoint at which clipping ties with the box.

    Clipping around the midpoint at ``C = ratio R`` (``R`` the median
    distance, ``ratio`` the isotropic model's extrapolation to the clip
    probability) has the error :func:`clip_error`; the box has
    :func:`box_error`. They are equal at
    ``R* = box_error n / (s_m k ratio sqrt(d))``: clipping is predicted to
    win when more than half the rows are within ``R*`` of the midpoint, a
    question one private count answers. Public.

    Examples
    --------
    >>> w = np.full(4, 2.0)
    >>> r = break_even_radius(w, 100, 4, 0.5, 0.4, 2.0, 1.5)
    >>> bool(np.isclose(clip_error(1.5 * r, 4, 100, 0.4, 2.0), box_error(w, 100, 0.5, 1.0)))
    True
    """
    e_box = box_error(widths, n, rho_box, 0.5 * sensitivity_factor)
    s = 1.0 / math.sqrt(2.0 * rho_mean)
    return e_box * max(n, 1.0) / (s * sensitivity_factor * ratio * math.sqrt(d))


def isotropic_l1_l2(d: int) -> float:
    """``(median L1 / median L2)^2 / d`` for ``N(0, I_d)`` rows, approximately:
    ``(2 / pi) / (1 - 2 / (9 d))^3`` (the L1 norm's mean over the chi-square
    median of Wilson and Hilferty)."""
    return (2.0 / math.pi) / (1.0 - 2.0 / (9.0 * d)) ** 3


def heterogeneity(l1: float, l2: float, d: int) -> float:
    """The estimate ``G`` in (0, 1] of ``(sum_j sigma_j)^2 / (d sum_j sigma_j^2)``.

    For Gaussian rows ``E||x - c||_1 = sqrt(2/pi) sum_j sigma_j`` and
    ``E||x - c||_2^2 = sum_j sigma_j^2``, so the ratio of the private median
    norms, relative to its value for isotropic rows, estimates ``G``: 1 for
    equal scales, small when a few coordinates dominate. Post-processing of
    two private outputs.

    Examples
    --------
    >>> round(heterogeneity(math.sqrt(2 / math.pi) * 100, 10.0, 100)
    ...       * isotropic_l1_l2(100) / (2 / math.pi), 6)
    1.0
    """
    ratio = (l1 / l2) ** 2 / d / isotropic_l1_l2(d)
    return float(min(1.0, max(ratio, 1.0 / d)))


def scaled_error_ratio(g: float, mean_scaled: float, mean_isotropic: float) -> float:
    """Predicted error of scaled over isotropic clipping: ``sqrt(G m_iso / m_scaled)``.

    With scales ``sigma`` the scaled mechanism's squared noise is
    proportional to ``(sum_j sigma_j)^2 / m_scaled`` and the isotropic one's to
    ``d sum_j sigma_j^2 / m_iso`` (``m`` the share of the mean; book chapter
    "Gaussian data").
    """
    return math.sqrt(g * mean_isotropic / mean_scaled)


def prefer_scaled(g: float, mean_scaled: float, mean_isotropic: float) -> bool:
    """Scaled clipping if its predicted error, with ``ISOTROPY_MARGIN``, is smaller."""
    return scaled_error_ratio(g, mean_scaled, mean_isotropic) * (1.0 + ISOTROPY_MARGIN) < 1.0


def log_scale_noise_variance(eps: float, n: float, du: float, density: float) -> float:
    """Variance of one private log-scale around the log of its coordinate's spread.

    The exponential-mechanism median's rank misses the middle rank by about a
    two-sided geometric variable of scale ``2 Delta_u / epsilon`` (variance
    ``2 (2 Delta_u / epsilon)^2``); sampling adds ``n / 4``. Divided by ``n``
    and by the density ``f`` of the log absolute deviation at its median:
    ``tau^2 = (2 (2 Delta_u / epsilon)^2 / n^2 + 1 / (4 n)) / f^2``.
    """
    nn = max(n, 1.0)
    rank = 2.0 * du / eps
    return (2.0 * rank * rank / (nn * nn) + 0.25 / nn) / (density * density)


def shrink_log_scales(scales: np.ndarray, tau2: float) -> tuple[np.ndarray, float]:
    """Shrink the log-scales toward their mean (positive-part James-Stein).

    With ``l_j = log s_j``, ``lbar`` their mean and ``S = sum_j (l_j - lbar)^2``,
    the factor is ``B = min(1, (d - 3) tau^2 / S)`` and the result
    ``exp(lbar + (1 - B)(l_j - lbar))``. Equal true scales give ``S`` about
    ``(d - 1) tau^2`` and ``B`` near 1 (pooled: isotropic); very unequal
    scales give ``B`` near 0 (kept). Post-processing: no budget. Fewer than
    four coordinates are returned unchanged (``B = 0``).

    Examples
    --------
    >>> s, b = shrink_log_scales(np.array([1.0, 1.1, 0.9, 1.05, 0.95]), 0.1)
    >>> b, bool(np.allclose(s, s[0]))
    (1.0, True)
    """
    d = scales.size
    if d < 4:
        return scales, 0.0
    ell = np.log(scales)
    bar = float(ell.mean())
    spread = float(np.sum((ell - bar) ** 2))
    factor = 1.0 if spread <= 0 else min(1.0, (d - 3) * tau2 / spread)
    return np.exp(bar + (1.0 - factor) * (ell - bar)), float(factor)


def box_error(widths: np.ndarray, n: float, rho_mean: float, sensitivity: float) -> float:
    """Root expected squared error of the Elliptical Gaussian mechanism's mean on a box.

    With the optimal scaling the noise of coordinate ``j`` of the sum has
    standard deviation ``s Delta_2 w_j / b_j`` and
    ``sum_j (w_j / b_j)^2 = ||w||_1^2``: the error of the mean is
    ``s Delta_2 ||w||_1 / n`` with ``s = 1 / sqrt(2 rho)`` and ``Delta_2``
    the sensitivity of a row in the box (1 under replace-one, 1/2 under
    add-remove, in units of the scaled box).
    """
    s = 1.0 / math.sqrt(2.0 * rho_mean)
    return s * sensitivity * float(np.sum(widths)) / max(n, 1.0)


def clip_error(clip_norm: float, d: int, n: float, rho_mean: float, sensitivity_factor: float
               ) -> float:
    """Root expected squared noise of an isotropic clipped mean: ``s k C sqrt(d) / n``
    (``k = 2`` replace-one, 1 add-remove)."""
    s = 1.0 / math.sqrt(2.0 * rho_mean)
    return s * sensitivity_factor * clip_norm * math.sqrt(d) / max(n, 1.0)
