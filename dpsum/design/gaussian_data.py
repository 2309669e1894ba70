"""The Gaussian-data mechanism's public set-up: everything fixed before the data is read.

The Gaussian-data mechanism (:prf:ref:`gaussian-data-alg-clipped`) releases a clipped, scaled sum. Its scaling
``b``, clip radius ``C``, L2 sensitivity and noise level are functions of
public inputs only: the data model (``stds``, ``center``), the clip
probability ``p_C``, the scaling rule, the neighbouring relation and the
privacy parameters. :func:`gaussian_data_setup` computes them in one place,
and the mechanism (:func:`dpsum.mechanisms.gaussian_data_mechanism`), its
error formula (:func:`dpsum.accuracy.gaussian_data_error`) and its worst-case
audit pair (:func:`dpsum.audit.gaussian_data_pair`) all call it, so the three
can never disagree about, say, the sensitivity under add-remove with a center.

The rules, each stated once here:

- ``p_C`` defaults to ``1/n`` under replace-one, where the number of rows
  ``n`` is public (and needs ``n >= 2``); under add-remove ``n`` is private,
  so ``p_C`` must be given.
- ``C`` is the exact clip radius (:func:`dpsum.design.clip_radius`) of the
  scaled, centred record ``(x - c) ⊙ b`` under ``x ~ N(c, diag(stds^2))``.
- The sensitivity of the scaled, clipped sum is ``2C`` under replace-one
  (the center cancels) and ``C + ||b ⊙ c||`` under add-remove, since a whole
  record, center included, enters or leaves the sum (``C`` when ``c = 0``).
- The noise is isotropic ``N(0, (sensitivity * sigma_opt)^2)`` in the scaled
  space, so coordinate ``j`` of the released sum gets the standard deviation
  ``sensitivity * sigma_opt / b_j`` (the mechanism's expected squared error
  is the sum of their squares).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum._special import norm_plus
from dpsum.design.clip_radius import clip_radius
from dpsum.design.scaling import resolve_scaling
from dpsum.privacy.calibration import analytic_sigma
from dpsum.privacy.neighbouring import Neighbouring, clipped_sum_sensitivity

__all__ = [
    "GaussianDataSetup",
    "gaussian_data_setup",
]



@dataclass(frozen=True)
class GaussianDataSetup(V.Record):
    """The public parameters of one run of the Gaussian-data mechanism.

    Every field is a function of public inputs only. Arrays are read-only
    copies.

    Attributes
    ----------
    stds : numpy.ndarray, shape (d,)
        The public per-coordinate standard deviations of the data model.
    center : numpy.ndarray or None
        The public center ``c`` (None when it is zero).
    scaling : numpy.ndarray, shape (d,)
        The scaling vector ``b``.
    clip_probability : float
        ``p_C``, given or defaulted to ``1/n``.
    clip_norm : float
        The clip radius ``C`` in the scaled space.
    neighbouring : Neighbouring
        The neighbouring relation.
    sensitivity : float
        L2 sensitivity of the scaled, clipped sum: ``2C`` or ``C + ||b ⊙ c||``.
    epsilon, delta : float or None
        The privacy guarantee (None when the set-up was asked for the clipping
        geometry only).
    sigma_opt : float or None
        The noise multiplier for unit sensitivity (:prf:ref:`gaussian-thm-analytic`).
    noise_std : numpy.ndarray or None
        Per-coordinate noise standard deviation of the released sum,
        ``sensitivity * sigma_opt / b``.

    Examples
    --------
    >>> s = gaussian_data_setup([2.0, 1.0], epsilon=1.0, delta=1e-6, n=1000)
    >>> s.clip_probability, s.sensitivity == 2 * s.clip_norm
    (0.001, True)
    """

    stds: np.ndarray
    center: np.ndarray | None
    scaling: np.ndarray
    clip_probability: float
    clip_norm: float
    neighbouring: Neighbouring
    sensitivity: float
    epsilon: float | None = None
    delta: float | None = None
    sigma_opt: float | None = None
    noise_std: np.ndarray | None = None

    def __post_init__(self) -> None:
        V.check_record_fields(self)
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring))

    @property
    def expected_squared_error(self) -> float:
        """The mechanism's expected squared error ``sum_j noise_std_j^2``
        against the clipped sum (needs ``epsilon`` and ``delta``).

        Examples
        --------
        >>> s = gaussian_data_setup([2.0, 1.0], epsilon=1.0, delta=1e-6, n=1000)
        >>> e = s.expected_squared_error
        >>> round(e / float(np.sum(s.noise_std ** 2)), 12)
        1.0
        """
        if self.noise_std is None:
            raise ValueError("the set-up has no noise level: pass epsilon and delta")
        scale = float(np.max(self.noise_std))
        # relative to the largest entry, so that the squares do not overflow early
        total = scale * scale * float(np.sum((self.noise_std / scale) ** 2))
        if not math.isfinite(total):
            raise ValueError("the expected squared error overflows: stds are too large")
        return total


def gaussian_data_setup(stds: ArrayLike, *, epsilon: float | None = None,
                        delta: float | None = None, center: ArrayLike | None = None,
                        clip_probability: float | None = None, n: int | None = None,
                        scaling: str | ArrayLike = "scaled",
                        neighbouring: Neighbouring | str = "replace",
                        objective: str | ArrayLike = "total") -> GaussianDataSetup:
    """Compute the Gaussian-data mechanism's scaling, clip radius, sensitivity and noise from public inputs.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations, all > 0.
    epsilon, delta : float, optional
        The privacy guarantee; give both to get ``sigma_opt`` and
        ``noise_std``, or neither for the clipping geometry alone.
    center : array_like, shape (d,), optional
        Public center ``c`` of the data model; 0 when omitted.
    clip_probability : float, optional
        ``p_C`` in (0, 1). When omitted it is ``1/n`` under replace-one
        (``n`` must then be given and be at least 2); under add-remove it
        must be given, since ``n`` is private there.
    n : int, optional
        The number of rows, used only for the default ``p_C = 1/n``.
    scaling : {"scaled", "isotropic"} or array_like, shape (d,)
        the scaling lemma's ``b`` (default), ``b = 1``, or an explicit positive vector.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation.
    objective : {"total", "relative"} or array_like, shape (d,)
        What ``scaling="scaled"`` minimises (:func:`dpsum.design.gaussian_data_scaling`):
        the squared error in the data's units, relative to the stds, or
        weighted by positive per-column weights.

    Returns
    -------
    GaussianDataSetup

    Raises
    ------
    ValueError
        If an argument is out of range, if ``p_C`` is missing under
        add-remove, or if it defaults to ``1/n`` with ``n`` missing or < 2.

    Examples
    --------
    >>> s = gaussian_data_setup([4.0, 1.0], epsilon=1.0, delta=1e-6,
    ...                         clip_probability=1e-3, neighbouring="add-remove")
    >>> s.sensitivity == s.clip_norm
    True
    >>> r = gaussian_data_setup([4.0, 1.0], clip_probability=1e-3, center=[3.0, 4.0],
    ...                         neighbouring="add-remove")
    >>> bool(r.sensitivity > r.clip_norm), r.noise_std is None
    (True, True)
    """
    relation = Neighbouring.parse(neighbouring)
    sd = V.check_vector(stds, "stds", positive=True)
    d = sd.size
    obj = V.check_objective(objective, d)
    c = None if center is None else V.check_vector(center, "center", d)
    if c is not None and not np.any(c):
        c = None
    if (epsilon is None) != (delta is None):
        missing = "delta" if delta is None else "epsilon"
        raise TypeError(f"{missing} must be a real number when the other privacy "
                        "parameter is given, got None")
    eps = None if epsilon is None else V.check_epsilon(epsilon, scalar=True)
    dlt = None if delta is None else V.check_delta(delta, scalar=True)
    # n is checked whenever given, used or not
    n_given = None if n is None else V.check_integer(n, "n")
    if clip_probability is None:
        if relation is Neighbouring.ADD_REMOVE:
            raise ValueError(
                "clip_probability must be given under add-remove neighbouring: the "
                "default 1/n would use the private number of rows n")
        if n is None:
            raise ValueError("clip_probability must be given (it defaults to 1/n only "
                             "when the number of rows n is known)")
        nn = n_given
        assert nn is not None
        if nn < 2:
            raise ValueError("clip_probability defaults to 1/n, which needs n >= 2 rows, "
                             "and n (the number of rows of X) is 1; pass clip_probability "
                             "explicitly")
        p = 1.0 / nn
    else:
        p = V.check_probability(clip_probability, "clip_probability", scalar=True)
    b = resolve_scaling(scaling, sd, obj)
    C = clip_radius(sd, p, b)
    sens = clipped_sum_sensitivity(C, relation)
    if relation is Neighbouring.ADD_REMOVE and c is not None:
        # an added row contributes b ⊙ c plus a clipped deviation of norm <= C:
        # the bound evaluated exactly and rounded up
        sens = norm_plus(C, [Fraction(float(bj)) * Fraction(float(cj)) for bj, cj in zip(b, c)])
        if not math.isfinite(sens):
            raise ValueError("center * scaling overflows: the sensitivity is not finite")
    sigma_opt: float | None = None
    noise: np.ndarray | None = None
    if eps is not None and dlt is not None:
        sigma_opt = float(analytic_sigma(eps, dlt))
        with np.errstate(over="ignore"):
            noise = sens * sigma_opt / b
        if not np.all(np.isfinite(noise)):
            culprit = ("center, stds or scaling" if relation is Neighbouring.ADD_REMOVE
                       and c is not None else "stds or scaling")
            raise ValueError(f"the noise standard deviation overflows: {culprit} are too "
                             "extreme")
    return GaussianDataSetup(
        stds=V.read_only_copy(sd),  # type: ignore[arg-type]
        center=V.read_only_copy(c),
        scaling=V.read_only_copy(b),  # type: ignore[arg-type]
        clip_probability=float(p),
        clip_norm=float(C),
        neighbouring=relation,
        sensitivity=float(sens),
        epsilon=eps,
        delta=dlt,
        sigma_opt=sigma_opt,
        noise_std=V.read_only_copy(noise),
    )
