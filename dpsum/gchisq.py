r"""The generalized chi-square distribution, accurate far into both tails.

Algorithm 3 of the report clips every transformed record at the smallest
radius ``C`` with ``P(||x_hat|| > C) <= p_C``, where

.. math::

    \|\hat x\|^2 \;=\; X \;=\; \sum_{j=1}^d w_j (Z_j + m_j)^2,
    \qquad Z_j \sim \mathcal N(0, 1) \text{ independent},\ w_j > 0,

is a *generalized chi-square* variable (noncentrality ``lambda_j = m_j^2``;
``m_j = 0`` when the data are centred) and ``p_C = 1/n`` is tiny. The report
recommends "a numerical CDF" but never builds one (book, chapter 4, "The clip
radius"). :class:`GeneralizedChiSquare` is that CDF: survival function,
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

    s(t) = c + \sigma\,(\beta t^2 + i t),
    \qquad \sigma = \Psi''(c)^{-1/2},
    \qquad \beta = \frac{\Psi'''(c)}{6\,\Psi''(c)^{3/2}}\ (\text{at least } 0.02),

which removes the cubic phase of the integrand at the saddlepoint and, as the
factor ``e^{-s x}`` shrinks to the right, makes it decay like a Gaussian in
``t`` even for one or two terms, where it decays only algebraically along the
vertical line. The parabola meets the real axis only at ``c``, so it crosses
neither the pole at 0 nor the branch cuts ``[1/(2 w_j), inf)``. Then

.. math::

    P = e^{\Psi(c)}\,\frac{\sigma}{\pi}\int_0^\infty
        \operatorname{Re}\bigl[e^{\Psi(s(t)) - \Psi(c)}(1 - 2 i\beta t)\bigr]\,dt ,

with a bell-shaped integrand equal to 1 at ``t = 0``: the probability is
``exp(Psi(c)) sigma / sqrt(2 pi)`` times a factor near one, so it is computed
as a logarithm and nothing underflows. The integral is evaluated with the
trapezoid rule (exponentially convergent for an analytic, rapidly decaying
integrand), halving the step until two successive sums agree to a relative
``1e-13``. The sum stops at the first run of negligible values; the rest of
the contour can be closed along a horizontal segment and the vertical line,
where the integrand is negligible too. Where the integrand rises again before
that point (nearly Gaussian laws with a large third derivative coming from
the pole at 0, or a large noncentrality), a flatter parabola is used, down to
the vertical line itself. The density comes from the same evaluations (the
integrand times ``+-s``), which is what Newton's method needs for quantiles.

Three details make this both exact and fast:

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
and is asserted there to be at most ``1e-12``. The clip radius of Algorithm 3
(:func:`dpsum.clipping.clip_radius`) is ``sqrt(isf(p_C))`` rounded up by a
relative ``1e-12``, which covers that error: the clip probability at the
returned radius does not exceed ``p_C``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from . import _validation as V
from ._special import LOG_SQRT_2PI, log1mexp, log1p_complex, log_mills

__all__ = ["GeneralizedChiSquare"]

# A group of equal weights r (relative to the largest) is summed through the
# cumulant series at the point s when 2 r |s| <= _RHO.
_RHO = 0.25
# Number of series terms: the neglected tail is below _RHO**(_NTERMS+1) times
# the total degrees of freedom plus noncentrality (< 1e-18 up to 1e10 terms).
_NTERMS = 48
# Thresholds 2**-j, j = 0 .. _NTHRESH - 1, below which weights (relative to the
# largest) are summed through power sums.
_NTHRESH = 64
# Up to this many distinct weights, all contour points share one split.
_FEW_GROUPS = 256
# Trapezoid rule: first step (in units of the saddlepoint width), relative
# agreement of two successive step halvings, and the maximal number of halvings.
_H0 = 0.5
_TRAP_RTOL = 1e-13
_MAX_HALVINGS = 12
# Floor on the parabola's bend (see the module docstring).
_BETA_MIN = 0.02
# Integration range: chunks of points are added until _RUN consecutive values
# of the integrand are below _TAIL_RTOL times the sum; _T_CAP bounds the range
# in units of sigma.
_TAIL_RTOL = 1e-18
_RUN = 4
_T_CAP = 4000.0
# Points (in units of sigma) at which the bend of the parabola is checked.
_PROBES = np.array([4.0, 8.0, 12.0, 16.0])
# Exponents and falling factorials for the series of K and its derivatives.
_POW = np.arange(0, _NTERMS + 1)
_N = np.arange(1, _NTERMS + 1, dtype=np.float64)
_N2 = _N[1:] * (_N[1:] - 1)
_N3 = _N[2:] * (_N[2:] - 1) * (_N[2:] - 2)


class _Saddle:
    """Everything the contour integral at one point x needs (scaled units)."""

    __slots__ = ("x", "upper", "c", "tau", "u", "q", "psi", "scale", "sigma", "beta", "series")


class GeneralizedChiSquare:
    r"""The distribution of ``X = sum_j w_j (Z_j + m_j)^2``, ``Z_j`` iid N(0, 1).

    This is the law of the squared norm of a transformed record in
    Algorithm 3 (the report's clip inequality ``P(||x_i . b||^2 > C^2) < 1/n``
    of section 3; book chapter 4): ``w_j = b_j^2 sigma_j^2`` and
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
    docstring of :mod:`dpsum.gchisq`.

    Examples
    --------
    >>> from dpsum.gchisq import GeneralizedChiSquare
    >>> X = GeneralizedChiSquare([4.0, 1.0, 0.25])
    >>> X.mean()
    5.25
    >>> q = X.isf(1e-12)
    >>> abs(X.sf(q) / 1e-12 - 1) < 1e-12
    True
    """

    def __init__(self, weights, noncentrality=None):
        w = V.check_vector(weights, "weights", positive=True)
        if noncentrality is None:
            lam = np.zeros_like(w)
        else:
            lam = V.check_vector(noncentrality, "noncentrality", w.shape[0], nonnegative=True)
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
        """The weights ``w_j`` (a read-only array)."""
        return self._weights

    @property
    def noncentrality(self) -> np.ndarray:
        """The noncentralities ``lambda_j`` (a read-only array)."""
        return self._noncentrality

    @property
    def dim(self) -> int:
        """The number of terms ``d``."""
        return int(self._weights.size)

    def __repr__(self) -> str:
        nc = "central" if not self._has_nc else "noncentral"
        return f"GeneralizedChiSquare(d={self.dim}, {nc})"

    # ---------------------------------------------------------------- moments
    def mean(self) -> float:
        """``E X = sum_j w_j (1 + lambda_j)``."""
        w, lam = self._weights, self._noncentrality
        return math.fsum(np.concatenate([w, w * lam]))

    def var(self) -> float:
        """``Var X = 2 sum_j w_j^2 (1 + 2 lambda_j)``."""
        w, lam = self._weights, self._noncentrality
        w2 = w * w
        return 2.0 * math.fsum(np.concatenate([w2, 2.0 * w2 * lam]))

    def std(self) -> float:
        """Standard deviation ``sqrt(var())``."""
        return math.sqrt(self.var())

    # ---------------------------------------------------------- cumulants
    def _threshold_index(self, radius):
        """Index j of the largest threshold T_j = 2**-j with 2 T_j radius <= _RHO."""
        radius = np.asarray(radius, dtype=float)
        with np.errstate(divide="ignore"):
            j = np.ceil(np.log2(np.maximum(2.0 * radius / _RHO, 1e-300)))
        j = np.clip(j, 0, _NTHRESH).astype(int)
        return j  # j == _NTHRESH means: no series, every group exact

    def _split_index(self, j):
        return self._r.size if j >= _NTHRESH else int(self._split[j])

    def _real_cumulants(self, c, u, scale):
        """K(c), K'(c), K''(c) scale^2 and K'''(c) scale^3 at a real point c.

        Scaled units (weights relative to the largest); ``u = 1 - 2 r c`` is
        supplied, accurately formed, for every group. The second and third
        derivatives come multiplied by powers of the length ``scale`` so that
        they neither overflow nor underflow at extreme x.
        """
        j = int(self._threshold_index(abs(c)))
        i = self._split_index(j)
        m, L = self._m[:i], self._L[:i]
        uu = u[:i]
        q = self._r[:i] / uu
        qs = q * scale
        qs2 = qs * qs
        K = -0.5 * np.dot(m, np.log(uu))
        K1 = np.dot(q, m)
        K2 = 2.0 * np.dot(qs2, m)
        K3 = 8.0 * np.dot(qs2 * qs, m)
        if self._has_nc:
            Lu = L / uu
            K += c * np.dot(q, L)
            K1 += np.dot(q, Lu)
            K2 += 4.0 * np.dot(qs2, Lu)
            K3 += 24.0 * np.dot(qs2 * qs, Lu)
        if j < _NTHRESH and self._has_series[j]:
            a = self._ahat[j]
            h = 2.0 ** (1 - j)  # the series variable is h s, |h c| <= _RHO
            cp = (h * c) ** _POW  # (h c)^0 .. (h c)^N
            hs = h * scale
            K += np.dot(a, cp[1:])
            K1 += h * np.dot(a * _N, cp[:-1])
            K2 += hs * hs * np.dot(a[1:] * _N2, cp[:-2])
            K3 += hs ** 3 * np.dot(a[2:] * _N3, cp[:-3])
        return float(K), float(K1), float(K2), float(K3)

    def _point(self, v, upper):
        """Crossing point c, u = 1 - 2 r c, tau and length scale for parameter v.

        Upper tail: v = log tau, c = (1 - tau)/2, and u = (1 - r) + r tau is
        formed without cancellation; scale = min(c, tau/2) is the distance to
        the nearer singularity (0 or 1/2). Lower tail: v = log(-c), scale = -c.
        """
        if upper:
            tau = math.exp(v)
            c = 0.5 * (1.0 - tau)
            u = (1.0 - self._r) + self._r * tau
            scale = min(c, 0.5 * tau)
        else:
            tau = math.nan
            c = -math.exp(v)
            u = 1.0 - 2.0 * self._r * c
            scale = -c
        return c, u, tau, scale

    # ---------------------------------------------------------- saddlepoint
    def _saddle(self, x, upper):
        """Solve Psi'(c) = K'(c) - 1/c - x = 0 on the requested side (scaled x)."""
        if upper:
            # v = log tau; g decreases in v. Brackets from the bounds
            # K'(c) >= 1/tau and, at c = 1/(2(x+1)), K'(c) <= x + 2 + 1/x.
            lo = -math.log(x + 4.0)
            hi = math.log1p(-1.0 / (x + 1.0))
        else:
            # v = log(-c); g decreases in v. g >= 0 at -c = 1/x, and
            # K'(c) <= (d + sum lambda)/(2|c|) gives g <= 0 at the other end.
            lo = -math.log(x)
            hi = math.log(0.5 * (self._dof + self._total_nc) + 1.0) - math.log(x)

        def fun(v):
            c, u, tau, scale = self._point(v, upper)
            _, K1, K2s, _ = self._real_cumulants(c, u, scale)
            g = K1 - 1.0 / c - x
            rc = scale / c
            psi2s = K2s + rc * rc  # Psi''(c) scale^2
            # dg/dv = Psi''(c) dc/dv with dc/dv = -tau/2 (upper) or c (lower)
            if upper:
                dg = -0.5 * (tau / scale) * psi2s / scale
            else:
                dg = -psi2s / scale
            return g, dg

        v = _rtsafe_decreasing(fun, lo, hi, 1e-10)
        return self._saddle_at(v, x, upper)

    def _saddle_at(self, v, x, upper):
        """Fill a _Saddle at the crossing point given by v (log tau or log(-c))."""
        c, u, tau, scale = self._point(v, upper)
        K, K1, K2s, K3s = self._real_cumulants(c, u, scale)
        rc = scale / c
        psi2 = K2s + rc * rc  # Psi''(c) scale^2
        psi3 = K3s - 2.0 * rc ** 3  # Psi'''(c) scale^3
        S = _Saddle()
        S.x = x
        S.upper = upper
        S.c = c
        S.tau = tau
        S.u = u
        S.q = self._r / u
        S.psi = K - c * x - math.log(abs(c))
        S.scale = scale
        S.sigma = scale / math.sqrt(psi2)
        S.beta = max(psi3 / (6.0 * psi2 ** 1.5), _BETA_MIN)
        S.series = {}
        return S

    # ------------------------------------------------------- contour integral
    def _log_integrand(self, S, t):
        """D(t) = Psi(s(t)) - Psi(c) and s(t)/c at the points t >= 0."""
        c, x = S.c, S.x
        dre = S.sigma * S.beta * t * t
        dim_ = S.sigma * t
        delta = dre + 1j * dim_
        s_abs = np.hypot(c + dre, dim_)
        if self._r.size <= _FEW_GROUPS:
            # few terms: one split (the one the farthest point needs) for all
            jj = np.full(t.shape, self._threshold_index(s_abs.max()))
        else:
            jj = self._threshold_index(s_abs)
        D = np.empty(t.shape, dtype=complex)
        for j in np.unique(jj):
            sel = jj == j
            dr, di = dre[sel], dim_[sel]
            dl = delta[sel]
            i = self._split_index(int(j))
            acc = np.zeros(dl.shape, dtype=complex)
            if i > 0:
                q2 = -2.0 * S.q[:i]
                a = np.multiply.outer(dr, q2)
                b = np.multiply.outer(di, q2)
                re, im = log1p_complex(a, b)
                m = self._m[:i]
                acc += -0.5 * (re @ m + 1j * (im @ m))
                if self._has_nc:
                    nc = self._L[:i] * S.q[:i] / S.u[:i]
                    den = (1.0 + a) ** 2 + b * b
                    acc += dl * (((1.0 + a) / den) @ nc - 1j * ((b / den) @ nc))
            if j < _NTHRESH and self._has_series[j]:
                # sum_k ahat_k ((h s)^k - (h c)^k) = h delta sum_i (h s)^i b_i
                # with b_i = sum_{k > i} ahat_k (h c)^(k-1-i): no cancellation
                h = 2.0 ** (1 - int(j))
                b = self._series_shift(S, int(j))
                hs = h * (c + dl)
                spow = np.cumprod(np.broadcast_to(hs[:, None], (hs.size, _NTERMS - 1)), axis=1)
                acc += (h * dl) * (b[0] + spow @ b[1:])
            D[sel] = acc
        z = delta / c
        lre, lim = log1p_complex(z.real, z.imag)
        D += -delta * x - (lre + 1j * lim)
        return D, 1.0 + z

    def _series_shift(self, S, j):
        """b_i = sum_{k > i} ahat_k (h c)^(k-1-i), i = 0 .. N-1, for threshold j."""
        cache = S.series
        if j not in cache:
            a = self._ahat[j]
            hc = 2.0 ** (1 - j) * S.c
            b = np.empty(_NTERMS)
            acc = 0.0
            for i in range(_NTERMS - 1, -1, -1):
                acc = a[i] + hc * acc  # a[i] multiplies (h s)^(i+1)
                b[i] = acc
            cache[j] = b
        return cache[j]

    def _choose_beta(self, S):
        """Keep the cubic-cancelling bend unless the integrand grows along it.

        Far from the saddlepoint the parabola can run into a region where the
        integrand grows again (a nearly Gaussian ``K`` with a large third
        derivative coming from the pole at 0). Probe ``Re D`` and fall back to
        flatter parabolas until it decreases monotonically over the probes.
        """
        candidates = [S.beta]
        for b in (0.25 * S.beta, _BETA_MIN, 0.25 * _BETA_MIN):
            if b < candidates[-1]:
                candidates.append(b)
        for b in candidates:
            S.beta = b
            D, _ = self._log_integrand(S, _PROBES)
            re = D.real
            if np.all(np.isfinite(re)) and np.all(np.diff(re) < 0) and re[0] < 0:
                return

    def _integrate(self, S, want_pdf):
        """Trapezoid rule with step halving. Returns (log P, log pdf or nan).

        If the integrand along the parabola dips and then rises again before
        it becomes negligible, the parabola is flattened and the integral
        redone (the last resort, beta = 0, is the vertical line).
        """
        self._choose_beta(S)
        for attempt in range(4):
            result = self._trapezoid(S, want_pdf)
            if result is not None:
                return result
            S.beta = 0.25 * S.beta if attempt < 2 else 0.0
        raise FloatingPointError("contour integral did not converge")  # pragma: no cover

    def _trapezoid(self, S, want_pdf):
        beta = S.beta

        def integrands(t):
            D, ratio = self._log_integrand(S, t)
            e = np.exp(D) * (1.0 - 2j * beta * t)
            f0 = e.real
            f1 = (e * ratio).real if want_pdf else None
            mag = np.abs(e)
            if want_pdf:
                mag = mag * np.maximum(1.0, np.abs(ratio))
            return f0, f1, mag

        h = _H0
        # Level 0: points t = 0, h, 2h, ... in chunks until a run of _RUN
        # consecutive negligible values is found; the sum stops there. (Past
        # that point the parabola may enter a region where the integrand grows
        # again; that part does not belong to the integral, because the rest
        # of the contour can be closed along a horizontal segment and the
        # vertical line, on which the integrand is negligible.)
        chunk = 32
        with np.errstate(over="ignore", invalid="ignore"):
            f0, f1, mag = integrands(h * np.arange(0, chunk))
            while True:
                thr = _TAIL_RTOL * abs(h * (0.5 * f0[0] + f0[1:].sum())) / h
                small = mag < thr
                run = np.convolve(small, np.ones(_RUN, dtype=int), mode="valid") == _RUN
                hits = np.nonzero(run)[0]
                if hits.size:
                    cut = int(hits[0])  # points 0 .. cut-1 are kept
                    break
                if h * mag.size >= _T_CAP:
                    return None
                nf0, nf1, nmag = integrands(h * np.arange(mag.size, mag.size + chunk))
                f0 = np.concatenate([f0, nf0])
                f1 = np.concatenate([f1, nf1]) if want_pdf else None
                mag = np.concatenate([mag, nmag])
                chunk *= 2
        keep = mag[:cut]
        if not np.all(np.isfinite(keep)) or np.any(keep > 1e3 * np.minimum.accumulate(keep)):
            return None  # the integrand rose again: flatten the parabola
        T0 = h * (0.5 * f0[0] + f0[1:cut].sum())
        T1 = h * (0.5 * f1[0] + f1[1:cut].sum()) if want_pdf else 0.0
        t_cut = h * (cut - 0.5)
        converged = False
        for _ in range(_MAX_HALVINGS):
            tm = np.arange(0.5 * h, t_cut, h)
            f0, f1, mag = integrands(tm)
            if not np.all(np.isfinite(mag)):
                return None
            N0 = 0.5 * T0 + 0.5 * h * f0.sum()
            done = abs(N0 - T0) <= _TRAP_RTOL * abs(N0)
            if want_pdf:
                N1 = 0.5 * T1 + 0.5 * h * f1.sum()
                done = done and abs(N1 - T1) <= _TRAP_RTOL * abs(N1)
                T1 = N1
            T0 = N0
            h *= 0.5
            if done:
                converged = True
                break
        if not converged or not T0 > 0:
            return None
        logp = S.psi + math.log(S.sigma / math.pi) + math.log(T0)
        if want_pdf:
            logpdf = logp + math.log(abs(S.c)) + math.log(T1 / T0) if T1 > 0 else -math.inf
        else:
            logpdf = math.nan
        return logp, logpdf

    def _eval_scalar(self, x, want_pdf=False):
        """(upper?, log P, log pdf) at one scaled point x > 0 (finite).

        log P is log sf when upper is True and log cdf otherwise.
        """
        upper = x >= self._mean_scaled
        if not upper and x < self._tiny_x:
            # Small-ball limit: P(X <= x) = e^{-Lambda/2} (x/2)^{d/2}
            # / (Gamma(d/2 + 1) prod sqrt(w_j)) (1 + O(x sum (1 + lambda_j)/w_j)),
            # exact to double precision below _tiny_x.
            half = 0.5 * self._dof
            logp = half * math.log(0.5 * x) + self._small_ball_const()
            return False, logp, logp + math.log(half) - math.log(x)
        S = self._saddle(x, upper)
        logp, logpdf = self._integrate(S, want_pdf)
        return upper, logp, logpdf

    def _small_ball_const(self) -> float:
        """log P(X <= x) - (d/2) log(x/2) in the limit x -> 0 (scaled units)."""
        half = 0.5 * self._dof
        return -0.5 * self._total_nc - math.lgamma(half + 1.0) - 0.5 * self._sum_m_log_r

    # ------------------------------------------------------- distribution API
    def _x_array(self, x):
        arr = V.as_real_array(x, "x")
        if np.any(np.isnan(arr)):
            raise ValueError("x must not contain NaN")
        return arr

    def _log_tails(self, x):
        """(log sf, log cdf) arrays for the array x (original units)."""
        xa = self._x_array(x)
        flat = xa.ravel()
        lsf = np.empty(flat.shape)
        lcdf = np.empty(flat.shape)
        for n, xv in enumerate(flat.tolist()):
            if xv <= 0:
                lsf[n], lcdf[n] = 0.0, -math.inf
            elif math.isinf(xv):
                lsf[n], lcdf[n] = -math.inf, 0.0
            else:
                upper, lp, _ = self._eval_scalar(xv / self._wmax)
                other = float(log1mexp(-lp))
                lsf[n], lcdf[n] = (lp, other) if upper else (other, lp)
        return xa, lsf.reshape(xa.shape), lcdf.reshape(xa.shape)

    def logsf(self, x):
        """Log of the survival function ``log P(X > x)``; finite however small."""
        xa, lsf, _ = self._log_tails(x)
        return V.scalar_or_array(lsf, x)

    def logcdf(self, x):
        """Log of the distribution function ``log P(X <= x)`` (``-inf`` for x <= 0)."""
        xa, _, lcdf = self._log_tails(x)
        return V.scalar_or_array(lcdf, x)

    def sf(self, x):
        """Survival function ``P(X > x)``, to a small relative error in the tail."""
        xa, lsf, _ = self._log_tails(x)
        return V.scalar_or_array(np.exp(lsf), x)

    def cdf(self, x):
        """Distribution function ``P(X <= x)``, to a small relative error in the lower tail."""
        xa, _, lcdf = self._log_tails(x)
        return V.scalar_or_array(np.exp(lcdf), x)

    def pdf(self, x):
        """Probability density of ``X`` (0 for x < 0; the right limit at x = 0)."""
        xa = self._x_array(x)
        flat = xa.ravel()
        out = np.empty(flat.shape)
        for n, xv in enumerate(flat.tolist()):
            if xv < 0 or math.isinf(xv):
                out[n] = 0.0
            elif xv == 0:
                out[n] = self._pdf_at_zero()
            else:
                _, _, lpdf = self._eval_scalar(xv / self._wmax, want_pdf=True)
                out[n] = math.exp(lpdf) / self._wmax
        return V.scalar_or_array(out.reshape(xa.shape), x)

    def _pdf_at_zero(self) -> float:
        if self._dof == 1:
            return math.inf
        if self._dof == 2:
            w = self._weights
            return math.exp(-0.5 * self._total_nc) / (2.0 * math.sqrt(w[0] * w[1]))
        return 0.0

    def isf(self, p):
        """Inverse survival function: the ``x`` with ``P(X > x) = p``, p in (0, 1)."""
        return self._quantiles(p, upper=True)

    def ppf(self, p):
        """Quantile function: the ``x`` with ``P(X <= x) = p``, p in (0, 1)."""
        return self._quantiles(p, upper=False)

    def _quantiles(self, p, upper: bool):
        """The ``x`` whose upper (``upper=True``) or lower tail probability is ``p``.

        Each ``p`` is inverted on the tail where it is at most 1/2, as a
        logarithm, so that neither tail loses digits to ``1 - p``.
        """
        pa = np.asarray(V.check_probability(p, "p"), dtype=float)
        flat = pa.ravel()
        out = np.empty(flat.shape)
        for n, pv in enumerate(flat.tolist()):
            if pv <= 0.5:
                out[n] = self._quantile(math.log(pv), upper=upper)
            else:
                out[n] = self._quantile(math.log1p(-pv), upper=not upper)
        return V.scalar_or_array(out.reshape(pa.shape) * self._wmax, p)

    # ------------------------------------------------------------- quantiles
    def _approx_logp(self, v, upper):
        """Saddlepoint approximation of log P at the crossing point v; returns (log P, x)."""
        c, u, tau, scale = self._point(v, upper)
        K, K1, K2s, _ = self._real_cumulants(c, u, scale)
        x = K1 - 1.0 / c
        psi = K - c * x - math.log(abs(c))
        rc = scale / c
        return psi - 0.5 * math.log(2 * math.pi * (K2s + rc * rc)) + math.log(scale), x

    def saddlepoint_isf(self, p: float) -> float:
        """Lugannani-Rice approximation of the upper quantile: ``x`` with ``P(X > x) ≈ p``.

        The saddlepoint approximation
        ``P(X > x) ≈ Phibar(w) + phi(w) (1/v - 1/w)`` with
        ``w = sqrt(2 (c x - K(c)))`` and ``v = c sqrt(K''(c))`` at the
        saddlepoint ``c`` of ``x`` (Lugannani and Rice 1980), solved for ``x``.
        Its relative error is of order 1e-3 in the tail, so it is for locating
        optima cheaply (:func:`dpsum.scaling.error_optimal_scaling`), not for
        clip radii, which use :meth:`isf`. Returns NaN where the approximation
        does not apply (``p`` near the median, where ``w`` is near 0).

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
            return math.nan
        v = optimize.brentq(lambda t: self._lugannani_rice(t)[1] - log_p, v_lo, v_hi,
                            xtol=1e-12, rtol=1e-12)
        return self._lugannani_rice(v)[0] * self._wmax

    def _lugannani_rice(self, v):
        """(scaled x, Lugannani-Rice log P(X > x)) at the upper-tail point v = log tau."""
        c, u, tau, scale = self._point(v, True)
        K, K1, K2s, _ = self._real_cumulants(c, u, scale)
        w = math.sqrt(max(2.0 * (c * K1 - K), 0.0))
        if w < 1e-3:
            return K1, math.nan
        inv_v = scale / (c * math.sqrt(K2s))  # 1 / (c sqrt(K''(c)))
        val = math.exp(float(log_mills(w))) + inv_v - 1.0 / w
        if not val > 0:
            return K1, -math.inf
        return K1, -0.5 * w * w - LOG_SQRT_2PI + math.log(val)

    def _initial_quantile(self, logp, upper):
        """Solve the saddlepoint approximation log P(c) = logp for c; return x(c) > 0."""
        # In both parametrisations, increasing v moves x towards the far tail
        # (upper: v = log tau decreasing -> x increasing; we use w = -v there).
        if upper:
            def f(w):
                lp, x = self._approx_logp(-w, True)
                return lp - logp, x
            a, b = 1e-12, 1.0  # tau = e^-w from ~1 (c ~ 0) to e^-1
        else:
            def f(w):
                lp, x = self._approx_logp(w, False)
                return lp - logp, x
            mu = self._mean_scaled
            a, b = math.log(0.1 / mu), math.log(1.0 / mu)
        fa, xa = f(a)
        fb, xb = f(b)
        # expand b until f(b) < 0 (probability below target) and a until f(a) > 0
        it = 0
        while fb > 0 and it < 200:
            a, fa, xa = b, fb, xb
            b = b * 2.0 if upper else b + 2.0
            fb, xb = f(b)
            it += 1
        it = 0
        while fa < 0 and it < 200:
            b, fb, xb = a, fa, xa
            a = a * 0.5 if upper else a - 2.0
            fa, xa = f(a)
            it += 1
        for _ in range(60):
            mid = 0.5 * (a + b)
            fm, xm = f(mid)
            if fm > 0:
                a, fa, xa = mid, fm, xm
            else:
                b, fb, xb = mid, fm, xm
            if b - a < 1e-6 * max(1.0, abs(b)):
                break
        x = xb if fb <= 0 else xa
        if x > 0 and math.isfinite(x):
            return x
        # Near the centre of a very skewed law (one dominant term) the
        # approximation can put the quantile below 0: start instead from the
        # scaled chi-square with the same mean and variance (Welch-Satterthwaite).
        mu = self._mean_scaled
        var = 2.0 * math.fsum(self._r**2 * (self._m + 2.0 * self._L))
        g, h = var / (2.0 * mu), 2.0 * mu * mu / var
        p = math.exp(logp)
        x = g * float(stats.chi2.isf(p, h) if upper else stats.chi2.ppf(p, h))
        return x if x > 0 and math.isfinite(x) else mu

    def _quantile(self, logp, upper):
        """Scaled x with log sf(x) = logp (upper) or log cdf(x) = logp (lower).

        Safeguarded Newton iteration: on x for the upper tail (where log sf is
        nearly linear in x) and on log x for the lower tail (where log cdf is
        nearly linear in log x), keeping a bracket and bisecting when a step
        leaves it.
        """
        if not upper:
            # invert the small-ball limit where it is exact (see _eval_scalar);
            # a quantile below the smallest double rounds to 0.0
            y = (logp - self._small_ball_const()) / (0.5 * self._dof)
            if y < math.log(0.5 * self._tiny_x):
                return 2.0 * math.exp(y)
        x = self._initial_quantile(logp, upper)
        lo, hi = 0.0, math.inf  # bracket on x
        for _ in range(100):
            up, lp, lpdf = self._eval_scalar(x, want_pdf=True)
            lt = lp if up == upper else float(log1mexp(-lp))
            F = lt - logp
            if F == 0.0:
                return x
            # F decreases in x for the upper tail and increases for the lower
            if (F > 0) == upper:
                lo = max(lo, x)
            else:
                hi = min(hi, x)
            ratio = math.exp(lpdf - lt)  # pdf / tail, > 0
            if not ratio > 0:
                x_new = math.nan
            elif upper:
                x_new = x + F / ratio
            else:
                x_new = x * math.exp(-F / (ratio * x)) if ratio * x > 0 else math.nan
            newton_ok = math.isfinite(x_new) and lo <= x_new <= hi
            if newton_ok and (abs(F) < 1e-9 or x_new == x):
                # quadratic convergence: the Newton step from |F| < 1e-9
                # lands within about F^2 of the root
                return x_new
            if not newton_ok:  # geometric bisection, or expansion of the bracket
                if math.isinf(hi):
                    x_new = 4.0 * max(lo, x)
                elif lo == 0.0:
                    x_new = 1e-3 * min(hi, x)
                else:
                    x_new = math.sqrt(lo * hi)
            if math.isfinite(hi) and hi - lo <= 4e-16 * hi:
                return x_new
            x = x_new
        return x

    # ---------------------------------------------------------------- sampling
    def rvs(self, size=None, rng=None):
        """Random draws of ``X``.

        Parameters
        ----------
        size : int or tuple of ints, optional
            Output shape; ``None`` (default) returns one float.
        rng : numpy.random.Generator, int or None
            Source of randomness (SPEC 7), see :func:`numpy.random.default_rng`.

        Each block of equal weights is drawn as one (noncentral) chi-square
        variable with as many degrees of freedom as the block has entries.
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


def _rtsafe_decreasing(fun, lo, hi, tol):
    """Root of a decreasing function on [lo, hi] (fun(lo) >= 0 >= fun(hi)).

    Newton's method safeguarded by bisection; fun returns (value, derivative).
    """
    v = 0.5 * (lo + hi)
    for _ in range(200):
        g, dg = fun(v)
        if g > 0:
            lo = v
        else:
            hi = v
        if g == 0:
            return v
        step = -g / dg if dg < 0 else math.nan
        v_new = v + step
        if not (lo < v_new < hi):
            v_new = 0.5 * (lo + hi)
        if abs(v_new - v) <= tol * max(1.0, abs(v)) or hi - lo <= tol * max(1.0, abs(v)):
            return v_new
        v = v_new
    return v
