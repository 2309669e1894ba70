"""Generalized chi-square tails: dpsum against gx2, chi2comb and momentchi2.

For ``X = sum_j w_j Z_j^2`` with weights ``w_j = 1/j`` (j = 1..d), d in
{10, 100, 1000, 10000}, and survival probabilities p in {1e-2, 1e-6, 1e-10,
1e-14}, prints for every tool

* ``sf err``: the relative error of P(X > x) at the exact p-quantile x;
* ``isf err``: the relative error of the quantile returned for p;
* the median wall time of each call, in milliseconds.

The exact values are the mpmath references in tests/data/gchisq_reference_d*.json
computed by tests/data/make_gchisq_reference.py (fixed Talbot inversion at 55
digits for d <= 100, a 25-digit contour integral for d >= 1000): each stored
point is a pair (x, P(X > x)) exact to far more digits than double precision.

The tools, on the same inputs:

* ``dpsum``: :class:`dpsum.gchisq.GeneralizedChiSquare` (``sf``, ``isf``).
* ``gx2``: ``gx2.cdf(..., side="upper")`` and ``gx2.inv(..., side="upper")``
  (Das and Geisler; its automatic method choice picks Ruben's series here).
* ``chi2comb``: Davies' algorithm (AS 155) in the C library behind the
  ``chi2comb`` package, called through ctypes because the PyPI package ships
  no compiled library. Point ``CHI2COMB_LIB`` at a ``libchi2comb.so`` built
  from the limix/chi2comb sources (``gcc -O2 -fPIC -shared -o libchi2comb.so
  chi2comb.c -lm``); without it the rows are skipped. The upper tail is asked
  for as the distribution function of ``-X`` at ``-x`` (the tool's
  accuracy is absolute, so this is its best chance), with its tightest
  settings: error tolerance 1e-18, up to 10^6 integration terms.
* ``mc2-hbe`` and ``mc2-lpb4``: momentchi2's Hall-Buckley-Eagleson and
  Lindsay-Pilla-Basak (4 moments) approximations of the distribution
  function, ``sf = 1 - cdf``. ``lpb4`` calls ``np.math.factorial``, and
  ``np.math`` was removed in NumPy 2; this script puts the standard
  ``math`` module back as ``np.math`` for the duration of the run (a shim,
  not a change to the package).

chi2comb and momentchi2 have no quantile function; their ``isf`` is
``scipy.optimize.brentq`` on their own ``sf`` over [mean, 100 x mean], to a
relative 1e-14. A call that fails, or returns something that is not a
probability, shows ``fail``; a call that runs longer than ``--timeout``
seconds (default 120) shows ``timeout``.

Targets (issue 4): dpsum's ``sf`` under 10 ms and ``isf`` under 100 ms at
d = 10000, and the only tool exact in the tail.

Run: ``.venv/bin/python benchmarks/gchisq.py`` (about 4 minutes on an idle
machine, most of it in gx2's quantile function; ``--skip-slow`` leaves out
gx2's isf for d >= 1000).

Batches (issue 18): ``.venv/bin/python benchmarks/gchisq.py --batch`` times,
in one run, ``cdf``, ``sf``, ``isf`` and ``ppf`` of dpsum on 1000 points at
d = 100 (weights 1/j) called point by point in a Python loop (the only way
before the methods were vectorised) and called once on the whole array, and
prints the ratio, the largest relative difference between the two, and the
relative error of the batched call against the mpmath references of
tests/data/gchisq_reference_d100.json. Timings are the best of ``--repeat``
runs, loop and batch interleaved. ``--loop-only`` times only the loop, which
also works with older versions of the package (put their source first on
``PYTHONPATH``) to compare with them.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import os
import signal
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize

from dpsum.distributions.gchisq import GeneralizedChiSquare

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DIMS = (10, 100, 1000, 10000)
PROBS = (1e-2, 1e-6, 1e-10, 1e-14)


class CallTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    def handler(signum, frame):
        raise CallTimeout

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(int(seconds))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def numpy_math_shim():
    """Put ``math`` back as ``np.math`` (removed in NumPy 2) for momentchi2."""
    had = hasattr(np, "math")
    if not had:
        np.math = math
    try:
        yield
    finally:
        if not had:
            del np.math


def reference_points(d):
    """{p: (x, exact sf)} for the weights 1/j, central, upper tail."""
    path = DATA / f"gchisq_reference_d{d}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    for case in data["cases"]:
        if case["family"] == "harmonic" and not case["noncentral"]:
            return {
                pt["target"]: (pt["x"], float(pt["sf"]))
                for pt in case["points"]
                if pt["tail"] == "upper" and pt["target"] in PROBS
            }
    return None


# ------------------------------------------------------------------- tools
def load_chi2comb():
    """ctypes binding of chi2comb_cdf from libchi2comb, or None."""
    path = os.environ.get("CHI2COMB_LIB")
    if not path or not Path(path).exists():
        return None
    lib = ctypes.CDLL(path)

    class ChiSquareds(ctypes.Structure):
        _fields_ = [
            ("coefs", ctypes.POINTER(ctypes.c_double)),
            ("ncents", ctypes.POINTER(ctypes.c_double)),
            ("dofs", ctypes.POINTER(ctypes.c_int)),
            ("n", ctypes.c_int),
        ]

    class Info(ctypes.Structure):
        _fields_ = [
            ("emag", ctypes.c_double),
            ("niterms", ctypes.c_int),
            ("nints", ctypes.c_int),
            ("intv", ctypes.c_double),
            ("truc", ctypes.c_double),
            ("sd", ctypes.c_double),
            ("ncycles", ctypes.c_int),
        ]

    fn = lib.chi2comb_cdf
    fn.restype = ctypes.c_int
    fn.argtypes = [
        ctypes.c_double,
        ctypes.POINTER(ChiSquareds),
        ctypes.c_double,
        ctypes.c_int,
        ctypes.c_double,
        ctypes.POINTER(Info),
        ctypes.POINTER(ctypes.c_double),
    ]

    def make_sf(w):
        coefs = np.ascontiguousarray(-w, dtype=np.float64)  # the law of -X
        ncents = np.zeros_like(coefs)
        dofs = np.ones(w.size, dtype=np.intc)
        chis = ChiSquareds(
            coefs.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            ncents.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            dofs.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
            w.size,
        )

        def sf(x):
            info = Info()
            out = ctypes.c_double()
            fault = fn(-float(x), ctypes.byref(chis), 0.0, 10**6, 1e-18, ctypes.byref(info), ctypes.byref(out))
            if fault not in (0, 2):  # 2: "round-off error possibly significant"
                raise RuntimeError(f"chi2comb fault {fault}")
            _keep = (coefs, ncents, dofs)  # noqa: F841 - keep the buffers alive
            return out.value

        return sf

    return make_sf


def root_isf(sf, p, mean):
    """Quantile by root finding on a tool's survival function."""

    def g(x):
        v = sf(x)
        if not v > 0:
            return -math.inf
        return math.log(v) - math.log(p)

    return optimize.brentq(g, mean, 100 * mean, xtol=1e-300, rtol=1e-14, maxiter=200)


def make_tools(w, chi2comb_factory):
    import gx2
    import momentchi2

    d = w.size
    X = GeneralizedChiSquare(w)
    mean = X.mean()
    k, lam = np.ones(d), np.zeros(d)
    tools = {
        "dpsum": (X.sf, X.isf),
        "gx2": (
            lambda x: float(gx2.cdf(x, w, k, lam, 0, 0, side="upper")),
            lambda p: float(gx2.inv(p, w, k, lam, 0, 0, side="upper")),
        ),
    }
    if chi2comb_factory is not None:
        sf = chi2comb_factory(w)
        tools["chi2comb"] = (sf, lambda p, sf=sf: root_isf(sf, p, mean))
    for name, method in (("mc2-hbe", momentchi2.hbe), ("mc2-lpb4", momentchi2.lpb4)):
        sf = lambda x, method=method: 1.0 - float(method(w, float(x)))  # noqa: E731
        tools[name] = (sf, lambda p, sf=sf: root_isf(sf, p, mean))
    return tools


# ------------------------------------------------------------------ timing
def timed(fn, arg, timeout):
    """(value or error string, median seconds) of fn(arg)."""
    times = []
    value = None
    budget = time.perf_counter() + 1.0
    for rep in range(7):
        t0 = time.perf_counter()
        try:
            with time_limit(timeout), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = fn(arg)
        except CallTimeout:
            return "timeout", float(timeout)
        except Exception:  # noqa: BLE001 - a failing tool is a result here
            return "fail", time.perf_counter() - t0
        times.append(time.perf_counter() - t0)
        if times[-1] > 0.2 or time.perf_counter() > budget:
            break
    return value, statistics.median(times)


def fmt_err(value, exact):
    if isinstance(value, str):
        return value
    if value is None or not math.isfinite(value):
        return "fail"
    return f"{abs(value / exact - 1):.1e}"


def batch_points(X, n):
    """n points x spread over both tails (P from 1e-15 to 1/2 on each side), and
    n probabilities from 1e-15 to 0.99 for the quantiles."""
    probs = np.geomspace(1e-15, 0.5, n // 2)
    xs = np.sort(np.concatenate([X.isf(probs), X.ppf(probs[: n - n // 2])]))
    ps = np.geomspace(1e-15, 0.99, n)
    return xs, ps


def batch_accuracy(X, d):
    """Largest relative error of the batched sf, cdf, isf, ppf at the mpmath points."""
    data = json.loads((DATA / f"gchisq_reference_d{d}.json").read_text())
    case = next(c for c in data["cases"] if c["family"] == "harmonic" and not c["noncentral"])
    up = [p for p in case["points"] if p["tail"] == "upper"]
    lo = [p for p in case["points"] if p["tail"] == "lower"]
    xu, su = np.array([p["x"] for p in up]), np.array([float(p["sf"]) for p in up])
    xl, cl = np.array([p["x"] for p in lo]), np.array([float(p["cdf"]) for p in lo])
    rel = lambda a, b: float(np.max(np.abs(np.asarray(a) / b - 1)))  # noqa: E731
    return {"sf": rel(X.sf(xu), su), "cdf": rel(X.cdf(xl), cl),
            "isf": rel(X.isf(su), xu), "ppf": rel(X.ppf(cl), xl)}


def main_batch(args):
    d, n = args.batch_d, args.points
    X = GeneralizedChiSquare(1.0 / np.arange(1, d + 1))
    xs, ps = batch_points(X, n)
    print(f"d = {d} (weights 1/j), {n} points; best of {args.repeat} runs, seconds\n")
    header = f"{'method':>6} {'loop s':>8} {'batch s':>8} {'speed-up':>9} {'max |loop/batch - 1|':>21}"
    print(header if not args.loop_only else f"{'method':>6} {'loop s':>8}")
    print("-" * len(header))
    for name, arg in (("cdf", xs), ("sf", xs), ("isf", ps), ("ppf", ps)):
        method = getattr(X, name)
        loop_t, batch_t = math.inf, math.inf
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            looped = np.array([method(float(v)) for v in arg])
            loop_t = min(loop_t, time.perf_counter() - t0)
            if args.loop_only:
                continue
            t0 = time.perf_counter()
            batched = method(arg)
            batch_t = min(batch_t, time.perf_counter() - t0)
        if args.loop_only:
            print(f"{name:>6} {loop_t:8.3f}", flush=True)
            continue
        diff = float(np.max(np.abs(looped / batched - 1)))
        print(f"{name:>6} {loop_t:8.3f} {batch_t:8.3f} {loop_t / batch_t:8.1f}x {diff:21.1e}",
              flush=True)
    if not args.loop_only and (DATA / f"gchisq_reference_d{d}.json").exists():
        acc = batch_accuracy(X, d)
        print("\nbatched calls against the mpmath references (largest relative error):")
        print("  " + ", ".join(f"{k} {v:.1e}" for k, v in acc.items()))


def main(argv=None):
    parser = argparse.ArgumentParser(description="generalized chi-square tail benchmark")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--skip-slow", action="store_true", help="skip gx2's isf for d >= 1000")
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    parser.add_argument("--batch", action="store_true",
                        help="time a point-by-point loop against one vectorised call")
    parser.add_argument("--batch-d", type=int, default=100)
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loop-only", action="store_true",
                        help="with --batch: time the loop only (works with older versions)")
    args = parser.parse_args(argv)
    if args.batch:
        main_batch(args)
        return

    chi2comb_factory = load_chi2comb()
    if chi2comb_factory is None:
        print("chi2comb: skipped (set CHI2COMB_LIB to a built libchi2comb.so; see the docstring)")
    print("weights 1/j, central; errors relative; times are medians in ms\n")
    header = f"{'d':>6} {'p':>6} {'tool':>9} {'sf err':>8} {'sf ms':>9} {'isf err':>8} {'isf ms':>9}"
    print(header)
    print("-" * len(header))
    summary = {}
    with numpy_math_shim():
        for d in args.dims:
            refs = reference_points(d)
            if refs is None:
                print(f"{d:>6}  no reference file tests/data/gchisq_reference_d{d}.json: skipped")
                continue
            w = 1.0 / np.arange(1, d + 1)
            tools = make_tools(w, chi2comb_factory)
            for p in PROBS:
                x_ref, sf_ref = refs[p]
                for name, (sf, isf) in tools.items():
                    v, t_sf = timed(sf, x_ref, args.timeout)
                    if name == "gx2" and args.skip_slow and d >= 1000:
                        q, t_isf = "skipped", math.nan
                    else:
                        q, t_isf = timed(isf, sf_ref, args.timeout)
                    print(
                        f"{d:>6} {p:>6.0e} {name:>9} {fmt_err(v, sf_ref):>8} {t_sf * 1e3:9.2f} "
                        f"{fmt_err(q, x_ref):>8} {t_isf * 1e3:9.2f}",
                        flush=True,
                    )
                    if name == "dpsum":
                        summary.setdefault(d, []).append((t_sf, t_isf))
            print()
    if 10000 in summary:
        sf_max = max(t for t, _ in summary[10000]) * 1e3
        isf_max = max(t for _, t in summary[10000]) * 1e3
        print(
            f"d = 10000: dpsum sf at most {sf_max:.1f} ms (target < 10 ms), "
            f"isf at most {isf_max:.1f} ms (target < 100 ms)"
        )


if __name__ == "__main__":
    main()
