"""A release at the speed of ``X.sum(0)``? The exact paths measured in one run.

For each shape (10^6 x 100, 10^5 x 1000, 10^7 x 10) and each relation, the
time of ``clipped_gaussian_mechanism`` on the float path (every row clipped and
rounded to a fine grid by itself, integers summed exactly, noise added
exactly), on all cores and on one thread, of the grid path (``secure=True``,
exact discrete Gaussian noise), and of ``elliptical_gaussian_mechanism``
(replace-one only), each divided by the time of ``X.sum(0)`` on the same
array (NumPy's sum is single-threaded): best of ``--repeats`` runs, the
contenders interleaved in the same process (each repeat times every one of
them once, so a burst of load elsewhere on the machine hits them alike),
after a first call that compiles the kernels (its time is printed apart).
The dask column is the float path on the same data as a dask array (8 row
chunks, dask's threaded scheduler on every core) divided by that array's own
``X.sum(0).compute()``. Targets (issue 36): float path at most 1.3x, secure
path at most 2x, dask at most 1.3x its own sum.

Without numba (the ``fast`` extra) the NumPy kernel runs: the same bits,
several times slower. ``DPSUM_KERNEL=numpy`` forces it.

Run: ``flock /tmp/heavy.lock nice -n 0 .venv/bin/python benchmarks/exact_speed.py
[--small] [--repeats N]``
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

# benchmarks/dask.py would shadow the dask package: drop this directory
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402

import dpsum  # noqa: E402
from dpsum.kernels import _compiled  # noqa: E402

SHAPES = [(10**6, 100), (10**5, 1000), (10**7, 10)]
SMALL = [(10**5, 100), (10**4, 1000), (10**6, 10)]


def best(fs: dict, repeats: int) -> dict:
    """The best time of each of ``fs`` over ``repeats`` interleaved rounds."""
    out = {k: math.inf for k in fs}
    for _ in range(repeats):
        for k, f in fs.items():
            t = time.perf_counter()
            f()
            out[k] = min(out[k], time.perf_counter() - t)
    return out


def threads(k: int | None) -> None:
    """The compiled kernels' threads: ``k``, or every core (None)."""
    _compiled.set_threads(k)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="shapes 10x smaller")
    ap.add_argument("--repeats", type=int, default=5)
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
          f"{'1 thread':>9s} {'secure/sum':>11s} {'box/sum':>8s} {'dask/dask sum':>14s}")
    for n, d in (SMALL if args.small else SHAPES):
        X = gen.standard_normal((n, d))
        Xd = da.from_array(X, chunks=(-(-n // 8), d))
        lo, hi = -3.0 * np.ones(d), 3.0 * np.ones(d)
        for relation in ("replace", "add-remove"):
            kw = dict(epsilon=1.0, delta=1e-6, clip_norm=float(np.sqrt(d)),
                      neighbouring=relation)

            def one_thread(kw=kw) -> None:
                threads(1)
                try:
                    dpsum.clipped_gaussian_mechanism(X, rng=0, **kw)
                finally:
                    threads(None)

            fs = {
                "sum": lambda: X.sum(0),
                "float": lambda kw=kw: dpsum.clipped_gaussian_mechanism(X, rng=0, **kw),
                "one": one_thread,
                "secure": lambda kw=kw: dpsum.clipped_gaussian_mechanism(X, rng=0, secure=True,
                                                                         **kw),
                "dask sum": lambda: Xd.sum(0).compute(),
                "dask": lambda kw=kw: dpsum.clipped_gaussian_mechanism(Xd, rng=0, **kw),
            }
            if relation == "replace":
                fs["box"] = lambda: dpsum.elliptical_gaussian_mechanism(
                    X, lower=lo, upper=hi, epsilon=1.0, delta=1e-6, rng=0)
            t = best(fs, args.repeats)
            box = f"{t['box'] / t['sum']:.2f}" if "box" in t else "-"
            print(f"{n:>8d} x {d:<4d} {relation:>10s} {t['sum']:11.4f} "
                  f"{t['float'] / t['sum']:10.2f} {t['one'] / t['sum']:9.2f} "
                  f"{t['secure'] / t['sum']:11.2f} {box:>8s} "
                  f"{t['dask'] / t['dask sum']:14.2f}", flush=True)


if __name__ == "__main__":
    main()
