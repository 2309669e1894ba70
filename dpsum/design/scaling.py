"""Scaling vectors ``b`` for the Elliptical Gaussian mechanism and the Gaussian-data mechanism.

A scaling vector maps a record ``x`` to ``x ⊙ b``; noise is added to the sum in
that space and mapped back by ``b^{-1}``, so coordinate ``j`` receives noise
proportional to ``1 / b_j`` (the chapters :ref:`The Elliptical Gaussian
mechanism <elliptical>` and :ref:`Gaussian data <gaussian-data>`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum._enums import _StrEnum
from dpsum._lazy import optimize
from dpsum.design.clip_radius import clip_radius as _clip_radius
from dpsum.distributions.gchisq import GeneralizedChiSquare as _GeneralizedChiSquare

__all__ = [
    "Scaling",
    "elliptical_scaling",
    "power_scaling",
    "gaussian_data_scaling",
    "whitening_scaling",
    "resolve_scaling",
    "tilted_scaling",
    "error_optimal_scaling",
]


def _positive_vector(values: Any, name: str) -> np.ndarray:
    return V.check_vector(values, name, positive=True)


def _log_weights(objective: str | np.ndarray, scales: np.ndarray) -> np.ndarray | None:
    """``log u_j`` of a validated objective on columns of the given scales:
    None for ``"total"`` (``u = 1``), ``-2 log scales`` for ``"relative"``."""
    if isinstance(objective, str):
        return None if objective == "total" else -2.0 * np.log(scales)
    return np.log(objective)


def _weighted_shape(log_t: np.ndarray) -> np.ndarray:
    """``sqrt(t / sum t)`` from ``log t``, as ``exp((log t - log sum t) / 2)``
    (the sum relative to its largest term): no overflow, and an underflow
    only where ``b_j`` itself is below the smallest float."""
    top = float(np.max(log_t))
    log_sum = top + math.log(float(np.sum(np.exp(log_t - top))))
    return np.exp(0.5 * (log_t - log_sum))


def elliptical_scaling(widths: ArrayLike, objective: str | ArrayLike = "total") -> np.ndarray:
    """Optimal scaling of the Elliptical Gaussian mechanism (:prf:ref:`elliptical-thm-optimal`).

    ``b_j = sqrt(Delta_j / sum_i Delta_i)``, so that ``||b|| = 1`` and the
    expected squared error ``sigma_opt^2 sum_j (Delta_j / b_j)^2`` attains its
    minimum ``sigma_opt^2 ||Delta||_1^2``. With per-column weights ``u_j`` on
    the squared error (:prf:ref:`elliptical-thm-weighted`) the minimiser of
    ``sigma_opt^2 sum_j u_j (Delta_j / b_j)^2`` is
    ``b_j = sqrt(sqrt(u_j) Delta_j / sum_i sqrt(u_i) Delta_i)``, with minimum
    ``sigma_opt^2 (sum_j sqrt(u_j) Delta_j)^2``.

    Parameters
    ----------
    widths : array_like, shape (d,)
        Per-coordinate sensitivities ``Delta_j > 0`` (the width of the interval
        each coordinate is clamped to).
    objective : {"total", "relative"} or array_like, shape (d,)
        What the scaling minimises: ``"total"`` the expected squared error in
        the data's units (``u = 1``, the theorem's ``b``); ``"relative"`` the
        squared error relative to each width (``u_j = Delta_j^-2``, so
        ``b_j = 1/sqrt(d)`` and every coordinate gets noise ``sigma_opt
        sqrt(d) Delta_j``, the same share of its width); or positive weights
        ``u_j``.

    Returns
    -------
    numpy.ndarray
        The unit-norm scaling vector ``b``.

    Examples
    --------
    >>> elliptical_scaling([1.0, 4.0, 4.0]).round(6).tolist()
    [0.333333, 0.666667, 0.666667]
    >>> elliptical_scaling([1.0, 4.0, 4.0], "relative").round(6).tolist()
    [0.57735, 0.57735, 0.57735]
    """
    w = _positive_vector(widths, "widths")
    obj = V.check_objective(objective, w.size)
    if isinstance(obj, str) and obj == "total":
        r = w / np.max(w)  # relative widths: the sum cannot overflow
        return np.sqrt(r / r.sum())
    log_u = _log_weights(obj, w)
    assert log_u is not None
    return _weighted_shape(0.5 * log_u + np.log(w))


def power_scaling(stds: ArrayLike, alpha: float) -> np.ndarray:
    """Scaling ``b_j ∝ sigma_j^{-alpha}`` normalised so that ``E||x ⊙ b||^2 = 1``.

    The normalisation is the constraint of the chapter :ref:`Gaussian data
    <gaussian-data-constraint>`, ``sum_j (b_j sigma_j)^2 = 1``. ``alpha = 0``
    is isotropic clipping, ``alpha = 1/2`` the scaling of :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`
    and ``alpha = 1`` whitening (:ref:`choosing-best-scaling`).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations ``sigma_j > 0``.
    alpha : float
        The exponent; any finite real number.

    Examples
    --------
    >>> b = power_scaling([4.0, 1.0], 1.0)
    >>> round(float(np.sum((b * np.array([4.0, 1.0])) ** 2)), 12), float(b[1] / b[0])
    (1.0, 4.0)
    """
    sigma = _positive_vector(stds, "stds")
    alpha = V.check_real(alpha, "alpha", scalar=True)
    # work in logs so that extreme exponents neither overflow nor underflow
    log_b = -alpha * np.log(sigma)
    log_b -= log_b.max()
    b = np.exp(log_b)
    return _normalise(b, sigma, "stds and alpha")


def gaussian_data_scaling(stds: ArrayLike, objective: str | ArrayLike = "total") -> np.ndarray:
    """The scaling of the scaling lemma: ``b_j = 1 / (sqrt(sigma_j) sqrt(sum_i sigma_i))``.

    It is the stationary point of the Lagrangian that minimises the
    Gaussian-data mechanism's expected error under the constraint
    ``E||x ⊙ b||^2 = 1`` with the clip radius held fixed (:prf:ref:`the scaling lemma <gaussian-data-lem-scaling>`).
    The exact optimum, with the radius depending on ``b``, is
    :func:`error_optimal_scaling`. With per-column weights ``u_j`` on the
    squared error the same Lagrangian gives ``b_j^2 = sqrt(u_j) /
    (sigma_j sum_i sqrt(u_i) sigma_i)`` (the analogue of
    :prf:ref:`elliptical-thm-weighted` with ``sigma_j`` for ``Delta_j``).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations ``sigma_j > 0``.
    objective : {"total", "relative"} or array_like, shape (d,)
        ``"total"``: the squared error in the data's units (the lemma's
        ``b``); ``"relative"``: relative to each scale (``u_j = sigma_j^-2``,
        which gives whitening, ``b_j = 1 / (sigma_j sqrt(d))``: every
        coordinate's noise is the same multiple of its scale); or positive
        weights ``u_j``.

    Examples
    --------
    >>> gaussian_data_scaling([4.0, 1.0, 1.0, 10.0]).round(6).tolist()
    [0.125, 0.25, 0.25, 0.079057]
    >>> gaussian_data_scaling([4.0, 1.0], "relative").round(6).tolist()
    [0.176777, 0.707107]
    """
    sigma = _positive_vector(stds, "stds")
    obj = V.check_objective(objective, sigma.size)
    if not (isinstance(obj, str) and obj == "total"):
        log_u = _log_weights(obj, sigma)
        assert log_u is not None
        # b_j ∝ u_j^(1/4) sigma_j^(-1/2), normalised by sum_j (b_j sigma_j)^2 = 1
        log_b = 0.25 * log_u - 0.5 * np.log(sigma)
        return _normalise(np.exp(log_b - log_b.max()), sigma, "stds and objective")
    with np.errstate(over="ignore", divide="ignore"):
        total = float(np.sum(sigma))
        if math.isfinite(total):
            b = 1.0 / (np.sqrt(sigma) * np.sqrt(total))
        else:      # sqrt(sum sigma) as sqrt(top) sqrt(sum sigma / top): no overflow
            top = float(np.max(sigma))
            b = 1.0 / (np.sqrt(sigma) * math.sqrt(top) * math.sqrt(float(np.sum(sigma / top))))
    if not (np.all(np.isfinite(b)) and np.all(b >= np.finfo(np.float64).tiny)):
        raise ValueError("stds is outside the representable range: the scaling "
                         "1 / sqrt(sigma_j sum sigma) is not a positive normal float "
                         "(stds must lie within about 1e-300 and 1e300); rescale the data")
    return b


def whitening_scaling(stds: ArrayLike) -> np.ndarray:
    """Whitening, ``b_j = 1 / (sigma_j sqrt(d))``: every scaled coordinate has
    variance ``1/d`` and ``E||x ⊙ b||^2 = 1`` (:ref:`choosing-best-scaling`).

    Examples
    --------
    >>> whitening_scaling([2.0, 0.5]).round(6).tolist()
    [0.353553, 1.414214]
    """
    sigma = _positive_vector(stds, "stds")
    with np.errstate(over="ignore", divide="ignore"):
        b = 1.0 / (sigma * np.sqrt(sigma.size))
    if not (np.all(np.isfinite(b)) and np.all(b >= np.finfo(np.float64).tiny)):
        raise ValueError("stds is outside the representable range: the scaling "
                         "1 / (stds_j sqrt(d)) is not a positive normal float; rescale "
                         "the stds")
    return b


def check_scaling(scaling: ArrayLike, d: int) -> np.ndarray:
    """Validate an explicit scaling vector of length ``d`` (all entries > 0)."""
    return V.check_vector(scaling, "scaling", d, positive=True)


class Scaling(_StrEnum):
    """The one vocabulary of the ``scaling`` argument, in every function that takes it.

    ``"scaled"`` clips in the space scaled by the book's rule for Gaussian
    data, ``b_j ∝ s_j^{-1/2}`` (lemma ``gaussian-data-lem-scaling``), from
    the public scales ``s_j`` a mechanism is given, or from private estimates
    of them in the private pipeline; ``"isotropic"`` clips the unscaled rows
    (``b = 1``). The model-based functions also accept an explicit vector.
    ``"adaptive"`` (the private pipeline only) makes a private choice between
    the two from the data (book chapter "When the data model is unknown").

    Examples
    --------
    >>> Scaling("isotropic") is Scaling.ISOTROPIC
    True
    """

    SCALED = "scaled"
    ISOTROPIC = "isotropic"
    ADAPTIVE = "adaptive"


def resolve_scaling(scaling: str | ArrayLike, stds: np.ndarray,
                    objective: str | ArrayLike = "total") -> np.ndarray:
    """The scaling vector ``b`` that a ``scaling`` argument names.

    Parameters
    ----------
    scaling : Scaling, {"scaled", "isotropic"} or array_like, shape (d,)
        ``"scaled"`` is the book's rule (:func:`gaussian_data_scaling`),
        ``"isotropic"`` is ``b = 1``; a vector is validated and used as given
        (its overall scale does not matter).
    stds : numpy.ndarray, shape (d,)
        The validated public standard deviations.
    objective : {"total", "relative"} or array_like, shape (d,)
        The objective of ``"scaled"`` (:func:`gaussian_data_scaling`);
        ``"isotropic"`` and an explicit vector do not depend on it.

    Examples
    --------
    >>> resolve_scaling("isotropic", np.array([2.0, 3.0])).tolist()
    [1.0, 1.0]
    """
    if isinstance(scaling, (str, Scaling)):
        rule = Scaling.parse(scaling, "scaling")
        if rule is Scaling.ADAPTIVE:
            raise ValueError("scaling='adaptive' is a choice of the private pipeline "
                             "(dpsum.private_mean); with public scales use 'scaled' or "
                             "'isotropic'")
        if rule is Scaling.SCALED:
            return gaussian_data_scaling(stds, objective)
        return np.ones(stds.shape[0])
    return check_scaling(scaling, stds.shape[0])


_FAMILIES = ("power", "tilted", "all")


def _normalise(b: np.ndarray, sigma: np.ndarray, names: str = "stds") -> np.ndarray:
    """Rescale ``b`` to the constraint ``sum_j (b_j sigma_j)^2 = 1`` (the norm
    taken relative to its largest term, so that no square overflows or
    underflows), refusing, naming ``stds``, a result that is not a vector of
    positive normal floats."""
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        t = b * sigma
        norm = float(np.sqrt(np.sum(t ** 2)))
        if not (math.isfinite(norm) and norm >= 1e-150):   # the squares over- or underflow
            top = float(np.max(t))
            norm = top * float(np.sqrt(np.sum((t / top) ** 2)))
        out = b / norm
    if not (np.all(np.isfinite(out)) and np.all(out >= np.finfo(np.float64).tiny)):
        raise ValueError(f"{names}: out of the representable range, the scaling (with "
                         "sum_j (b_j stds_j)^2 = 1) is not a vector of positive normal "
                         "floats")
    return out


def tilted_scaling(stds: ArrayLike, kappa: float) -> np.ndarray:
    """The saddlepoint family ``b_j^2 ∝ 1 / (sigma_j (kappa sigma_j + sqrt(1 + kappa^2 sigma_j^2)))``.

    Normalised by the constraint ``sum_j (b_j sigma_j)^2 = 1``. At
    ``kappa = 0`` it is the scaling lemma's scaling (``b_j ∝ sigma_j^{-1/2}``) and as
    ``kappa -> inf`` it tends to whitening (``b_j ∝ 1/sigma_j``); ``kappa``
    has the units of ``1/sigma``. The family solves the stationarity
    condition of the exact error ``C(b)^2 sum_j b_j^{-2}`` when the
    conditional moments ``E[Z_j^2 | ||x̂|| = C]`` are replaced by their
    saddlepoint values ``1 / (1 - 2 s w_j)`` (:ref:`choosing-tilted-family`).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations ``sigma_j > 0``.
    kappa : float
        The parameter, ``0 <= kappa <= inf``; ``inf`` returns whitening.

    Returns
    -------
    numpy.ndarray
        The scaling vector ``b``.

    Examples
    --------
    >>> stds = np.array([4.0, 1.0])
    >>> bool(np.allclose(tilted_scaling(stds, 0.0), gaussian_data_scaling(stds)))
    True
    """
    sigma = _positive_vector(stds, "stds")
    k = V.check_positive(kappa, "kappa", allow_zero=True, finite=False, scalar=True)
    with np.errstate(over="ignore"):
        r = k * sigma
        big = not np.all(np.isfinite(r + np.hypot(1.0, r)))
    if np.isinf(k) or big:
        # the limit: w_j -> 1 / (2 kappa) for every j (relative error below
        # 1 / (4 r^2) once r + sqrt(1 + r^2) overflows)
        with np.errstate(over="ignore", divide="ignore"):
            return _normalise(1.0 / sigma, sigma)
    # w_j ∝ sigma_j / (r_j + sqrt(1 + r_j^2)): a sum of positives, no cancellation
    w = sigma / (r + np.hypot(1.0, r))
    return _normalise(np.sqrt(w) / sigma, sigma)


def _error_factor(sigma: np.ndarray, p: float, b: np.ndarray) -> float:
    """Exact ``C(b)^2 sum_j b_j^{-2}`` with the clip radius the Gaussian-data mechanism uses."""
    C = _clip_radius(sigma, p, b)
    return float(C * C * np.sum(b ** -2.0))


def _make_objective(sigma: np.ndarray, p: float, exact: bool) -> Any:
    """``F(b)``, exact or from the saddlepoint quantile (falling back to exact)."""
    def F(b: Any) -> Any:
        if not exact:
            q = _GeneralizedChiSquare((b * sigma) ** 2).saddlepoint_isf(p)
            if np.isfinite(q):
                return float(q * np.sum(b ** -2.0))
        return _error_factor(sigma, p, b)
    return F


def _minimise_family(member: Any, lo: float, hi: float, F: Any, exact_F: Any, exact: bool) -> Any:
    """Minimise ``F(member(t))`` over ``t`` in ``[lo, hi]``: a grid, then
    bounded Brent around the best grid point; optionally polished against
    the exact objective. Returns the parameter."""
    grid = np.linspace(lo, hi, 17)
    vals = np.array([F(member(t)) for t in grid])
    i = int(np.argmin(vals))
    a, c = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = optimize.minimize_scalar(lambda t: F(member(t)), bounds=(a, c), method="bounded",
                                   options={"xatol": 1e-5 * (hi - lo)})
    t = float(res.x) if res.fun <= vals[i] else float(grid[i])
    if exact:
        width = 0.5 * (grid[1] - grid[0])
        res = optimize.minimize_scalar(lambda s: exact_F(member(s)),
                                       bounds=(max(lo, t - width), min(hi, t + width)),
                                       method="bounded", options={"xatol": 1e-4 * (hi - lo)})
        if res.fun <= exact_F(member(t)):
            t = float(res.x)
    return t


def _boundary_second_moments(weights: np.ndarray, q: float) -> np.ndarray:
    """``g_j = E[Z_j^2 | sum_k w_k Z_k^2 = q]`` as the density ratio
    ``f_j(q) / f(q)`` (``f_j``: the law with ``w_j chi^2_2`` added); equal
    weights share one evaluation."""
    f0 = float(_GeneralizedChiSquare(weights).pdf(q))
    uniq, inverse = np.unique(weights, return_inverse=True)
    ratios = np.array([
        float(_GeneralizedChiSquare(np.concatenate([weights, [wj, wj]])).pdf(q)) / f0
        for wj in uniq
    ])
    return ratios[inverse]


def _minimise_all(sigma: np.ndarray, p: float, b0: np.ndarray, max_iter: int) -> np.ndarray:
    """L-BFGS on ``log F`` over ``v = log b^2`` with the exact gradient
    ``d log F / d v_j = (w_j g_j S - q / u_j) / (q S)`` (``u = b^2``, ``S = sum 1/u``)."""
    sigma2 = sigma * sigma

    def fun(v: Any) -> Any:
        v = v - v.max()  # F is scale invariant; keep the numbers moderate
        u = np.exp(v)
        w = u * sigma2
        q = float(_GeneralizedChiSquare(w).isf(p))
        S = float(np.sum(1.0 / u))
        g = _boundary_second_moments(w, q)
        grad = (w * g * S - q / u) / (q * S)
        return np.log(q) + np.log(S), grad

    res = optimize.minimize(fun, np.log(b0 * b0), jac=True, method="L-BFGS-B",
                            options={"maxiter": int(max_iter), "gtol": 1e-5, "ftol": 1e-10})
    return np.sqrt(np.exp(res.x - res.x.max()))


#: Largest ratio of the stds :func:`error_optimal_scaling` searches over (its
#: families raise the ratio to powers up to 2).
_MAX_STD_RATIO = 1e100


def error_optimal_scaling(stds: ArrayLike, clip_probability: float, *, family: str = "tilted",
                          exact: bool = False, max_iter: int = 100) -> np.ndarray:
    """The scaling ``b`` that minimises the Gaussian-data mechanism's expected error
    with the exact clip radius.

    :prf:ref:`the scaling lemma <gaussian-data-lem-scaling>` minimises ``(2 C sigma_opt)^2 sum_j b_j^{-2}`` as if ``C`` did
    not depend on ``b``; here ``C(b)`` is the exact radius of
    :func:`dpsum.design.clip_radius` and the minimised quantity is
    ``F(b) = C(b)^2 sum_j b_j^{-2}``, which fixes the error for every
    ``epsilon``, ``delta`` and neighbouring relation at once
    (:ref:`choosing-best-scaling`).

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations ``sigma_j > 0``.
    clip_probability : float
        The clip probability ``p_C`` in (0, 1).
    family : {"tilted", "power", "all"}
        Where to search: ``"tilted"`` the one-parameter family of
        :func:`tilted_scaling` (from the scaling lemma's scaling to whitening), ``"power"`` the
        family ``b_j ∝ sigma_j^{-alpha}``, ``-1/2 <= alpha <= 2``
        (:func:`power_scaling`), ``"all"`` every positive vector: L-BFGS in
        ``log b`` with the exact gradient, started from the better of the
        two families. ``"all"`` costs about ``d`` density evaluations per
        iteration; use it for ``d`` up to a few hundred.
    exact : bool
        For the one-parameter families: if False (default) the parameter is
        located with the saddlepoint (Lugannani-Rice) approximation of the
        quantile, which puts the exact error of the result within a few
        parts in ``1e4`` of the family's exact optimum; if True the parameter
        is then polished against the exact objective. ``"all"`` always uses
        the exact one.
    max_iter : int
        Iteration limit of the L-BFGS search (``family="all"``).

    Returns
    -------
    numpy.ndarray
        ``b`` normalised by the constraint ``sum_j (b_j sigma_j)^2 = 1``.
        Its exact ``F`` is never larger than that of the family's named
        members: the scaling lemma's scaling and whitening (``"tilted"``, ``"all"``), and
        ``alpha`` in {0, 1/2, 1} (``"power"``, ``"all"``), which include
        isotropic clipping.

    Raises
    ------
    ValueError
        If ``stds`` is not positive and finite, ``clip_probability`` is not in
        (0, 1), ``family`` is unknown or ``max_iter < 1``.

    Examples
    --------
    >>> stds = np.array([4.0, 1.0, 0.25])
    >>> b = error_optimal_scaling(stds, 1e-6)
    >>> round(float(np.sum((b * stds) ** 2)), 12)  # the constraint sum_j (b_j sigma_j)^2 = 1
    1.0
    >>> from dpsum.design import clip_radius
    >>> F = lambda b: clip_radius(stds, 1e-6, b) ** 2 * np.sum(b ** -2.0)
    >>> bool(F(b) <= F(gaussian_data_scaling(stds)))
    True
    """
    given = _positive_vector(stds, "stds")
    p = V.check_probability(clip_probability, "clip_probability", scalar=True)
    family = V.check_choice(family, "family", _FAMILIES)
    max_iter = V.check_integer(max_iter, "max_iter")
    exact = V.check_bool(exact, "exact")
    # the problem is scale-free (b(c sigma) = b(sigma) / c): it is solved for
    # sigma / max(sigma), where only the ratio of the stds can be extreme
    top = float(given.max())
    if not top / float(given.min()) <= _MAX_STD_RATIO:
        raise ValueError(f"stds must have a ratio of largest to smallest at most "
                         f"{_MAX_STD_RATIO:g}: beyond it the searched scalings are not "
                         "finite floats")
    sigma = given / top
    exact_F = _make_objective(sigma, p, True)
    F = _make_objective(sigma, p, exact=False)
    candidates = []
    if family in ("tilted", "all"):
        smax, smin = float(sigma.max()), float(sigma.min())
        # t = log(kappa sigma_max): from ~the scaling lemma's scaling (kappa sigma_max = 1e-4)
        # to ~whitening (kappa sigma_min = 1e4)
        lo, hi = np.log(1e-4), np.log(1e4 * smax / smin)

        def member(t: Any) -> Any:
            return tilted_scaling(sigma, np.exp(t) / smax)

        t = _minimise_family(member, lo, hi, F, exact_F, exact)
        candidates += [member(t), tilted_scaling(sigma, 0.0), tilted_scaling(sigma, np.inf)]
    if family in ("power", "all"):
        def member(t: Any) -> Any:
            return power_scaling(sigma, t)

        a = _minimise_family(member, -0.5, 2.0, F, exact_F, exact)
        candidates += [member(a)] + [power_scaling(sigma, x) for x in (0.0, 0.5, 1.0)]
    values = [exact_F(b) for b in candidates]
    best = candidates[int(np.argmin(values))]
    if family == "all" and sigma.size > 1:
        b = _normalise(_minimise_all(sigma, p, best, max_iter), sigma)
        if exact_F(b) < min(values):
            best = b
    out = _normalise(best, sigma) / top
    if not np.all((out >= np.finfo(np.float64).tiny) & np.isfinite(out)):
        raise ValueError("stds: out of the representable range, the scaling b (with "
                         "sum_j (b_j stds_j)^2 = 1) is not a positive normal float; "
                         "rescale the stds")
    return out
