"""A release at the speed of ``X.sum(0)``? The exact paths measured in one run.

For each shape (10^6 x 100, 10^5 x 1000, 10^7 x 10) and each relation, the
time of ``clipped_gaussian_mechanism`` on the float path (every row clipped and
rounded to a fine grid by itself, integers summed exactly, noise added
exactly), on all cores and on one thread, of the grid path (``secure=True``,
exact discrete Gaussian noise), and of ``elliptical_gaussian_mechanism``
(replace-one only), each divided by the time of ``X.sum(0)`` on the same
array (NumPy's sum is single-threaded): best of ``--repeats`` runs, measured
one after the other in the same process, after a first call that compiles the
kernels (its time is printed apart). Targets (issue 36): float path at most
1.3x, secure path at most 2x.

Without numba (the ``fast`` extra) the NumPy kernel runs: the same bits,
several times slower. ``DPSUM_KERNEL=numpy`` forces it.

Run: ``.venv/bin/python benchmarks/exact_speed.py [--small] [--repeats N]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import dpsum
from dpsum.kernels import _compiled

SHAPES = [(10**6, 100), (10**5, 1000), (10**7, 10)]
SMALL = [(10**5, 100), (10**4, 1000), (10**6, 10)]


def best(f, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return min(out)


def threads(k: int | None) -> None:
    """The compiled kernels' threads: ``k``, or every core (None)."""
    _compiled.set_threads(k)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="shapes 10x smaller")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    # the mechanisms' default diagnostic counts warn on these synthetic data
    warnings.simplefilter("ignore")
    gen = np.random.default_rng(0)
    kernel = "numba" if _compiled.available() else "numpy"
    t0 = time.perf_counter()
    X = gen.standard_normal((100, 3))
    dpsum.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0, rng=0)
    dpsum.elliptical_gaussian_mechanism(X, lower=-1.0 * np.ones(3), upper=np.ones(3),
                                        epsilon=1.0, delta=1e-6, rng=0)
    print(f"kernel: {kernel}; first calls (compilation or cache load): "
          f"{time.perf_counter() - t0:.2f} s")
    print(f"{'shape':>14s} {'relation':>10s} {'X.sum(0) s':>11s} {'float/sum':>10s} "
          f"{'1 thread':>9s} {'secure/sum':>11s} {'box/sum':>8s}")
    for n, d in (SMALL if args.small else SHAPES):
        X = gen.standard_normal((n, d))
        lo, hi = -3.0 * np.ones(d), 3.0 * np.ones(d)
        for relation in ("replace", "add-remove"):
            kw = dict(epsilon=1.0, delta=1e-6, clip_norm=float(np.sqrt(d)),
                      neighbouring=relation)
            t_sum = best(lambda: X.sum(0), args.repeats)
            t_float = best(lambda: dpsum.clipped_gaussian_mechanism(X, rng=0, **kw),
                           args.repeats)
            threads(1)
            t_one = best(lambda: dpsum.clipped_gaussian_mechanism(X, rng=0, **kw),
                         args.repeats)
            threads(None)
            t_secure = best(lambda: dpsum.clipped_gaussian_mechanism(X, rng=0, secure=True,
                                                                     **kw), args.repeats)
            box = "-"
            if relation == "replace":
                t_box = best(lambda: dpsum.elliptical_gaussian_mechanism(
                    X, lower=lo, upper=hi, epsilon=1.0, delta=1e-6, rng=0), args.repeats)
                box = f"{t_box / t_sum:.2f}"
            print(f"{n:>8d} x {d:<4d} {relation:>10s} {t_sum:11.4f} "
                  f"{t_float / t_sum:10.2f} {t_one / t_sum:9.2f} {t_secure / t_sum:11.2f} "
                  f"{box:>8s}", flush=True)


if __name__ == "__main__":
    main()
