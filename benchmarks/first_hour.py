"""The nine scenarios of issue 27 ("The engineer's first hour"), with the numbers.

The issue's user: a 100,000 x 50 array whose scales (0.01 to 100) and means
(about +-5) are unknown, who wants a private mean with a 95% interval. For
each scenario this prints what the library does now: coverage of the data
mean by the 95% intervals (fraction of the 50 coordinates), the largest error
of the estimate, the warnings' text, the repr's length.

Run: ``.venv/bin/python benchmarks/first_hour.py`` (about a minute).
"""

from __future__ import annotations

import json
import warnings

import numpy as np

import dpsum
from dpsum.release.records import PublicInputWarning

N, D, EPS, DELTA = 100_000, 50, 1.0, 1e-6


def data(n: int = N, d: int = D, seed: int = 0):
    gen = np.random.default_rng(seed)
    scales = np.geomspace(0.01, 100.0, d)
    means = gen.uniform(-5.0, 5.0, d)
    return gen.normal(means, scales, size=(n, d)), means, scales


def run(label: str, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PublicInputWarning)
        try:
            r = fn()
        except (TypeError, ValueError) as err:
            print(f"{label}: refused: {type(err).__name__}: {err}")
            return None
    for w in caught:
        if issubclass(w.category, PublicInputWarning):
            print(f"{label}: warning: {w.message}")
    return r


def cover(r, truth, kind="confidence"):
    iv = r.confidence_intervals(0.05) if kind == "confidence" else r.data_intervals(0.05)
    return float(np.mean(iv.covers(truth))), iv


def main() -> None:
    X, means, scales = data()
    truth = X.mean(axis=0)
    print(f"data: {N} x {D}, scales 0.01..100, means in +-5\n")

    print("1. off-centre data, a model-based mechanism")
    run("   without center", lambda: dpsum.gaussian_data_mechanism(
        X, epsilon=EPS, delta=DELTA, stds=scales, rng=1))
    r = run("   center=0 (wrong), diagnostics=True", lambda: dpsum.gaussian_data_mechanism(
        X, epsilon=EPS, delta=DELTA, stds=scales, center=0, statistic="mean",
        diagnostics=True, rng=1))
    c, _ = cover(r, truth)
    print(f"   center=0: largest error {np.max(np.abs(r.estimate - truth)):.3g}, "
          f"coverage of the data mean {c:.0%}")
    r = run("   center=true means", lambda: dpsum.gaussian_data_mechanism(
        X, epsilon=EPS, delta=DELTA, stds=scales, center=means, statistic="mean", rng=1))
    c, _ = cover(r, truth)
    cd, _ = cover(r, truth, "data")
    print(f"   center=means: largest error {np.max(np.abs(r.estimate - truth)):.3g}, "
          f"coverage {c:.0%} (clipped-mean intervals), {cd:.0%} (data_intervals)")
    r = run("   elliptical, box [-1000, 1000]", lambda: dpsum.elliptical_gaussian_mechanism(
        X, epsilon=EPS, delta=DELTA, lower=-1000, upper=1000, statistic="mean", rng=1))
    c, _ = cover(r, truth)
    print(f"   elliptical on [-1000, 1000]: coverage {c:.0%}")

    print("\n2. a box that is too small (private_mean)")
    for lo, hi in ((-1, 1), (-1000, 1000), (-1e12, 1e12)):
        r = run(f"   [{lo:g}, {hi:g}]", lambda: dpsum.private_mean(
            X, lower=lo, upper=hi, epsilon=EPS, delta=DELTA, rng=1))
        c, _ = cover(r, truth)
        cd, _ = cover(r, truth, "data")
        print(f"   [{lo:g}, {hi:g}]: largest error {np.max(np.abs(r.estimate - truth)):.3g}, "
              f"coverage {c:.0%} (clipped), {cd:.0%} (data_intervals), strategy "
              f"{r.strategy!r}, private counts: outside {r.outside_count:.0f}, "
              f"clipped {r.clip_count:.0f}")

    print("\n3. the right function: README 'Which function?' table (see README.md)")

    print("\n4. intervals say what they cover")
    r = dpsum.private_mean(X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1)
    print(f"   {r.confidence_intervals(0.05)!r}")
    print(f"   {r.data_intervals(0.05)!r}")
    print(f"   {r.confidence_ball(0.05)!r}")

    print("\n5. too few rows (n = 500, d = 50)")
    small = X[:500]
    r = run("   n=500", lambda: dpsum.private_mean(
        small, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1))
    err = np.max(np.abs(r.estimate - small.mean(axis=0)) / scales)
    print(f"   n=500: strategy {r.strategy!r}, largest error / scale {err:.3g}, "
          f"{len(r.notes)} note(s) recorded")

    print("\n6. secure=True on the pipeline")
    r = run("   secure", lambda: dpsum.private_mean(
        X, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA, rng=1, secure=True))
    c, _ = cover(r, truth)
    print(f"   secure=True: {r.secure}, coverage {c:.0%}, largest error "
          f"{np.max(np.abs(r.estimate - truth)):.3g}")

    print("\n7. readable records")
    print(f"   repr ({len(repr(r))} chars): {r!r}")
    print("   summary():")
    print("\n".join("     " + line for line in r.summary(rows=3).splitlines()))
    print(f"   guarantee: epsilon {r.guarantee.epsilon!r} in the record, "
          f"{r.to_dict()['guarantee']['epsilon']} in to_dict(); JSON: "
          f"{len(json.dumps(r.to_dict()))} chars")
    m = dpsum.gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=scales, center=means,
                                      statistic="mean", rng=1)
    print(f"   gaussian_data_mechanism(statistic='mean'): {m!r}")

    print("\n8. pandas")
    try:
        import pandas as pd
    except ImportError:
        print("   pandas not installed")
    else:
        frame = pd.DataFrame(X[:, :3], columns=["income", "age", "height"])
        r = dpsum.private_mean(frame, lower=-1000, upper=1000, epsilon=EPS, delta=DELTA,
                               rng=1)
        print("   " + r.to_pandas().round(4).to_string().replace("\n", "\n   "))
        run("   a string column", lambda: dpsum.private_mean(
            frame.assign(age=frame["age"].astype(str)), lower=-1, upper=1, epsilon=EPS,
            delta=DELTA))
        bad = frame.copy()
        bad.iloc[17, 2] = np.nan
        run("   a NaN", lambda: dpsum.private_mean(bad, lower=-1, upper=1, epsilon=EPS,
                                                   delta=DELTA))

    print("\n9. import cost: python benchmarks/import_cost.py")


if __name__ == "__main__":
    main()
