"""Privacy bookkeeping: argument validation, neighbouring relations, composition.

Every public function of :mod:`dpsum` validates its arguments with the helpers
in this module *before* it touches any data, so that bad input produces a
clear :class:`ValueError` or :class:`TypeError` naming the offending argument
rather than a silent ``nan`` (see the chapter "Definitions" of the book).

The module also holds the two neighbouring relations the book uses
(:class:`Neighbouring`) and the two composition theorems and group privacy of
chapter 1.
"""

from __future__ import annotations

import enum
import math
import numbers

import numpy as np

__all__ = [
    "Neighbouring",
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_probability",
    "check_finite_array",
    "check_data_matrix",
    "check_vector",
    "check_rng",
    "check_integer",
    "check_scalar_privacy",
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
    """

    REPLACE = "replace"
    ADD_REMOVE = "add-remove"

    @classmethod
    def parse(cls, value: "Neighbouring | str", name: str = "neighbouring") -> "Neighbouring":
        """Return the member named by ``value`` or raise a clear error."""
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


def _as_real_array(value, name: str) -> np.ndarray:
    """Convert ``value`` to a float64 array, rejecting non-numeric input."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a real number or array of real numbers, got {value!r}")
    if isinstance(value, bool) or (
        isinstance(value, np.ndarray) and value.dtype == np.bool_
    ):
        raise TypeError(f"{name} must be a real number, not a boolean")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise TypeError(f"{name} must be a real number or array, got {value!r}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(
            f"{name} must be a real number or array of real numbers, got dtype {arr.dtype}"
        )
    return arr.astype(np.float64, copy=False)


def _scalar_or_array(arr: np.ndarray, original):
    """Return a Python float for scalar input and an array otherwise."""
    if arr.ndim == 0 and (isinstance(original, numbers.Number) or np.ndim(original) == 0):
        return float(arr)
    return arr


def check_epsilon(epsilon, name: str = "epsilon"):
    """Validate a privacy parameter epsilon: real, finite and > 0.

    Returns a float for scalar input, a float64 array for array input.
    """
    arr = _as_real_array(epsilon, name)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {epsilon!r}")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0, got {epsilon!r}")
    return _scalar_or_array(arr, epsilon)


def _check_open_unit_interval(value, name: str):
    arr = _as_real_array(value, name)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)) or not np.all((arr > 0) & (arr < 1)):
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return _scalar_or_array(arr, value)


def check_delta(delta, name: str = "delta"):
    """Validate a privacy parameter delta: real and strictly inside (0, 1)."""
    return _check_open_unit_interval(delta, name)


def check_probability(p, name: str = "p"):
    """Validate a probability strictly inside (0, 1)."""
    return _check_open_unit_interval(p, name)


def check_positive(value, name: str, *, allow_zero: bool = False):
    """Validate a real, finite value (or array) that must be > 0 (or >= 0)."""
    arr = _as_real_array(value, name)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    ok = arr >= 0 if allow_zero else arr > 0
    if not np.all(ok):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return _scalar_or_array(arr, value)


def check_finite_array(X, name: str = "X", *, ndim: int | None = None,
                       finite: bool = True) -> np.ndarray:
    """Return ``X`` as a float64 array after checking it is real and finite.

    The input is never modified; a copy is made only when a dtype conversion
    is needed. ``finite=False`` skips the NaN/inf check (see
    :func:`check_data_matrix`).

    Raises
    ------
    TypeError
        If ``X`` is not numeric.
    ValueError
        If ``X`` has the wrong number of dimensions, is empty, or holds NaN
        or infinite values.
    """
    arr = _as_real_array(X, name)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_data_matrix(X, name: str = "X", *, finite: bool = True) -> np.ndarray:
    """Validate a dataset: a real matrix of shape (n, d) with n, d >= 1.

    With ``finite=False`` the NaN/inf check is left to the caller, which must
    then perform it in its own pass over the data before releasing anything
    (the mechanisms fuse it into their clipping loop to read the data once).
    """
    return check_finite_array(X, name, ndim=2, finite=finite)


def check_vector(v, name: str, d: int | None = None, *, positive: bool = False) -> np.ndarray:
    """Validate a finite 1-d vector, optionally of length ``d`` and positive."""
    arr = check_finite_array(v, name, ndim=1)
    if d is not None and arr.shape[0] != d:
        raise ValueError(f"{name} must have length {d} (one entry per column), got {arr.shape[0]}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0 in every coordinate")
    return arr


def check_integer(value, name: str, minimum: int = 1) -> int:
    """Validate a Python or NumPy integer (not a bool) that is at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        bound = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return int(value)


def check_scalar_privacy(epsilon, delta=None):
    """Validate scalar privacy parameters for a mechanism.

    Returns ``epsilon`` alone when ``delta`` is None (pure DP), else the pair
    ``(epsilon, delta)``, as floats.
    """
    eps = check_epsilon(epsilon)
    if np.ndim(eps):
        raise ValueError("epsilon must be a scalar for a mechanism")
    if delta is None:
        return eps
    dlt = check_delta(delta)
    if np.ndim(dlt):
        raise ValueError("delta must be a scalar for a mechanism")
    return eps, dlt


def check_rng(rng) -> np.random.Generator:
    """Turn ``rng`` (a Generator, an int seed or None) into a Generator (SPEC 7)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(rng, bool):
            raise TypeError("rng must be a numpy.random.Generator, an int seed or None, got a bool")
        return np.random.default_rng(rng)
    raise TypeError(
        f"rng must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}"
    )


def clipped_sum_sensitivity(clip_norm: float, neighbouring: "Neighbouring | str" = "replace") -> float:
    """L2 sensitivity of a sum of rows clipped to norm ``clip_norm``.

    ``2 C`` under replace-one (a row of norm C replaced by its opposite) and
    ``C`` under add-remove (book chapter 1; errata E3).
    """
    c = check_positive(clip_norm, "clip_norm")
    relation = Neighbouring.parse(neighbouring)
    return 2.0 * c if relation is Neighbouring.REPLACE else c


def basic_composition(epsilons, deltas) -> tuple[float, float]:
    """Basic composition: running mechanisms with (eps_i, delta_i) is (sum eps_i, sum delta_i)-DP.

    Dwork and Roth 2014, Theorem 3.16; book chapter 1, "Composition".
    """
    eps = np.atleast_1d(check_epsilon(epsilons, "epsilons"))
    dels = np.atleast_1d(check_delta(deltas, "deltas"))
    if eps.shape != dels.shape:
        raise ValueError(
            f"epsilons and deltas must have the same length, got {eps.shape} and {dels.shape}"
        )
    total_delta = float(np.sum(dels))
    if total_delta >= 1:
        raise ValueError("the deltas sum to 1 or more: the composed guarantee is void")
    return float(np.sum(eps)), total_delta


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    """Advanced composition of ``k`` (epsilon, delta)-DP mechanisms.

    Returns ``(eps', k delta + delta')`` with
    ``eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1)``
    (Dwork, Rothblum and Vadhan 2010; Dwork and Roth 2014, Theorem 3.20;
    book chapter 1, "Composition").
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    dp = check_delta(delta_prime, "delta_prime")
    k = check_integer(k, "k")
    eps_total = math.sqrt(2 * k * math.log(1 / dp)) * eps + k * eps * math.expm1(eps)
    delta_total = k * dlt + dp
    if delta_total >= 1:
        raise ValueError("k * delta + delta_prime is 1 or more: the composed guarantee is void")
    return eps_total, delta_total


def group_privacy(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """Group privacy: an (epsilon, delta)-DP mechanism is (k eps, k e^{(k-1) eps} delta)-DP
    for datasets differing in ``k`` rows.

    The delta term follows from chaining the definition k times:
    ``delta (1 + e^eps + ... + e^{(k-1) eps}) <= k e^{(k-1) eps} delta``
    (book chapter 1, "Group privacy"; errata E2 corrects the seed's statement).
    The tighter geometric sum is what is returned; a ``ValueError`` is raised
    when it reaches 1, since the guarantee is then void.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    k = check_integer(k, "k")
    # delta * sum_{i<k} e^{i eps} = delta * (e^{k eps} - 1) / (e^{eps} - 1)
    group_delta = dlt * math.expm1(k * eps) / math.expm1(eps)
    if not group_delta < 1:
        raise ValueError(
            f"the group delta delta (e^(k eps) - 1) / (e^eps - 1) = {group_delta:.3g} is 1 or "
            "more: the guarantee for groups of this size is void")
    return k * eps, group_delta
