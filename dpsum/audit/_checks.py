"""Argument checks and Clopper-Pearson pieces shared by the audit modules (private)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsum import _validation as V
from dpsum._lazy import stats


def _check_alpha(alpha: Any) -> float:
    return V.check_probability(alpha, "alpha", scalar=True)


def _check_count(k: Any, n: Any, name: str) -> Any:
    return V.check_count(k, n, name)


def _cp_lower(k: Any, n: int, level: float) -> Any:
    """Clopper-Pearson lower bound for real-valued k in [0, n] (no validation)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(level, np.maximum(k, 1e-300), n - k + 1)
    # a level so small that the quantile does not converge (NaN): the
    # trivial bound 0 is valid (and the quantile's limit)
    return np.where((k <= 0) | np.isnan(out), 0.0, out)


def _cp_upper(k: Any, n: int, level: float) -> Any:
    """Clopper-Pearson upper bound for real-valued k in [0, n] (no validation)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = stats.beta.isf(level, k + 1, np.maximum(n - k, 1e-300))
    return np.where((k >= n) | np.isnan(out), 1.0, out)     # NaN: the trivial bound 1


def _epsilon_bound(p_lo: Any, q_hi: Any, delta: float) -> Any:
    """``max(0, ln((p_lo - delta) / q_hi))``, 0 when ``p_lo <= delta``."""
    p_lo = np.asarray(p_lo, dtype=np.float64)
    q_hi = np.asarray(q_hi, dtype=np.float64)
    num = p_lo - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.log(num / q_hi)
    return np.where((num > 0) & (q_hi > 0), np.maximum(val, 0.0), 0.0)


def _check_delta_audit(delta: Any) -> float:
    # delta = 0 is legitimate here: pure epsilon-DP mechanisms are audited too
    return V.check_delta(delta, allow_zero=True, scalar=True)


def _check_laws(first: Any, second: Any) -> Any:
    P = V.check_finite_array(first, "first", ndim=1)
    Q = V.check_finite_array(second, "second", ndim=1)
    if P.shape != Q.shape:
        raise ValueError(f"first and second must have the same length, got {P.size} and {Q.size}")
    for arr, name in ((P, "first"), (Q, "second")):
        if np.any(arr < 0) or abs(arr.sum() - 1.0) > 1e-9:
            raise ValueError(f"{name} must be a probability vector (non-negative, summing to 1)")
    return P, Q
