"""The audits of the chapter "Checking privacy empirically", as data.

Each audited release is a :class:`Audited`: a name, the claimed epsilon and
delta, the release function, the neighbouring pair it is audited on, the
number of releases per dataset (main run and pilot alike) and whether the
release draws a batch of outputs in one call. :func:`correct_cases` lists
the mechanisms of ``dpsum`` as shipped; :func:`broken_cases` lists variants
built from the same parts with one bug each. :func:`run` audits one of them
with :func:`dpsum.audit.epsilon_lower_bound`, the chapter's test.

The constants are the chapter's claim: ``(EPS, DELTA) = (1, 1e-3)`` audited
at error probability ``BETA = 1e-3``, with ``N = 50,000`` releases per
dataset for the Gaussian mechanisms (the size whose power the chapter
measures).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dpsum import (analytic_sigma, binary, clipped_gaussian_mechanism,
                   elliptical_gaussian_mechanism, gaussian_data_mechanism, gaussian_mechanism)
from dpsum.audit import AuditResult, batched_gaussian_release, epsilon_lower_bound, pairs
from dpsum.design import elliptical_scaling
from dpsum_book import audit_power as ap

__all__ = ["BETA", "Audited", "BOUNDS", "CENTER", "CLIP", "D", "DELTA", "EPS", "N", "SENS",
           "STDS", "broken_cases", "correct_cases", "run"]

EPS, DELTA, BETA = 1.0, 1e-3, 1e-3
N = 50_000
D, SENS = 4, 2.0
BOUNDS = np.array([4.0, 1.0, 0.25, 2.0])
STDS = np.array([3.0, 1.0, 0.3, 0.1])
CENTER = np.array([1.0, -2.0, 0.5, 0.0])
CLIP = 1.5

Release = Callable[..., Any]


@dataclass(frozen=True)
class Audited:
    """One audited release: what is claimed, what runs, on which pair."""

    name: str
    epsilon: float
    release: Release
    pair: tuple[Any, Any]
    n: int
    delta: float
    batched: bool


def run(case: Audited, seed: int) -> AuditResult:
    """Audit ``case`` with a pilot as large as the main run, at ``BETA``."""
    release = case.release
    if case.batched and not getattr(release, "batched", False):
        release = batched_gaussian_release(release)
    return epsilon_lower_bound(release, *case.pair, delta=case.delta,
                               n_samples=case.n, n_pilot=case.n, rng=seed, alpha=BETA,
                               batched=case.batched)


def _gaussian(calibration: str, eps: float, sens: float = SENS) -> Release:
    def release(v: Any, rng: Any) -> Any:
        return gaussian_mechanism(v, epsilon=eps, delta=DELTA, sensitivity=sens,
                                  calibration=calibration, rng=rng)
    return release


def _data(scaling: Any, relation: str, clip_probability: float | None = None) -> Release:
    def release(X: Any, rng: Any) -> Any:
        return gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=STDS, center=CENTER,
                                       scaling=scaling, neighbouring=relation,
                                       clip_probability=clip_probability, rng=rng)
    return release


def _clipped(relation: str) -> Release:
    def release(X: Any, rng: Any) -> Any:
        return clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=CLIP,
                                          neighbouring=relation, rng=rng)
    return release


def _elliptical(X: Any, rng: Any) -> Any:
    return elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-BOUNDS / 2,
                                             upper=BOUNDS / 2, rng=rng)


def correct_cases(threshold_ones: int) -> list[Audited]:
    """The mechanisms of ``dpsum`` as shipped, each on its worst-case pair;
    sample-and-threshold on ``threshold_ones + 1`` against ``threshold_ones``
    ones (its worst pair, from :func:`dpsum.audit.worst_binary_pair`)."""
    stat = pairs.statistic_pair(SENS, D)
    cases = [
        Audited("Gaussian, analytic calibration", EPS, _gaussian("analytic", EPS), stat, N,
                DELTA, True),
        Audited("Gaussian, classic calibration", 0.9, _gaussian("classic", 0.9), stat, N,
                DELTA, True),
        Audited("Elliptical Gaussian", EPS, _elliptical, pairs.elliptical_pair(BOUNDS, n=3),
                N, DELTA, True),
    ]
    for label, scaling in (("scaled", "scaled"), ("isotropic", "isotropic"),
                           ("explicit b", np.array([0.5, 1.0, 2.0, 4.0]))):
        for relation in ("replace", "add-remove"):
            p = None if relation == "replace" else 0.05
            pair = pairs.gaussian_data_pair(STDS, center=CENTER, scaling=scaling,
                                            clip_probability=p, neighbouring=relation,
                                            n=4 if relation == "replace" else 3)
            cases.append(Audited(f"Gaussian-data, {label}, {relation}", EPS,
                                 _data(scaling, relation, p), pair, N, DELTA, True))
    for relation in ("replace", "add-remove"):
        cases.append(Audited(f"clipping baseline, {relation}", EPS, _clipped(relation),
                             pairs.clipped_pair(D, CLIP, relation, n=3), N, DELTA, True))

    def rr(b: Any, rng: Any) -> Any:
        return binary.randomized_response(b, epsilon=EPS, rng=rng)

    def bn(b: Any, rng: Any) -> Any:
        return binary.binomial_noise_mechanism(b, epsilon=EPS, delta=DELTA, rng=rng)

    def st(b: Any, rng: Any) -> Any:
        return binary.sample_and_threshold(b, epsilon=EPS, delta=DELTA, rng=rng)

    k = threshold_ones
    cases += [
        Audited("randomized response", EPS, rr, pairs.binary_pair(1), 500, 0.0, False),
        Audited("binomial noise", EPS, bn, pairs.binary_pair(800, 400), 5_000, DELTA, False),
        Audited("sample-and-threshold", EPS, st, pairs.binary_pair(k + 1, k), 5_000, DELTA,
                False),
    ]
    return cases


def broken_cases() -> list[Audited]:
    """Variants with one bug each, at the sizes whose power the chapter measures."""
    sigma_opt = float(analytic_sigma(EPS, DELTA))
    b_ell = np.asarray(elliptical_scaling(BOUNDS))
    wrong_noise = sigma_opt * BOUNDS * b_ell          # b_j where 1/b_j belongs

    def inverted(X: Any, rng: Any) -> Any:
        total = np.clip(X, -BOUNDS / 2, BOUNDS / 2).sum(axis=0)
        return total + rng.normal(0.0, 1.0, size=X.shape[1]) * wrong_noise

    def unclipped(X: Any, rng: Any) -> Any:
        return gaussian_mechanism(X.sum(axis=0), epsilon=EPS, delta=DELTA,
                                  sensitivity=2 * CLIP, rng=rng)

    def rr2(b: Any, rng: Any) -> Any:
        return binary.randomized_response(b, epsilon=2.0, rng=rng)

    bin_coin = ap.binomial_broken_coin()
    st_coin, st_ones = ap.threshold_broken()
    threshold = float(binary.sample_threshold_tau(DELTA))

    def little_noise(bits: Any, rng: Any, size: int) -> Any:
        return np.count_nonzero(bits) + rng.binomial(bits.size, bin_coin, size=size)

    def oversampled(bits: Any, rng: Any, size: int) -> Any:
        c = rng.binomial(np.count_nonzero(bits), st_coin, size=size)
        return np.where(c >= threshold, c, 0)

    little_noise.batched = True  # type: ignore[attr-defined]
    oversampled.batched = True  # type: ignore[attr-defined]
    stat = pairs.statistic_pair(SENS, D)
    far = pairs.clipped_pair(D, CLIP, "replace", n=3)
    smallest = int(np.argmin(wrong_noise / BOUNDS))
    gd_pair = pairs.gaussian_data_pair(STDS, clip_probability=0.25, n=4)

    def data_with_c(X: Any, rng: Any) -> Any:
        return gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=STDS, center=0,
                                       clip_probability=0.25, neighbouring="add-remove",
                                       rng=rng)

    return [
        Audited("noise halved", EPS, _gaussian("analytic", EPS, SENS / 2), stat, N, DELTA,
                True),
        Audited("clipping baseline calibrated with C", EPS, _clipped("add-remove"), far, N,
                DELTA, True),
        Audited("Gaussian-data calibrated with C", EPS, data_with_c, gd_pair, N, DELTA, True),
        Audited("clipping skipped", EPS, unclipped, far, N, DELTA, True),
        Audited("elliptical scaling inverted", EPS, inverted,
                pairs.elliptical_pair(BOUNDS, n=3), N, DELTA, True),
        Audited(f"elliptical inverted, coordinate {smallest}", EPS, inverted,
                pairs.elliptical_pair(BOUNDS, n=3, coordinates=[smallest]), N, DELTA, True),
        Audited("randomized response, coin of epsilon 2", EPS, rr2, pairs.binary_pair(1),
                500, 0.0, False),
        Audited("binomial noise, too little noise", EPS, little_noise,
                pairs.binary_pair(800, 400), 200_000, DELTA, True),
        Audited(f"sample-and-threshold, sampling {st_coin:.3f}", EPS, oversampled,
                pairs.binary_pair(st_ones + 1, st_ones), 250_000, DELTA, True),
    ]
