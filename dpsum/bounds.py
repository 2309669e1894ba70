r"""Analytic upper bounds on the clip radius of the Gaussian-data mechanism.

The Gaussian-data mechanism clips every scaled record at the smallest radius ``C`` with
``P(||x_hat||^2 > C^2) <= p_C``, where ``||x_hat||^2 = sum_j X_j^2`` and the
``X_j ~ N(0, s_j^2)`` are independent (``s_j = b_j sigma_j``). The exact
``C`` is a generalized chi-square quantile (:func:`dpsum.design.clip_radius`). Closed-form
upper bounds on it are easier to reason about; this module implements the ones
the chapter :ref:`The Bernstein bound <bernstein>` compares, of which the
chi-square bound of Laurent and Massart is the sharpest:

* :prf:ref:`the Bernstein tail lemma <bernstein-lem-tail>`, Bernstein's inequality with the moment constant
  ``L = 3 sigma_*^2``: :func:`bernstein_tail_threshold`,
  :func:`bernstein_max_t`, :func:`bernstein_tail_bound`,
  :func:`bernstein_clip_radius`;
* :prf:ref:`the Bernstein error bound <bernstein-thm-error>`, the tail lemma at ``t = sqrt(ln n)`` with the scaling of
  :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`:
  :func:`bernstein_error_clip_radius_squared`, :func:`bernstein_error_bound`,
  :func:`bernstein_error_max_log_n`, :func:`bernstein_error_condition_holds`;
* the Chebyshev constraint (:ref:`bernstein-chebyshev`):
  :func:`chebyshev_clip_radius` and its inverse
  :func:`chebyshev_clip_probability` (the constraint ``Var / (1 - E)^2 = p``);
* the second Bernstein bound (:ref:`bernstein-second-bound`):
  :func:`bernstein_alpha`, from the moment form of Bernstein's inequality, or
  with bounded summands as a heuristic;
* Laurent and Massart's chi-square bound (Lemma 1 of Laurent and Massart,
  2000): :func:`laurent_massart_threshold`,
  :func:`laurent_massart_clip_radius`. It holds for every ``t`` and is
  sharper than the tail lemma wherever the tail lemma applies.

Every bound is *above* the exact quantile: the tests compare each one with
:class:`dpsum.distributions.GeneralizedChiSquare` (and with ``scipy.stats.chi2`` in the
isotropic case).

Outside the validity range
--------------------------
The tail lemma holds only for ``0 <= t <= sqrt(2 sum s_j^4) / (6 s_*^2)``,
and the error bound only when ``ln n <= sum sigma_j^2 / (18 sigma_*^2)``. The functions
that evaluate these formulas raise :class:`ValueError` outside that range,
with a message giving the limit. With ``strict=False`` they return the
formula's value anyway; that value is then *not* a proven bound (for large
enough ``t`` it falls below the exact quantile, as the chapter shows).
:func:`bernstein_tail_bound` needs no such switch: beyond the range it returns
the weaker bound ``exp(-t_max^2)``, which still holds.

All sums of powers of standard deviations are computed relative to the
largest one, so the functions neither overflow nor underflow for standard
deviations anywhere in the floating-point range.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum.privacy.calibration import analytic_sigma
from dpsum.privacy.neighbouring import Neighbouring, clipped_sum_sensitivity

__all__ = [
    "bernstein_tail_bound",
    "bernstein_clip_radius",
    "bernstein_error_bound",
    "chebyshev_clip_radius",
    "laurent_massart_clip_radius",
]

#: The moment constant of the Bernstein tail lemma: the moment condition of
#: Bernstein's inequality holds with ``L = 3 sigma_*^2``.
BERNSTEIN_MOMENT_CONSTANT = 3.0

#: The smallest ``L / sigma_*^2`` for which the moment condition holds for
#: every ``k >= 2``: the exact ratios approach 2 from below as ``k`` grows
#: (the book's proposition "The smallest constant", bernstein-prop-smallest-l).
SMALLEST_MOMENT_CONSTANT = 2.0

# relative slack when comparing a user's t or ln(n) with a validity limit, so
# that passing the limit itself (computed the same way) is accepted
_LIMIT_RTOL = 8 * np.finfo(float).eps


# ----------------------------------------------------------------- helpers
def _check_stds(stds: Any) -> np.ndarray:
    return V.check_vector(stds, "stds", positive=True)


def _scaled_stds(stds: Any, scaling: Any) -> np.ndarray:
    """``s_j = b_j sigma_j``, the standard deviations of the scaled record."""
    sigma = _check_stds(stds)
    if scaling is None:
        return sigma
    b = V.check_vector(scaling, "scaling", sigma.size, positive=True)
    s = b * sigma
    if not np.all(np.isfinite(s)) or not np.all(s > 0):
        raise ValueError("scaling * stds overflows or underflows: rescale the inputs")
    return s


class _Powers:
    """Sums of powers of ``s`` computed relative to ``s_max`` (no overflow).

    ``r = s / s_max``; ``r1, r2, r4`` are the sums of ``r, r^2, r^4``. The
    dimensioned quantities ``max2 = s_max^2``, ``sum2 = sum s_j^2``,
    ``root4 = sqrt(sum s_j^4)`` are computed on demand, and raise a
    ``ValueError`` naming ``stds`` if they overflow.
    """

    def __init__(self, s: np.ndarray):
        self.s_max = float(np.max(s))
        self.r = s / self.s_max
        self.r1 = float(np.sum(self.r))
        self.r2 = float(np.sum(self.r**2))
        self.r4 = float(np.sum(self.r**4))

    def _finite(self, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(
                f"stds too large: the result overflows (largest scaled std {self.s_max:.3g})")
        return value

    @property
    def max2(self) -> float:
        try:
            return self._finite(self.s_max**2)
        except OverflowError:
            return self._finite(math.inf)

    @property
    def sum2(self) -> float:
        return self._finite(self.max2 * self.r2)

    @property
    def root4(self) -> float:
        return self._finite(self.max2 * math.sqrt(self.r4))


def _check_clip_probability(p: Any) -> float:
    return V.check_probability(p, "clip_probability", scalar=True)


def _check_n(n: Any) -> Any:
    """``n >= 1`` (a dataset size, or ``1/p`` for a clipping probability ``p``)."""
    value = V.check_positive(n, "n")
    if not np.all(np.asarray(value) >= 1):
        raise ValueError(f"n must be >= 1, got {V.describe(n)}")
    return value


# ------------------------------------------------------- the Bernstein tail lemma
def bernstein_max_t(stds: ArrayLike) -> float:
    r"""The largest ``t`` for which :prf:ref:`the Bernstein tail lemma <bernstein-lem-tail>` holds.

    .. math:: t_{\max} = \frac{1}{6\sigma_*^2}\sqrt{2\sum_j \sigma_j^4}
              = \frac{1}{2L}\sqrt{\sum_j \mathbb E[Y_j^2]},
              \qquad L = 3\sigma_*^2,\ \mathbb E[Y_j^2] = 2\sigma_j^4,

    the range of Bernstein's inequality in the form the lemma uses
    (:ref:`bernstein-form`). It depends
    only on the ratios ``sigma_j / sigma_*``: ``sqrt(2 d) / 6`` when all
    ``sigma_j`` are equal, and at most that for any ``d`` standard deviations.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the Gaussian summands.

    Returns
    -------
    float

    Examples
    --------
    >>> round(bernstein_max_t(np.ones(18)), 12)  # sqrt(2 d) / 6
    1.0
    """
    pw = _Powers(_check_stds(stds))
    return math.sqrt(2.0 * pw.r4) / 6.0


def _check_t(t: Any, t_max: float, strict: bool) -> Any:
    strict = V.check_bool(strict, "strict")
    tv = V.check_positive(t, "t", allow_zero=True)
    if strict and np.any(np.asarray(tv) > t_max * (1 + _LIMIT_RTOL)):
        worst = float(np.max(tv))
        raise ValueError(
            f"t = {worst:.6g} is outside the range of the Bernstein tail lemma, 0 <= t <= "
            f"sqrt(2 sum sigma_j^4) / (6 sigma_*^2) = {t_max:.6g}; pass strict=False to "
            "evaluate the formula anyway (it is then not a proven bound), or use "
            "laurent_massart_threshold, which holds for every t")
    return tv


def bernstein_tail_threshold(stds: ArrayLike, t: ArrayLike, *, strict: bool = True) -> float | np.ndarray:
    r"""The threshold of the Bernstein tail lemma: ``t sqrt(8 sum sigma_j^4) + sum sigma_j^2``.

    :prf:ref:`the Bernstein tail lemma <bernstein-lem-tail>` states that for independent ``X_j ~ N(0, sigma_j^2)``

    .. math:: \Pr\Bigl[\sum_j X_j^2 \ge t\sqrt{8\sum_j\sigma_j^4} + \sum_j\sigma_j^2\Bigr]
              < e^{-t^2},
              \qquad 0 \le t \le \frac{1}{6\sigma_*^2}\sqrt{2\sum_j\sigma_j^4},

    so the threshold is an upper bound on the ``e^{-t^2}`` upper quantile of
    ``sum_j X_j^2`` (it follows from Bernstein's inequality in its moment
    form, Theorem 2.10 of Boucheron, Lugosi and Massart 2013).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0``.
    t : float or array_like
        Deviation parameter(s), ``t >= 0``.
    strict : bool, default True
        Raise ``ValueError`` if some ``t`` exceeds :func:`bernstein_max_t`.
        With ``False`` the formula is evaluated for any ``t >= 0``; beyond the
        range it is not a proven bound.

    Returns
    -------
    float or numpy.ndarray
        The threshold(s), same shape as ``t``.

    Examples
    --------
    >>> float(bernstein_tail_threshold(np.ones(18), 0.5))  # 0.5 sqrt(8 * 18) + 18
    24.0
    """
    pw = _Powers(_check_stds(stds))
    tv = _check_t(t, math.sqrt(2.0 * pw.r4) / 6.0, strict)
    out = np.asarray(tv) * math.sqrt(8.0) * pw.root4 + pw.sum2
    return V.scalar_or_array(out, t)


def bernstein_tail_bound(stds: ArrayLike, x: ArrayLike) -> float | np.ndarray:
    r"""The Bernstein tail lemma as a bound on the tail probability ``P(sum_j X_j^2 >= x)``.

    With ``t = (x - sum sigma_j^2) / sqrt(8 sum sigma_j^4)``, the bound is
    ``1`` for ``t <= 0``, ``exp(-t^2)`` for ``0 < t <= t_max`` (:prf:ref:`the Bernstein tail lemma <bernstein-lem-tail>`) and
    ``exp(-t_max^2)`` for ``t > t_max``: there the lemma cannot be applied at
    ``t``, but it applies at ``t_max``, whose threshold lies below ``x``, and
    the tail probability decreases in ``x``. The returned value is therefore a
    valid upper bound for every real ``x``.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0``.
    x : float or array_like
        Threshold(s), any finite reals.

    Returns
    -------
    float or numpy.ndarray
        Upper bound(s) on ``P(sum_j X_j^2 >= x)``, in ``(0, 1]``.

    Examples
    --------
    >>> round(float(bernstein_tail_bound(np.ones(100), 140.0)) / math.exp(-2.0), 12)  # t = sqrt(2)
    1.0
    """
    pw = _Powers(_check_stds(stds))
    xv = V.check_finite_array(x, "x")
    t_max = math.sqrt(2.0 * pw.r4) / 6.0
    t = (xv - pw.sum2) / (math.sqrt(8.0) * pw.root4)
    t_eff = np.clip(t, 0.0, t_max)
    return V.scalar_or_array(np.exp(-t_eff**2), x)


def bernstein_clip_radius(stds: ArrayLike, clip_probability: float,
                          scaling: ArrayLike | None = None, *,
                          strict: bool = True) -> float:
    r"""Upper bound on the clip radius from the Bernstein tail lemma: ``C <= sqrt(threshold)``.

    :prf:ref:`the Bernstein tail lemma <bernstein-lem-tail>` at ``t = sqrt(ln(1/p_C))`` (so that ``e^{-t^2} = p_C``;
    ``t = sqrt(ln n)`` for ``p_C = 1/n``) applied to the scaled
    record, whose coordinates have standard deviations ``b_j sigma_j``.
    Same arguments as :func:`dpsum.design.clip_radius`.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.
    clip_probability : float
        Target clipping probability ``p_C`` in (0, 1).
    scaling : array_like, shape (d,), optional
        Scaling vector ``b`` (all > 0); ``None`` means ``b = 1``.
    strict : bool, default True
        Raise ``ValueError`` when ``sqrt(ln(1/p_C))`` exceeds the range of
        the tail lemma (see :func:`bernstein_tail_threshold`).

    Returns
    -------
    float
        ``sqrt(t sqrt(8 sum s_j^4) + sum s_j^2)`` with ``s = b * stds``.

    Examples
    --------
    >>> from dpsum.design import clip_radius
    >>> bool(bernstein_clip_radius(np.ones(200), 1e-3) >= clip_radius(np.ones(200), 1e-3))
    True
    """
    s = _scaled_stds(stds, scaling)
    p = _check_clip_probability(clip_probability)
    strict = V.check_bool(strict, "strict")
    t = math.sqrt(-math.log(p))
    t_max = bernstein_max_t(s)
    if strict and t > t_max * (1 + _LIMIT_RTOL):
        raise ValueError(
            f"clip_probability = {p:.6g} is outside the range of the Bernstein tail lemma: it needs "
            f"t = sqrt(ln(1/p)) = {t:.6g} <= t_max = {t_max:.6g}, i.e. clip_probability >= "
            f"{math.exp(-t_max * t_max):.6g} for these standard deviations (stds); pass strict=False "
            "to evaluate the formula anyway (it is then not a proven bound), or use "
            "laurent_massart_clip_radius, which holds for every clip_probability")
    # sqrt(t sqrt(8 sum s^4) + sum s^2) = s_max sqrt(t sqrt(8 r4) + r2): no
    # underflow or overflow of the squares, whatever the scale of s
    pw = _Powers(s)
    return V.representable(pw.s_max * math.sqrt(t * math.sqrt(8.0 * pw.r4) + pw.r2),
                           "stds (times scaling)", "the clip radius",
                           "the scaled stds must be well below 1e308")


# ------------------------------------------------------ the Bernstein error bound
def bernstein_error_max_log_n(stds: ArrayLike) -> float:
    r"""The right-hand side of the Bernstein error bound's condition: ``sum sigma_j^2 / (18 sigma_*^2)``.

    :prf:ref:`the Bernstein error bound <bernstein-thm-error>` holds when ``ln n`` is at most this value. It equals
    ``bernstein_max_t(b * stds)**2`` for the scaling ``b`` of
    :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`, since the condition is the tail lemma's range
    ``sqrt(ln n) <= t_max`` for the scaled record. It is at most ``d / 18``, with equality when all ``sigma_j`` are
    equal.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.

    Returns
    -------
    float

    Examples
    --------
    >>> bernstein_error_max_log_n(np.ones(36))  # d / 18
    2.0
    """
    pw = _Powers(_check_stds(stds))
    return pw.r2 / 18.0


def bernstein_error_condition_holds(stds: ArrayLike, n: ArrayLike) -> bool | np.ndarray:
    r"""Whether the Bernstein error bound's condition ``ln n <= sum sigma_j^2 / (18 sigma_*^2)`` holds.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.
    n : float or array_like
        Dataset size(s), ``n >= 1`` (the clipping probability is ``1/n``).

    Returns
    -------
    bool or numpy.ndarray of bool

    Examples
    --------
    >>> bernstein_error_condition_holds(np.ones(36), [5, 10])
    array([ True, False])
    """
    limit = bernstein_error_max_log_n(stds)
    nv = _check_n(n)
    ok = np.log(np.asarray(nv, dtype=float)) <= limit * (1 + _LIMIT_RTOL)
    return bool(ok) if np.ndim(n) == 0 else ok


def _bernstein_error_checked(stds: Any, n: Any, strict: bool) -> Any:
    strict = V.check_bool(strict, "strict")
    pw = _Powers(_check_stds(stds))
    nv = np.asarray(_check_n(n), dtype=float)
    log_n = np.log(nv)
    limit = pw.r2 / 18.0
    if strict and np.any(log_n > limit * (1 + _LIMIT_RTOL)):
        worst = float(np.max(log_n))
        raise ValueError(
            f"the Bernstein error bound needs ln(n) <= sum sigma_j^2 / (18 sigma_*^2) = {limit:.6g} "
            f"for these stds (n <= {math.exp(limit):.6g}), got ln(n) = {worst:.6g}; pass "
            "strict=False to "
            "evaluate the formula anyway (it is then not a proven bound), or use "
            "laurent_massart_clip_radius, which holds for every n")
    return pw, log_n


def bernstein_error_clip_radius_squared(stds: ArrayLike, n: ArrayLike, *,
                                 strict: bool = True) -> float | np.ndarray:
    r"""The Bernstein error bound's upper bound on ``C^2`` for the scaling of the scaling lemma.

    .. math:: C^2 \le \frac{\sqrt{8\ln(n)\sum_j\sigma_j^2}}{\sum_j\sigma_j} + 1,

    :prf:ref:`the Bernstein tail lemma <bernstein-lem-tail>` at ``t = sqrt(ln n)`` for the scaled standard
    deviations ``b_j sigma_j = sqrt(sigma_j / sum_i sigma_i)`` of
    :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>` (the proof of :prf:ref:`the Bernstein error bound <bernstein-thm-error>`), so
    that ``P(||x_hat|| >= C) < 1/n``. Equal to
    ``bernstein_clip_radius(stds, 1/n, gaussian_data_scaling(stds))**2``.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.
    n : float or array_like
        Dataset size(s), ``n >= 1``: a real parameter of the closed form
        (any real ``n``, ``1e30`` included, e.g. for curves in ``n``).
    strict : bool, default True
        Raise ``ValueError`` when the Bernstein error bound's condition
        ``ln n <= sum sigma_j^2 / (18 sigma_*^2)`` fails for some ``n``.

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> round(float(bernstein_error_clip_radius_squared(np.ones(100), 10)), 6)
    1.429193
    """
    pw, log_n = _bernstein_error_checked(stds, n, strict)
    out = np.sqrt(8.0 * log_n * pw.r2) / pw.r1 + 1.0
    return V.scalar_or_array(out, n)


def bernstein_error_bound(stds: ArrayLike, n: ArrayLike, epsilon: float, delta: float, *,
                         neighbouring: Neighbouring | str = "replace",
                         strict: bool = True) -> float | np.ndarray:
    r"""The Bernstein error bound on the expected squared error of the Gaussian-data mechanism.

    .. math:: \mathbb E\|\eta\|^2 \le 4\sigma_{opt}^2 \sum_j\sigma_j
              \Bigl(\sqrt{8\ln(n)\sum_j\sigma_j^2} + \sum_j\sigma_j\Bigr)

    (:prf:ref:`the Bernstein error bound <bernstein-thm-error>`) for the scaling of :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>` and
    clipping probability ``1/n``, where ``sigma_opt = analytic_sigma(epsilon,
    delta)`` is the noise of :prf:ref:`the analytic calibration
    <gaussian-thm-analytic>` for unit sensitivity. It is the mechanism's
    error ``(2 C sigma_opt)^2 sum_j b_j^{-2}`` with ``C^2`` replaced by
    :func:`bernstein_error_clip_radius_squared`, so its ratio to the exact error
    :func:`dpsum.accuracy.gaussian_data_error` is the ratio of the two ``C^2``. Under
    add-remove neighbours the sensitivity is ``C`` instead of ``2C`` and the
    factor 4 becomes 1. Like that error, it is the error against the
    clipped sum: the clipping bias is not included.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.
    n : float or array_like
        Dataset size(s), ``n >= 1``: a real parameter of the closed form
        (any real ``n``, ``1e30`` included, e.g. for curves in ``n``).
    epsilon, delta : float
        The privacy guarantee.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation (sensitivity ``2C`` or ``C``).
    strict : bool, default True
        Raise ``ValueError`` when the Bernstein error bound's condition fails for some ``n``.

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> from dpsum.accuracy import gaussian_data_error
    >>> stds = np.ones(100)
    >>> bool(bernstein_error_bound(stds, 100, 1.0, 1e-6) >= gaussian_data_error(stds, 1.0, 1e-6, 1 / 100))
    True
    """
    pw, log_n = _bernstein_error_checked(stds, n, strict)
    sens = clipped_sum_sensitivity(1.0, neighbouring)
    sopt = analytic_sigma(epsilon, delta)
    # 4 s^2 S1 (sqrt(8 ln n S2) + S1) = 4 s^2 sigma_*^2 r1 (sqrt(8 ln n r2) + r1)
    out = (sens * sopt) ** 2 * pw.max2 * pw.r1 * (np.sqrt(8.0 * log_n * pw.r2) + pw.r1)
    if not np.all(np.isfinite(out)):
        raise ValueError("stds too large: the error bound overflows")
    return V.scalar_or_array(out, n)


# ------------------------------------------------ the Chebyshev constraint
def chebyshev_clip_radius(stds: ArrayLike, clip_probability: float,
                          scaling: ArrayLike | None = None, *,
                          one_sided: bool = False) -> float:
    r"""Upper bound on the clip radius from Chebyshev's inequality.

    An alternative to the Bernstein tail lemma (:ref:`bernstein-chebyshev`): with
    ``E = E||x_hat||^2 = sum s_j^2`` and ``V = Var||x_hat||^2 = 2 sum s_j^4``
    (``s = b * stds``), Chebyshev's inequality gives
    ``P(||x_hat||^2 >= E + a) <= V / a^2``, so

    .. math:: C^2 = E + \sqrt{V / p_C}

    has clipping probability at most ``p_C``. This is the Chebyshev constraint
    ``Var / (1 - E)^2 = p`` solved for the radius instead of the scaling (the
    mechanism's error does not change when ``b`` is multiplied by a constant, so
    fixing the radius at 1 and fixing the scale of ``b`` are the same
    choice; :func:`chebyshev_clip_probability` is the inverse). With
    ``one_sided=True`` Cantelli's inequality ``P(X - E >= a) <= V / (V + a^2)``
    is used instead, giving the smaller ``C^2 = E + sqrt(V (1 - p_C) / p_C)``.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.
    clip_probability : float
        Target clipping probability ``p_C`` in (0, 1).
    scaling : array_like, shape (d,), optional
        Scaling vector ``b`` (all > 0); ``None`` means ``b = 1``.
    one_sided : bool, default False
        Use Cantelli's one-sided inequality instead of the two-sided
        Chebyshev inequality.

    Returns
    -------
    float
        The radius ``C``.

    Examples
    --------
    >>> round(chebyshev_clip_radius(np.ones(2), 0.5), 6)  # sqrt(2 + sqrt(4 / 0.5))
    2.197368
    """
    pw = _Powers(_scaled_stds(stds, scaling))
    p = _check_clip_probability(clip_probability)
    one_sided = V.check_bool(one_sided, "one_sided")
    # sqrt(factor), factor = (1 - p) / p or 1 / p, without overflow for a tiny p
    root = (math.sqrt(1.0 - p) if one_sided else 1.0) / math.sqrt(p)
    # C^2 = sigma_*^2 (r2 + sqrt(2 r4 factor))
    return pw._finite(pw.s_max * math.sqrt(pw.r2 + math.sqrt(2.0 * pw.r4) * root))


def chebyshev_clip_probability(stds: ArrayLike, clip_norm: float = 1.0,
                               scaling: ArrayLike | None = None, *,
                               one_sided: bool = False) -> float:
    r"""Chebyshev's upper bound on the clipping probability at radius ``C``.

    The left-hand side of the Chebyshev constraint (:ref:`bernstein-chebyshev`),

    .. math:: \Pr\bigl[\|\hat x\|^2 \ge C^2\bigr] \le
              \frac{\operatorname{Var}\|\hat x\|^2}{(C^2 - \mathbb E\|\hat x\|^2)^2},

    which for ``C = 1`` is ``Var / (1 - E)^2``, with
    ``E = sum s_j^2``, ``Var = 2 sum s_j^4`` and ``s = b * stds``. When
    ``C^2 <= E`` Chebyshev gives nothing and the bound 1 is returned (a
    scaling can meet the constraint with ``E > 1``, where it says nothing); the
    result is also capped at 1. With ``one_sided=True`` Cantelli's bound
    ``Var / (Var + (C^2 - E)^2)`` is returned.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.
    clip_norm : float, default 1.0
        The radius ``C > 0``.
    scaling : array_like, shape (d,), optional
        Scaling vector ``b`` (all > 0); ``None`` means ``b = 1``.
    one_sided : bool, default False
        Use Cantelli's inequality.

    Returns
    -------
    float
        An upper bound on ``P(||x_hat|| >= C)``, in ``(0, 1]``.

    Examples
    --------
    >>> round(chebyshev_clip_probability(np.ones(2), 2.0), 6)  # Var / (C^2 - E)^2 = 4 / 4
    1.0
    """
    pw = _Powers(_scaled_stds(stds, scaling))
    C = V.check_positive(clip_norm, "clip_norm", scalar=True)
    one_sided = V.check_bool(one_sided, "one_sided")
    # everything relative to sigma_*^2
    ratio = C / pw.s_max
    var = 2.0 * pw.r4
    if ratio > 1e150:      # gap = ratio^2 - r2 would overflow; r2 <= d is negligible
        inv = 1.0 / ratio / ratio      # 1 / gap to within rounding
        bound = var * inv * inv
        return float(bound / (1.0 + bound)) if one_sided else float(min(1.0, bound))
    gap = ratio ** 2 - pw.r2
    if not gap > 0:
        return 1.0
    if one_sided:
        return float(var / (var + gap * gap))
    return float(min(1.0, var / (gap * gap)))


# ------------------------------------------------ the second Bernstein bound
def bernstein_alpha(stds: ArrayLike, clip_probability: float, *, as_written: bool = False,
                          moment_constant: float = BERNSTEIN_MOMENT_CONSTANT) -> float:
    r"""The second Bernstein bound ``alpha`` on ``C^2`` for the scaling lemma's scaling.

    The second Bernstein bound (:ref:`bernstein-second-bound`) bounds the clip
    radius for the scaling of :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`, under which
    ``E||x_hat||^2 = 1``, by ``C^2 <= alpha = 1 + t``
    with ``t`` solving

    .. math:: \exp\Bigl(-\frac{t^2/2}{V + c\,t}\Bigr) = q,
              \qquad V = \operatorname{Var}\|\hat x\|^2
              = 2\frac{\sum_j\sigma_j^2}{(\sum_j\sigma_j)^2},

    that is ``t = c l + sqrt(c^2 l^2 + 2 V l)`` with ``l = ln(1/q)``.

    * ``as_written=False`` (default, the proven bound): Bernstein's
      inequality for the centred summands ``Y_j = x_hat_j^2 - E x_hat_j^2``,
      whose moments satisfy the moment condition with
      ``L = moment_constant * s_*^2`` (``s_*^2 = sigma_* / sum sigma``), gives
      the one-sided bound ``P(||x_hat||^2 - 1 >= t) <= exp(-t^2 / (2 (V + L t)))``
      (:prf:ref:`bernstein-thm-bernstein`; Boucheron, Lugosi and Massart 2013,
      Theorem 2.10), so ``c = L`` and ``q = p_C``. This holds for every
      ``p_C``: no range restriction.
    * ``as_written=True``: the bounded-summand variant, Bernstein's
      inequality for summands truncated at ``16 s_*^2`` (four standard
      deviations) and the two-sided factor 2: ``c = 16 s_*^2 / 3`` and
      ``q = p_C / 2``. Squared Gaussians are unbounded, so this is a
      heuristic, not a proof; but since ``16/3 > 3`` and ``2/p_C > 1/p_C``,
      its value is never below the proven one, hence still an upper bound on
      ``C^2``.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0`` of the data.
    clip_probability : float
        Target clipping probability ``p_C`` in (0, 1) (the chapter compares
        the bounds at ``10^-4``).
    as_written : bool, default False
        Evaluate the bounded-summand variant instead of the proven bound.
    moment_constant : float, default 3.0
        ``L / s_*^2`` for the proven bound: 3 is the constant of the tail lemma,
        2 (:data:`SMALLEST_MOMENT_CONSTANT`) the smallest valid value. Must be
        at least 2; ignored when ``as_written`` is true.

    Returns
    -------
    float
        ``alpha``, an upper bound on ``C^2`` in the space scaled by the
        scaling lemma.

    Examples
    --------
    >>> stds = np.ones(50)
    >>> bool(bernstein_alpha(stds, 1e-4, as_written=True) >= bernstein_alpha(stds, 1e-4))
    True
    """
    pw = _Powers(_check_stds(stds))
    p = _check_clip_probability(clip_probability)
    as_written = V.check_bool(as_written, "as_written")
    L = V.check_positive(moment_constant, "moment_constant", scalar=True)
    if L < SMALLEST_MOMENT_CONSTANT:
        raise ValueError(
            f"moment_constant must be >= {SMALLEST_MOMENT_CONSTANT:g}: the moment condition of "
            f"Bernstein's inequality fails for L = {L:.6g} sigma_*^2 at large k")
    # scaled variances s_j^2 = sigma_j / S1; s_*^2 = r_max / r1 = 1 / r1
    s_star2 = 1.0 / pw.r1
    var = 2.0 * pw.r2 / pw.r1**2
    if as_written:
        c = 16.0 * s_star2 / 3.0
        ell = math.log(2.0 / p)
    else:
        c = L * s_star2
        ell = -math.log(p)
    t = c * ell + math.sqrt((c * ell) ** 2 + 2.0 * var * ell)
    return 1.0 + t


# ------------------------------------------------------ Laurent--Massart
def laurent_massart_threshold(stds: ArrayLike, x: ArrayLike) -> float | np.ndarray:
    r"""Laurent and Massart's chi-square threshold (their Lemma 1).

    For independent ``X_j ~ N(0, sigma_j^2)`` and every ``x >= 0``

    .. math:: \Pr\Bigl[\sum_j X_j^2 \ge \sum_j\sigma_j^2
              + 2\sqrt{x\sum_j\sigma_j^4} + 2\sigma_*^2 x\Bigr] \le e^{-x}.

    This is Bernstein's inequality with the sharp sub-gamma constants of the
    chi-square (variance factor ``2 sum sigma^4``, scale ``2 sigma_*^2``). At
    ``x = t^2`` its threshold is below that of :prf:ref:`the Bernstein tail lemma <bernstein-lem-tail>` for all
    ``t <= (sqrt 2 - 1) sqrt(sum sigma^4) / sigma_*^2``, which contains
    the tail lemma's whole range, and unlike the tail lemma it holds for
    every ``x``.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Standard deviations ``sigma_j > 0``.
    x : float or array_like
        ``x >= 0`` (the tail probability bound is ``e^{-x}``).

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> round(float(laurent_massart_threshold(np.ones(4), 1.0)), 6)  # 4 + 2 sqrt(4) + 2
    10.0
    """
    pw = _Powers(_check_stds(stds))
    xv = np.asarray(V.check_positive(x, "x", allow_zero=True))
    with np.errstate(over="ignore"):
        out = pw.sum2 + 2.0 * np.sqrt(xv) * pw.root4 + 2.0 * pw.max2 * xv
    V.representable(out, "x", "the threshold", "x times the largest variance exceeds 1.8e308")
    return V.scalar_or_array(out, x)


def laurent_massart_clip_radius(stds: ArrayLike, clip_probability: float,
                                scaling: ArrayLike | None = None) -> float:
    r"""Upper bound on the clip radius from :func:`laurent_massart_threshold`.

    ``C = sqrt(sum s_j^2 + 2 sqrt(l sum s_j^4) + 2 s_*^2 l)`` with
    ``l = ln(1/p_C)`` and ``s = b * stds``; valid for every ``p_C`` in (0, 1),
    so it can replace the Bernstein error bound where that bound's condition
    fails.
    Same arguments as :func:`dpsum.design.clip_radius`.

    Returns
    -------
    float

    Examples
    --------
    >>> from dpsum.design import clip_radius
    >>> bool(laurent_massart_clip_radius(np.ones(10), 1e-6) >= clip_radius(np.ones(10), 1e-6))
    True
    >>> laurent_massart_clip_radius([1e-300] * 3, 1e-6) > 0  # relative to the largest std: no underflow
    True
    """
    pw = _Powers(_scaled_stds(stds, scaling))
    p = _check_clip_probability(clip_probability)
    ell = -math.log(p)
    # relative to s_max, so that nothing underflows (an underflowing sum of
    # squares would return 0, which is not an upper bound) or overflows
    return V.representable(pw.s_max * math.sqrt(pw.r2 + 2.0 * math.sqrt(ell * pw.r4) + 2.0 * ell),
                           "stds (times scaling)", "the clip radius",
                           "the scaled stds must be well below 1e308")
