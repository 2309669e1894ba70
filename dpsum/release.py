"""The :class:`Release` record returned by every vector mechanism of :mod:`dpsum`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .privacy import Neighbouring

__all__ = ["Release"]


@dataclass(frozen=True)
class Release:
    """What a mechanism releases, and the public parameters it used.

    Every field is either the private output (``estimate``) or a function of
    public inputs only, so the whole record may be published. Data-dependent
    counts (rows clipped, values clamped) are deliberately absent: they are
    not differentially private and are returned only on an explicit request
    for diagnostics.

    Attributes
    ----------
    estimate : numpy.ndarray
        The differentially private estimate of the sum, shape ``(d,)``.
    noise_std : numpy.ndarray
        Standard deviation of the Gaussian noise added to each coordinate.
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
        isotropic noise ``sigma_opt * sensitivity`` is added.
    mechanism : str
        Name of the mechanism that produced the release.
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
    mechanism: str

    @property
    def expected_squared_error(self) -> float:
        """Expected squared L2 norm of the added noise, ``sum_j noise_std_j^2``
        (Corollary 1.1). This is the error against the clipped sum; clipping
        bias comes on top of it."""
        return float(np.sum(np.square(self.noise_std)))
