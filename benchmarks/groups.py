"""Per-group private sums with privacy units: speed against pandas' own group-by sum.

A table of ``--rows`` rows (default 10^7), ``--units`` privacy units (10^5,
a heavy-tailed number of rows each), ``--groups`` groups (1,000) and ``--d``
value columns (16) is built in memory as a pandas DataFrame with an integer
``user`` column, an integer ``region`` column and the value columns. In the
same run, interleaved, best of ``--repeats``:

- the reference: ``df.groupby("region")[columns].sum()``, the non-private sums;
- ``private_group_sums`` with the groups listed (public groups), per-unit sums;
- ``private_group_sums`` with private group discovery (``groups=None``);
- with ``--dask PARTS``, the public-groups run on the table as a dask
  DataFrame of ``PARTS`` partitions (checked equal to the pandas release).

Each private run is reported as a ratio to the reference (target: at most 3)
with its throughput. The private runs bound every unit (``--max-rows`` rows
per group, ``--max-groups`` groups), clip one vector per unit and group, sum
exactly on the grid and add calibrated noise; the figures include reading the
id and key columns and every check.

Run the full size under the heavy-job lock:
``flock /tmp/heavy.lock .venv/bin/python benchmarks/groups.py``; smaller
sizes with flags, e.g. ``--rows 1000000 --units 10000``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# benchmarks/dask.py would shadow the dask package when this script runs from
# its directory: drop that entry of sys.path.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpsum.tables import private_group_sums  # noqa: E402


def table(rows: int, units: int, groups: int, d: int, seed: int = 0) -> pd.DataFrame:
    """Users with a heavy-tailed number of rows (Zipf weights), uniform regions."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, units + 1) ** 0.8
    user = rng.choice(units, size=rows, p=weights / weights.sum())
    region = rng.integers(0, groups, size=rows)
    data = {"user": user.astype(np.int64), "region": region.astype(np.int64)}
    values = rng.normal(size=(rows, d))
    for j in range(d):
        data[f"x{j}"] = values[:, j]
    return pd.DataFrame(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--units", type=int, default=10**5)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--max-rows", type=int, default=4)
    ap.add_argument("--max-groups", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dask", type=int, default=0, metavar="PARTS",
                    help="also time the dask path on the table cut into PARTS partitions "
                         "(threaded scheduler), and check it gives the pandas release")
    args = ap.parse_args()
    t0 = time.perf_counter()
    df = table(args.rows, args.units, args.groups, args.d)
    columns = [f"x{j}" for j in range(args.d)]
    print(f"table: {args.rows:,} rows, {df['user'].nunique():,} units, "
          f"{df['region'].nunique():,} groups, d = {args.d} "
          f"(built in {time.perf_counter() - t0:.1f} s)")
    common = dict(privacy_unit="user", by="region", columns=columns, clip_norm=4.0,
                  max_rows=args.max_rows, max_groups=args.max_groups, epsilon=1.0,
                  delta=1e-6)
    jobs = {
        "groupby sum (reference)": lambda: df.groupby("region")[columns].sum(),
        "private, public groups": lambda: private_group_sums(
            df, groups=list(range(args.groups)), rng=1, **common),
        "private, group discovery": lambda: private_group_sums(df, rng=2, **common),
    }
    if args.dask:
        import dask.dataframe as dd
        ddf = dd.from_pandas(df, npartitions=args.dask)
        want = private_group_sums(df, groups=list(range(args.groups)), rng=1, **common)
        got = private_group_sums(ddf, groups=list(range(args.groups)), rng=1, **common)
        assert np.array_equal(want.noisy_sum, got.noisy_sum), "dask differs from pandas"
        print(f"dask path ({args.dask} partitions): the pandas release bit for bit")
        jobs[f"private, dask ({args.dask} parts)"] = lambda: private_group_sums(
            ddf, groups=list(range(args.groups)), rng=1, **common)
    best = {name: float("inf") for name in jobs}
    for _ in range(args.repeats):
        for name, job in jobs.items():
            t = time.perf_counter()
            out = job()
            best[name] = min(best[name], time.perf_counter() - t)
            if name == "private, group discovery":
                released = len(out.groups)
    ref = best["groupby sum (reference)"]
    print(f"{'job':<30} {'best s':>8} {'ratio':>7} {'Mrows/s':>8}")
    for name, t in best.items():
        print(f"{name:<30} {t:8.3f} {t / ref:7.2f} {args.rows / t / 1e6:8.2f}")
    print(f"groups released by discovery: {released} of {args.groups}; "
          f"target ratio <= 3")


if __name__ == "__main__":
    main()
