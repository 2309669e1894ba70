"""Coverage of every interval type of dpsum.accuracy, and one planning example.

Usage: ``.venv/bin/python benchmarks/accuracy_coverage.py [releases]``
(default 20000 releases per row; takes a few minutes on a quiet core).

Each row releases ``R`` times on fixed data (the total-error row redraws the
data from the public model, which is what its statement is about) and
counts how often the interval covers its target. The tolerance is
``4 sqrt(beta (1 - beta) / R)`` (per-coordinate rows pool ``R d``
independent coordinate checks). Exact intervals must lie within it on both
sides; conservative ones (marked ">=") only above ``1 - beta - tol``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

import dpsum
from dpsum.release.noise import ConfidenceBall
from dpsum.kernels.grid import clipped_sum

BETA = 0.1


def tol(trials: int) -> float:
    return 4.0 * math.sqrt(BETA * (1 - BETA) / trials)


def main(R: int) -> None:
    rng = np.random.default_rng(2026)
    stds = np.array([3.0, 1.5, 1.0, 0.4, 0.1])
    d = stds.size
    X = rng.normal(0.0, stds, size=(200, d))
    box = np.array([4.0, 2.0, 2.0, 1.0, 0.5])
    rows = []

    def vector_rows(label, release_of, target_of):
        first = release_of()
        target = target_of(first)
        radius = first.confidence_ball(BETA).radius
        ball = marg = simul = 0
        for _ in range(R):
            rel = release_of()
            ball += ConfidenceBall(rel.estimate, radius, BETA).contains(target)
            lo, hi = rel.confidence_intervals(BETA)
            marg += int(np.sum((lo <= target) & (target <= hi)))
            lo, hi = rel.confidence_intervals(BETA, simultaneous=True)
            simul += bool(np.all((lo <= target) & (target <= hi)))
        rows.append((f"{label}: ball", "=", ball / R, R, tol(R)))
        rows.append((f"{label}: per-coordinate", "=", marg / (R * d), R * d, tol(R * d)))
        rows.append((f"{label}: simultaneous box", "=", simul / R, R, tol(R)))

    def clipped_target(rel, center=None):
        scaled, _ = clipped_sum(X, rel.clip_norm, rel.scaling, center)
        return scaled / rel.scaling + (0.0 if center is None else X.shape[0] * center)

    vector_rows("Algorithm 1", lambda: dpsum.gaussian_mechanism(
        X.sum(axis=0), epsilon=1.0, delta=1e-6, sensitivity=2.0, rng=rng), lambda rel: X.sum(axis=0))
    vector_rows("Algorithm 2", lambda: dpsum.elliptical_gaussian_mechanism(
        X, epsilon=1.0, delta=1e-6, lower=-0.5 * np.asarray(box), upper=0.5 * np.asarray(box), rng=rng),
        lambda rel: np.clip(X, -box / 2, box / 2).sum(axis=0))
    vector_rows("Algorithm 3", lambda: dpsum.gaussian_data_mechanism(
        X, epsilon=1.0, delta=1e-6, stds=stds, clip_probability=0.05, rng=rng, center=0), clipped_target)
    vector_rows("clipping baseline", lambda: dpsum.clipped_gaussian_mechanism(
        X, epsilon=1.0, delta=1e-6, clip_norm=2.0, rng=rng), clipped_target)

    # Laplace: per-coordinate and simultaneous intervals (its norm has no gchisq law)
    target = X.sum(axis=0)
    marg = simul = 0
    for _ in range(R):
        rel = dpsum.laplace_mechanism(target, epsilon=1.0, sensitivity=5.0, rng=rng)
        lo, hi = rel.confidence_intervals(BETA)
        marg += int(np.sum((lo <= target) & (target <= hi)))
        lo, hi = rel.confidence_intervals(BETA, simultaneous=True)
        simul += bool(np.all((lo <= target) & (target <= hi)))
    rows.append(("Laplace: per-coordinate", "=", marg / (R * d), R * d, tol(R * d)))
    rows.append(("Laplace: simultaneous box", "=", simul / R, R, tol(R)))

    # total error against the true sum, data redrawn from the public model
    s3, n3, p3 = np.array([2.0, 1.0, 0.5]), 60, 0.3
    bound = dpsum.gaussian_data_error_bound(s3, n3, epsilon=30.0, delta=1e-6, beta=BETA,
                                            clip_probability=p3)
    hits = 0
    for _ in range(R):
        Y = rng.normal(0.0, s3, size=(n3, 3))
        rel = dpsum.gaussian_data_mechanism(Y, epsilon=30.0, delta=1e-6, stds=s3,
                                            clip_probability=p3, rng=rng, center=0)
        hits += np.linalg.norm(rel.estimate - Y.sum(axis=0)) <= bound.bound
    rows.append(("Algorithm 3: total error vs true sum", ">=", hits / R, R, tol(R)))

    bits = (rng.random(2000) < 0.2).astype(int)
    for label, rel_of, kk in (
        ("randomized response (n=300)", lambda: dpsum.randomized_response(
            bits[:300], epsilon=1.0, rng=rng), int(bits[:300].sum())),
        ("binomial noise (n=2000)", lambda: dpsum.binomial_noise_mechanism(
            bits, epsilon=1.0, delta=1e-3, rng=rng), int(bits.sum())),
        ("sample-and-threshold (n=2000)", lambda: dpsum.sample_and_threshold(
            bits, epsilon=1.0, delta=1e-6, rng=rng), int(bits.sum())),
    ):
        Rb = max(R // 10, 200)  # the exact inversions cost milliseconds each
        hits = sum(lo <= kk <= hi for lo, hi in (dpsum.binary.count_interval(rel_of(), BETA)
                                                 for _ in range(Rb)))
        rows.append((f"count interval, {label}", ">=", hits / Rb, Rb, tol(Rb)))

    print(f"| interval | nominal | observed | releases | tolerance | verdict |")
    print("|---|---|---|---|---|---|")
    for label, kind, obs, trials, t in rows:
        ok = abs(obs - (1 - BETA)) <= t if kind == "=" else obs >= 1 - BETA - t
        nominal = f"{1 - BETA:.2f}" if kind == "=" else f">= {1 - BETA:.2f}"
        print(f"| {label} | {nominal} | {obs:.4f} | {trials} | {t:.4f} | {'ok' if ok else 'FAIL'} |")

    # planning: n for a target error of the mean, epsilon = 1, delta = 1e-6, d = 100, Zipf stds
    zipf = 1.0 / np.arange(1, 101)
    target, beta = 0.01, 0.05
    print(f"\nPlanning: smallest n with a {1 - beta:.0%} bound <= {target} on the L2 error of the mean,")
    print("epsilon = 1, delta = 1e-6, d = 100, stds = 1/j (||stds|| = "
          f"{np.linalg.norm(zipf):.3f}), p_C = 1/n, replace-one")
    for scaling, label in (("scaled", "Algorithm 3 (Lemma 3.1)"), ("isotropic", "isotropic clipping")):
        for include_bias in (True, False):
            n = dpsum.plan_n(target, stds=zipf, epsilon=1.0, delta=1e-6, beta=beta,
                             scaling=scaling, include_bias=include_bias)
            eb = dpsum.gaussian_data_error_bound(zipf, n, epsilon=1.0, delta=1e-6, beta=beta,
                                                 scaling=scaling, include_bias=include_bias,
                                                 statistic="mean")
            prev = dpsum.gaussian_data_error_bound(zipf, n - 1, epsilon=1.0, delta=1e-6, beta=beta,
                                                   scaling=scaling, include_bias=include_bias,
                                                   statistic="mean")
            what = "vs true sum  " if include_bias else "vs clipped sum"
            print(f"  {label:<24} {what}: n = {n:>6}  bound(n) = {eb.bound:.8f}  "
                  f"bound(n-1) = {prev.bound:.8f}  split noise/bias = {eb.noise_beta:.4f}/{eb.bias_beta:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
