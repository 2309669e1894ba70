"""Clipping without a data model (book chapter "Clipping without a model").

Data laws with light and heavy tails, the bias and noise of a clipped sum as
functions of the clip radius, and the trace of adaptive clipping over
repeated releases.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsum import analytic_sigma
from dpsum.pipeline import adaptive_clip_update

__all__ = ["LAWS", "sample", "clipping_bias", "error_curves", "adaptive_trace"]

#: the three laws of the chapter's figures
LAWS = ("Gaussian", "Student-t (3 dof)", "log-normal norms")


def sample(law: str, n: int, d: int, rng: Any = None, scale: float = 1.0) -> np.ndarray:
    """``n`` rows in ``d`` dimensions: standard Gaussian; independent Student-t
    coordinates with 3 degrees of freedom; or Gaussian directions with a
    log-normal norm (``exp(N(0, 1))`` times ``sqrt(d)``). Multiplied by ``scale``."""
    gen = np.random.default_rng(rng)
    if law == LAWS[0]:
        X = gen.standard_normal((n, d))
    elif law == LAWS[1]:
        X = gen.standard_t(3, size=(n, d))
    elif law == LAWS[2]:
        Z = gen.standard_normal((n, d))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        X = Z * (np.sqrt(d) * np.exp(gen.standard_normal(n)))[:, None]
    else:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    return X * scale


def clipping_bias(norms: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``sum_i (||x_i|| - C)_+`` for each radius in ``C``: the bound on the norm of
    the clipping error."""
    s = np.sort(norms)[::-1]
    tail = np.concatenate(([0.0], np.cumsum(s)))
    k = np.searchsorted(-s, -np.asarray(C, dtype=float), side="left")  # rows above C
    return np.asarray(tail[k] - k * np.asarray(C, dtype=float))


def error_curves(norms: np.ndarray, d: int, C: np.ndarray, epsilon: float, delta: float,
                 neighbouring: str = "replace") -> dict[str, np.ndarray]:
    """The squared bias bound, the expected squared noise ``d tau^2`` and their sum,
    for each clip radius in ``C`` (``tau = sigma_opt Delta``, ``Delta = 2C`` or ``C``)."""
    factor = 2.0 if neighbouring == "replace" else 1.0
    s = float(analytic_sigma(epsilon, delta))
    bias2 = clipping_bias(norms, C) ** 2
    noise = d * (s * factor * np.asarray(C, dtype=float)) ** 2
    return {"bias2": bias2, "noise": noise, "total": bias2 + noise}


def adaptive_trace(rounds: int, n: int, d: int, clip_probability: float, learning_rate: float,
                   count_noise: float, C0: float, shift_at: int, rng: Any = None
                   ) -> dict[str, np.ndarray]:
    """Adaptive clipping over ``rounds`` releases of fresh log-normal-norm data whose
    scale doubles at round ``shift_at``; returns the radius used in each round,
    the true ``1 - p_C`` quantile of that round's norms and the fraction
    of rows the radius left unclipped."""
    gen = np.random.default_rng(rng)
    C = C0
    out: dict[str, list[float]] = {"radius": [], "quantile": [], "unclipped": []}
    for t in range(rounds):
        X = sample(LAWS[2], n, d, gen, scale=1.0 if t < shift_at else 2.0)
        norms = np.linalg.norm(X, axis=1)
        out["radius"].append(C)
        out["quantile"].append(float(np.quantile(norms, 1 - clip_probability)))
        out["unclipped"].append(float(np.mean(norms <= C)))
        C = adaptive_clip_update(X, C, target_quantile=1 - clip_probability,
                                 learning_rate=learning_rate, count_noise=count_noise,
                                 rng=gen).clip_radius
    return {k: np.array(v) for k, v in out.items()}
