"""Clipping: the exact clip radius of Algorithm 3 and the clipped sum of rows.

Algorithm 3 clips every scaled record ``x̂_i = (x_i - c) ⊙ b`` to the ball of
radius ``C`` and sums. ``C`` is the smallest radius whose exceedance
probability under the public model ``x_i ~ N(c, diag(sigma^2))`` is at most
``p_C``; since ``||x̂||^2 = sum_j (b_j sigma_j)^2 Z_j^2`` is a generalized
chi-square, ``C = sqrt(isf(p_C))`` (book chapter 4).

The clipped sum is computed in row blocks that fit in cache, so that neither
a scaled copy of the data nor a per-row temporary of full length is formed.
The input is never modified.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .gchisq import GeneralizedChiSquare
from .privacy import check_positive, check_probability, check_vector

__all__ = ["clip_radius", "clipped_sum", "clamped_sum", "CLIP_RADIUS_MARGIN"]

#: Relative amount by which the clip radius is rounded up, so that the
#: exceedance probability at the returned ``C`` is at most ``p_C`` despite the
#: last-digit error of the quantile.
CLIP_RADIUS_MARGIN = 1e-12

# about 256 KiB of float64 per block: fits in L2 cache on current CPUs
_BLOCK_ELEMENTS = 1 << 15


def _row_norms(rows: np.ndarray, sq: np.ndarray) -> np.ndarray:
    """Euclidean norms of ``rows`` given their squared norms ``sq``, recomputed
    with a per-row scale factor where the squares overflowed."""
    norms = np.sqrt(sq)
    bad = ~np.isfinite(norms)
    if bad.any():
        scale = np.max(np.abs(rows[bad]), axis=1)
        norms[bad] = scale * np.sqrt(np.einsum("ij,ij->i", rows[bad] / scale[:, None],
                                                rows[bad] / scale[:, None]))
    return norms


def _raise_non_finite(block: np.ndarray) -> None:
    """Raise the data-validation error if ``block`` holds NaN or inf."""
    if not np.all(np.isfinite(block)):
        raise ValueError("X contains NaN or infinite values")


def clip_radius(stds, clip_probability: float, scaling=None) -> float:
    """The clip radius ``C`` of Algorithm 3 for centred Gaussian data.

    ``C`` is the smallest radius with ``Pr[||x ⊙ b|| > C] <= p_C`` for
    ``x ~ N(0, diag(stds^2))``, computed from the generalized chi-square
    quantile ``C^2 = isf(p_C)`` with weights ``(b_j sigma_j)^2`` and rounded
    up by a relative ``CLIP_RADIUS_MARGIN``.

    Parameters
    ----------
    stds : array_like, shape (d,)
        Public per-coordinate standard deviations, all > 0.
    clip_probability : float
        The target probability ``p_C`` of clipping a record, in (0, 1).
    scaling : array_like, shape (d,), optional
        The scaling vector ``b`` (all > 0); ``None`` means ``b = 1``.

    Returns
    -------
    float
        The clip radius ``C`` in the scaled space.
    """
    sigma = check_vector(stds, "stds", positive=True)
    p = check_probability(clip_probability, "clip_probability")
    if np.ndim(p) != 0:
        raise ValueError("clip_probability must be a scalar")
    b = np.ones_like(sigma) if scaling is None else check_vector(
        scaling, "scaling", sigma.size, positive=True)
    weights = (b * sigma) ** 2
    return _clip_radius_cached(weights.tobytes(), float(p))


@lru_cache(maxsize=512)
def _clip_radius_cached(weights_bytes: bytes, p: float) -> float:
    """The quantile is a pure function of public inputs: repeated releases with
    the same model (simulations, audits) compute it once."""
    weights = np.frombuffer(weights_bytes, dtype=np.float64)
    c2 = float(GeneralizedChiSquare(weights).isf(p))
    return float(np.sqrt(c2) * (1.0 + CLIP_RADIUS_MARGIN))


def clipped_sum(X: np.ndarray, clip_norm: float, scaling: np.ndarray | None = None,
                center: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Sum of the scaled, centred rows of ``X``, each clipped to norm ``clip_norm``.

    Computes ``T = sum_i min(1, C / ||x̂_i||) x̂_i`` with
    ``x̂_i = (x_i - center) ⊙ scaling`` — the loop of Algorithm 3 — in one
    pass over ``X``, block by block: the squared norms come from a
    matrix-vector product with ``scaling**2`` and the sum from one with the
    clip factors, so no scaled copy of ``X`` is formed. A clipped row is
    shrunk by the rounding-error bound of its norm and re-checked, so that its
    norm does not exceed ``C`` after rounding.

    ``X`` must be a float64 array of shape (n, d); its finiteness is checked
    here, in the same pass, before anything is returned. ``X`` is never
    modified.

    Returns
    -------
    T : numpy.ndarray, shape (d,)
        The clipped sum in the scaled space.
    n_clipped : int
        How many rows were clipped. This count depends on the private data
        and is **not** differentially private.

    Raises
    ------
    ValueError
        If ``X`` holds NaN or infinite values, or overflows when centred and
        scaled.
    """
    C = check_positive(clip_norm, "clip_norm")
    n, d = X.shape
    b = np.ones(d) if scaling is None else np.asarray(scaling, dtype=np.float64)
    weights = b * b
    rows = max(1, min(n, _BLOCK_ELEMENTS // d))
    buffer = np.empty((rows, d))
    ones = np.ones(rows)
    total = np.zeros(d)          # sum_i f_i x_i
    weight_sum = 0.0             # sum_i f_i
    n_clipped = 0
    shrink = 1.0 - 2 * (d + 2) * np.finfo(float).eps
    # rows whose computed norm is within the rounding bound of C are clipped
    # too, so an unclipped row's exact norm is at most C as well
    C2 = (C * shrink) ** 2
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
        for start in range(0, n, rows):
            block = X[start:start + rows]
            m = block.shape[0]
            tmp = buffer[:m]
            if center is None:
                np.square(block, out=tmp)
            else:
                np.subtract(block, center, out=tmp)
                np.square(tmp, out=tmp)
            sq = tmp @ weights
            over = sq > C2  # NaN compares False: checked separately below
            if not over.any():
                if not np.isfinite(sq.sum()):
                    _raise_non_finite(block)
                total += ones[:m] @ block
                weight_sum += m
                continue
            if not np.isfinite(sq[~over].sum()):
                _raise_non_finite(block)
            idx = np.flatnonzero(over)
            deviation = block[idx] if center is None else block[idx] - center
            scaled = deviation * b
            if not np.all(np.isfinite(scaled)):
                _raise_non_finite(block)
                raise ValueError("X overflows when centred and scaled: rescale the data")
            factor = ones[:m].copy()
            # C / ||x̂|| shrunk by the rounding-error bound of a d-term Euclidean
            # norm, (d + 2) u (Higham, Accuracy and Stability, section 3.1), so
            # that the exact norm of the clipped floating-point row is at most C
            factor[idx] = C / _row_norms(scaled, sq[idx]) * shrink
            clipped = scaled * factor[idx, None]
            norms = _row_norms(clipped, np.einsum("ij,ij->i", clipped, clipped))
            while np.any(norms > C):  # re-check after rounding; rarely if ever taken
                worse = norms > C
                factor[idx[worse]] *= 1.0 - 4 * np.finfo(float).eps
                clipped[worse] = scaled[worse] * factor[idx[worse], None]
                norms[worse] = _row_norms(clipped[worse],
                                          np.einsum("ij,ij->i", clipped[worse], clipped[worse]))
            n_clipped += idx.size
            total += factor @ block
            weight_sum += float(factor.sum())
    if center is not None:
        total = total - center * weight_sum
    return total * b, n_clipped


def clamped_sum(X: np.ndarray, half_widths: np.ndarray) -> tuple[np.ndarray, int]:
    """Sum of the rows of ``X`` with coordinate ``j`` clamped to ``[-h_j, h_j]``.

    The per-coordinate clipping of Algorithm 2 (equation (3): each row lies in
    a box of side ``Delta_j = 2 h_j``), computed block by block in one pass.
    ``X`` must be a float64 array of shape (n, d); its finiteness is checked
    here before anything is returned. ``X`` is never modified.

    Returns
    -------
    T : numpy.ndarray, shape (d,)
        The clamped sum.
    n_clamped : int
        How many values were clamped. This count depends on the private data
        and is **not** differentially private.
    """
    n, d = X.shape
    rows = max(1, min(n, _BLOCK_ELEMENTS // d))
    buffer = np.empty((rows, d))
    ones = np.ones(rows)
    total = np.zeros(d)
    n_clamped = 0
    for start in range(0, n, rows):
        block = X[start:start + rows]
        m = block.shape[0]
        tmp = buffer[:m]
        _raise_non_finite(block)  # clamping would turn inf into a finite value
        np.clip(block, -half_widths, half_widths, out=tmp)
        n_clamped += int(np.count_nonzero(tmp != block))
        total += ones[:m] @ tmp
    return total, n_clamped
