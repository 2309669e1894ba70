"""Neighbouring datasets and sensitivity (:ref:`definitions-neighbouring`).
"""

from __future__ import annotations

import math

from dpsum import _validation as V
from dpsum._enums import _StrEnum
from dpsum._special import log_expm1

__all__ = [
    "Neighbouring",
    "clipped_sum_sensitivity",
    "group_privacy",
]


class Neighbouring(_StrEnum):
    """The neighbouring relation a privacy guarantee refers to.

    ``REPLACE`` ("replace", :prf:ref:`replace-one <definitions-def-replace-one>`): two datasets of the
    same, public size ``n`` that differ in one row. ``ADD_REMOVE``
    ("add-remove"): one dataset is the other with one row added, so ``n``
    itself is private.

    The relation fixes the sensitivity of a clipped sum: replacing a row of
    norm at most ``C`` by another moves the sum by up to ``2C``, adding or
    removing one moves it by up to ``C``
    (:prf:ref:`definitions-prop-clipped-sensitivity`).

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
    def parse(cls, value: "Neighbouring | str",
              name: str = "neighbouring") -> "Neighbouring":
        """Return the member named by ``value`` or raise a clear error naming
        the argument (the package's one rule for named choices).

        Examples
        --------
        >>> Neighbouring.parse("replace")
        <Neighbouring.REPLACE: 'replace'>
        >>> str(Neighbouring.ADD_REMOVE)
        'add-remove'
        """
        return super().parse(value, name)


def clipped_sum_sensitivity(clip_norm: float,
                            neighbouring: Neighbouring | str = "replace") -> float:
    """L2 sensitivity of a sum of rows clipped to norm ``clip_norm``.

    ``2 C`` under replace-one (a row of norm C replaced by its opposite) and
    ``C`` under add-remove (:prf:ref:`definitions-prop-clipped-sensitivity`).

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


def group_privacy(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """Group privacy: an (epsilon, delta)-DP mechanism is (k eps, k e^{(k-1) eps} delta)-DP
    for datasets differing in ``k`` rows.

    The delta term follows from chaining the definition k times:
    ``delta (1 + e^eps + ... + e^{(k-1) eps}) <= k e^{(k-1) eps} delta``
    (:prf:ref:`definitions-thm-group-privacy`); ``k delta`` alone would not
    suffice.
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
            f"epsilon, delta and k give a group delta delta (e^(k eps) - 1) / (e^eps - 1) = "
            f"{shown}, 1 or more: the guarantee for groups of this size is void")
    return k * eps, group_delta
