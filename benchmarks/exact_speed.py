"""A release at the speed of ``X.sum(0)``? The exact float path measured in one run.

For each shape (10^6 x 100, 10^5 x 1000, 10^7 x 10) and each relation, the
time of ``clipped_gaussian_mechanism`` (float path: every row clipped and
rounded to a fine grid by itself, integers summed exactly, noise added
exactly) and of the grid path (``secure=True``: exact discrete Gaussian noise),
each divided by the time of ``X.sum(0)`` on the same array, best of
``--repeats`` runs, interleaved so that both see the same machine load.
Targets (issue 36): float path at most 1.3x, secure path at most 2x.

The kernel is pure NumPy (single-threaded, like ``X.sum(0)``); the ratio
printed is the one a user sees.

Run: ``.venv/bin/python benchmarks/exact_speed.py [--small] [--repeats N]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dpsum

SHAPES = [(10**6, 100), (10**5, 1000), (10**7, 10)]
SMALL = [(10**5, 100), (10**4, 1000), (10**6, 10)]


def best(f, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="shapes 10x smaller")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    gen = np.random.default_rng(0)
    print(f"{'shape':>14s} {'relation':>10s} {'X.sum(0) s':>11s} {'float/sum':>10s} "
          f"{'secure/sum':>11s}")
    for n, d in (SMALL if args.small else SHAPES):
        X = gen.standard_normal((n, d))
        for relation in ("replace", "add-remove"):
            kw = dict(epsilon=1.0, delta=1e-6, clip_norm=float(np.sqrt(d)),
                      neighbouring=relation)
            t_sum = best(lambda: X.sum(0), args.repeats)
            t_float = best(lambda: dpsum.clipped_gaussian_mechanism(X, rng=0, **kw),
                           args.repeats)
            t_secure = best(lambda: dpsum.clipped_gaussian_mechanism(X, rng=0, secure=True,
                                                                     **kw), args.repeats)
            print(f"{n:>8d} x {d:<4d} {relation:>10s} {t_sum:11.4f} "
                  f"{t_float / t_sum:10.2f} {t_secure / t_sum:11.2f}", flush=True)


if __name__ == "__main__":
    main()
