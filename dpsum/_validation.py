"""Argument checks: one rule for each kind of argument, in one place.

Every public function of :mod:`dpsum` validates its arguments with the
checkers below *before* it touches any data, so that bad input produces a
clear :class:`ValueError` or :class:`TypeError` naming the offending argument
instead of a silent ``nan`` or an exception from deep inside NumPy.

The rules
---------
Real numbers (``epsilon``, ``sensitivity``, ``stds``, ...)
    Python or NumPy integers and floats, or arrays of them. Strings, ``None``,
    complex numbers, objects and **booleans** are refused with a
    :class:`TypeError` (``True`` is an ``int`` in Python, but a flag passed
    where a number is expected is a mistake). Ragged nested sequences are
    refused with a :class:`ValueError`. NaN and infinities are refused with a
    :class:`ValueError` unless a checker says otherwise.
Integers (``n``, ``k``, ``d``, ``n_samples``, ...)
    Python or NumPy integers, or real numbers with an integral value: ``3.0``
    is accepted as ``3``, while ``2.5``, NaN and infinities are refused with
    a :class:`ValueError`. Booleans are refused with a :class:`TypeError`, as
    for real numbers.
Booleans (``strict``, ``exact``, ``batched``, ...)
    Only ``True`` and ``False`` (Python or NumPy); anything else, including
    ``0``, ``1`` and ``"no"``, is a :class:`TypeError`.
Probabilities and open intervals (``delta``, ``clip_probability``, ``alpha``)
    Strictly inside ``(0, 1)`` unless a checker widens the interval.
Data (``X``, ``value``, ``bits``)
    Error messages describe shapes and dtypes only. **No checker ever echoes
    the contents of an array into an error message**: data values are private
    and an exception text ends up in logs. Scalars (privacy parameters,
    counts) may be echoed.
Boxes (``lower``, ``upper``)
    One convention in every function that takes a box: ``lower`` and
    ``upper`` are scalars or length-``d`` vectors, finite, with
    ``lower < upper`` in every coordinate (:func:`check_box`). No function
    assumes a box centred at 0.
Labelled data (pandas)
    A :class:`pandas.DataFrame` (or a ``Series`` as one column) is accepted
    wherever a dataset is (:func:`as_dataset`); its column labels are kept
    for the output. An error may name a column, never a row, a count or a
    value. pandas is never imported by :mod:`dpsum`: a frame is recognised by
    its attributes.
Randomness (``rng``)
    A :class:`numpy.random.Generator` (used as it is), a non-negative integer
    seed, a :class:`numpy.random.SeedSequence` or ``None`` (SPEC 7). A negative
    seed is a :class:`ValueError` naming ``rng``; anything else, including a
    legacy ``RandomState``, a :class:`TypeError`.

Each numeric checker returns a Python ``float`` (or ``int``) for scalar
input and a float64 (or int64) array for array input; :func:`scalar_or_array`
is the one helper that turns a computed result back into a float when every
input was a scalar.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "as_real_array",
    "describe",
    "scalar_or_array",
    "check_real",
    "check_positive",
    "check_epsilon",
    "check_delta",
    "check_probability",
    "check_open_interval",
    "check_integer",
    "check_count",
    "check_size",
    "check_bool",
    "check_choice",
    "check_finite_array",
    "check_data_matrix",
    "require_rows",
    "check_vector",
    "check_box",
    "check_center",
    "record_array",
    "record_scalar",
    "record_choice_tuple",
    "Record",
    "check_record",
    "check_record_fields",
    "as_dataset",
    "column_labels",
    "index_labels",
    "check_bits",
    "check_rng",
    "check_secure_rng",
    "check_callable",
    "check_failure_probability",
    "representable",
    "MIN_FAILURE_PROBABILITY",
    "RandomLike",
]

#: What an ``rng`` argument accepts (SPEC 7).
RandomLike = Union[np.random.Generator, np.random.SeedSequence, int, None]

_INTEGRAL_LIMIT = 2.0**63  # whole floats beyond this do not fit an int64
_INT_LIMIT = 2**63         # integers (counts, sizes, seeds) must fit an int64

#: The largest float64, where the package saturates instead of overflowing.
FLOAT_MAX = float(np.finfo(np.float64).max)


def describe(value: Any) -> str:
    """A short description of ``value`` for an error message.

    Only a real number (a Python or NumPy int or float, not a bool) is shown
    by value, and only when it is short; a string, bytes or any other object
    is described by its type, an array by its shape. A private value passed as
    a string (``"271828.18"``) or inside an object therefore never reaches an
    error message. Checkers of data arguments (``X``, ``value``, ``bits``)
    never call this with the data.
    """
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "a boolean"
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 24 else f"a {type(value).__name__} of {len(text)} digits"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return f"a {type(value).__name__}"


def _type_name(value: Any) -> str:
    """The type of ``value`` for an error message ("str", "bytes", "NoneType", ...)."""
    return type(value).__name__


def _refuse_masked(value: Any, name: str) -> None:
    """Masked arrays are refused: numpy operations ignore or drop the mask
    inconsistently, so the masked entries (often sentinel values) would reach
    the release."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a numpy masked array: remove the masked entries "
                        "(or fill them with a public value) and pass a plain array")


def as_real_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array, refusing anything that is not real numbers.

    The input is not copied when it already is a float64 array.

    Raises
    ------
    TypeError
        For strings, ``None``, booleans, complex numbers or objects.
    ValueError
        For ragged nested sequences.
    """
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a real number or an array of real numbers, "
                        f"got {_type_name(value)}")
    _refuse_masked(value, name)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, not a boolean")
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except ValueError:
            # numpy refuses ragged nested sequences; its message is fine but
            # the caller's name is what the user needs (and no values are shown)
            raise ValueError(f"{name} must be a rectangular array of real numbers "
                             "(the nested sequences have different lengths)") from None
        except Exception:  # pragma: no cover - exotic objects
            raise TypeError(f"{name} must be a real number or an array of real numbers, "
                            f"got {_type_name(value)}") from None
    if arr.dtype == np.bool_:
        raise TypeError(f"{name} must hold real numbers, not booleans")
    if arr.dtype == object and arr.size and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
            for v in arr.flat):
        # Python integers beyond int64 (2**70): real numbers, converted to float
        try:
            arr = np.array(arr.tolist(), dtype=np.float64)
        except OverflowError:
            raise ValueError(f"{name} must hold real numbers within the float range "
                             "(an integer exceeds 1.8e308)") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or an array of real numbers, "
                        f"got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def scalar_or_array(result: ArrayLike, *inputs: Any) -> Any:
    """A Python float when every input is a scalar, else ``result`` as an array.

    This is how every vectorised function of :mod:`dpsum` returns: scalars in,
    a float out; any array in, an array out (of the broadcast shape).
    """
    arr = np.asarray(result)
    if arr.ndim == 0 and all(np.ndim(x) == 0 for x in inputs):
        return float(arr)
    return arr


def _finished(arr: np.ndarray, original: Any, scalar: bool, name: str) -> Any:
    """Return a float for scalar input, else the array; enforce ``scalar``."""
    if arr.ndim == 0 and np.ndim(original) == 0:
        return float(arr)
    if scalar:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    return arr


def _nonempty(arr: np.ndarray, name: str) -> None:
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")


def check_real(value: Any, name: str, *, finite: bool = True, scalar: bool = False) -> Any:
    """A real number (or array), finite unless ``finite=False`` (NaN is always refused)."""
    arr = as_real_array(value, name)
    _nonempty(arr, name)
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} must not be NaN")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {describe(value)}")
    return _finished(arr, value, scalar, name)


def check_positive(value: Any, name: str, *, allow_zero: bool = False,
                   finite: bool = True, scalar: bool = False) -> Any:
    """A real number (or array) that is > 0 (``>= 0`` with ``allow_zero``) and finite.

    ``finite=False`` admits ``+inf`` (never NaN).
    """
    if type(value) is float and (0.0 < value < math.inf or (allow_zero and value == 0.0)):
        return value  # fast path: a plain float already in range
    arr = as_real_array(value, name)
    _nonempty(arr, name)
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} must not be NaN")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {describe(value)}")
    ok = arr >= 0 if allow_zero else arr > 0
    if not np.all(ok):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {describe(value)}")
    return _finished(arr, value, scalar, name)


def check_epsilon(value: Any, name: str = "epsilon", *, allow_zero: bool = False,
                  scalar: bool = False) -> Any:
    """A privacy parameter epsilon: real, finite and > 0 (``>= 0`` with ``allow_zero``)."""
    if value is None:
        raise TypeError(f"{name} must be a real number > 0, got None")
    return check_positive(value, name, allow_zero=allow_zero, scalar=scalar)


def check_open_interval(value: Any, name: str, low: float = 0.0, high: float = 1.0, *,
                        closed_low: bool = False, scalar: bool = False) -> Any:
    """A real number (or array) strictly between ``low`` and ``high``
    (``low`` itself allowed with ``closed_low``)."""
    if type(value) is float and (low < value < high or (closed_low and value == low)):
        return value
    arr = as_real_array(value, name)
    _nonempty(arr, name)
    above = arr >= low if closed_low else arr > low
    if not np.all(np.isfinite(arr) & above & (arr < high)):
        left = "[" if closed_low else "("
        if low == 0.0 and high == 1.0 and not closed_low:
            what = "lie strictly between 0 and 1"
        else:
            what = f"lie in {left}{low:g}, {high:g})"
        raise ValueError(f"{name} must {what}, got {describe(value)}")
    return _finished(arr, value, scalar, name)


def check_delta(value: Any, name: str = "delta", *, allow_zero: bool = False,
                scalar: bool = False) -> Any:
    """A privacy parameter delta in (0, 1) (``[0, 1)`` with ``allow_zero``, for pure DP).

    ``None`` is refused with a :class:`TypeError` naming the argument.
    """
    if value is None:
        raise TypeError(f"{name} must be a real number in (0, 1), got None")
    return check_open_interval(value, name, closed_low=allow_zero, scalar=scalar)


def check_probability(value: Any, name: str = "p", *, scalar: bool = False) -> Any:
    """A probability strictly inside (0, 1)."""
    return check_open_interval(value, name, scalar=scalar)


#: Smallest failure probability ``beta`` of a bound that splits ``beta`` in
#: parts (the noise and the clipping loss of :mod:`dpsum.accuracy`): each part
#: must stay a normal float. A quantile of the noise alone takes any ``beta``
#: in (0, 1).
MIN_FAILURE_PROBABILITY = 1e-300


def check_failure_probability(value: Any, name: str = "beta", *, scalar: bool = True) -> Any:
    """A failure probability ``beta`` that a bound splits in parts: in
    ``[MIN_FAILURE_PROBABILITY, 1)`` (``1e-300``); below it the parts are no
    longer normal floats."""
    out = check_open_interval(value, name, scalar=scalar)
    if np.any(np.asarray(out) < MIN_FAILURE_PROBABILITY):
        raise ValueError(f"{name} must lie in [{MIN_FAILURE_PROBABILITY:g}, 1) (below it the "
                         f"bound's parts of {name} are not normal floats), got {describe(value)}")
    return out


def representable(result: Any, names: str, what: str, limit: str = "") -> Any:
    """The one overflow rule: a quantity computed from public arguments must be
    a finite float, else the arguments ``names`` are refused (a ValueError
    naming them and, when given, the representable range ``limit``).

    Used where a huge-but-valid parameter (``1e308``) makes a closed form
    overflow; ``result`` is returned unchanged when finite.
    """
    arr = np.asarray(result, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        hint = f": {limit}" if limit else ""
        raise ValueError(f"{names}: out of the representable range, {what} is not a "
                         f"finite float{hint}")
    return result


def check_integer(value: Any, name: str, minimum: int | None = 1, maximum: int | None = None,
                  *, array: bool = False) -> Any:
    """An integer (or, with ``array=True``, an array of integers) in ``[minimum, maximum]``.

    The rule (see the module documentation): Python and NumPy integers, and
    real numbers with an integral value (``3.0`` is ``3``); booleans are a
    :class:`TypeError`, fractional or non-finite values a :class:`ValueError`.
    Returns an ``int`` for scalar input and an int64 array otherwise.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not a boolean")
    _refuse_masked(value, name)
    if isinstance(value, numbers.Integral):
        out: Any = int(value)
        if not -_INT_LIMIT < out < _INT_LIMIT:
            raise ValueError(f"{name} must be an integer of magnitude below 2^63, "
                             f"got a {out.bit_length()}-bit integer")
        arr = None
    else:
        if value is None or isinstance(value, (str, bytes)):
            raise TypeError(f"{name} must be an integer, got {_type_name(value)}")
        try:
            scalar_like = isinstance(value, numbers.Real) or np.ndim(value) == 0
        except ValueError:      # a ragged sequence
            raise ValueError(f"{name} must be an integer or a rectangular array of integers, "
                             "got a ragged sequence") from None
        if scalar_like or array:
            try:
                arr = np.asarray(value)
            except ValueError:
                raise ValueError(f"{name} must be a rectangular array of integers") from None
            except Exception:  # pragma: no cover - exotic objects
                raise TypeError(f"{name} must be an integer, got {_type_name(value)}") from None
        else:
            raise TypeError(f"{name} must be an integer, got {describe(value)}")
        if arr.dtype == np.bool_:
            raise TypeError(f"{name} must hold integers, not booleans")
        if arr.dtype == object and arr.size and all(
                isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                for v in arr.flat):
            if any(not -_INT_LIMIT < int(v) < _INT_LIMIT for v in arr.flat):
                raise ValueError(f"{name} must be an integer of magnitude below 2^63 (every entry)")
            arr = arr.astype(np.int64)
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
                raise ValueError(f"{name} must be a whole number, got {describe(value)}")
            if not np.all(np.abs(arr) < _INTEGRAL_LIMIT):
                raise ValueError(f"{name} must be an integer of magnitude below 2^63, "
                                 f"got {describe(value)}")
        elif arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be an integer or an array of integers, "
                            f"got dtype {arr.dtype}")
        elif arr.dtype.kind == "u" and arr.size and arr.max() >= _INT_LIMIT:
            raise ValueError(f"{name} must be an integer of magnitude below 2^63 (every entry)")
        if arr.ndim and not array:
            raise ValueError(f"{name} must be a scalar integer, got an array of shape {arr.shape}")
        _nonempty(arr, name)
        out = int(arr) if arr.ndim == 0 else arr.astype(np.int64)
    low_ok = minimum is None or np.all(np.asarray(out) >= minimum)
    high_ok = maximum is None or np.all(np.asarray(out) <= maximum)
    if not (low_ok and high_ok):
        if minimum == 1 and maximum is None:
            what = "a positive integer"
        elif maximum is None:
            what = f"an integer >= {minimum}"
        elif minimum is None:
            what = f"an integer <= {maximum}"
        else:
            what = f"an integer between {minimum} and {maximum}"
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    return out


def check_count(value: Any, n: int, name: str) -> np.ndarray:
    """Counts ``0 <= k <= n`` (an integer or an array of them), as float64."""
    k = check_integer(value, name, 0, array=True)
    if np.any(np.asarray(k) > n):
        raise ValueError(f"{name} must lie between 0 and n = {n}")
    return np.asarray(k, dtype=np.float64)


def check_size(size: Any, name: str = "size") -> int | tuple[int, ...] | None:
    """An output shape: None, a non-negative integer or a tuple of them."""
    if size is None:
        return None
    if isinstance(size, (tuple, list)):
        return tuple(check_integer(s, name, 0) for s in size)
    return check_integer(size, name, 0)


def check_bool(value: Any, name: str) -> bool:
    """``True`` or ``False`` only (Python or NumPy booleans)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {describe(value)}")
    return bool(value)


#: The named objectives of the ``objective`` argument (a vector of weights is the third form).
OBJECTIVES = ("total", "relative")


def check_objective(objective: Any, d: int, *, frame: bool = False) -> str | np.ndarray:
    """The ``objective`` argument: ``"total"``, ``"relative"`` or a vector of
    ``d`` positive per-column weights on the squared error (returned as a
    float array). None is the default: ``"relative"`` for a DataFrame
    (``frame``), ``"total"`` otherwise."""
    if objective is None:
        return "relative" if frame else "total"
    if isinstance(objective, str):
        return check_choice(objective, "objective", OBJECTIVES)
    if isinstance(objective, (bool, np.bool_)) or np.ndim(objective) != 1:
        raise TypeError("objective must be 'total', 'relative' or a 1-d vector of positive "
                        f"per-column weights, got {describe(objective)}")
    w = check_vector(objective, "objective", d, positive=True)
    return w


def objective_record(objective: str | np.ndarray) -> dict:
    """The record's fields ``objective`` and ``objective_weights`` of a checked objective."""
    if isinstance(objective, str):
        return {"objective": objective, "objective_weights": None}
    return {"objective": "weights", "objective_weights": objective}


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of the strings ``choices``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {tuple(choices)}, got {describe(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got another string")
    return value


def check_finite_array(X: Any, name: str = "X", *, ndim: int | None = None,
                       finite: bool = True, empty_rows: bool = False) -> np.ndarray:
    """``X`` as a float64 array after checking it is real and (by default) finite.

    The input is never modified; a copy is made only when a dtype conversion
    is needed. ``finite=False`` leaves the NaN/inf check to the caller, which
    must then do it in its own pass before releasing anything.
    ``empty_rows=True`` accepts an array with no rows (its other dimensions
    still positive): a dataset under add-remove, where the empty dataset is
    data like any other (:func:`require_rows` is the rule for the relation).
    """
    arr = as_real_array(X, name)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not (empty_rows and arr.ndim >= 1 and arr.shape[0] == 0
                              and all(k > 0 for k in arr.shape[1:])):
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_data_matrix(X: Any, name: str = "X", *, finite: bool = True,
                      empty_rows: bool = False) -> np.ndarray:
    """A dataset: a real matrix of shape (n, d) with n, d >= 1 (n >= 0 with
    ``empty_rows``; see :func:`check_finite_array`)."""
    return check_finite_array(X, name, ndim=2, finite=finite, empty_rows=empty_rows)


def require_rows(n: int, public: bool, name: str = "X") -> None:
    """The rule for an empty dataset. Under replace-one (``public``: the number
    of rows is public) a dataset needs a row: the empty dataset has no
    replace-one neighbour. Under add-remove the empty dataset and a one-row
    dataset are neighbours, so refusing one of them would be an output that
    depends on the data: nothing is checked."""
    if public and n == 0:
        raise ValueError(f"{name} must hold at least one row under replace-one neighbouring "
                         "(the empty dataset has no replace-one neighbour); use "
                         "neighbouring='add-remove'")


def check_vector(v: Any, name: str, d: int | None = None, *, positive: bool = False,
                 nonnegative: bool = False) -> np.ndarray:
    """A finite 1-d vector, optionally of length ``d`` and positive (or ``>= 0``)."""
    arr = check_finite_array(v, name, ndim=1)
    if d is not None and arr.shape[0] != d:
        raise ValueError(f"{name} must have length {d} (one entry per column), got {arr.shape[0]}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0 in every coordinate")
    if nonnegative and not np.all(arr >= 0):
        raise ValueError(f"{name} must be >= 0 in every coordinate")
    return arr


def check_center(value: Any, d: int, name: str = "center") -> np.ndarray:
    """A public center: a finite scalar (the same in every coordinate) or a
    length-``d`` vector; returned as a float64 vector of length ``d``."""
    arr = np.asarray(check_real(value, name), dtype=np.float64)
    if arr.ndim == 0:
        return np.full(d, float(arr))
    return check_vector(arr, name, d)


def check_bits(bits: Any, name: str = "bits", *, empty: bool = False) -> np.ndarray:
    """A non-empty 1-d array of bits: booleans, or integers equal to 0 or 1.

    Floats are refused even when they equal 0.0 or 1.0, so that a fraction or
    a probability passed by mistake is not silently accepted. ``empty=True``
    accepts no bits at all (add-remove: no users is data like any other).
    """
    if bits is None or isinstance(bits, (str, bytes)) or np.isscalar(bits):
        raise TypeError(f"{name} must be a 1-d array of 0/1 integers or booleans, "
                        f"got {_type_name(bits)}")
    _refuse_masked(bits, name)
    try:
        arr = np.asarray(bits)
    except ValueError:
        raise ValueError(f"{name} must be a 1-d array (the nested sequences have "
                         "different lengths)") from None
    except Exception:  # pragma: no cover - exotic objects
        raise TypeError(f"{name} must be a 1-d array of 0/1 integers or booleans, "
                        f"got {_type_name(bits)}") from None
    if empty and arr.shape == (0,) and arr.dtype.kind in "biuf":
        return np.zeros(0, dtype=np.bool_)     # [] is float64 to NumPy
    if arr.dtype == np.bool_:
        out = arr
    elif arr.dtype.kind in "iu":
        if arr.ndim == 1 and arr.size and not np.all((arr == 0) | (arr == 1)):
            raise ValueError(f"{name} must hold only 0 and 1")
        out = arr.astype(np.bool_)
    else:
        raise TypeError(f"{name} must be a 1-d array of 0/1 integers or booleans, "
                        f"got dtype {arr.dtype}")
    if out.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if out.size == 0:
        raise ValueError(f"{name} must not be empty")
    return out


def check_rng(rng: Any) -> np.random.Generator:
    """``rng`` as a :class:`numpy.random.Generator` (SPEC 7): the one rng rule.

    Accepts a Generator (returned as it is), a non-negative integer seed, a
    :class:`numpy.random.SeedSequence` or ``None`` (fresh entropy). The grid
    path's exact samplers accept the same values and read ``None`` as the
    operating system's CSPRNG (:func:`check_secure_rng`).
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError("rng must be a numpy.random.Generator, a SeedSequence, an int seed "
                        "or None, got a bool")
    if isinstance(rng, numbers.Integral):
        if rng < 0:
            raise ValueError("rng must be a non-negative int seed (or a Generator, a "
                             "SeedSequence or None), got a negative integer")
        return np.random.default_rng(int(rng))
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise TypeError("rng must be a numpy.random.Generator, a SeedSequence, an int seed or "
                    f"None, got {type(rng).__name__}")


def check_secure_rng(rng: Any) -> np.random.Generator | None:
    """The rng rule of the grid path: ``None`` stays ``None`` (the operating
    system's CSPRNG, ``os.urandom``); anything else is :func:`check_rng`'s
    (reproducible, not secure)."""
    return None if rng is None else check_rng(rng)


def check_callable(value: Any, name: str, how: str) -> Any:
    """A callable; ``how`` says how it will be called (for the message)."""
    if not callable(value):
        raise TypeError(f"{name} must be callable as {how}")
    return value


def check_box(lower: Any, upper: Any, d: int, names: tuple[str, str] = ("lower", "upper")
              ) -> tuple[np.ndarray, np.ndarray]:
    """A public box: ``lower`` and ``upper`` scalars or length-``d`` vectors,
    finite, ``lower < upper`` in every coordinate, with a finite width.

    Returns both ends as float64 vectors of length ``d``.

    Examples
    --------
    >>> lo, hi = check_box(-1, [1.0, 2.0], 2)
    >>> lo.tolist(), hi.tolist()
    ([-1.0, -1.0], [1.0, 2.0])
    """
    ends = []
    for value, name in zip((lower, upper), names):
        if value is None:
            raise TypeError(f"{name} is required: give the public box as {names[0]} and "
                            f"{names[1]} (scalars or one entry per column)")
        arr = check_real(value, name)
        arr = np.asarray(arr, dtype=np.float64)
        if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != d):
            raise ValueError(f"{name} must be a scalar or have length {d} (one entry per "
                             f"column), got shape {arr.shape}")
        ends.append(np.array(np.broadcast_to(arr, (d,)), dtype=np.float64))
    lo, hi = ends
    if not np.all(lo < hi):
        raise ValueError(f"{names[0]} must be < {names[1]} in every coordinate")
    with np.errstate(over="ignore"):
        if not np.all(np.isfinite(hi - lo)):
            raise ValueError(f"the box width {names[1]} - {names[0]} overflows: rescale the data")
    return lo, hi


def _is_frame(value: Any) -> bool:
    """Whether ``value`` looks like a pandas DataFrame (checked without importing pandas)."""
    return (hasattr(value, "columns") and hasattr(value, "dtypes")
            and hasattr(value, "to_numpy") and getattr(value, "ndim", 0) == 2)


def _is_series(value: Any) -> bool:
    return (hasattr(value, "index") and hasattr(value, "dtype") and hasattr(value, "to_numpy")
            and getattr(value, "ndim", 0) == 1 and not isinstance(value, np.ndarray))


def column_labels(value: Any) -> tuple | None:
    """The column labels of a DataFrame (the name of a Series), else None."""
    if _is_frame(value):
        return tuple(value.columns)
    if _is_series(value):
        return (value.name,)
    return None


def index_labels(value: Any) -> tuple | None:
    """The index labels of a pandas Series (a labelled statistic), else None."""
    return tuple(value.index) if _is_series(value) else None


def as_dataset(X: Any, name: str = "X", *, finite: bool = True,
               empty_rows: bool = False) -> tuple[np.ndarray, tuple | None]:
    """A dataset as a float64 matrix and its column labels (None for an array).

    A pandas ``DataFrame`` is checked column by column, so an error names the
    column (a non-numeric dtype, NaN or infinite values) but never a row, a
    count or a value; a ``Series`` is one column. Anything else goes through
    :func:`check_data_matrix`. ``empty_rows=True`` accepts no rows (add-remove).

    Examples
    --------
    >>> arr, labels = as_dataset([[1.0, 2.0]])
    >>> arr.shape, labels
    ((1, 2), None)
    """
    labels = column_labels(X)
    if labels is None:
        return check_data_matrix(X, name, finite=finite, empty_rows=empty_rows), None
    frame = X.to_frame() if _is_series(X) else X
    if len(labels) == 0:
        raise ValueError(f"{name} must have at least one column")
    if len(set(map(str, labels))) != len(labels):
        raise ValueError(f"{name} must have distinct column labels")
    cols = []
    for j, label in enumerate(labels):
        col = frame.iloc[:, j]
        kind = getattr(col.dtype, "kind", "O")
        if kind == "b" or kind not in "iuf":
            raise TypeError(f"{name} column {str(label)!r} must hold real numbers, "
                            f"got dtype {col.dtype}")
        values = np.asarray(col.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
        if finite and not np.all(np.isfinite(values)):
            raise ValueError(f"{name} column {str(label)!r} contains NaN or infinite values")
        cols.append(values)
    arr = np.column_stack(cols) if cols[0].size else np.empty((0, len(cols)))
    if arr.shape[0] == 0 and not empty_rows:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    return arr, labels


def read_only_copy(value: Any) -> np.ndarray | None:
    """A read-only float64 copy of ``value`` (None stays None): how records
    hold arrays, never the caller's."""
    if value is None:
        return None
    out = np.array(value, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------- records
# The public record constructors (Release, PipelineRelease, Intervals, ...)
# validate their fields with these, naming the field: a record is a claim
# about a release, so an impossible one (epsilon = -1, noise_std = [nan]) is
# refused when it is built, not when an accuracy method returns NaN.
def record_array(value: Any, name: str, *, positive: bool = False, nonnegative: bool = False,
                 finite: bool = True, shape: tuple | None = None, size: int | None = None,
                 optional: bool = True) -> np.ndarray | None:
    """An array field as a read-only float64 copy (None stays None when
    ``optional``): real, never NaN, finite unless ``finite=False``, ``> 0``
    with ``positive`` (``>= 0`` with ``nonnegative``), of ``shape`` or, as a
    1-d vector, of length ``size``."""
    if value is None:
        if optional:
            return None
        raise TypeError(f"{name} is required (an array of real numbers), got None")
    arr = as_real_array(value, name)
    if not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name} must not contain NaN")
        if finite:
            raise ValueError(f"{name} must be finite")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0 in every coordinate")
    if nonnegative and not np.all(arr >= 0):
        raise ValueError(f"{name} must be >= 0 in every coordinate")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (that of the estimate), "
                         f"got {arr.shape}")
    if size is not None and (arr.ndim != 1 or arr.size != size):
        raise ValueError(f"{name} must be a vector of length {size} (one entry per "
                         f"coordinate of the estimate), got shape {arr.shape}")
    return read_only_copy(arr)


def record_scalar(value: Any, name: str, *, low: float = -math.inf, high: float = math.inf,
                  closed_low: bool = True, closed_high: bool = True, optional: bool = False,
                  integer: bool = False, finite: bool = True) -> Any:
    """A scalar field: a finite real (an ``int`` with ``integer``) in the
    interval from ``low`` to ``high`` (ends closed unless said); None stays
    None when ``optional``."""
    if type(value) is float and low <= value <= high and math.isfinite(value) \
            and (closed_low or value != low) and (closed_high or value != high) \
            and not integer:
        return value         # fast path: a plain float already in range
    if value is None:
        if optional:
            return None
        raise TypeError(f"{name} is required (a real number), got None")
    if integer:
        out: Any = check_integer(value, name, None)
    else:
        out = check_real(value, name, scalar=True, finite=finite)
    ok_low = out >= low if closed_low else out > low
    ok_high = out <= high if closed_high else out < high
    if not (ok_low and ok_high):
        left, right = "[" if closed_low else "(", "]" if closed_high else ")"
        raise ValueError(f"{name} must lie in {left}{low:g}, {high:g}{right}, "
                         f"got {describe(value)}")
    return out


def record_choice_tuple(value: Any, name: str, kind: type = str, *,
                        optional: bool = False) -> tuple | None:
    """A tuple field (``notes``, ``columns``, ``steps``): a tuple (or list) of
    ``kind``; None stays None when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{name} must be a tuple, got {describe(value)}")
    if kind is not object and not all(isinstance(v, kind) for v in value):
        raise TypeError(f"{name} must hold {kind.__name__} values")
    return tuple(value)


def check_record(value: Any, name: str, kinds: tuple[type, ...] | None = None, *,
                 attributes: tuple[str, ...] = (), what: str = "a dpsum release") -> Any:
    """A record argument (``release``): an instance of ``kinds`` or, where the
    record's class lives in a higher module, any object with ``attributes``."""
    ok = isinstance(value, kinds) if kinds else all(hasattr(value, a) for a in attributes)
    if not ok:
        raise TypeError(f"{name} must be {what}, got {describe(value)}")
    return value


def _rebuild_record(cls: type, fields: dict) -> Any:
    """Unpickling (and deep-copying) a record goes through its constructor,
    which validates the fields and makes the read-only copies again."""
    return cls(**fields)


def check_record_fields(rec: Any, infinite: tuple = ()) -> None:
    """The type rule of a record's fields, read from their annotations:
    ``float`` a finite real (``+-inf`` allowed for the fields in
    ``infinite``; never NaN), ``int`` an integer, ``bool`` a boolean, ``str`` a
    string, ``np.ndarray`` a real array held as a read-only copy, ``tuple`` a
    tuple; ``X | None`` admits None. Each error names the field. A record
    with constraints beyond the type (ranges, shapes) checks them itself."""
    for f in dataclasses.fields(rec):
        ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        optional = ann.replace(" ", "").endswith("|None")
        base = ann.replace(" ", "").removesuffix("|None")
        value = getattr(rec, f.name)
        if value is None and optional:
            continue
        finite = f.name not in infinite
        if base == "float":
            new: Any = record_scalar(value, f.name, finite=finite)
        elif base == "int":
            new = record_scalar(value, f.name, integer=True)
        elif base == "bool":
            new = check_bool(value, f.name)
        elif base == "str":
            if not isinstance(value, str):
                raise TypeError(f"{f.name} must be a str, got {describe(value)}")
            new = value
        elif base == "np.ndarray":
            new = record_array(value, f.name, finite=finite, optional=False)
        elif base.startswith("tuple"):
            new = record_choice_tuple(value, f.name, object)
        else:
            continue
        object.__setattr__(rec, f.name, new)


class Record:
    """Mixin of the frozen dataclass records: ``pickle`` and ``copy.deepcopy``
    rebuild the record through its constructor (so array fields come back as
    read-only copies, and a tampered pickle is validated like any input), and
    the fields are checked by :func:`check_record_fields` unless the record
    defines its own ``__post_init__``."""

    __slots__ = ()

    def __post_init__(self) -> None:
        check_record_fields(self)

    def __reduce__(self) -> tuple:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)  # type: ignore[arg-type]
                  if f.init}
        return (_rebuild_record, (type(self), fields))
