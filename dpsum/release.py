"""The :class:`Release` record returned by every vector mechanism of :mod:`dpsum`."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from .privacy import Neighbouring

__all__ = ["Release", "Mechanism", "Calibration"]


class _StrEnum(str, enum.Enum):
    """A string enum whose ``str()`` and ``format()`` are its value, so that
    old code comparing with or printing the string keeps working."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Mechanism(_StrEnum):
    """Which mechanism produced a :class:`Release`.

    A ``str`` enum: ``release.mechanism == "clipped gaussian"`` still holds.

    Examples
    --------
    >>> Mechanism.CLIPPED_GAUSSIAN == "clipped gaussian"
    True
    >>> str(Mechanism.GAUSSIAN_DATA)
    'gaussian data (Algorithm 3)'
    """

    #: Algorithm 1 with the analytic calibration (Theorem 3).
    GAUSSIAN_ANALYTIC = "gaussian (analytic)"
    #: Algorithm 1 with the classic calibration (Theorem 2).
    GAUSSIAN_CLASSIC = "gaussian (classic)"
    #: Algorithm 2, the Elliptical Gaussian mechanism.
    ELLIPTICAL_GAUSSIAN = "elliptical gaussian"
    #: Algorithm 3, the Elliptical Gaussian mechanism for Gaussian data.
    GAUSSIAN_DATA = "gaussian data (Algorithm 3)"
    #: The isotropic clipping baseline.
    CLIPPED_GAUSSIAN = "clipped gaussian"
    #: The Laplace mechanism (pure epsilon-DP, L1 sensitivity).
    LAPLACE = "laplace"


class Calibration(_StrEnum):
    """Which theorem fixed the noise multiplier ``sigma_opt``.

    Examples
    --------
    >>> Calibration("classic") is Calibration.CLASSIC
    True
    """

    #: Balle and Wang's exact calibration (Theorem 3).
    ANALYTIC = "analytic"
    #: Dwork and Roth's classic calibration (Theorem 2), epsilon < 1 only.
    CLASSIC = "classic"
    #: Laplace noise of scale L1-sensitivity / epsilon (pure DP; no delta).
    LAPLACE = "laplace"
    #: The grid path's discrete Gaussian: zCDP (Canonne, Kamath and Steinke
    #: 2020, Theorem 14) converted with their Proposition 12.
    DISCRETE = "discrete gaussian (zCDP)"
    #: The grid path's discrete Laplace: scale (integer L1 sensitivity) /
    #: epsilon on the grid, pure epsilon-DP.
    DISCRETE_LAPLACE = "discrete laplace"


def _read_only(value: Any) -> np.ndarray | None:
    """A read-only float64 copy of ``value`` (None stays None)."""
    if value is None:
        return None
    out = np.array(value, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class Release:
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
        The scaling vector ``b`` (Algorithms 2 and 3), or None.
    clip_norm : float or None
        The clip radius ``C`` in the scaled space, or None if nothing is clipped.
    epsilon, delta : float
        The privacy guarantee.
    neighbouring : Neighbouring
        The neighbouring relation the guarantee refers to.
    sigma_opt : float
        The noise multiplier for unit L2 sensitivity (Theorem 3, or
        Theorem 2 when the classic calibration was requested).
    sensitivity : float
        The L2 sensitivity of the released statistic in the space where
        isotropic noise ``sigma_opt * sensitivity`` is added (the L1
        sensitivity for the Laplace mechanism).
    mechanism : Mechanism
        The mechanism that produced the release (a ``str`` enum).
    center : numpy.ndarray or None
        The public center ``c`` of Algorithm 3 (None when zero or unused).
    clip_probability : float or None
        The clip probability ``p_C`` of Algorithm 3 (None otherwise).
    calibration : Calibration
        Which calibration gave ``sigma_opt``.
    widths : numpy.ndarray or None
        The box widths ``Delta_j`` of Algorithm 2 (None otherwise).
    secure : bool
        True when the release took the grid path (``secure=True``): the
        statistic was rounded to the grid ``2^grid_exponent`` and summed
        exactly in integers, and the noise is an exact discrete Gaussian
        (``noise_std`` then holds its scale parameter ``sigma``, per
        coordinate, in the units of ``estimate``). False: floating-point sum
        and NumPy's Gaussian sampler, not safe against floating-point attacks.
    grid_exponent : int or None
        ``K`` of the grid path: the noisy statistic in the space where the
        noise was added (``estimate`` times ``scaling``, less ``n * center``
        under replace-one) is an integer multiple of ``2^K``. None on the
        floating-point path.

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
    epsilon: float
    delta: float
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

    def __post_init__(self) -> None:
        for name in ("estimate", "noise_std", "scaling", "center", "widths"):
            object.__setattr__(self, name, _read_only(getattr(self, name)))
        object.__setattr__(self, "mechanism", Mechanism(self.mechanism))
        object.__setattr__(self, "calibration", Calibration(self.calibration))
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring))

    @property
    def expected_squared_error(self) -> float:
        """Expected squared L2 norm of the added noise, ``sum_j noise_std_j^2``
        (Corollary 1.1). This is the error against the clipped sum; clipping
        bias comes on top of it.

        Examples
        --------
        >>> from dpsum.mechanisms import gaussian_mechanism
        >>> r = gaussian_mechanism([1.0, 2.0], epsilon=1.0, delta=1e-5, sensitivity=1.0, rng=0)
        >>> round(r.expected_squared_error / r.noise_std[0] ** 2, 12)
        np.float64(2.0)
        """
        return float(np.sum(np.square(self.noise_std)))

    def confidence_ball(self, beta: float):
        """The simultaneous ``(1 - beta)`` ball around the estimate that covers the
        protected sum; see :func:`dpsum.accuracy.confidence_ball`."""
        from .accuracy import confidence_ball

        return confidence_ball(self, beta)

    def confidence_intervals(self, beta: float, *, simultaneous: bool = False):
        """Per-coordinate ``(1 - beta)`` intervals for the protected sum; see
        :func:`dpsum.accuracy.confidence_intervals`."""
        from .accuracy import confidence_intervals

        return confidence_intervals(self, beta, simultaneous=simultaneous)
