r"""The generalized chi-square distribution, accurate far into both tails.

The Gaussian-data mechanism clips every transformed record at the smallest
radius ``C`` with ``P(||x_hat|| > C) <= p_C``, where

.. math::

    \|\hat x\|^2 \;=\; X \;=\; \sum_{j=1}^d w_j (Z_j + m_j)^2,
    \qquad Z_j \sim \mathcal N(0, 1) \text{ independent},\ w_j > 0,

is a *generalized chi-square* variable (noncentrality ``lambda_j = m_j^2``;
``m_j = 0`` when the data are centred) and ``p_C = 1/n`` is tiny, so the
exact clip radius needs a numerical distribution function accurate far into
the upper tail (:ref:`gaussian-data-clip-radius`). :class:`GeneralizedChiSquare` is that CDF: survival function,
distribution function, their logarithms, quantiles and density, to a relative
error near ``1e-14`` for probabilities down to ``1e-300`` and beyond, for one
to millions of terms.

Method: saddlepoint-contour inversion (Helstrom)
------------------------------------------------
The cumulant generating function of ``X`` is, for ``s < 1/(2 max w)``,

.. math::

    K(s) = \sum_j \Bigl[-\tfrac12 \log(1 - 2 w_j s)
                         + \frac{\lambda_j w_j s}{1 - 2 w_j s}\Bigr],

and the inversion integral along any vertical line ``Re s = c`` gives

.. math::

    P(X > x) = \frac{1}{2\pi i}\int_{c-i\infty}^{c+i\infty}
               \frac{e^{K(s) - s x}}{s}\,ds \quad (0 < c < \tfrac{1}{2 w_{\max}}),
    \qquad
    P(X \le x) = \frac{1}{2\pi i}\int \frac{e^{K(s) - s x}}{-s}\,ds \quad (c < 0).

Write ``Psi(s) = K(s) - s x - log(+-s)`` for the log of the integrand. The
crossing point ``c`` is the saddlepoint ``Psi'(c) = 0``, on the positive side
when ``x`` is above the mean (``sf`` is computed directly) and on the negative
side below it (``cdf`` is computed directly); the other function is one minus
it, which costs no accuracy because it is then at least about 0.3. The line
is bent into the parabola

.. math::

    s(t) = c + \omega\,(\beta t^2 + i t),
    \qquad \omega = \Psi''(c)^{-1/2},
    \qquad \beta = \frac{\Psi'''(c)}{6\,\Psi''(c)^{3/2}}\ (\text{at least } 0.02),

which removes the cubic phase of the integrand at the saddlepoint and, as the
factor ``e^{-s x}`` shrinks to the right, makes it decay like a Gaussian in
``t`` even for one or two terms, where it decays only algebraically along the
vertical line. The parabola meets the real axis only at ``c``, so it crosses
neither the pole at 0 nor the branch cuts ``[1/(2 w_j), inf)``. Then

.. math::

    P = e^{\Psi(c)}\,\frac{\omega}{\pi}\int_0^\infty
        \operatorname{Re}\bigl[e^{\Psi(s(t)) - \Psi(c)}(1 - 2 i\beta t)\bigr]\,dt ,

with a bell-shaped integrand equal to 1 at ``t = 0``: the probability is
``exp(Psi(c)) omega / sqrt(2 pi)`` times a factor near one, so it is computed
as a logarithm and nothing underflows. The integral is evaluated with the
trapezoid rule, which converges geometrically in ``1/h`` for an analytic,
rapidly decaying integrand (error ``~ exp(-2 pi a / h)``): halving the step
squares the relative error, so the step is halved until two successive sums
agree to ``3e-8``, and the finer one is then accurate to about ``1e-15``. The sum stops at the first run of negligible values; the rest of
the contour can be closed along a horizontal segment and the vertical line,
where the integrand is negligible too. Where the integrand rises again before
that point (nearly Gaussian laws with a large third derivative coming from
the pole at 0, or a large noncentrality), a flatter parabola is used, down to
the vertical line itself. The density comes from the same evaluations (the
integrand times ``+-s``), which is what Newton's method needs for quantiles.

Four details make this both exact and fast:

* **The tau parametrisation.** In the upper tail the saddlepoint approaches
  the singularity ``1/(2 w_max)``. It is located through
  ``tau = 1 - 2 w_max c``, so ``1 - 2 w_j c = (1 - w_j/w_max) + (w_j/w_max) tau``
  is formed without cancellation, the integrand is evaluated as
  ``log1p(-2 w_j delta / (1 - 2 w_j c))`` at the offset ``delta = s - c``,
  and all lengths are measured in units of the distance to the nearer
  singularity: the accuracy is the same at ``1e-2`` and at ``1e-300``.
* **Power sums.** Terms with ``|2 w_j s| <= 1/4`` are summed through their
  cumulant series ``sum_k (2s)^k (P_k/(2k) + Q_k/2)``, with the power sums
  ``P_k = sum m_j w_j^k`` and ``Q_k = sum lambda_j w_j^k`` of the weights
  below each threshold ``2^-i w_max``, tabulated once when the distribution
  is created (O(d) work). The difference from the saddlepoint is summed as
  ``(s - c) sum_i s^i b_i(c)``, free of cancellation. Equal weights are
  merged first (a block of ``m`` equal weights is one term with ``m`` degrees
  of freedom), so equal-weight problems cost O(1) per evaluation whatever
  ``d`` is.
* **Batches.** Every method takes an array of points and processes it as
  one batch: the saddlepoint equations of all points are solved together by
  a vectorised safeguarded Newton iteration, and the contour integrals share
  one trapezoid grid (each point stops refining on its own). On 1000 points
  at ``d = 100`` this is 15 to 20 times faster than calling the method point
  by point (``benchmarks/gchisq.py --batch``); a scalar is a batch of one.
* **Logarithms throughout.** ``logsf``/``logcdf`` are the primary results;
  ``isf``/``ppf`` run a safeguarded Newton iteration on the log survival
  function (on ``log x`` for the lower tail), started from the saddlepoint
  approximation ``exp(Psi(c)) / sqrt(2 pi Psi''(c))``; it needs two to five
  evaluations. Below ``x = 1e-17 / sum_j (1 + lambda_j) / w_j`` the
  distribution function is the small-ball limit ``e^{-sum lambda/2} (x/2)^{d/2} / (Gamma(d/2 + 1) prod sqrt(w_j))``,
  exact to double precision there.

Why not the alternatives
------------------------
* *Imhof* (1961) integrates along the imaginary axis: the integrand oscillates
  and decays only algebraically (like ``u^{-d/2 - 1}``), and an upper tail is
  ``1/2`` minus an integral of size ``1/2``, so a probability of ``1e-15``
  loses every digit to cancellation.
* *Davies* (1980, AS 155) integrates the same line with a truncation and
  discretisation error bound that is absolute, not relative: even asked for
  the upper tail directly and with its tightest settings, its values at
  ``1e-14`` are off by 3% to 80% for weights ``1/j`` (benchmarks/gchisq.py).
* *Ruben's* (1962) series of chi-square distribution functions is exact but
  converges like ``(1 - w_min/w_max)^k``, hopeless when the weights span four
  orders of magnitude.
* *gx2* (Das and Geisler) picks Ruben's series or Imhof's integral here; its
  survival function at ``1e-10`` and below is off by order one for ``d >= 100``
  and its inverse takes seconds to minutes. The moment-matching
  approximations of *momentchi2* (Hall-Buckley-Eagleson, Lindsay-Pilla-Basak)
  are off by orders of magnitude in the far tail.

Through the saddlepoint the integrand is concentrated where the exponentially
tilted law puts its mass, so the relative accuracy does not depend on how
small the probability is. The test suite (``tests/test_gchisq.py``) checks it
against exact special cases (one term, two terms, equal weights), against an
independent Talbot inversion at 55 digits computed with mpmath, and at
``d = 10000`` against a vertical-line quadrature written independently.

Rounding for the clip radius
----------------------------
:meth:`GeneralizedChiSquare.isf` returns the quantile itself, not a rounded
bound; its relative error is below ``1e-13`` in every case of the test suite
and is asserted there to be at most ``1e-12``. The clip radius of the Gaussian-data mechanism
(:func:`dpsum.design.clip_radius`) is ``sqrt(isf(p_C))`` rounded up by a
relative ``1e-12``, which covers that error: the clip probability at the
returned radius does not exceed ``p_C``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum._lazy import optimize, stats
from dpsum._special import LOG_SQRT_2PI, log1mexp, log1p_complex, log_mills
from dpsum._validation import RandomLike

__all__ = [
    "GeneralizedChiSquare",
]


# A group of equal weights r (relative to the largest) is summed through the
# cumulant series at the point s when 2 r |s| <= _RHO.
_RHO = 0.25


# Number of series terms: the neglected tail is below _RHO**(_NTERMS+1) times
# the total degrees of freedom plus noncentrality (< 1e-18 up to 1e10 terms).
_NTERMS = 48


# Thresholds 2**-j, j = 0 .. _NTHRESH - 1, below which weights (relative to the
# largest) are summed through power sums.
_NTHRESH = 64


# Up to this many distinct weights, and this many points in a batch, all
# contour points of a point x share one split (the one its farthest contour
# point needs); otherwise each contour point gets its own.
_FEW_GROUPS = 256


_FEW_POINTS = 16


# Largest number of (point, group) entries in one working array: batches of
# points and of contour points are cut to this size.
_MAX_ELEMENTS = 1 << 15


# Trapezoid rule: first step (in units of the saddlepoint width), relative
# agreement of two successive step halvings, and the maximal number of halvings.
_H0 = 0.5


_TRAP_RTOL = 1e-13


# The trapezoid rule converges geometrically in 1/h for an analytic integrand
# (error ~ exp(-2 pi a / h)), so halving the step squares the relative error:
# when two successive sums agree to _TRAP_ACCEPT, the finer one is accurate to
# about _TRAP_ACCEPT^2 = 1e-15, well inside _TRAP_RTOL.
_TRAP_ACCEPT = math.sqrt(_TRAP_RTOL * 1e-2)


_MAX_HALVINGS = 12


# Floor on the parabola's bend (see the module docstring).
_BETA_MIN = 0.02


# Integration range: chunks of points are added until _RUN consecutive values
# of the integrand are below _TAIL_RTOL times the sum; _T_CAP bounds the range
# in units of the contour width omega.
_TAIL_RTOL = 1e-18


_RUN = 4


# Level-0 points computed at first, and added per round (at least
# _NEXT_CHUNK, growing geometrically) while some integrand is not yet
# negligible; a nearly Gaussian integrand needs about 22 to 35.
_FIRST_CHUNK = 24


_NEXT_CHUNK = 16


_T_CAP = 4000.0


# Points (in units of omega) at which the bend of the parabola is checked.
_PROBES = np.array([4.0, 8.0, 12.0, 16.0])


# Exponents and falling factorials for the series of K and its derivatives.
_POW = np.arange(0, _NTERMS + 1)


_N = np.arange(1, _NTERMS + 1, dtype=np.float64)


_N2 = _N[1:] * (_N[1:] - 1)


_N3 = _N[2:] * (_N[2:] - 1) * (_N[2:] - 2)


class _Saddle:
    """Everything the contour integral at a batch of points x needs (scaled units):
    arrays of shape (n,) per point and (n, g) per point and group. ``width`` is
    the contour's length unit ``Psi''(c)^{-1/2}`` (omega in the module
    documentation's formulas)."""

    __slots__ = ("x", "upper", "c", "tau", "u", "q", "psi", "scale", "width", "beta", "series")

    x: np.ndarray
    upper: bool
    c: np.ndarray
    tau: np.ndarray
    u: np.ndarray
    q: np.ndarray
    psi: np.ndarray
    scale: np.ndarray
    width: np.ndarray
    beta: np.ndarray
    series: dict[int, np.ndarray]


class GeneralizedChiSquare:
    r"""The distribution of ``X = sum_j w_j (Z_j + m_j)^2``, ``Z_j`` iid N(0, 1).

    This is the law of the squared norm of a transformed record in
    the Gaussian-data mechanism, whose clip radius ``C`` solves
    ``P(||x_i ⊙ b||^2 > C^2) = p_C`` (:prf:ref:`gaussian-data-def-gchisq`):
    ``w_j = b_j^2 sigma_j^2`` and
    ``m_j = b_j (mu_j - center_j) / (b_j sigma_j)``.

    Parameters
    ----------
    weights : array_like, shape (d,)
        The weights ``w_j``: finite and strictly positive.
    noncentrality : array_like, shape (d,), optional
        The noncentralities ``lambda_j = m_j^2``: finite and ``>= 0``.
        Default: all zero (the central case).

    Raises
    ------
    TypeError
        If an argument is not numeric.
    ValueError
        If ``weights`` is not a non-empty 1-d array of finite positive numbers,
        or ``noncentrality`` has the wrong length or a negative or non-finite
        entry.

    Notes
    -----
    The methods follow :mod:`scipy.stats`: ``cdf``, ``sf``, ``logcdf``,
    ``logsf``, ``pdf`` take points ``x``; ``ppf`` and ``isf`` take
    probabilities in (0, 1); all are vectorised and return a float for scalar
    input. ``x <= 0`` gives ``cdf = 0`` and ``sf = 1`` exactly. The numerical
    method (saddlepoint-contour inversion) is described in the module
    docstring of ``dpsum.distributions.gchisq``.

    Examples
    --------
    >>> from dpsum.distributions import GeneralizedChiSquare
    >>> X = GeneralizedChiSquare([4.0, 1.0, 0.25])
    >>> X.mean()
    5.25
    >>> q = X.isf(1e-12)
    >>> abs(X.sf(q) / 1e-12 - 1) < 1e-12
    True
    """

    def __init__(self, weights: ArrayLike, noncentrality: ArrayLike | None = None) -> None:
        w = V.check_vector(weights, "weights", positive=True)
        if noncentrality is None:
            lam = np.zeros_like(w)
        else:
            lam = V.check_vector(noncentrality, "noncentrality", w.shape[0], nonnegative=True)
            with np.errstate(over="ignore"):
                if not float(np.sum(lam)) <= 1e300:
                    raise ValueError("noncentrality must sum to at most 1e300: the law's "
                                     "moments and series must stay finite floats")
        self._weights = np.array(w, dtype=np.float64)
        self._noncentrality = np.array(lam, dtype=np.float64)
        self._weights.setflags(write=False)
        self._noncentrality.setflags(write=False)
        self._setup()

    # ------------------------------------------------------------------ set-up
    def _setup(self) -> None:
        w, lam = self._weights, self._noncentrality
        wmax = float(w.max())
        self._wmax = wmax
        # Merge equal weights: a block of m equal weights with noncentralities
        # lambda_j is w * chi'^2(m, sum lambda_j). Groups in decreasing order.
        uniq, inverse, counts = np.unique(w, return_inverse=True, return_counts=True)
        lam_sum = np.bincount(inverse, weights=lam, minlength=uniq.size)
        order = np.arange(uniq.size)[::-1]
        self._r = uniq[order] / wmax  # relative weights, r[0] == 1
        self._r[0] = 1.0
        self._m = counts[order].astype(np.float64)
        self._L = lam_sum[order]
        self._has_nc = bool(np.any(self._L > 0))
        self._dof = float(w.size)
        self._total_nc = math.fsum(lam)
        # Below _tiny_x (scaled) the small-ball expansion of the cdf is exact
        # to double precision: its relative correction is at most
        # x * sum_g (m_g + L_g) / r_g.
        self._tiny_x = 1e-17 / float(np.sum((self._m + self._L) / self._r))
        self._sum_m_log_r = math.fsum(self._m * np.log(self._r))
        # Scaled mean (of X / wmax).
        self._mean_scaled = math.fsum(self._r * (self._m + self._L))
        # Power sums for the series. Group g lies in octave o_g, with
        # r_g in [2^-(o+1), 2^-o) (and r = 1 in octave 0; octaves beyond the
        # last are merged into it). For the threshold T_j = 2^-j the groups
        # in octaves o_g >= j (so r_g <= T_j) are summed through the series
        # sum_k ahat[j, k-1] (2 T_j s)^k, where
        #     ahat[j, k-1] = sum_{o_g >= j} (r_g / T_j)^k (m_g / (2k) + L_g / 2)
        # is accumulated octave by octave, every term at most 1 in size: no
        # underflow however small the weights, and O(d) work once.
        _, exponent = np.frexp(self._r)
        octave = np.clip(-exponent, 0, _NTHRESH - 1)
        # split[j]: the number of groups in octaves below j (they come first)
        self._split = np.searchsorted(octave, np.arange(_NTHRESH), side="left")
        # ... and j = _NTHRESH means no series: every group is summed exactly
        self._splits = np.append(self._split, self._r.size)
        oct_s = octave
        ratio = self._r * 2.0 ** oct_s.astype(np.float64)
        m_s, L_s = self._m, self._L
        moments = np.zeros((_NTHRESH, _NTERMS))
        power = np.ones(ratio.size)
        for k in range(1, _NTERMS + 1):
            power = power * ratio
            moments[:, k - 1] = np.bincount(oct_s, weights=power * (m_s / (2 * k) + L_s / 2), minlength=_NTHRESH)
        self._ahat = np.zeros((_NTHRESH, _NTERMS))
        shrink = 2.0 ** -np.arange(1, _NTERMS + 1)  # one octave down: (1/2)^k
        acc = np.zeros(_NTERMS)
        for j in range(_NTHRESH - 1, -1, -1):
            acc = moments[j] + shrink * acc
            self._ahat[j] = acc
        self._has_series = self._ahat[:, 0] > 0

    # --------------------------------------------------------------- properties
    @property
    def weights(self) -> np.ndarray:
        """The weights ``w_j`` (a read-only array).

        Examples
        --------
        >>> GeneralizedChiSquare([2.0, 1.0]).weights.tolist()
        [2.0, 1.0]
        """
        return self._weights

    @property
    def noncentrality(self) -> np.ndarray:
        """The noncentralities ``lambda_j`` (a read-only array).

        Examples
        --------
        >>> GeneralizedChiSquare([2.0, 1.0], [0.5, 0.0]).noncentrality.tolist()
        [0.5, 0.0]
        """
        return self._noncentrality

    @property
    def dim(self) -> int:
        """The number of terms ``d``.

        Examples
        --------
        >>> GeneralizedChiSquare([2.0, 1.0, 1.0]).dim
        3
        """
        return int(self._weights.size)

    def __repr__(self) -> str:
        nc = "central" if not self._has_nc else "noncentral"
        return f"GeneralizedChiSquare(d={self.dim}, {nc})"

    # ---------------------------------------------------------------- moments
    def mean(self) -> float:
        """``E X = sum_j w_j (1 + lambda_j)``.

        Examples
        --------
        >>> GeneralizedChiSquare([2.0, 1.0], [1.0, 0.0]).mean()
        5.0
        """
        w, lam = self._weights, self._noncentrality
        return math.fsum(np.concatenate([w, w * lam]))

    def var(self) -> float:
        """``Var X = 2 sum_j w_j^2 (1 + 2 lambda_j)``.

        Examples
        --------
        >>> GeneralizedChiSquare([2.0, 1.0]).var()
        10.0
        """
        w, lam = self._weights, self._noncentrality
        w2 = w * w
        return 2.0 * math.fsum(np.concatenate([w2, 2.0 * w2 * lam]))

    def std(self) -> float:
        """Standard deviation ``sqrt(var())``.

        Examples
        --------
        >>> round(GeneralizedChiSquare([2.0, 1.0]).std(), 6)
        3.162278
        """
        return math.sqrt(self.var())

    # ---------------------------------------------------------- cumulants
    # Every internal method below works on a batch of points at once: arrays
    # of shape (n,) for per-point quantities and (n, g) for per-point,
    # per-group ones (g distinct weights). A single point is a batch of one.
    def _threshold_index(self, radius: Any) -> np.ndarray:
        """Index j of the largest threshold T_j = 2**-j with 2 T_j radius <= _RHO."""
        radius = np.asarray(radius, dtype=float)
        j = np.ceil(np.log2(np.maximum(radius * (2.0 / _RHO), 1e-300)))
        return np.minimum(np.maximum(j, 0), _NTHRESH).astype(int)  # _NTHRESH: no series

    def _points_per_chunk(self) -> int:
        """How many points a batch may hold so that (points, groups) arrays stay small."""
        return max(1, _MAX_ELEMENTS // self._r.size)

    def _real_cumulants(self, c: np.ndarray, u: np.ndarray, scale: np.ndarray,
                        third: bool = True, value: bool = True) -> Any:
        """K(c), K'(c), K''(c) scale^2 and K'''(c) scale^3 at real points c.

        Scaled units (weights relative to the largest); ``u = 1 - 2 r c`` is
        supplied, accurately formed, for every point and group. The second
        and third derivatives come multiplied by powers of the length
        ``scale`` so that they neither overflow nor underflow at extreme x.
        With ``third=False`` the third derivative is not computed (NaN), with
        ``value=False`` nor is K itself.
        """
        n = c.size
        K = np.empty(n) if value else np.full(n, np.nan)
        K1 = np.empty(n)
        K2 = np.empty(n)
        K3 = np.full(n, np.nan)
        j_all = self._threshold_index(np.abs(c))
        # points with the same threshold share the split: slices and
        # matrix-vector products, no masks
        for j in (np.unique(j_all).tolist() if n > 1 else [int(j_all[0])]):
            rows = np.flatnonzero(j_all == j) if n > 1 else np.zeros(1, dtype=int)
            i = int(self._splits[j])
            m, L = self._m[:i], self._L[:i]
            uu = u[rows, :i]
            q = self._r[:i] / uu
            qs = q * scale[rows, None]
            qs2 = qs * qs
            Kr = -0.5 * (np.log(uu) @ m) if value else 0.0
            K1r = q @ m
            K2r = 2.0 * (qs2 @ m)
            K3r = 8.0 * ((qs2 * qs) @ m) if third else 0.0
            if self._has_nc:
                Lu = L / uu
                if value:
                    Kr += c[rows] * (q @ L)
                K1r += np.sum(q * Lu, axis=1)
                K2r += 4.0 * np.sum(qs2 * Lu, axis=1)
                if third:
                    K3r += 24.0 * np.sum(qs2 * qs * Lu, axis=1)
            if j < _NTHRESH and self._has_series[j]:
                a = self._ahat[j]
                h = 2.0 ** (1 - j)  # the series variable is h s, |h c| <= _RHO
                cp = (h * c[rows])[:, None] ** _POW  # (h c)^0 .. (h c)^N
                hs = h * scale[rows]
                if value:
                    Kr += cp[:, 1:] @ a
                K1r += h * (cp[:, :-1] @ (a * _N))
                K2r += hs * hs * (cp[:, :-2] @ (a[1:] * _N2))
                if third:
                    K3r += hs**3 * (cp[:, :-3] @ (a[2:] * _N3))
            K1[rows], K2[rows] = K1r, K2r
            if value:
                K[rows] = Kr
            if third:
                K3[rows] = K3r
        return K, K1, K2, K3

    def _point(self, v: np.ndarray, upper: bool) -> Any:
        """Crossing points c, u = 1 - 2 r c, tau and length scales for parameters v.

        Upper tail: v = log tau, c = (1 - tau)/2, and u = (1 - r) + r tau is
        formed without cancellation; scale = min(c, tau/2) is the distance to
        the nearer singularity (0 or 1/2). Lower tail: v = log(-c), scale = -c.
        """
        r = self._r[None, :]
        if upper:
            tau = np.exp(v)
            c = 0.5 * (1.0 - tau)
            u = (1.0 - r) + r * tau[:, None]
            scale = np.minimum(c, 0.5 * tau)
        else:
            tau = np.full(v.shape, np.nan)
            c = -np.exp(v)
            u = 1.0 - 2.0 * r * c[:, None]
            scale = -c
        return c, u, tau, scale

    # ---------------------------------------------------------- saddlepoint
    def _saddle_v(self, x: np.ndarray, upper: bool) -> np.ndarray:
        """Solve Psi'(c) = K'(c) - 1/c - x = 0 on the requested side (scaled x);
        returns the parameters v (log tau, or log(-c))."""
        if upper:
            # v = log tau; g decreases in v. Brackets from the bounds
            # K'(c) >= 1/tau and, at c = 1/(2(x+1)), K'(c) <= x + 2 + 1/x.
            lo = -np.log(x + 4.0)
            hi = np.log1p(-1.0 / (x + 1.0))
        else:
            # v = log(-c); g decreases in v. g >= 0 at -c = 1/x, and
            # K'(c) <= (d + sum lambda)/(2|c|) gives g <= 0 at the other end.
            lo = -np.log(x)
            hi = math.log(0.5 * (self._dof + self._total_nc) + 1.0) - np.log(x)

        def fun(v: np.ndarray, idx: np.ndarray) -> Any:
            c, u, tau, scale = self._point(v, upper)
            _, K1, K2s, _ = self._real_cumulants(c, u, scale, third=False, value=False)
            g = K1 - 1.0 / c - x[idx]
            rc = scale / c
            psi2s = K2s + rc * rc  # Psi''(c) scale^2
            # dg/dv = Psi''(c) dc/dv with dc/dv = -tau/2 (upper) or c (lower)
            if upper:
                dg = -0.5 * (tau / scale) * psi2s / scale
            else:
                dg = -psi2s / scale
            return g, dg

        return _rtsafe_decreasing(fun, lo, hi, 1e-10)

    def _saddle_at(self, v: np.ndarray, x: np.ndarray, upper: bool) -> _Saddle:
        """The contour data at the crossing points given by v (log tau or log(-c))."""
        c, u, tau, scale = self._point(v, upper)
        K, K1, K2s, K3s = self._real_cumulants(c, u, scale)
        rc = scale / c
        psi2 = K2s + rc * rc  # Psi''(c) scale^2
        psi3 = K3s - 2.0 * rc**3  # Psi'''(c) scale^3
        S = _Saddle()
        S.x = x
        S.upper = upper
        S.c = c
        S.tau = tau
        S.u = u
        S.q = self._r / u
        S.psi = K - c * x - np.log(np.abs(c))
        S.scale = scale
        S.width = scale / np.sqrt(psi2)
        S.beta = np.maximum(psi3 / (6.0 * psi2**1.5), _BETA_MIN)
        S.series = {}
        return S

    # ------------------------------------------------------- contour integral
    def _log_integrand(self, S: _Saddle, point: np.ndarray, t: np.ndarray) -> Any:
        """D = Psi(s(t)) - Psi(c) and s(t)/c for pairs (point index, t >= 0)."""
        c, x = S.c[point], S.x[point]
        dre = S.width[point] * S.beta[point] * t * t
        dim_ = S.width[point] * t
        delta = dre + 1j * dim_
        jj = self._threshold_index(np.hypot(c + dre, dim_))
        if self._r.size <= _FEW_GROUPS and S.c.size <= _FEW_POINTS:
            # few terms and few points: one split per point, the one its
            # farthest t needs (fewer, larger array operations)
            farthest = np.zeros(S.c.size, dtype=np.intp)
            np.maximum.at(farthest, point, jj)
            jj = farthest[point]
        D = np.empty(t.shape, dtype=complex)
        for j in np.unique(jj).tolist():
            i = int(self._splits[j])
            sel = np.flatnonzero(jj == j)
            step = max(1, _MAX_ELEMENTS // max(i, 1))
            for start in range(0, sel.size, step):
                rows = sel[start:start + step]
                pt = point[rows]
                dl = delta[rows]
                acc = np.zeros(rows.size, dtype=complex)
                if i > 0:
                    q = S.q[pt, :i]
                    a = dre[rows, None] * (-2.0 * q)
                    b = dim_[rows, None] * (-2.0 * q)
                    re, im = log1p_complex(a, b)
                    m = self._m[:i]
                    acc += -0.5 * (re @ m + 1j * (im @ m))
                    if self._has_nc:
                        nc = self._L[:i] * q / S.u[pt, :i]
                        den = (1.0 + a) ** 2 + b * b
                        acc += dl * (np.sum((1.0 + a) / den * nc, axis=1)
                                     - 1j * np.sum(b / den * nc, axis=1))
                if j < _NTHRESH and self._has_series[j]:
                    # sum_k ahat_k ((h s)^k - (h c)^k) = h delta sum_i (h s)^i b_i
                    # with b_i = sum_{k > i} ahat_k (h c)^(k-1-i): no cancellation
                    h = 2.0 ** (1 - j)
                    coef = self._series_shift(S, j)[pt]
                    hs = h * (c[rows] + dl)
                    acc += (h * dl) * _power_series(hs, coef)
                D[rows] = acc
        z = delta / c
        lre, lim = log1p_complex(z.real, z.imag)
        D += -delta * x - (lre + 1j * lim)
        return D, 1.0 + z

    def _series_shift(self, S: _Saddle, j: int) -> np.ndarray:
        """b_i = sum_{k > i} ahat_k (h c)^(k-1-i), i = 0 .. N-1, for threshold j,
        for every point of the batch (shape (n, N))."""
        cache = S.series
        if j not in cache:
            a = self._ahat[j]
            hc = 2.0 ** (1 - j) * S.c
            b = np.empty((hc.size, _NTERMS))
            acc = np.zeros(hc.size)
            for i in range(_NTERMS - 1, -1, -1):
                acc = a[i] + hc * acc  # a[i] multiplies (h s)^(i+1)
                b[:, i] = acc
            cache[j] = b
        return cache[j]

    def _integrands(self, S: _Saddle, point: np.ndarray, t: np.ndarray, want_pdf: bool) -> Any:
        """Re of the integrand (and of its pdf twin) and a magnitude, at the pairs."""
        D, ratio = self._log_integrand(S, point, t)
        e = np.exp(D) * (1.0 - 2j * S.beta[point] * t)
        f0 = e.real
        f1 = (e * ratio).real if want_pdf else None
        mag = np.abs(e)
        if want_pdf:
            mag = mag * np.maximum(1.0, np.abs(ratio))
        return f0, f1, mag

    def _choose_beta(self, S: _Saddle) -> None:
        """Keep the cubic-cancelling bend unless the integrand grows along it.

        Far from the saddlepoint the parabola can run into a region where the
        integrand grows again (a nearly Gaussian ``K`` with a large third
        derivative coming from the pole at 0). Probe ``Re D`` and fall back to
        flatter parabolas until it decreases monotonically over the probes.
        """
        n = S.c.size
        first = S.beta.copy()
        # candidates per point: the bend, then each flatter value below the last kept
        cands = [first]
        last = first.copy()
        for value in (0.25 * first, np.full(n, _BETA_MIN), np.full(n, 0.25 * _BETA_MIN)):
            keep = value < last
            cands.append(np.where(keep, value, np.nan))
            last = np.where(keep, value, last)
        todo = np.arange(n)
        for cand in cands:
            usable = todo[~np.isnan(cand[todo])]
            if usable.size == 0:
                continue
            S.beta[usable] = cand[usable]
            point = np.repeat(np.arange(n), _PROBES.size)
            mask = np.isin(point, usable)
            D, _ = self._log_integrand(S, point[mask], np.tile(_PROBES, n)[mask])
            re = D.real.reshape(usable.size, _PROBES.size)
            good = (np.all(np.isfinite(re), axis=1) & np.all(np.diff(re, axis=1) < 0, axis=1)
                    & (re[:, 0] < 0))
            todo = np.setdiff1d(todo, usable[good], assume_unique=True)
        S.beta[todo] = last[todo]  # nothing passed: the flattest candidate, as tried last

    def _integrate(self, S: _Saddle, want_pdf: bool) -> Any:
        """Trapezoid rule with step halving. Returns (log P, log pdf or nan) arrays.

        If the integrand along the parabola dips and then rises again before
        it becomes negligible, the parabola is flattened and the integral
        redone (the last resort, beta = 0, is the vertical line).
        """
        self._choose_beta(S)
        n = S.c.size
        logp = np.empty(n)
        logpdf = np.full(n, np.nan)
        todo = np.arange(n)
        for attempt in range(4):
            ok, lp, lpdf = self._trapezoid(S, todo, want_pdf)
            logp[todo[ok]] = lp[ok]
            logpdf[todo[ok]] = lpdf[ok]
            todo = todo[~ok]
            if todo.size == 0:
                return logp, logpdf
            S.beta[todo] = 0.25 * S.beta[todo] if attempt < 2 else 0.0
        raise FloatingPointError("contour integral did not converge")  # pragma: no cover

    def _trapezoid(self, S: _Saddle, idx: np.ndarray, want_pdf: bool) -> Any:
        """The trapezoid rule at the points ``idx`` of the batch, all with the same
        steps: returns (converged?, log P, log pdf) arrays over ``idx``."""
        n = idx.size
        h = _H0
        ok = np.ones(n, dtype=bool)
        # Level 0: points t = 0, h, 2h, ... in chunks until a run of _RUN
        # consecutive negligible values is found; the sum stops there. (Past
        # that point the parabola may enter a region where the integrand grows
        # again; that part does not belong to the integral, because the rest
        # of the contour can be closed along a horizontal segment and the
        # vertical line, on which the integrand is negligible.)
        chunk = _FIRST_CHUNK
        size = 0
        f0 = np.zeros((n, 0))
        f1 = np.zeros((n, 0))
        mag = np.zeros((n, 0))
        cut = np.full(n, -1)
        need = np.arange(n)
        with np.errstate(over="ignore", invalid="ignore"):
            while need.size:
                k = np.arange(size, size + chunk)
                grow = np.zeros((n, chunk))
                f0, f1, mag = (np.concatenate([arr, grow], axis=1) for arr in (f0, f1, mag))
                point = np.repeat(need, chunk)
                t = np.tile(h * k, need.size)
                a0, a1, am = self._integrands(S, idx[point], t, want_pdf)
                f0[need, size:] = a0.reshape(need.size, chunk)
                mag[need, size:] = am.reshape(need.size, chunk)
                if want_pdf:
                    f1[need, size:] = a1.reshape(need.size, chunk)
                size += chunk
                chunk = max(_NEXT_CHUNK, size // 2)
                sub = f0[need]
                thr = _TAIL_RTOL * np.abs(h * (0.5 * sub[:, 0] + sub[:, 1:].sum(axis=1))) / h
                small = mag[need] < thr[:, None]
                runs = np.zeros((need.size, small.shape[1] + 1), dtype=int)
                np.cumsum(small, axis=1, out=runs[:, 1:])
                run = (runs[:, _RUN:] - runs[:, :-_RUN]) == _RUN
                hit = run.any(axis=1)
                cut[need[hit]] = np.argmax(run[hit], axis=1)  # points 0 .. cut-1 are kept
                need = need[~hit]
                if need.size and h * size >= _T_CAP:
                    ok[need] = False
                    break
        k = np.arange(size)[None, :]
        inside = k < cut[:, None]
        keep = np.where(inside, mag, 1.0)
        rose = np.any(inside & (keep > 1e3 * np.minimum.accumulate(keep, axis=1)), axis=1)
        ok &= (cut >= 0) & ~rose & np.all(np.where(inside, np.isfinite(mag), True), axis=1)
        T0 = h * (0.5 * f0[:, 0] + np.sum(np.where(inside & (k > 0), f0, 0.0), axis=1))
        T1 = (h * (0.5 * f1[:, 0] + np.sum(np.where(inside & (k > 0), f1, 0.0), axis=1))
              if want_pdf else np.zeros(n))
        t_cut = h * (cut - 0.5)
        converged = np.zeros(n, dtype=bool)
        active = np.flatnonzero(ok)
        for _ in range(_MAX_HALVINGS):
            if active.size == 0:
                break
            # midpoints t = (k + 1/2) h below t_cut, point by point
            count = np.maximum(np.ceil((t_cut[active] - 0.5 * h) / h), 0).astype(int)
            point = np.repeat(np.arange(active.size), count)
            start = np.cumsum(count) - count
            tm = (np.arange(point.size) - np.repeat(start, count) + 0.5) * h
            with np.errstate(over="ignore", invalid="ignore"):
                a0, a1, am = self._integrands(S, idx[active][point], tm, want_pdf)
            finite = np.bincount(point, weights=~np.isfinite(am), minlength=active.size) == 0
            N0 = 0.5 * T0[active] + 0.5 * h * np.bincount(point, weights=a0,
                                                          minlength=active.size)
            done = np.abs(N0 - T0[active]) <= _TRAP_ACCEPT * np.abs(N0)
            if want_pdf:
                N1 = 0.5 * T1[active] + 0.5 * h * np.bincount(point, weights=a1,
                                                              minlength=active.size)
                done &= np.abs(N1 - T1[active]) <= _TRAP_ACCEPT * np.abs(N1)
                T1[active] = N1
            T0[active] = N0
            h *= 0.5
            ok[active[~finite]] = False
            converged[active[done & finite]] = True
            active = active[~done & finite]
        ok &= converged & (T0 > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = (S.psi[idx] + np.log(S.width[idx] / math.pi) + np.log(T0))
            if want_pdf:
                logpdf = np.where(T1 > 0, logp + np.log(np.abs(S.c[idx])) + np.log(T1 / T0),
                                  -np.inf)
            else:
                logpdf = np.full(n, np.nan)
        return ok, logp, logpdf

    def _eval(self, x: np.ndarray, want_pdf: bool = False,
              log_x: np.ndarray | None = None) -> Any:
        """(upper?, log P, log pdf) at scaled points x > 0 (finite), vectorised.

        log P is log sf where upper is True and log cdf elsewhere. Points are
        processed in batches that share the saddlepoint solve and the contour
        work (one trapezoid grid for the whole batch).
        """
        n = x.size
        upper = x >= self._mean_scaled
        logp = np.empty(n)
        logpdf = np.full(n, np.nan)
        # Small-ball limit: P(X <= x) = e^{-Lambda/2} (x/2)^{d/2}
        # / (Gamma(d/2 + 1) prod sqrt(w_j)) (1 + O(x sum (1 + lambda_j)/w_j)),
        # exact to double precision below _tiny_x.
        tiny = ~upper & (x < self._tiny_x)
        if np.any(tiny):
            half = 0.5 * self._dof
            # log x from the caller where x / w_max underflows (a subnormal x)
            lx = np.log(x[tiny]) if log_x is None else log_x[tiny]
            lp = half * (lx - math.log(2.0)) + self._small_ball_const()
            logp[tiny] = lp
            logpdf[tiny] = lp + math.log(half) - lx
        # Far upper tail: log P(X > x) = -x/2 + O(log x + sqrt(Lambda x)) in
        # scaled units, and beyond 1e40 (1 + Lambda) the correction is below
        # the resolution of x/2 (where the contour integral no longer converges)
        far = upper & (x > 1e40 * (1.0 + self._total_nc))
        if np.any(far):
            logp[far] = -0.5 * x[far]
            logpdf[far] = -0.5 * x[far] - math.log(2.0)
        step = self._points_per_chunk()
        for side in (True, False):
            sel = np.flatnonzero((upper == side) & ~tiny & ~far)
            for start in range(0, sel.size, step):
                rows = sel[start:start + step]
                v = self._saddle_v(x[rows], side)
                S = self._saddle_at(v, x[rows], side)
                logp[rows], logpdf[rows] = self._integrate(S, want_pdf)
        return upper, logp, logpdf

    def _small_ball_const(self) -> float:
        """log P(X <= x) - (d/2) log(x/2) in the limit x -> 0 (scaled units)."""
        half = 0.5 * self._dof
        return -0.5 * self._total_nc - math.lgamma(half + 1.0) - 0.5 * self._sum_m_log_r

    # ------------------------------------------------------- distribution API
    def _x_array(self, x: Any) -> np.ndarray:
        arr = V.as_real_array(x, "x")
        if np.any(np.isnan(arr)):
            raise ValueError("x must not contain NaN")
        return arr

    def _log_tails(self, x: Any) -> Any:
        """(log sf, log cdf) arrays for the array x (original units)."""
        xa = self._x_array(x)
        flat = xa.ravel()
        lsf = np.empty(flat.shape)
        lcdf = np.empty(flat.shape)
        low = flat <= 0
        high = flat == np.inf
        lsf[low], lcdf[low] = 0.0, -np.inf
        lsf[high], lcdf[high] = -np.inf, 0.0
        mid = ~low & ~high
        if np.any(mid):
            pts = flat[mid]
            upper, lp, _ = self._eval(pts / self._wmax,
                                      log_x=np.log(pts) - math.log(self._wmax))
            other = log1mexp(-lp)
            lsf[mid] = np.where(upper, lp, other)
            lcdf[mid] = np.where(upper, other, lp)
        return xa, lsf.reshape(xa.shape), lcdf.reshape(xa.shape)

    def logsf(self, x: ArrayLike) -> Any:
        """Log of the survival function ``log P(X > x)``; finite however small.

        Vectorised: an array of points shares the saddlepoint and contour work.

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 1.0])  # chi-square, 2 degrees of freedom
        >>> round(float(X.logsf(2000.0)), 9)  # log(e^-1000)
        -1000.0
        """
        xa, lsf, _ = self._log_tails(x)
        return V.scalar_or_array(lsf, x)

    def logcdf(self, x: ArrayLike) -> Any:
        """Log of the distribution function ``log P(X <= x)`` (``-inf`` for x <= 0).

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 1.0])
        >>> round(float(X.logcdf(1e-10) - np.log(0.5e-10)), 9)
        -0.0
        """
        xa, _, lcdf = self._log_tails(x)
        return V.scalar_or_array(lcdf, x)

    def sf(self, x: ArrayLike) -> Any:
        """Survival function ``P(X > x)``, to a small relative error in the tail.

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 1.0])  # a chi-square with 2 degrees of freedom
        >>> [round(float(p / np.exp(-t / 2)), 12) for p, t in zip(X.sf([1.0, 50.0]), [1.0, 50.0])]
        [1.0, 1.0]
        """
        xa, lsf, _ = self._log_tails(x)
        return V.scalar_or_array(np.exp(lsf), x)

    def cdf(self, x: ArrayLike) -> Any:
        """Distribution function ``P(X <= x)``, to a small relative error in the lower tail.

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 1.0])
        >>> x = np.array([2.0, 1e-8])  # the lower tail to full relative accuracy
        >>> (X.cdf(x) / -np.expm1(-x / 2)).round(12).tolist(), X.cdf(0.0)
        ([1.0, 1.0], 0.0)
        """
        xa, _, lcdf = self._log_tails(x)
        return V.scalar_or_array(np.exp(lcdf), x)

    def pdf(self, x: ArrayLike) -> Any:
        """Probability density of ``X`` (0 for x < 0; the right limit at x = 0).

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 1.0])
        >>> round(float(X.pdf(2.0) / (0.5 * np.exp(-1.0))), 12)
        1.0
        """
        xa = self._x_array(x)
        flat = xa.ravel()
        out = np.zeros(flat.shape)
        out[flat == 0] = self._pdf_at_zero()
        mid = (flat > 0) & np.isfinite(flat)
        if np.any(mid):
            pts = flat[mid]
            _, _, lpdf = self._eval(pts / self._wmax, want_pdf=True,
                                    log_x=np.log(pts) - math.log(self._wmax))
            out[mid] = np.exp(lpdf) / self._wmax
        return V.scalar_or_array(out.reshape(xa.shape), x)

    def _pdf_at_zero(self) -> float:
        if self._dof == 1:
            return math.inf
        if self._dof == 2:
            w = self._weights
            return math.exp(-0.5 * self._total_nc) / (2.0 * math.sqrt(w[0] * w[1]))
        return 0.0

    def isf(self, p: ArrayLike) -> Any:
        """Inverse survival function: the ``x`` with ``P(X > x) = p``, p in (0, 1).

        Vectorised: an array of probabilities is inverted as one batch.

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 1.0])
        >>> (X.isf([0.5, 1e-12]) / (-2 * np.log([0.5, 1e-12]))).round(12).tolist()
        [1.0, 1.0]
        """
        return self._quantiles(p, upper=True)

    def ppf(self, p: ArrayLike) -> Any:
        """Quantile function: the ``x`` with ``P(X <= x) = p``, p in (0, 1).

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 1.0])
        >>> round(float(X.ppf(1e-12) / (-2 * np.log1p(-1e-12))), 9)
        1.0
        """
        return self._quantiles(p, upper=False)

    def _quantiles(self, p: Any, upper: bool) -> Any:
        """The ``x`` whose upper (``upper=True``) or lower tail probability is ``p``.

        Each ``p`` is inverted on the tail where it is at most 1/2, as a
        logarithm, so that neither tail loses digits to ``1 - p``.
        """
        pa = np.asarray(V.check_probability(p, "p"), dtype=float)
        flat = pa.ravel()
        small = flat <= 0.5
        logp = np.where(small, np.log(flat), np.log1p(-np.where(small, 0.0, flat)))
        tail_upper = np.where(small, upper, not upper)
        out = np.empty(flat.shape)
        step = self._points_per_chunk()
        for side in (True, False):
            sel = np.flatnonzero(tail_upper == side)
            for start in range(0, sel.size, step):
                rows = sel[start:start + step]
                out[rows] = self._quantile(logp[rows], side)
        return V.scalar_or_array(out.reshape(pa.shape) * self._wmax, p)

    # ------------------------------------------------------------- quantiles
    def _approx_logp(self, v: np.ndarray, upper: bool) -> Any:
        """Saddlepoint approximation of log P at the crossing points v; returns (log P, x)."""
        c, u, tau, scale = self._point(v, upper)
        K, K1, K2s, _ = self._real_cumulants(c, u, scale, third=False)
        x = K1 - 1.0 / c
        psi = K - c * x - np.log(np.abs(c))
        rc = scale / c
        return psi - 0.5 * np.log(2 * math.pi * (K2s + rc * rc)) + np.log(scale), x

    def saddlepoint_isf(self, p: float) -> float:
        """Lugannani-Rice approximation of the upper quantile: ``x`` with ``P(X > x) ≈ p``.

        The saddlepoint approximation
        ``P(X > x) ≈ Phibar(w) + phi(w) (1/v - 1/w)`` with
        ``w = sqrt(2 (c x - K(c)))`` and ``v = c sqrt(K''(c))`` at the
        saddlepoint ``c`` of ``x`` (Lugannani and Rice 1980), solved for ``x``.
        Its relative error is of order 1e-3 in the tail, so it is for locating
        optima cheaply (:func:`dpsum.design.error_optimal_scaling`), not for
        clip radii, which use :meth:`isf`. Where the approximation does not
        apply (``p`` near the median, where ``w`` is near 0, or ``p`` so close
        to 1 that the bracket fails) it returns the exact :meth:`isf`
        instead: never NaN.

        Parameters
        ----------
        p : float
            Upper-tail probability in (0, 1).

        Returns
        -------
        float

        Examples
        --------
        >>> X = GeneralizedChiSquare([1.0, 0.5, 0.25])
        >>> abs(X.saddlepoint_isf(1e-6) / X.isf(1e-6) - 1) < 1e-2
        True
        """
        pv = V.check_probability(p, "p", scalar=True)
        log_p = math.log(pv)
        # the quantile is below 2 E + 3 log(1/p) (Laurent and Massart, in
        # scaled units), and x(tau) >= 1/tau, so this tau brackets it from the
        # far-tail side
        tau_lo = 1.0 / (2.0 * self._mean_scaled + 3.0 * -log_p + 1.0)
        v_lo, v_hi = math.log(tau_lo), math.log(0.98)
        f_hi = self._lugannani_rice(v_hi)[1] - log_p
        f_lo = self._lugannani_rice(v_lo)[1] - log_p
        if not (math.isfinite(f_hi) and f_hi > 0 and f_lo < 0):
            return float(self.isf(pv))        # the approximation does not apply here
        v = optimize.brentq(lambda t: self._lugannani_rice(t)[1] - log_p, v_lo, v_hi,
                            xtol=1e-12, rtol=1e-12)
        return self._lugannani_rice(v)[0] * self._wmax

    def _lugannani_rice(self, v: float) -> tuple[float, float]:
        """(scaled x, Lugannani-Rice log P(X > x)) at the upper-tail point v = log tau."""
        c_, u, tau, scale_ = self._point(np.array([v]), True)
        K_, K1_, K2s_, _ = self._real_cumulants(c_, u, scale_, third=False)
        c, scale, K, K1, K2s = (float(a[0]) for a in (c_, scale_, K_, K1_, K2s_))
        w = math.sqrt(max(2.0 * (c * K1 - K), 0.0))
        if w < 1e-3:
            return K1, math.nan
        inv_v = scale / (c * math.sqrt(K2s))  # 1 / (c sqrt(K''(c)))
        val = math.exp(float(log_mills(w))) + inv_v - 1.0 / w
        if not val > 0:
            return K1, -math.inf
        return K1, -0.5 * w * w - LOG_SQRT_2PI + math.log(val)

    def _initial_quantile(self, logp: np.ndarray, upper: bool) -> np.ndarray:
        """Solve the saddlepoint approximation log P(c) = logp for c; return x(c) > 0."""
        n = logp.size
        # In both parametrisations, increasing w moves x towards the far tail
        # (upper: v = log tau decreasing -> x increasing; we use w = -v there).
        if upper:
            def f(w: np.ndarray, idx: np.ndarray) -> Any:
                lp, x = self._approx_logp(-w, True)
                return lp - logp[idx], x
            a, b = np.full(n, 1e-12), np.full(n, 1.0)  # tau = e^-w from ~1 (c ~ 0) to e^-1
        else:
            def f(w: np.ndarray, idx: np.ndarray) -> Any:
                lp, x = self._approx_logp(w, False)
                return lp - logp[idx], x
            mu = self._mean_scaled
            a, b = np.full(n, math.log(0.1 / mu)), np.full(n, math.log(1.0 / mu))
        every = np.arange(n)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            fa, xa = f(a, every)
            fb, xb = f(b, every)
            # expand b until f(b) < 0 (probability below target) and a until f(a) > 0
            for _ in range(200):
                m = np.flatnonzero(fb > 0)
                if m.size == 0:
                    break
                a[m], fa[m], xa[m] = b[m], fb[m], xb[m]
                b[m] = b[m] * 2.0 if upper else b[m] + 2.0
                fb[m], xb[m] = f(b[m], m)
            for _ in range(200):
                m = np.flatnonzero(fa < 0)
                if m.size == 0:
                    break
                b[m], fb[m], xb[m] = a[m], fa[m], xa[m]
                a[m] = a[m] * 0.5 if upper else a[m] - 2.0
                fa[m], xa[m] = f(a[m], m)
            # regula falsi (Illinois variant) on [a, b], where f(a) > 0 >= f(b)
            active = every[(fa > 0) & (fb <= 0)]
            side = np.zeros(n, dtype=int)  # which end moved last (+1: a, -1: b)
            for _ in range(60):
                if active.size == 0:
                    break
                A, B, FA, FB = a[active], b[active], fa[active], fb[active]
                mid = (A * FB - B * FA) / (FB - FA)
                bad = ~((mid > A) & (mid < B))
                mid = np.where(bad, 0.5 * (A + B), mid)
                fm, xm = f(mid, active)
                pos = fm > 0
                up_, dn = active[pos], active[~pos]
                a[up_], fa[up_], xa[up_] = mid[pos], fm[pos], xm[pos]
                b[dn], fb[dn], xb[dn] = mid[~pos], fm[~pos], xm[~pos]
                # Illinois: halve the value kept at the end that did not move twice
                again_a = pos & (side[active] == 1)
                again_b = ~pos & (side[active] == -1)
                fb[active[again_a]] *= 0.5
                fa[active[again_b]] *= 0.5
                side[active] = np.where(pos, 1, -1)
                width = b[active] - a[active]
                active = active[~(width < 1e-6 * np.maximum(1.0, np.abs(b[active])))]
        x = np.where(fb <= 0, xb, xa)
        bad = ~((x > 0) & np.isfinite(x))
        if np.any(bad):
            # Near the centre of a very skewed law (one dominant term) the
            # approximation can put the quantile below 0: start instead from the
            # scaled chi-square with the same mean and variance (Welch-Satterthwaite).
            mu = self._mean_scaled
            var = 2.0 * math.fsum(self._r**2 * (self._m + 2.0 * self._L))
            g, h = var / (2.0 * mu), 2.0 * mu * mu / var
            p = np.exp(logp[bad])
            ws = g * (stats.chi2.isf(p, h) if upper else stats.chi2.ppf(p, h))
            x[bad] = np.where((ws > 0) & np.isfinite(ws), ws, mu)
        return x

    def _quantile(self, logp: np.ndarray, upper: bool) -> np.ndarray:
        """Scaled x with log sf(x) = logp (upper) or log cdf(x) = logp (lower), per entry.

        Safeguarded Newton iteration: on x for the upper tail (where log sf is
        nearly linear in x) and on log x for the lower tail (where log cdf is
        nearly linear in log x), keeping a bracket and bisecting when a step
        leaves it. All entries iterate together; each stops on its own.
        """
        n = logp.size
        out = np.empty(n)
        todo = np.arange(n)
        if not upper:
            # invert the small-ball limit where it is exact (see _eval); a
            # quantile below the smallest double rounds to 0.0
            y = (logp - self._small_ball_const()) / (0.5 * self._dof)
            tiny = y < math.log(0.5 * self._tiny_x) if self._tiny_x > 0 else np.zeros(n, bool)
            out[tiny] = 2.0 * np.exp(y[tiny])
            todo = todo[~tiny]
        if todo.size == 0:
            return out
        target = logp[todo]
        x = self._initial_quantile(target, upper)
        lo = np.zeros(todo.size)
        hi = np.full(todo.size, np.inf)  # brackets on x
        active = np.arange(todo.size)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for _ in range(100):
                if active.size == 0:
                    break
                xa = x[active]
                up, lp, lpdf = self._eval(xa, want_pdf=True)
                lt = np.where(up == upper, lp, log1mexp(-lp))
                F = lt - target[active]
                exact = F == 0.0
                # F decreases in x for the upper tail and increases for the lower
                raise_lo = (F > 0) == upper
                lo[active] = np.where(raise_lo & ~exact, np.maximum(lo[active], xa), lo[active])
                hi[active] = np.where(~raise_lo & ~exact, np.minimum(hi[active], xa), hi[active])
                l, h = lo[active], hi[active]
                ratio = np.exp(lpdf - lt)  # pdf / tail, > 0
                if upper:
                    xn = xa + F / ratio
                else:
                    xn = np.where(ratio * xa > 0, xa * np.exp(-F / (ratio * xa)), np.nan)
                xn = np.where(ratio > 0, xn, np.nan)
                # without an upper end of the bracket a Newton step may at most
                # quadruple x: where the tail is flat (an upper-tail equation
                # solved below the mean) it can overshoot by hundreds of orders
                # of magnitude and exhaust the iterations
                newton_ok = (np.isfinite(xn) & (l <= xn) & (xn <= h)
                             & (np.isfinite(h) | (xn <= 4.0 * np.maximum(l, xa))))
                # quadratic convergence: the Newton step from |F| < 1e-9 lands
                # within about F^2 of the root
                conv = newton_ok & ((np.abs(F) < 1e-9) | (xn == xa))
                fallback = np.where(np.isinf(h), 4.0 * np.maximum(l, xa),
                                    np.where(l == 0.0, 1e-3 * np.minimum(h, xa), np.sqrt(l * h)))
                xn = np.where(newton_ok, xn, fallback)
                tight = np.isfinite(h) & (h - l <= 4e-16 * h)
                x[active] = np.where(exact, xa, xn)
                active = active[~(exact | conv | tight)]
        out[todo] = x
        return out

    # ---------------------------------------------------------------- sampling
    def rvs(self, size: int | tuple[int, ...] | None = None,
            rng: RandomLike = None) -> float | np.ndarray:
        """Random draws of ``X``.

        Parameters
        ----------
        size : int or tuple of ints, optional
            Output shape; ``None`` (default) returns one float.
        rng : numpy.random.Generator, int or None
            Source of randomness (SPEC 7), see :func:`numpy.random.default_rng`.

        Each block of equal weights is drawn as one (noncentral) chi-square
        variable with as many degrees of freedom as the block has entries.

        Examples
        --------
        >>> X = GeneralizedChiSquare([2.0, 1.0])
        >>> X.rvs(size=3, rng=0).shape
        (3,)
        >>> bool(X.rvs(rng=1) > 0)
        True
        """
        gen = V.check_rng(rng)
        size = V.check_size(size)
        out = np.zeros(() if size is None else size)
        for r, m, L in zip(self._r, self._m, self._L):
            if L > 0:
                draw = gen.noncentral_chisquare(m, L, size=size)
            else:
                draw = gen.chisquare(m, size=size)
            out = out + r * draw
        out = out * self._wmax
        return float(out) if size is None else out


def _power_series(z: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``sum_i z^i coef[:, i]`` row by row: Horner's rule for many rows (no
    large temporaries), a table of powers for few (fewer NumPy calls)."""
    if z.size >= 256:
        out = coef[:, -1].astype(complex)
        for k in range(coef.shape[1] - 2, -1, -1):
            out *= z
            out += coef[:, k]
        return out
    powers = np.cumprod(np.broadcast_to(z[:, None], (z.size, coef.shape[1] - 1)), axis=1)
    return coef[:, 0] + np.sum(powers * coef[:, 1:], axis=1)


def _rtsafe_decreasing(fun: Any, lo: np.ndarray, hi: np.ndarray, tol: float) -> np.ndarray:
    """Roots of decreasing functions on [lo, hi] (fun(lo) >= 0 >= fun(hi)), entry by entry.

    Newton's method safeguarded by bisection; ``fun(v, idx)`` returns the
    values and derivatives at the entries ``idx``.
    """
    lo = np.array(lo, dtype=float)
    hi = np.array(hi, dtype=float)
    v = 0.5 * (lo + hi)
    active = np.arange(v.size)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(200):
            if active.size == 0:
                break
            va = v[active]
            g, dg = fun(va, active)
            pos = g > 0
            lo[active] = np.where(pos, va, lo[active])
            hi[active] = np.where(pos, hi[active], va)
            l, h = lo[active], hi[active]
            exact = g == 0
            step = np.where(dg < 0, -g / dg, np.nan)
            size = np.maximum(1.0, np.abs(va))
            # a Newton step below the tolerance ends the iteration, even when
            # it rounds to the current point (which sits on the bracket then)
            small = np.abs(step) <= tol * size
            vn = va + step
            vn = np.where(small | ((l < vn) & (vn < h)), vn, 0.5 * (l + h))
            done = exact | small | (np.abs(vn - va) <= tol * size) | (h - l <= tol * size)
            v[active] = np.where(exact, va, vn)
            active = active[~done]
    return v
