"""Poisson-subsampled Gaussian steps, composed: the accountant of DP-SGD (book chapter
"Private sums of gradients: DP-SGD").

One step releases ``sum_{i in B} clip(g_i) + N(0, (z C)^2 I)``, where every row
enters the batch ``B`` independently with probability ``q`` (Poisson
subsampling) and ``z`` is the noise multiplier. Under add-remove neighbouring
(one row present or absent) the step reduces to one dimension, in units of
``C``:

- row absent:  ``Q = N(0, z^2)``;
- row present: ``P = (1 - q) N(0, z^2) + q N(1, z^2)``.

Both orders matter: ``(P, Q)`` (a row removed) and ``(Q, P)`` (a row added).
The privacy loss of the first, ``L(x) = log((1 - q) + q exp((2x - 1) / (2 z^2)))``,
is unbounded above; that of the second is at most ``-log(1 - q)``.

:class:`PrivacyLossDistribution` (built by :func:`subsampled_gaussian_pld`)
composes such steps exactly up to a discretisation: the loss of each step is
rounded **up** to a grid of width ``interval``, which can only increase
delta (Meiser and Mohammadi 2018; Koskela, Jälkö and Honkela 2020); the
composition is one FFT product, on a window chosen by Chernoff bounds, and
the mass that can fall outside the window or the grid (at most
:data:`TAIL_MASS` each) is charged to delta. Both orders are composed and
the larger delta is reported. The result is an upper bound on the true
delta, larger by an amount that shrinks with ``interval``
(``tests/test_subsampling.py`` compares it with Google's ``dp_accounting``).

:func:`subsampled_gaussian_rdp_epsilon` is the Rényi-DP bound (Mironov,
Talwar and Zhang 2019, integer orders; the conversion of Canonne, Kamath and
Steinke 2020): looser and independent of the PLD.

Replace-one neighbouring: replacing a row is removing it and adding another,
so ``(epsilon, delta)`` under add-remove gives ``(2 epsilon, (1 + e^epsilon)
delta)`` under replace-one (group privacy for two changes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betaln, log_ndtr, logsumexp, ndtri

from dpsum import _validation as V
from dpsum._lazy import optimize

__all__ = [
    "DEFAULT_INTERVAL",
    "TAIL_MASS",
    "ComposedPLD",
    "PrivacyLossDistribution",
    "check_sampling_rate",
    "subsampled_gaussian_pld",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_epsilon",
    "subsampled_gaussian_rdp",
    "subsampled_gaussian_rdp_epsilon",
    "RDP_ORDERS",
]

#: the default width of the privacy-loss grid
DEFAULT_INTERVAL = 1e-4
#: the probability mass each truncation may leave out (charged to delta)
TAIL_MASS = 1e-15
#: the Rényi orders of :func:`subsampled_gaussian_rdp_epsilon`
RDP_ORDERS = tuple(range(2, 257))

_MAX_MULTIPLIER = 1e6  # beyond it the loss grid's inverse overflows
_MAX_GRID = 1 << 23  # points of the composed grid (64 MiB of complex128)
_LAMBDAS = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])


def check_sampling_rate(value: Any) -> float:
    """``sampling_rate`` as a float in (0, 1]."""
    q = V.check_real(value, "sampling_rate", scalar=True)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {q!r}")
    return float(q)


def _check_interval(value: Any) -> float:
    h = V.check_positive(value, "interval", scalar=True)
    if not h <= 0.1:
        raise ValueError(f"interval must be in (0, 0.1], got {h!r}")
    return float(h)


def _step_pld(z: float, q: float, h: float, order: str) -> tuple[int, np.ndarray, float]:
    """The discretised PLD of one step, ``(k0, p, p_inf)``: ``p[j]`` is the
    probability of the loss ``(k0 + j) h`` and ``p_inf`` that of an infinite loss.

    Both orders are written as a variable ``y`` with an increasing loss
    ``l(y)``: "remove" is ``y ~ P`` against ``Q`` with ``l = L``; "add" is
    ``y = -x``, ``x ~ Q`` against ``P``, with ``l(y) = -L(-y)``. The mass of
    ``y`` in a cell between two grid losses is split between them so that
    both laws' masses are kept (connect the dots, Doroshenko et al. 2022):
    the discrete pair dominates the true one. The mass below the grid goes to
    its first point, the mass above it (at most :data:`TAIL_MASS`) to an
    infinite loss: both only increase delta.
    """
    log1q = math.log1p(-q) if q < 1.0 else -math.inf
    logq = math.log(q)

    def L(x: np.ndarray) -> np.ndarray:
        e = (2.0 * x - 1.0) / (2.0 * z * z)
        return e if q == 1.0 else np.logaddexp(log1q, logq + e)

    def L_inv(v: np.ndarray) -> np.ndarray:    # +-inf outside the range of L
        if q == 1.0:
            e = v
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                e = np.where(v > log1q, np.log(np.expm1(v - log1q)) + log1q - logq, -np.inf)
        return (2.0 * z * z * e + 1.0) / 2.0

    tail = -float(ndtri(TAIL_MASS / 2))
    first: tuple[tuple[float, float], ...]
    second: tuple[tuple[float, float], ...]
    if order == "remove":
        first, second = ((0.0, 1.0 - q), (1.0, q)), ((0.0, 1.0),)
        def loss(y: np.ndarray) -> np.ndarray: return L(y)
        def inv(v: np.ndarray) -> np.ndarray: return L_inv(v)
        y_lo, y_hi = -tail * z, 1.0 + tail * z
    else:
        first, second = ((0.0, 1.0),), ((0.0, 1.0 - q), (-1.0, q))
        def loss(y: np.ndarray) -> np.ndarray: return -L(-y)
        def inv(v: np.ndarray) -> np.ndarray: return -L_inv(-v)
        y_lo, y_hi = -tail * z, tail * z
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ends = (float(loss(np.array(y_lo))) / h, float(loss(np.array(y_hi))) / h)
    if not all(math.isfinite(e) and abs(e) < _MAX_GRID for e in ends):
        raise ValueError("the privacy-loss grid is too long: increase interval or "
                         "noise_multiplier (the loss range over interval exceeds "
                         f"{_MAX_GRID} points)")
    k_lo = math.ceil(ends[0])
    if order == "remove" and q < 1.0:
        # the loss is bounded below by log(1 - q): cover it, or the many small
        # negative losses would all be rounded up
        k_lo = min(k_lo, math.floor(log1q / h))
    k_hi = max(k_lo + 1, math.ceil(ends[1]))
    if k_hi - k_lo + 1 > _MAX_GRID:
        raise ValueError("the privacy-loss grid is too long: increase interval or "
                         "noise_multiplier")
    grid = np.arange(k_lo, k_hi + 1, dtype=np.float64) * h
    edges = inv(grid)                   # e_k: y with l(y) = k h (inf above the range)
    cells = np.concatenate(([-np.inf], edges, [np.inf]))
    F = np.zeros(cells.size - 1)
    S = np.zeros(cells.size - 1)
    for m, w in first:
        F += w * _gaussian_mass(cells, m, z)
    for m, w in second:
        S += w * _gaussian_mass(cells, m, z)
    # cell j (between grid j and j + 1) holds losses in (kh, (k+1)h]: put b_j at
    # the upper point and F_j - b_j at the lower one, keeping the mass of both laws
    Fi, Si = F[1:-1], S[1:-1]
    b = np.clip((Fi - Si * np.exp(grid[:-1])) / -math.expm1(-h), 0.0, Fi)
    p = np.zeros(grid.size)
    p[:-1] += Fi - b
    p[1:] += b
    p[0] += F[0]
    return k_lo, p, float(F[-1])


def _gaussian_mass(edges: np.ndarray, mu: float, s: float) -> np.ndarray:
    """Mass of ``N(mu, s^2)`` between consecutive increasing ``edges`` (which may
    be infinite), each cell from its nearer tail."""
    a, b = edges[:-1], edges[1:]
    upper = a >= mu
    with np.errstate(invalid="ignore"):
        # upper cells: sf(a) - sf(b); lower cells: cdf(b) - cdf(a), in log space
        la = np.where(upper, log_ndtr((mu - a) / s), log_ndtr((b - mu) / s))
        lb = np.where(upper, log_ndtr((mu - b) / s), log_ndtr((a - mu) / s))
        cell = np.exp(la) * -np.expm1(np.minimum(lb - la, 0.0))
    return np.where(np.isfinite(la) & (b > a), cell, 0.0)


@dataclass(frozen=True)
class PrivacyLossDistribution(V.Record):
    """The composed, pessimistically discretised privacy loss of one order of a pair.

    Attributes
    ----------
    k0 : int
        Grid index of ``pmf[0]``: ``pmf[j]`` is the probability of the loss
        ``(k0 + j) * interval``.
    pmf : numpy.ndarray
        The probabilities on the grid (non-negative).
    infinity_mass : float
        The probability of an infinite loss (truncations charged here).
    interval : float
        The grid width.
    """

    k0: int
    pmf: np.ndarray
    infinity_mass: float
    interval: float

    def delta(self, epsilon: float) -> float:
        """The smallest delta for which the order is (epsilon, delta)-DP,
        ``infinity_mass + sum_l p_l (1 - e^(epsilon - l))_+``."""
        losses = (self.k0 + np.arange(self.pmf.size)) * self.interval
        keep = losses > epsilon
        tail = float(np.sum(self.pmf[keep] * -np.expm1(epsilon - losses[keep])))
        return min(1.0, self.infinity_mass + tail)


def _compose(steps: Sequence[tuple[int, np.ndarray, float, int]], h: float
             ) -> PrivacyLossDistribution:
    """FFT composition of ``count`` copies of each ``(k0, p, p_inf)``."""
    log_tau = math.log(TAIL_MASS)
    # Chernoff window [a, b] in loss units: P(S > b), P(S < a) <= TAIL_MASS
    kgf_hi = np.zeros(_LAMBDAS.size)
    kgf_lo = np.zeros(_LAMBDAS.size)
    lo_total = hi_total = 0
    for k0, p, _, count in steps:
        losses = (k0 + np.arange(p.size)) * h
        with np.errstate(divide="ignore"):
            logp = np.log(p)
        kgf_hi += count * logsumexp(logp[None, :] + _LAMBDAS[:, None] * losses, axis=1)
        kgf_lo += count * logsumexp(logp[None, :] - _LAMBDAS[:, None] * losses, axis=1)
        lo_total += count * k0
        hi_total += count * (k0 + p.size - 1)
    b = float(np.min((kgf_hi - log_tau) / _LAMBDAS))
    a = float(np.max((log_tau - kgf_lo) / _LAMBDAS))
    A = max(lo_total, math.floor(a / h))
    B = min(hi_total, math.ceil(b / h))
    width = max(B - A + 1, max(p.size for _, p, _, _ in steps))
    N = 1 << max(1, math.ceil(math.log2(width)))
    if N > _MAX_GRID:
        raise ValueError("the composed privacy-loss grid is too long: increase interval")
    spectrum = np.ones(N // 2 + 1, dtype=np.complex128)
    survive = 0.0  # log of the probability that no step has an infinite loss
    for k0, p, p_inf, count in steps:
        spectrum *= np.fft.rfft(p, N) ** count
        survive += count * math.log1p(-p_inf)
    circular = np.fft.irfft(spectrum, N)
    # circular[r] holds the loss k = lo_total + r (mod N); read the window [A, A + N)
    pmf = np.roll(circular, -((A - lo_total) % N))
    pmf = np.maximum(pmf, 0.0)
    infinity = -math.expm1(survive) + (TAIL_MASS if B < hi_total else 0.0)
    return PrivacyLossDistribution(A, pmf, min(1.0, infinity), h)


def _parse_steps(noise_multiplier: Any, sampling_rate: Any, steps: Any
                 ) -> list[tuple[float, float, int]]:
    z = np.atleast_1d(V.check_positive(noise_multiplier, "noise_multiplier"))
    q = np.atleast_1d(V.check_real(sampling_rate, "sampling_rate"))
    t = np.atleast_1d(V.check_real(steps, "steps"))
    try:
        z, q, t = np.broadcast_arrays(z, q, t)
    except ValueError:
        raise ValueError("noise_multiplier, sampling_rate and steps must have "
                         "broadcastable shapes") from None
    if z.ndim != 1:
        raise ValueError("noise_multiplier, sampling_rate and steps must be scalars or 1-d")
    if np.any(z > _MAX_MULTIPLIER):
        raise ValueError(f"noise_multiplier must be at most {_MAX_MULTIPLIER:g}")
    return [(float(zi), check_sampling_rate(qi), V.check_integer(ti, "steps", 1))
            for zi, qi, ti in zip(z, q, t)]


@dataclass(frozen=True)
class ComposedPLD(V.Record):
    """Both orders of a composition of subsampled Gaussian steps.

    Attributes
    ----------
    remove, add : PrivacyLossDistribution
        The orders ``(P, Q)`` and ``(Q, P)``.
    """

    remove: PrivacyLossDistribution
    add: PrivacyLossDistribution

    def __post_init__(self) -> None:
        for name in ("remove", "add"):
            if not isinstance(getattr(self, name), PrivacyLossDistribution):
                raise TypeError(f"{name} must be a PrivacyLossDistribution, "
                                f"got {V.describe(getattr(self, name))}")

    def delta(self, epsilon: float) -> float:
        """The composition's delta at ``epsilon`` (the larger of the two orders)."""
        eps = V.check_epsilon(epsilon, allow_zero=True, scalar=True)
        return max(self.remove.delta(eps), self.add.delta(eps))

    def epsilon(self, delta: float) -> float:
        """The smallest epsilon >= 0 with ``delta(epsilon) <= delta`` (to 1e-9)."""
        dlt = V.check_delta(delta, scalar=True)
        if self.remove.infinity_mass > dlt or self.add.infinity_mass > dlt:
            raise ValueError("delta is below the probability of an infinite loss: "
                             "no epsilon achieves it")
        if self.delta(0.0) <= dlt:
            return 0.0
        top = max((self.remove.k0 + self.remove.pmf.size) * self.remove.interval,
                  (self.add.k0 + self.add.pmf.size) * self.add.interval)
        # delta(epsilon) is continuous and non-increasing; the root is bracketed
        eps = optimize.brentq(lambda e: self.delta(e) - dlt, 0.0, top, xtol=1e-12, rtol=1e-12)
        while self.delta(eps) > dlt:        # land on the safe side of the root
            eps = np.nextafter(eps, math.inf) + 1e-12
        return float(eps)


def subsampled_gaussian_pld(noise_multiplier: ArrayLike, sampling_rate: ArrayLike,
                            steps: ArrayLike, *, interval: float = DEFAULT_INTERVAL
                            ) -> ComposedPLD:
    """The privacy loss distribution of Poisson-subsampled Gaussian steps, composed.

    Parameters
    ----------
    noise_multiplier : float or array_like
        ``z > 0``: the noise standard deviation over the L2 sensitivity.
    sampling_rate : float or array_like
        ``q`` in (0, 1]: each row's probability of entering a step's batch
        (1: no subsampling, the plain Gaussian mechanism).
    steps : int or array_like
        How many steps run with these parameters (``T``).
    interval : float
        The grid width of the privacy loss, in (0, 0.1]; smaller is tighter
        and slower.

    Returns
    -------
    ComposedPLD
        With ``delta(epsilon)`` and ``epsilon(delta)``; add-remove neighbouring.

    Examples
    --------
    >>> pld = subsampled_gaussian_pld(1.0, 0.01, 1000)
    >>> round(pld.epsilon(1e-5), 2)
    1.83
    """
    h = _check_interval(interval)
    parsed = _parse_steps(noise_multiplier, sampling_rate, steps)
    orders = {}
    for order in ("remove", "add"):
        orders[order] = _compose([(*_step_pld(z, q, h, order), t) for z, q, t in parsed], h)
    return ComposedPLD(orders["remove"], orders["add"])


def subsampled_gaussian_delta(noise_multiplier: ArrayLike, sampling_rate: ArrayLike,
                              steps: ArrayLike, epsilon: float, *,
                              interval: float = DEFAULT_INTERVAL) -> float:
    """Delta of ``steps`` Poisson-subsampled Gaussian steps at ``epsilon`` (add-remove).

    An upper bound, exact up to the discretisation (see
    :func:`subsampled_gaussian_pld` for the parameters).

    Examples
    --------
    >>> d = subsampled_gaussian_delta(1.0, 1.0, 1, 1.0)
    >>> from dpsum.privacy.calibration import gaussian_delta
    >>> bool(gaussian_delta(1.0, 1.0) <= d < gaussian_delta(1.0, 1.0) * 1.001)
    True
    """
    eps = V.check_epsilon(epsilon, allow_zero=True, scalar=True)
    return subsampled_gaussian_pld(noise_multiplier, sampling_rate, steps,
                                   interval=interval).delta(eps)


def subsampled_gaussian_epsilon(noise_multiplier: ArrayLike, sampling_rate: ArrayLike,
                                steps: ArrayLike, delta: float, *,
                                interval: float = DEFAULT_INTERVAL) -> float:
    """Epsilon of ``steps`` Poisson-subsampled Gaussian steps at ``delta`` (add-remove).

    An upper bound, exact up to the discretisation (see
    :func:`subsampled_gaussian_pld` for the parameters).

    Examples
    --------
    >>> round(subsampled_gaussian_epsilon(1.1, 0.01, 1000, 1e-5), 2)
    1.52
    """
    dlt = V.check_delta(delta, scalar=True)
    return subsampled_gaussian_pld(noise_multiplier, sampling_rate, steps,
                                   interval=interval).epsilon(dlt)


def _log_a(z: float, q: float, alpha: int) -> float:
    """``log E_Q[(P/Q)^alpha]`` of the subsampled Gaussian at an integer order."""
    k = np.arange(alpha + 1, dtype=np.float64)
    log_binom = -math.log(alpha + 1) - betaln(alpha - k + 1, k + 1)
    log1q = math.log1p(-q) if q < 1 else -math.inf
    with np.errstate(invalid="ignore"):
        terms = log_binom + (alpha - k) * log1q + k * math.log(q) + (k * k - k) / (2 * z * z)
    terms = np.where(np.isnan(terms), -np.inf, terms)  # 0 * -inf at q = 1, k < alpha
    if q == 1.0:
        terms[-1] = log_binom[-1] + (alpha * alpha - alpha) / (2 * z * z)
    return float(logsumexp(terms))


def subsampled_gaussian_rdp(noise_multiplier: float, sampling_rate: float,
                            orders: Sequence[int] = RDP_ORDERS) -> np.ndarray:
    """Rényi DP of one Poisson-subsampled Gaussian step at integer orders.

    ``epsilon(alpha) = log A_alpha / (alpha - 1)`` with
    ``A_alpha = sum_k C(alpha, k) (1-q)^(alpha-k) q^k exp((k^2 - k) / (2 z^2))``
    (Mironov, Talwar and Zhang 2019), add-remove neighbouring.

    Returns
    -------
    numpy.ndarray
        One value per order.

    Examples
    --------
    >>> subsampled_gaussian_rdp(2.0, 1.0, [2, 3]).round(6).tolist()
    [0.25, 0.375]
    """
    z = V.check_positive(noise_multiplier, "noise_multiplier", scalar=True)
    q = check_sampling_rate(sampling_rate)
    alphas = [V.check_integer(a, "orders", 2) for a in orders]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        rdp = np.array([_log_a(z, q, a) / (a - 1) for a in alphas])
    return V.representable(rdp, "noise_multiplier", "the Renyi divergence",
                           "noise_multiplier is too small for these orders")


def subsampled_gaussian_rdp_epsilon(noise_multiplier: float, sampling_rate: float,
                                    steps: int, delta: float) -> float:
    """Epsilon of ``steps`` subsampled Gaussian steps at ``delta`` by Rényi DP.

    The step's Rényi DP (:func:`subsampled_gaussian_rdp`) times ``steps``,
    converted at the best order of ``RDP_ORDERS`` (2 to 256) by
    ``epsilon = T eps(alpha) + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)``
    (Canonne, Kamath and Steinke 2020). An upper bound, looser than
    :func:`subsampled_gaussian_epsilon`.

    Examples
    --------
    >>> round(subsampled_gaussian_rdp_epsilon(1.1, 0.01, 1000, 1e-5), 2)
    1.73
    """
    t = V.check_integer(steps, "steps", 1)
    dlt = V.check_delta(delta, scalar=True)
    rdp = subsampled_gaussian_rdp(noise_multiplier, sampling_rate) * t
    a = np.array(RDP_ORDERS, dtype=np.float64)
    eps = rdp + np.log1p(-1.0 / a) - (math.log(dlt) + np.log(a)) / (a - 1.0)
    return float(max(0.0, np.min(eps)))
