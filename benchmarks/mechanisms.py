"""Speed and memory of Algorithm 3 against the bare sum, measured in one run.

For each shape, prints the median time of ``gaussian_data_mechanism`` divided
by the median time of ``X.sum(axis=0)`` on the same array, and the peak extra
memory the mechanism allocates (``tracemalloc``) as a fraction of
``X.nbytes``. Targets (issue 5): at most 1.5x the bare sum, at most 5% extra
memory. The column "best5" is issue 18's measure: the best of 5 interleaved
runs of the clipped release divided by the best of 5 of ``X.sum(axis=0)``,
same process. Run: ``flock /tmp/dpsum-heavy.lock .venv/bin/python
benchmarks/mechanisms.py``.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc

import numpy as np

import dpsum

SHAPES = [(10**6, 100), (10**5, 1000), (10**7, 10)]
REPEATS = 7


def _median_time(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _best_ratio(fn, base, repeats=5):
    """Best of ``repeats`` of ``fn`` over best of ``repeats`` of ``base``,
    interleaved so that machine noise hits both alike."""
    best_fn = best_base = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        base()
        t1 = time.perf_counter()
        fn()
        t2 = time.perf_counter()
        best_base, best_fn = min(best_base, t1 - t0), min(best_fn, t2 - t1)
    return best_fn / best_base


def main():
    rng = np.random.default_rng(0)
    print(f"{'shape':>14} {'sum (ms)':>9} {'alg3 (ms)':>10} {'ratio':>6} "
          f"{'alg3 centred':>12} {'baseline':>9} {'extra mem':>10} {'best5':>6}")
    for n, d in SHAPES:
        stds = np.geomspace(1.0, 0.01, d)
        X = rng.standard_normal((n, d))
        X *= stds
        bare = _median_time(lambda: X.sum(axis=0))
        alg3 = _median_time(lambda: dpsum.gaussian_data_mechanism(
            X, epsilon=1.0, delta=1e-6, stds=stds, rng=1, center=0))
        best5 = _best_ratio(lambda: dpsum.gaussian_data_mechanism(
            X, epsilon=1.0, delta=1e-6, stds=stds, rng=1, center=0), lambda: X.sum(axis=0))
        radius = dpsum.clip_radius(stds, 1.0 / n)  # isotropic clipping at p_C = 1/n
        base = _median_time(lambda: dpsum.clipped_gaussian_mechanism(
            X, epsilon=1.0, delta=1e-6, clip_norm=radius, rng=1))
        tracemalloc.start()
        dpsum.gaussian_data_mechanism(X, epsilon=1.0, delta=1e-6, stds=stds, rng=1, center=0)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        center = np.full(d, 0.5)
        X += center  # the same data, now drawn from N(center, diag(stds^2))
        bare_c = _median_time(lambda: X.sum(axis=0))
        centred = _median_time(lambda: dpsum.gaussian_data_mechanism(
            X, epsilon=1.0, delta=1e-6, stds=stds, center=center, rng=1))
        print(f"{f'{n:.0e}x{d}':>14} {bare * 1e3:9.1f} {alg3 * 1e3:10.1f} {alg3 / bare:6.2f} "
              f"{centred / bare_c:12.2f} {base / bare:9.2f} {peak / X.nbytes:10.2%} {best5:6.2f}")


if __name__ == "__main__":
    main()
