"""Private estimates of a data model: coordinate-wise center, scales, norm quantiles.

The Gaussian-data mechanism needs a center ``c`` and per-coordinate scales ``sigma`` that do
not depend on the data. When nobody can supply them, they are estimated from
the data with their own privacy budget (the chapter :ref:`When the data model is unknown <unknown-model>`). Every estimate here is an exponential-mechanism quantile:

- :func:`exponential_quantile` — the mechanism itself, column by column:
  the output falls in the gap between two consecutive sorted values with
  probability proportional to the gap's length times
  ``exp(epsilon * u / (2 Delta_u))``, where ``u = -|k - q m|`` is minus the
  distance of the gap's rank ``k`` from the target rank ``q m``.
- :func:`private_center` — the coordinate-wise median on the ``asinh`` scale;
- :func:`private_scales` — the coordinate-wise median absolute deviation
  from a (private) center on the log scale, made consistent for Gaussian data;
- :func:`private_norm_quantile` — a quantile of the row norms
  ``||(x_i - c) ⊙ b||`` on the log scale (book chapter "Clipping without a
  model": the private choice of a clip radius); :func:`norm_quantile_law`
  is the exact law of its output.

Why transformed scales. The exponential mechanism weighs each gap by its
length, so the long empty stretches between the data and the ends of a wide
public domain attract the output when the budget is small. A monotone
transform changes which lengths count but not the ranks, so the privacy
guarantee is unchanged; on the log (or ``asinh``) scale an empty stretch
counts by its number of orders of magnitude, not its width.

Privacy. Each column's quantile is ``epsilon``-DP and ``epsilon``-bounded-range,
hence ``epsilon^2/8``-zCDP (:func:`dpsum.privacy.zcdp_rho_bounded_range`),
for the utility sensitivity ``Delta_u`` of the neighbouring relation: one
replaced row moves the rank of a gap by at most 1 (``Delta_u = 1``); one added
or removed row moves it by at most ``max(q, 1 - q)`` because the target rank
``q m`` moves too. A row enters each column once, so a function applied to
``d`` columns is ``d`` such mechanisms (their budgets compose).

.. warning::
   The sampler uses floating-point arithmetic and is not protected against
   floating-point attacks on the output's low-order bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp, ndtri

from dpsum import _validation as V
from dpsum.data import Dataset, RowCount, RowValues, as_data
from dpsum.engines.dask import run_pass
from dpsum.privacy.neighbouring import Neighbouring
from dpsum.session import BoundedRangeEvent, as_session
from dpsum.session import charge as charge_session

__all__ = [
    "MAD_TO_STD",
    "quantile_sensitivity",
    "exponential_quantile",
    "check_domain",
    "private_center",
    "private_scales",
    "scales_step",
    "private_norm_quantile",
    "norm_quantile_law",
    "row_norms",
]


#: ``1 / Phi^{-1}(3/4)``: the median absolute deviation of ``N(mu, sigma^2)``
#: from ``mu`` is ``sigma * Phi^{-1}(3/4)``, so a MAD times this constant
#: estimates ``sigma``.
MAD_TO_STD = float(1.0 / ndtri(0.75))


#: Relative resolution of the ``asinh`` scale: ``w = (hi - lo) * 2**-30``.
ASINH_RESOLUTION = 2.0 ** -30


# gaps evaluated per block: about 32 MiB of float64 per temporary
_BLOCK_ELEMENTS = 1 << 22


def quantile_sensitivity(quantile: float, neighbouring: Neighbouring | str = "replace") -> float:
    """Sensitivity of the rank utility ``u = -|k - q m|`` of a quantile.

    1 under replace-one (a replaced value moves a gap's rank ``k`` by at most
    one, ``m`` is fixed) and ``max(q, 1 - q)`` under add-remove (``k`` moves
    by 0 or 1 and the target ``q m`` by ``q``).

    Examples
    --------
    >>> quantile_sensitivity(0.5), quantile_sensitivity(0.5, "add-remove")
    (1.0, 0.5)
    """
    q = _quantile(quantile)
    if Neighbouring.parse(neighbouring) is Neighbouring.REPLACE:
        return 1.0
    return max(q, 1.0 - q)


def _quantile(quantile: Any) -> float:
    q = V.check_real(quantile, "quantile", scalar=True)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {V.describe(q)}")
    return float(q)


def _bounds(lower: Any, upper: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    return V.check_box(lower, upper, k)        # the one box rule (names lower, upper)


def _sample(values: np.ndarray, q: float, coef: float, lo: np.ndarray, hi: np.ndarray,
            gen: np.random.Generator) -> np.ndarray:
    """The exponential mechanism on the columns of ``values`` (already validated,
    possibly holding +-inf, which clamping maps to the bounds)."""
    m, k = values.shape
    out = np.empty(k)
    # the utility of gap j (j values below it) is -|j - q m|; scaled once
    log_score = -np.abs(np.arange(m + 1, dtype=np.float64) - q * m) * coef
    block = max(1, _BLOCK_ELEMENTS // (m + 2))
    for start in range(0, k, block):
        cols = slice(start, min(k, start + block))
        w = cols.stop - cols.start
        edges = np.empty((m + 2, w))
        edges[0] = lo[cols]
        edges[-1] = hi[cols]
        np.clip(values[:, cols], lo[cols], hi[cols], out=edges[1:-1])
        edges[1:-1].sort(axis=0)
        gaps = np.diff(edges, axis=0)
        with np.errstate(divide="ignore"):
            weights = np.log(gaps)           # an empty gap has weight 0 (log = -inf)
        weights += log_score[:, None]
        # Gumbel-max sampling: argmax of log-weight plus Gumbel noise draws a
        # gap with probability proportional to its weight
        weights += gen.gumbel(size=weights.shape)
        pick = np.argmax(weights, axis=0)
        col = np.arange(w)
        left, right = edges[pick, col], edges[pick + 1, col]
        out[cols] = left + gen.random(w) * (right - left)
    return out


def exponential_quantile(values: ArrayLike, quantile: float, *, epsilon: float, lower: ArrayLike,
                         upper: ArrayLike, neighbouring: Neighbouring | str = "replace",
                         rng: Any=None, session: Any = None) -> np.ndarray | float:
    """The exponential-mechanism quantile of each column of ``values``.

    The values of a column are clamped to ``[lower, upper]`` and sorted into
    ``s_1 <= ... <= s_m``; with ``s_0 = lower`` and ``s_{m+1} = upper`` the
    output falls in gap ``[s_k, s_{k+1}]`` with probability proportional to
    ``(s_{k+1} - s_k) exp(epsilon u_k / (2 Delta_u))``, ``u_k = -|k - q m|``,
    and is uniform inside it (McSherry and Talwar 2007; the quantile form of
    Smith 2011 and Kaplan, Schnapp and Stemmer 2022). ``Delta_u`` is
    :func:`quantile_sensitivity`.

    Privacy: each column is ``epsilon``-DP and ``epsilon``-bounded-range, so
    ``epsilon^2/8``-zCDP; ``k`` columns cost ``k`` times that.

    Parameters
    ----------
    values : array_like, shape (m,) or (m, k)
        One value per row (and column). ``+-inf`` is allowed and clamped;
        NaN is refused. Under add-remove ``m = 0`` is data like any other.
    quantile : float
        The target ``q`` in [0, 1].
    epsilon : float
        The privacy parameter of each column's mechanism, > 0.
    lower, upper : float or array_like, shape (k,)
        Public bounds with ``lower < upper``; values outside are clamped.
    neighbouring : {"replace", "add-remove"}
        The neighbouring relation the guarantee refers to.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    session : dpsum.session.Session, optional
        The analysis's budget: charged (``k bounded-range steps of epsilon, one per column``), or refused if it does
        not fit, before the data's values are read; without one the release
        is a one-off.

    Returns
    -------
    float or numpy.ndarray, shape (k,)
        A float for 1-d ``values``.

    Examples
    --------
    >>> x = np.arange(1001.0)
    >>> q = exponential_quantile(x, 0.5, epsilon=1.0, lower=0.0, upper=1000.0, rng=0)
    >>> bool(abs(q - 500) < 25)
    True
    """
    q = _quantile(quantile)
    eps = V.check_epsilon(epsilon, scalar=True)
    relation = Neighbouring.parse(neighbouring)
    # no rows is data under add-remove (the empty dataset has a one-row neighbour)
    arr = V.check_finite_array(values, "values", finite=False,
                               empty_rows=relation is Neighbouring.ADD_REMOVE)
    if arr.ndim not in (1, 2):
        raise ValueError(f"values must be 1- or 2-dimensional, got shape {arr.shape}")
    flat = arr.ndim == 1
    lo, hi = _bounds(lower, upper, 1 if flat else arr.shape[1])   # public: before the data
    gen = V.check_rng(rng)
    charge_session(as_session(session), BoundedRangeEvent(eps, 1 if flat else arr.shape[1]),
                   mechanism="exponential_quantile", neighbouring=relation,
                   parameters={"epsilon": eps, "quantile": q})
    if np.isnan(arr).any():
        raise ValueError("values contains NaN")
    table = arr[:, None] if flat else arr
    coef = eps / (2.0 * quantile_sensitivity(q, relation))
    out = _sample(table, q, coef, lo, hi, gen)
    return float(out[0]) if flat else out


def check_domain(lower: Any, upper: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate a public box ``[lower, upper]`` (the package's one box rule,
    ``dpsum._validation.check_box``), wide enough for the asinh scale."""
    lo, hi = V.check_box(lower, upper, V.check_integer(d, "d"))
    if np.any((hi - lo) * ASINH_RESOLUTION < np.finfo(np.float64).tiny):
        raise ValueError("the box [lower, upper] is too narrow: its width must be at least "
                         "2^-992 (about 2e-299) in every coordinate, so that the asinh "
                         "resolution width * 2^-30 is a normal float; rescale the data")
    return lo, hi


def private_center(X: ArrayLike, *, epsilon: float, lower: Any, upper: Any,
                   neighbouring: Neighbouring | str = "replace", rng: Any=None,
                   session: Any = None) -> np.ndarray:
    """Coordinate-wise private median on the ``asinh`` scale.

    Coordinate ``j`` is mapped to ``t = asinh((x - m_j) / w_j)`` with ``m_j``
    the midpoint of the domain and ``w_j = (hi_j - lo_j) 2^-30``; the
    exponential-mechanism median of ``t`` (:func:`exponential_quantile`,
    bounds the images of the domain) is mapped back. Ranks, and so the
    privacy guarantee, are those of the untransformed median; the transform
    only makes the empty parts of a wide domain count by their orders of
    magnitude. Values outside the domain are clamped to it.

    Privacy: ``d`` mechanisms, each ``epsilon``-DP and ``epsilon^2/8``-zCDP.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The data; finite reals. Under add-remove ``n = 0`` is data like any
        other (the output is then drawn from the domain alone); under
        replace-one ``X`` needs a row.
    epsilon : float
        Per-coordinate privacy parameter, > 0.
    lower, upper : float or array_like, shape (d,)
        A public box: scalars, or length-``d`` vectors, ``lower < upper``.
    neighbouring : {"replace", "add-remove"}
    rng : numpy.random.Generator, int or None

    session : dpsum.session.Session, optional
        The analysis's budget: charged (``d bounded-range steps of epsilon``), or refused if it does
        not fit, before the data's values are read; without one the release
        is a one-off.

    Returns
    -------
    numpy.ndarray, shape (d,)
        The private center, inside the box.
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    relation = Neighbouring.parse(neighbouring)
    data = _dataset(X, relation)
    lo, hi = check_domain(lower, upper, data.d)
    gen = V.check_rng(rng)
    charge_session(as_session(session), BoundedRangeEvent(eps, data.d),
                   mechanism="private_center", neighbouring=relation,
                   parameters={"epsilon": eps, "d": data.d})
    data.require_finite()
    t = run_pass(RowValues(center_values, (lo, hi)), data)
    return center_from_values(t, eps, lo, hi, quantile_sensitivity(0.5, relation), gen)


def center_values(block: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The center step's per-row values: ``asinh((x - m) / w)``, element-wise
    (a function of each value alone; the step sorts them)."""
    mid = lo + 0.5 * (hi - lo)
    w = (hi - lo) * ASINH_RESOLUTION
    with np.errstate(over="ignore"):
        return np.arcsinh((block - mid) / w)


def center_from_values(t: np.ndarray, eps: float, lo: np.ndarray, hi: np.ndarray, du: float,
                       gen: np.random.Generator) -> np.ndarray:
    """The center step's exponential mechanism on the values of :func:`center_values`."""
    mid = lo + 0.5 * (hi - lo)
    w = (hi - lo) * ASINH_RESOLUTION
    t_lo, t_hi = np.arcsinh((lo - mid) / w), np.arcsinh((hi - mid) / w)
    out = mid + w * np.sinh(_sample(t, 0.5, eps / (2.0 * du), t_lo, t_hi, gen))
    return np.clip(out, lo, hi)


def private_scales(X: ArrayLike, center: ArrayLike, *, epsilon: float, min_scale: ArrayLike,
                   max_scale: ArrayLike, neighbouring: Neighbouring | str = "replace",
                   rng: Any=None, session: Any = None) -> np.ndarray:
    """Per-coordinate private scales: the median absolute deviation on the log scale.

    For coordinate ``j`` the values ``log |x_ij - c_j|``, clamped to
    ``[log min_scale, log max_scale]``, enter the exponential-mechanism median
    (:func:`exponential_quantile`); the result, mapped back, is multiplied by
    ``MAD_TO_STD``, so that it estimates ``sigma_j`` for Gaussian data
    centred at ``c``. The center must be public or a private release of its
    own (:func:`private_center`); a center far off in some coordinate inflates
    that coordinate's scale, which keeps a later clipping step from cutting
    every record (the chapter :ref:`When the data model is unknown <unknown-model>`).

    Privacy: ``d`` mechanisms, each ``epsilon``-DP and ``epsilon^2/8``-zCDP.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The data; finite reals. Under add-remove ``n = 0`` is data like any
        other (the output is then drawn from the domain alone); under
        replace-one ``X`` needs a row.
    center : array_like, shape (d,)
        The public (or privately released) center.
    epsilon : float
        Per-coordinate privacy parameter, > 0.
    min_scale, max_scale : float or array_like, shape (d,)
        Public bounds on the median absolute deviation, ``0 < min < max``.
    neighbouring : {"replace", "add-remove"}
    rng : numpy.random.Generator, int or None

    session : dpsum.session.Session, optional
        The analysis's budget: charged (``d bounded-range steps of epsilon``), or refused if it does
        not fit, before the data's values are read; without one the release
        is a one-off.

    Returns
    -------
    numpy.ndarray, shape (d,)
        The private scales, in ``[min_scale, max_scale] * MAD_TO_STD``.
    """
    eps = V.check_epsilon(epsilon, scalar=True)
    relation = Neighbouring.parse(neighbouring)
    data = _dataset(X, relation)
    d = data.d
    c = V.check_vector(center, "center", d)
    lo, hi = V.check_box(V.check_positive(min_scale, "min_scale"),
                         V.check_positive(max_scale, "max_scale"), d,
                         names=("min_scale", "max_scale"))
    if not np.all(lo < hi):
        raise ValueError("min_scale must be < max_scale in every coordinate")
    gen = V.check_rng(rng)
    charge_session(as_session(session), BoundedRangeEvent(eps, d), mechanism="private_scales",
                   neighbouring=relation, parameters={"epsilon": eps, "d": d})
    data.require_finite()
    t = run_pass(RowValues(scales_values, (c,)), data)
    return scales_from_values(t, eps, lo, hi, quantile_sensitivity(0.5, relation), gen)


def scales_step(data: np.ndarray, c: np.ndarray, eps: float, lo: np.ndarray, hi: np.ndarray,
            du: float, gen: np.random.Generator) -> np.ndarray:
    """:func:`private_scales` on validated inputs."""
    return scales_from_values(scales_values(data, c), eps, lo, hi, du, gen)


def scales_values(block: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The scale step's per-row values ``log |x - c|``, element-wise."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.log(np.abs(block - c))     # log 0 = -inf and overflow = +inf are clamped


def scales_from_values(t: np.ndarray, eps: float, lo: np.ndarray, hi: np.ndarray, du: float,
                       gen: np.random.Generator) -> np.ndarray:
    """The scale step's exponential mechanism on the values of :func:`scales_values`."""
    return np.exp(_sample(t, 0.5, eps / (2.0 * du), np.log(lo), np.log(hi), gen)) * MAD_TO_STD


def row_norms(data: np.ndarray, c: np.ndarray | None, b: np.ndarray | None) -> np.ndarray:
    """``||(x_i - c) ⊙ b||`` for every row of validated ``data``, in row blocks
    (+inf on overflow)."""
    n, d = data.shape
    rows = max(1, _BLOCK_ELEMENTS // 4 // d)
    out = np.empty(n)
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, n, rows):
            block = data[start:start + rows]
            if c is not None:
                block = block - c
            if b is not None:
                block = block * b
            scale = np.max(np.abs(block), axis=1)
            safe = np.where(scale > 0, scale, 1.0)
            out[start:start + rows] = scale * np.sqrt(np.einsum("ij,ij->i", block / safe[:, None],
                                                                block / safe[:, None]))
    return np.where(np.isnan(out), np.inf, out)


def private_norm_quantile(X: ArrayLike, quantile: float, *, epsilon: float, lower: float,
                          upper: float, center: ArrayLike | None = None,
                          scaling: ArrayLike | None = None,
                          neighbouring: Neighbouring | str = "replace", rng: Any=None,
                          session: Any = None) -> float:
    """A private quantile of the row norms ``||(x_i - c) ⊙ b||`` on the log scale.

    The log norms, clamped to ``[log lower, log upper]``, enter the
    exponential mechanism (:func:`exponential_quantile`). ``center`` and
    ``scaling`` must be public or private releases of their own.

    Privacy: one mechanism, ``epsilon``-DP and ``epsilon^2/8``-zCDP.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The data; finite reals. Under add-remove ``n = 0`` is data like any
        other (the output is then drawn from the domain alone); under
        replace-one ``X`` needs a row.
    quantile : float
        The target ``q`` in [0, 1]. Away from the top (``q = 1/2``, say) the
        mechanism is reliable even for small ``epsilon``; near ``q = 1`` the
        empty stretch above the largest norm competes with the few ranks
        above the target.
    epsilon : float
        Privacy parameter, > 0.
    lower, upper : float
        Public bounds on the norm, ``0 < lower < upper``.
    center, scaling : array_like, shape (d,), optional
        ``c`` (default 0) and ``b`` (default 1).
    neighbouring : {"replace", "add-remove"}
    rng : numpy.random.Generator, int or None

    session : dpsum.session.Session, optional
        The analysis's budget: charged (``one bounded-range step of epsilon``), or refused if it does
        not fit, before the data's values are read; without one the release
        is a one-off.

    Returns
    -------
    float
    """
    q, eps, du, lo, hi, data, c, b = _norm_quantile_inputs(
        X, quantile, epsilon, lower, upper, center, scaling, neighbouring)
    gen = V.check_rng(rng)
    charge_session(as_session(session), BoundedRangeEvent(eps), mechanism="private_norm_quantile",
                   neighbouring=neighbouring, parameters={"epsilon": eps, "quantile": q})
    data.require_finite()
    t = run_pass(RowValues(norm_values, (c, b)), data)
    return log_quantile_from_values(t, q, eps, lo, hi, du, gen)


def _norm_quantile_inputs(X: ArrayLike, quantile: float, epsilon: float, lower: float,
                          upper: float, center: ArrayLike | None, scaling: ArrayLike | None,
                          neighbouring: Neighbouring | str
                          ) -> tuple[float, float, float, float, float, Dataset,
                                     np.ndarray | None, np.ndarray | None]:
    """The public arguments of the norm quantile checked, then ``X``'s shape (not
    its values): ``(q, eps, du, lo, hi, data, c, b)``."""
    q = _quantile(quantile)
    eps = V.check_epsilon(epsilon, scalar=True)
    relation = Neighbouring.parse(neighbouring)
    lo = V.check_positive(lower, "lower", scalar=True)
    hi = V.check_positive(upper, "upper", scalar=True)
    if not lo < hi:
        raise ValueError("lower must be < upper")
    data = _dataset(X, relation)
    d = data.d
    c = None if center is None else V.check_vector(center, "center", d)
    b = None if scaling is None else V.check_vector(scaling, "scaling", d, positive=True)
    return q, eps, quantile_sensitivity(q, relation), lo, hi, data, c, b


def _dataset(X: Any, relation: Neighbouring) -> Dataset:
    """``X`` at the boundary (:func:`dpsum.data.as_data`: its type and shape,
    not its values): under add-remove the empty dataset is data like any
    other (its release is noise, of the same shape); under replace-one it has
    no neighbour and is refused (the number of rows is public there: a dask
    array with unknown chunk sizes is counted)."""
    data = as_data(X, "X")
    if relation is Neighbouring.REPLACE:
        V.require_rows(data.n if data.n is not None else run_pass(RowCount(), data), True)
    return data


def _norm_column(block: np.ndarray, c: np.ndarray | None, b: np.ndarray | None) -> np.ndarray:
    """The row norms ``||(x - c) ⊙ b||`` as a column, shape (m, 1)."""
    return row_norms(block, c, b)[:, None]


def norm_values(block: np.ndarray, c: np.ndarray | None, b: np.ndarray | None) -> np.ndarray:
    """The norm quantile's per-row values ``log ||(x - c) ⊙ b||``, shape (m, 1)."""
    with np.errstate(divide="ignore"):
        return np.log(row_norms(block, c, b))[:, None]


def l1_values(block: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The L1 norm quantile's per-row values ``log ||x - c||_1``, shape (m, 1)."""
    with np.errstate(divide="ignore"):
        return np.log(_row_l1_norms(block, c))[:, None]


def log_quantile_from_values(t: np.ndarray, q: float, eps: float, lo: float, hi: float,
                             du: float, gen: np.random.Generator) -> float:
    """A norm quantile's exponential mechanism on log values (shape (m, 1)),
    searched in ``[lo, hi]``."""
    out = _sample(t, q, eps / (2.0 * du), np.array([np.log(lo)]), np.array([np.log(hi)]), gen)
    return float(np.exp(out[0]))


def norm_quantile_law(X: ArrayLike, quantile: float, *, epsilon: float, lower: float,
                      upper: float, center: ArrayLike | None = None,
                      scaling: ArrayLike | None = None,
                      neighbouring: Neighbouring | str = "replace") -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """The exact law of :func:`private_norm_quantile`'s output, for checks and figures.

    The output falls in the gap ``[edges[k], edges[k+1]]`` with probability
    ``probabilities[k]``, log-uniformly inside it. The law depends on the data:
    it is **not** a private release, and serves to verify the mechanism
    (its sampler, its privacy) and to draw it.

    Parameters
    ----------
    X, quantile, epsilon, lower, upper, center, scaling, neighbouring
        As in :func:`private_norm_quantile`.

    Returns
    -------
    edges : numpy.ndarray, shape (n + 2,)
        ``lower``, the sorted clamped norms, ``upper``.
    probabilities : numpy.ndarray, shape (n + 1,)
        The probability of each gap (0 for an empty gap); they sum to 1.

    Examples
    --------
    >>> edges, p = norm_quantile_law([[1.0], [2.0], [4.0]], 0.5, epsilon=1.0,
    ...                              lower=0.5, upper=8.0)
    >>> edges.tolist(), bool(abs(p.sum() - 1) < 1e-12)
    ([0.5, 1.0, 2.0, 4.0, 8.0], True)
    """
    q, eps, du, lo, hi, data, c, b = _norm_quantile_inputs(
        X, quantile, epsilon, lower, upper, center, scaling, neighbouring)
    data.require_finite()
    norms = run_pass(RowValues(_norm_column, (c, b)), data)[:, 0]
    m = norms.shape[0]
    edges = np.concatenate(([lo], np.sort(np.clip(norms, lo, hi)), [hi]))
    with np.errstate(divide="ignore"):
        log_edges = np.log(edges)
    coef = eps / (2.0 * du)
    with np.errstate(divide="ignore"):
        logw = np.log(np.diff(log_edges)) - np.abs(np.arange(m + 1) - q * m) * coef
    probabilities = np.exp(logw - logsumexp(logw))
    return edges, probabilities


def _row_l1_norms(data: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``||x_i - c||_1`` for every row, in row blocks (+inf on overflow)."""
    n, d = data.shape
    rows = max(1, _BLOCK_ELEMENTS // 4 // d)
    out = np.empty(n)
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, n, rows):
            out[start:start + rows] = np.abs(data[start:start + rows] - c).sum(axis=1)
    return np.where(np.isnan(out), np.inf, out)
