"""Privacy bookkeeping: neighbouring relations, sensitivity, composition.

The two neighbouring relations the book uses (:class:`Neighbouring`), the
sensitivity of a clipped sum under each, and the composition theorems and
group privacy of the chapter "Definitions".

Argument checks used to live here; they are in the private module
``dpsum._validation`` now (one rule per kind of argument). The old names
``dpsum.privacy.check_*`` still work and raise a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as V
from ._deprecation import moved_attributes, warn_deprecated
from ._special import log_expm1

__all__ = [
    "Neighbouring",
    "clipped_sum_sensitivity",
    "basic_composition",
    "advanced_composition",
    "group_privacy",
]


class Neighbouring(str, enum.Enum):
    """The neighbouring relation a privacy guarantee refers to.

    ``REPLACE`` ("replace", the report's Definition 1.1): two datasets of the
    same, public size ``n`` that differ in one row. ``ADD_REMOVE``
    ("add-remove"): one dataset is the other with one row added, so ``n``
    itself is private.

    The relation fixes the sensitivity of a clipped sum: replacing a row of
    norm at most ``C`` by another moves the sum by up to ``2C``, adding or
    removing one moves it by up to ``C`` (book, chapter 1, "Neighbouring
    datasets"; errata E3).

    Examples
    --------
    >>> Neighbouring.parse("add-remove") is Neighbouring.ADD_REMOVE
    True
    >>> Neighbouring.REPLACE == "replace"
    True
    """

    REPLACE = "replace"
    ADD_REMOVE = "add-remove"

    @classmethod
    def parse(cls, value: "Neighbouring | str", name: str = "neighbouring") -> "Neighbouring":
        """Return the member named by ``value`` or raise a clear error.

        Examples
        --------
        >>> Neighbouring.parse("replace")
        <Neighbouring.REPLACE: 'replace'>
        """
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            raise TypeError(
                f"{name} must be 'replace' or 'add-remove', got {type(value).__name__}"
            )
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"{name} must be 'replace' or 'add-remove', got {value!r}"
            ) from None


def clipped_sum_sensitivity(clip_norm: float,
                            neighbouring: Neighbouring | str = "replace") -> float:
    """L2 sensitivity of a sum of rows clipped to norm ``clip_norm``.

    ``2 C`` under replace-one (a row of norm C replaced by its opposite) and
    ``C`` under add-remove (book chapter 1; errata E3).

    Examples
    --------
    >>> clipped_sum_sensitivity(1.5, "replace"), clipped_sum_sensitivity(1.5, "add-remove")
    (3.0, 1.5)
    """
    c = V.check_positive(clip_norm, "clip_norm", scalar=True)
    relation = Neighbouring.parse(neighbouring)
    sens = 2.0 * c if relation is Neighbouring.REPLACE else c
    if not math.isfinite(sens):
        raise ValueError("clip_norm is too large: twice it overflows")
    return sens


def basic_composition(epsilons: ArrayLike, deltas: ArrayLike) -> tuple[float, float]:
    """Basic composition: running mechanisms with (eps_i, delta_i) is (sum eps_i, sum delta_i)-DP.

    Dwork and Roth 2014, Theorem 3.16; book chapter 1, "Composition".

    Examples
    --------
    >>> basic_composition([0.5, 0.25], [1e-6, 2e-6])
    (0.75, 3e-06)
    """
    eps = np.atleast_1d(V.check_epsilon(epsilons, "epsilons"))
    dels = np.atleast_1d(V.check_delta(deltas, "deltas"))
    if eps.shape != dels.shape:
        raise ValueError(
            f"epsilons and deltas must have the same length, got {eps.shape} and {dels.shape}"
        )
    total_delta = math.fsum(dels)
    if total_delta >= 1:
        raise ValueError("the deltas sum to 1 or more: the composed guarantee is void")
    try:
        total_eps = math.fsum(eps)
    except OverflowError:   # fsum raises on an intermediate overflow
        total_eps = math.inf
    if not math.isfinite(total_eps):
        raise ValueError("epsilons sum to more than the largest float: the composed "
                         "epsilon is not a finite number")
    return total_eps, total_delta


def advanced_composition(epsilon: float, delta: float, k: int,
                         delta_prime: float) -> tuple[float, float]:
    """Advanced composition of ``k`` (epsilon, delta)-DP mechanisms.

    Returns ``(eps', k delta + delta')`` with
    ``eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1)``. The per-step
    ``delta`` may be 0 (composing pure-DP steps, the theorem's most common
    use); ``delta'`` must lie in (0, 1).
    (Dwork, Rothblum and Vadhan 2010; Dwork and Roth 2014, Theorem 3.20;
    book chapter 1, "Composition").

    Raises
    ------
    ValueError
        If an argument is out of range, if ``k delta + delta'`` reaches 1 (the
        guarantee is void), or if ``eps'`` exceeds the largest float.

    Examples
    --------
    >>> eps, dlt = advanced_composition(0.01, 1e-9, 1000, 1e-6)
    >>> round(eps, 4), round(dlt, 12)
    (1.7628, 2e-06)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True, allow_zero=True)   # pure-DP steps: delta = 0
    dp = V.check_delta(delta_prime, "delta_prime", scalar=True)
    k = V.check_integer(k, "k")
    delta_total = k * dlt + dp
    if delta_total >= 1:
        raise ValueError("k * delta + delta_prime is 1 or more: the composed guarantee is void")
    if eps > 700.0:
        raise ValueError(f"epsilon = {eps:g} is too large: e^epsilon overflows, and the "
                         "composed epsilon is not a finite float")
    eps_total = math.sqrt(2 * k * math.log(1 / dp)) * eps + k * eps * math.expm1(eps)
    if not math.isfinite(eps_total):
        raise ValueError("the composed epsilon exceeds the largest float: epsilon or k is "
                         "too large")
    return eps_total, delta_total


def group_privacy(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """Group privacy: an (epsilon, delta)-DP mechanism is (k eps, k e^{(k-1) eps} delta)-DP
    for datasets differing in ``k`` rows.

    The delta term follows from chaining the definition k times:
    ``delta (1 + e^eps + ... + e^{(k-1) eps}) <= k e^{(k-1) eps} delta``
    (book chapter 1, "Group privacy"; errata E2 corrects the seed's statement).
    The tighter geometric sum is what is returned; a ``ValueError`` is raised
    when it reaches 1, since the guarantee is then void. It is compared with
    1 in log space, so a huge ``k`` gives that error rather than an overflow.

    Examples
    --------
    >>> k_eps, k_delta = group_privacy(0.5, 1e-8, 3)
    >>> k_eps, round(k_delta / 1e-8, 6)
    (1.5, 5.367003)
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    dlt = V.check_delta(delta, scalar=True)
    k = V.check_integer(k, "k")
    # delta * sum_{i<k} e^{i eps} = delta * (e^{k eps} - 1) / (e^{eps} - 1)
    if k * eps < 700.0:
        group_delta = dlt * math.expm1(k * eps) / math.expm1(eps)
    else:
        log_gd = math.log(dlt) + float(log_expm1(k * eps)) - float(log_expm1(eps))
        group_delta = math.exp(log_gd) if log_gd < 0.0 else math.inf
    if not group_delta < 1:
        shown = f"{group_delta:.3g}" if math.isfinite(group_delta) else "far above 1"
        raise ValueError(
            f"the group delta delta (e^(k eps) - 1) / (e^eps - 1) = {shown} is 1 or "
            "more: the guarantee for groups of this size is void")
    return k * eps, group_delta


# ---------------------------------------------------------------------------
# deprecated: the argument checks moved to dpsum._validation

def check_scalar_privacy(epsilon: Any, delta: Any = None) -> Any:
    """Deprecated: validate scalar privacy parameters (``epsilon``, or the pair)."""
    warn_deprecated("dpsum.privacy.check_scalar_privacy",
                    "dpsum._validation.check_epsilon/check_delta with scalar=True")
    eps = V.check_epsilon(epsilon, scalar=True)
    if delta is None:
        return eps
    return eps, V.check_delta(delta, scalar=True)


__getattr__ = moved_attributes(__name__, {
    name: f"dpsum._validation:{name}"
    for name in ("check_epsilon", "check_delta", "check_positive", "check_probability",
                 "check_finite_array", "check_data_matrix", "check_vector", "check_rng",
                 "check_integer")
})
