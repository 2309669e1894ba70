"""The grid path against the floating-point path, measured in one run (issue 16).

1. Speed: Algorithm 3 released on the floating-point path (clipping kernel +
   NumPy Gaussian noise) and on the grid path (grid rounding, exact integer
   sum, exact discrete Gaussian noise from the OS's secure generator), on
   10^6 x 100 and 10^5 x 1000 float64 data: best of 5, interleaved, and the
   ratio secure / float. Target: at most 2x.
2. Timing leak (reproducer 7): each kernel's time with every row clipped
   divided by its time with none clipped, on 20000 x 100.
3. The discrete Gaussian samplers: dpsum's exact sampler and OpenDP's
   (``then_gaussian`` on an integer vector domain), goodness of fit against
   the exact pmf (chi-square p-value, 20000 draws, sigma^2 = 2) and time for
   1000 draws at sigma = 3 and sigma = 1e8.
4. The Laplace mechanism: ``laplace_mechanism(..., secure=True)`` (grid
   rounding, exact discrete Laplace from the OS's secure generator) against the
   floating-point path, d = 10, 100, 1000, best of 5, as a ratio; and the
   discrete Laplace sampler's goodness of fit (chi-square p-value, 20000 draws
   at scale 7/3).

Run: ``flock /tmp/dpsum-heavy.lock .venv/bin/python benchmarks/secure.py``
(needs the ``bench`` extra for OpenDP).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
from scipy import stats

import dpsum
from dpsum.distributions import discrete
from dpsum.kernels import grid
from dpsum.kernels.grid import clipped_sum

SHAPES = [(10**6, 100), (10**5, 1000)]
REPEATS = 5
EPS, DELTA = 1.0, 1e-6


def best_times(*fns, repeats=REPEATS):
    """Best-of-``repeats`` time of each function, interleaved so that machine
    noise hits them alike."""
    best = [math.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def float_release(X, stds):
    return dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, rng=1, center=0)


def secure_release(X, stds):
    """Algorithm 3 on the grid path, noise from the OS's secure generator."""
    return dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=stds, secure=True, center=0)


def speed():
    rng = np.random.default_rng(0)
    print("1. Algorithm 3, secure (grid) path / float path, best of 5")
    print(f"{'shape':>12} {'sum ms':>8} {'float ms':>9} {'secure ms':>10} {'secure/float':>13}")
    for n, d in SHAPES:
        stds = np.geomspace(1.0, 0.01, d)
        X = rng.standard_normal((n, d)) * stds
        t_sum, t_float, t_secure = best_times(lambda: X.sum(axis=0),
                                              lambda: float_release(X, stds),
                                              lambda: secure_release(X, stds))
        print(f"{f'{n:.0e}x{d}':>12} {t_sum * 1e3:8.1f} {t_float * 1e3:9.1f} "
              f"{t_secure * 1e3:10.1f} {t_secure / t_float:13.2f}")
        del X


def timing_leak():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20_000, 100))
    t_f_none, t_f_all, t_g_none, t_g_all = best_times(
        lambda: clipped_sum(X, 1e3), lambda: clipped_sum(X, 1.0),
        lambda: grid.grid_clipped_sum(X, 1e3), lambda: grid.grid_clipped_sum(X, 1.0),
        repeats=9)
    print("\n2. Time with every row clipped / time with none clipped (20000 x 100, best of 9)")
    print(f"   float kernel: {t_f_all / t_f_none:.2f}   grid kernel: {t_g_all / t_g_none:.2f}")


def gof_pvalue(x, sigma2):
    half = int(math.ceil(4 * math.sqrt(sigma2))) + 1
    cells = np.arange(-half, half + 1)
    p = discrete.discrete_gaussian_pmf(cells, sigma2)
    p[0] += discrete.discrete_gaussian_pmf(np.arange(-half - 100, -half), sigma2).sum()
    p[-1] += discrete.discrete_gaussian_pmf(np.arange(half + 1, half + 101), sigma2).sum()
    obs = np.array([np.sum(np.clip(x, -half, half) == c) for c in cells])
    return stats.chisquare(obs, p * len(x) / p.sum()).pvalue


def samplers():
    print("\n3. Discrete Gaussian samplers: dpsum (exact, pure Python, OS CSPRNG) vs OpenDP")
    try:
        import opendp.prelude as dp
    except ImportError:
        print("   OpenDP not installed (pip install -e '.[bench]'): skipped")
        return
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)

    def opendp_draws(sigma, size):
        return np.array((space >> dp.m.then_gaussian(scale=sigma))([0] * size))

    sigma2 = 2.0
    p_ours = gof_pvalue(discrete.discrete_gaussian(sigma2, size=20_000).astype(np.int64), sigma2)
    p_theirs = gof_pvalue(opendp_draws(math.sqrt(sigma2), 20_000), sigma2)
    print(f"   goodness of fit, sigma^2 = 2, 20000 draws: p = {p_ours:.3f} (dpsum), "
          f"{p_theirs:.3f} (OpenDP)")
    for sigma in (3.0, 1e8):
        t_ours, t_theirs = best_times(lambda: discrete.discrete_gaussian(sigma * sigma, size=1000),
                                      lambda: opendp_draws(sigma, 1000))
        print(f"   1000 draws at sigma = {sigma:g}: dpsum {t_ours * 1e3:.1f} ms, "
              f"OpenDP {t_theirs * 1e3:.1f} ms, ratio {t_ours / t_theirs:.2f}")


def laplace():
    print("\n4. laplace_mechanism, secure (discrete Laplace on the grid) / float path, best of 5")
    rng = np.random.default_rng(4)
    for d in (10, 100, 1000):
        value = rng.standard_normal(d)
        t_float, t_secure = best_times(
            lambda: dpsum.laplace_mechanism(value, epsilon=EPS, sensitivity=1.0, rng=1),
            lambda: dpsum.laplace_mechanism(value, epsilon=EPS, sensitivity=1.0, secure=True))
        print(f"   d = {d:5d}: float {t_float * 1e3:7.3f} ms, secure {t_secure * 1e3:7.2f} ms, "
              f"ratio {t_secure / t_float:7.0f}")
    tau = Fraction(7, 3)
    x = discrete.discrete_laplace(tau, size=20_000).astype(np.int64)
    half = 14
    cells = np.arange(-half, half + 1)
    p = discrete.discrete_laplace_pmf(cells, float(tau))
    tail = discrete.discrete_laplace_pmf(np.arange(half + 1, half + 400), float(tau)).sum()
    p[0] += tail
    p[-1] += tail
    obs = np.array([np.sum(np.clip(x, -half, half) == c) for c in cells])
    print(f"   discrete Laplace goodness of fit, scale 7/3, 20000 draws (OS CSPRNG): "
          f"p = {stats.chisquare(obs, p * len(x) / p.sum()).pvalue:.3f}")


def main():
    speed()
    timing_leak()
    samplers()
    laplace()


if __name__ == "__main__":
    main()
