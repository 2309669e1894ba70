"""Per-group private sums with privacy units: speed against pandas' own group-by sum.

A table of ``--rows`` rows (default 10^7), ``--units`` privacy units (10^5,
a heavy-tailed number of rows each), ``--groups`` groups (1,000) and ``--d``
value columns (16) is built in memory as a pandas DataFrame with an integer
``user`` column, an integer ``region`` column and the value columns. In the
same run, interleaved, best of ``--repeats`` (5):

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

``--parquet`` instead writes a table of ``--rows`` rows (e.g. 10^8) to Parquet
under ``--parquet-dir`` (``/tmp/dpsum-parquet``) in pieces of ``--piece`` rows
(never the whole table in memory; values stored as float32), then, on a local
dask cluster of ``--workers`` processes with ``--worker-memory`` each (kept
below the machine's RAM; workers spill to disk), times the non-private
``groupby("region").sum()`` and ``private_group_sums`` (public groups) on the
same ``dask.dataframe.read_parquet`` frame, and reports each run's time and
the peak memory: the largest resident set summed over the client and the
workers (sampled by psutil), and each worker's own peak (getrusage), e.g.
``--parquet --rows 100000000 --units 1000000``.

``--pipelinedp`` instead runs the same task through PipelineDP (its local
backend, in a separate environment the script makes: its pins may clash
with ours) at the same budget, bounds and neighbouring relation, and prints
the error per group (RMSE over ``--seeds`` releases, with its standard
error) and the time per release, e.g.
``--pipelinedp --rows 20000 --units 1000 --groups 20 --max-rows 2 --max-groups 2``.

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

import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402

PIPELINEDP = "pipeline-dp==0.3.1"


def table(rows: int, units: int, groups: int, d: int, seed: int = 0) -> "pd.DataFrame":
    """Users with a heavy-tailed number of rows (Zipf weights), uniform regions."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, units + 1) ** 0.8
    user = rng.choice(units, size=rows, p=weights / weights.sum())
    region = rng.integers(0, groups, size=rows)
    data = {"user": user.astype(np.int64), "region": region.astype(np.int64)}
    values = rng.normal(size=(rows, d))
    for j in range(d):
        data[f"x{j}"] = values[:, j]
    return pd.DataFrame(data)


# ------------------------------------------------------------------ PipelineDP
def _pipelinedp_worker(path: str) -> None:
    """Run in the PipelineDP environment: ``--seeds`` releases of the
    per-group vector sums (VECTOR_SUM, L2 norm, Gaussian noise, public
    partitions, add-remove of a privacy id), written next to the input."""
    import pipeline_dp
    from pipeline_dp import combiners
    from pipeline_dp.aggregate_params import NormKind
    data = np.load(path)
    p = json.loads(str(data["params"]))
    d = data["X"].shape[1]
    # PipelineDP 0.3.1 builds an accumulator from no values for every public
    # partition and VECTOR_SUM fails on it (np.linalg.norm(None)): a zero
    # vector is what an empty sum is.
    create = combiners.VectorSumCombiner.create_accumulator

    def create_or_zero(self, values):
        values = list(values)
        return create(self, values) if values else np.zeros(d)
    combiners.VectorSumCombiner.create_accumulator = create_or_zero
    rows = list(zip(data["units"].tolist(), data["keys"].tolist(), list(data["X"])))
    out, times = [], []
    for _ in range(p["seeds"]):
        t = time.perf_counter()
        acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=p["epsilon"],
                                                total_delta=p["delta"])
        engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.GAUSSIAN, metrics=[pipeline_dp.Metrics.VECTOR_SUM],
            max_partitions_contributed=p["max_groups"],
            max_contributions_per_partition=p["max_rows"], vector_size=d,
            vector_max_norm=p["clip_norm"], vector_norm_kind=NormKind.L2)
        ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                         partition_extractor=lambda r: r[1],
                                         value_extractor=lambda r: r[2])
        res = engine.aggregate(rows, params, ext, public_partitions=list(range(p["groups"])))
        acc.compute_budgets()
        est = dict(res)
        out.append([np.asarray(est[g].vector_sum) for g in range(p["groups"])])
        times.append(time.perf_counter() - t)
    from pipeline_dp import dp_computations
    sigma = dp_computations.compute_sigma(p["epsilon"], p["delta"],
                                          p["clip_norm"] * np.sqrt(p["max_groups"]))
    np.savez(path + ".out.npz", estimates=np.array(out), times=np.array(times), sigma=sigma)


def _pipelinedp_python(env: str) -> str:
    """The PipelineDP environment's interpreter, made on first use (its pins
    may clash with dpsum's environment, so it lives apart)."""
    python = os.path.join(env, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", env], check=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", PIPELINEDP],
                       check=True)
    return python


def compare_pipelinedp(args: argparse.Namespace) -> None:
    """The same task through dpsum and PipelineDP: error per group and time."""
    from dpsum.tables import private_group_sums
    rng = np.random.default_rng(0)
    weights = 1.0 / np.arange(1, args.units + 1) ** 0.8
    units = rng.choice(args.units, size=args.rows, p=weights / weights.sum())
    keys = rng.integers(0, args.groups, size=args.rows)
    X = rng.normal(size=(args.rows, args.d))
    X *= (rng.uniform(0.0, 1.0, size=args.rows) / np.linalg.norm(X, axis=1))[:, None]
    truth = np.array([X[keys == g].sum(axis=0) for g in range(args.groups)])
    params = dict(epsilon=1.0, delta=1e-6, max_rows=args.max_rows, max_groups=args.max_groups,
                  clip_norm=float(args.max_rows), groups=args.groups, seeds=args.seeds)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "table.npz")
        np.savez(path, X=X, units=units, keys=keys, params=json.dumps(params))
        python = _pipelinedp_python(args.pipelinedp_env)
        subprocess.run([python, os.path.abspath(__file__), "--pipelinedp-worker", path],
                       check=True)
        pdp = np.load(path + ".out.npz")
        pdp_est, pdp_times, pdp_sigma = pdp["estimates"], pdp["times"], float(pdp["sigma"])
    ours, our_times = [], []
    for seed in range(args.seeds):
        t = time.perf_counter()
        rel = private_group_sums(X, privacy_unit=units, by=keys,
                                 groups=list(range(args.groups)), clip_norm=float(args.max_rows),
                                 max_rows=args.max_rows, max_groups=args.max_groups,
                                 epsilon=1.0, delta=1e-6, truncation_share=0.0, rng=seed)
        our_times.append(time.perf_counter() - t)
        ours.append(rel.estimate)
    print(f"per-group vector sums: {args.rows:,} rows, {args.units:,} units, "
          f"{args.groups} public groups, d = {args.d}; rows of norm <= 1; "
          f"max_rows = {args.max_rows}, max_groups = {args.max_groups}, C = {args.max_rows}; "
          f"epsilon = 1, delta = 1e-6, add-remove of a unit; {args.seeds} seeds")
    print(f"{'library':<22} {'RMSE per group':>15} {'s.e.':>7} {'noise std':>10} "
          f"{'s / release':>12}")
    lines = ["library,rmse_per_group,standard_error,noise_std,seconds_per_release"]
    for name, est, times, std in (
            ("dpsum", np.array(ours), our_times, rel.sum_std),
            ("PipelineDP 0.3.1", pdp_est, pdp_times, pdp_sigma)):
        # per seed: root mean square error over groups and coordinates
        per_seed = np.sqrt(((est - truth) ** 2).mean(axis=(1, 2)))
        se = per_seed.std(ddof=1) / np.sqrt(len(per_seed))
        print(f"{name:<22} {per_seed.mean():15.3f} {se:7.3f} {std:10.3f} "
              f"{np.median(times):12.3f}")
        lines.append(f"{name},{per_seed.mean():.6g},{se:.6g},{std:.6g},"
                     f"{np.median(times):.6g}")
    if args.csv:
        with open(args.csv, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    print("Both clip each unit's per-group sum of at most max_rows rows to C in L2 and add "
          "Gaussian noise of sensitivity C sqrt(max_groups); the RMSE includes the bias of "
          "dropping rows and groups (both sample uniformly). PipelineDP's noise is PyDP's "
          "Gaussian; dpsum's the analytic Gaussian with an exact sum.")


# ------------------------------------------------------------------ Parquet
def write_parquet(args: argparse.Namespace) -> list[str]:
    """Write the table in pieces of ``--piece`` rows, one file each, each
    piece from its own seed (a piece's users drawn with the same Zipf
    weights, so a unit's rows are spread over all files). Kept if present
    with the same shape."""
    import pandas as pd
    os.makedirs(args.parquet_dir, exist_ok=True)
    stamp = os.path.join(args.parquet_dir, "TABLE")
    want = f"{args.rows} {args.units} {args.groups} {args.d} {args.piece}"
    pieces = -(-args.rows // args.piece)
    paths = [os.path.join(args.parquet_dir, f"part-{i:05d}.parquet") for i in range(pieces)]
    if os.path.exists(stamp) and open(stamp).read() == want and all(map(os.path.exists, paths)):
        print(f"table on disk: {args.parquet_dir} (kept)")
        return paths
    for name in os.listdir(args.parquet_dir):
        if name.startswith("part-") or name == "TABLE":
            os.remove(os.path.join(args.parquet_dir, name))
    t0 = time.perf_counter()
    weights = 1.0 / np.arange(1, args.units + 1) ** 0.8
    cdf = np.cumsum(weights / weights.sum())
    for i, path in enumerate(paths):
        rng = np.random.default_rng([7, i])
        size = min(args.piece, args.rows - i * args.piece)
        user = np.minimum(np.searchsorted(cdf, rng.random(size)), args.units - 1)
        data = {"user": user.astype(np.int64),
                "region": rng.integers(0, args.groups, size=size).astype(np.int64)}
        values = rng.standard_normal(size=(size, args.d), dtype=np.float32)
        for j in range(args.d):
            data[f"x{j}"] = values[:, j]
        pd.DataFrame(data).to_parquet(path, index=False)
    with open(stamp, "w") as fh:
        fh.write(want)
    size_gb = sum(os.path.getsize(p) for p in paths) / 1e9
    print(f"wrote {args.rows:,} rows in {pieces} files ({size_gb:.1f} GB) to "
          f"{args.parquet_dir} in {time.perf_counter() - t0:.0f} s")
    return paths


class _PeakMemory:
    """Samples the summed resident set of this process and its children
    (the dask workers) every ``every`` seconds, in a thread."""

    def __init__(self, every: float = 0.25) -> None:
        import threading
        import psutil
        self.proc = psutil.Process()
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _total(self) -> int:
        total = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except Exception:  # a process that just ended
                pass
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._total())
            self._stop.wait(self.every)

    def __enter__(self) -> "_PeakMemory":
        self.peak = self._total()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _worker_peak() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # Linux: KiB


def run_parquet(args: argparse.Namespace) -> None:
    """10^8 rows from Parquet through dask: private vs non-private group sums."""
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster
    from dpsum.tables import private_group_sums
    write_parquet(args)
    columns = [f"x{j}" for j in range(args.d)]
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                           memory_limit=args.worker_memory, processes=True,
                           local_directory=os.path.join(args.parquet_dir, "..",
                                                        "dpsum-dask-spill"),
                           dashboard_address=None)
    client = Client(cluster)
    print(f"dask cluster: {args.workers} workers x 1 thread, {args.worker_memory} each")
    ddf = dd.read_parquet(args.parquet_dir + "/part-*.parquet")
    print(f"frame: {ddf.npartitions} partitions")
    lines = ["job,seconds,peak_total_gib,peak_worker_gib"]
    results = {}
    for name, job in (
            ("groupby sum (reference)",
             lambda: ddf.groupby("region")[columns].sum().compute()),
            ("private, public groups",
             lambda: private_group_sums(ddf, privacy_unit="user", by="region",
                                        columns=columns, groups=list(range(args.groups)),
                                        clip_norm=4.0, max_rows=args.max_rows,
                                        max_groups=args.max_groups, epsilon=1.0,
                                        delta=1e-6, rng=1))):
        client.restart()                          # each run's worker peaks from a fresh start
        with _PeakMemory() as mem:
            t = time.perf_counter()
            results[name] = job()
            elapsed = time.perf_counter() - t
        worker = max(client.run(_worker_peak).values())
        print(f"{name:<26} {elapsed:9.1f} s   peak memory {mem.peak / 2**30:6.2f} GiB "
              f"(client + workers), largest worker {worker / 2**30:5.2f} GiB")
        lines.append(f"{name},{elapsed:.4g},{mem.peak / 2**30:.4g},{worker / 2**30:.4g}")
        results[name + " time"] = elapsed
    rel = results["private, public groups"]
    ref = results["groupby sum (reference)"]
    print(f"ratio private / groupby: "
          f"{results['private, public groups time'] / results['groupby sum (reference) time']:.2f}"
          f"; groups released {len(rel.groups)}, sum noise std {rel.sum_std:.3g}; "
          f"reference groups {len(ref)}")
    client.close()
    cluster.close()
    if args.csv:
        with open(args.csv, "w") as fh:
            fh.write("\n".join(lines) + "\n")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--pipelinedp-worker":
        _pipelinedp_worker(sys.argv[2])
        return
    from dpsum.tables import private_group_sums
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--units", type=int, default=10**5)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--max-rows", type=int, default=4)
    ap.add_argument("--max-groups", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dask", type=int, default=0, metavar="PARTS",
                    help="also time the dask path on the table cut into PARTS partitions "
                         "(threaded scheduler), and check it gives the pandas release")
    ap.add_argument("--pipelinedp", action="store_true",
                    help="compare with PipelineDP on a small table instead (RMSE per group "
                         "over --seeds releases, time per release)")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--csv", default=None, metavar="PATH",
                    help="also write the printed table to PATH (e.g. under book/data; "
                         "nothing is written unless asked)")
    ap.add_argument("--pipelinedp-env", default=os.path.join(tempfile.gettempdir(),
                                                             "dpsum-pipelinedp-env"),
                    help="the separate environment PipelineDP is installed in (made if absent)")
    ap.add_argument("--parquet", action="store_true",
                    help="write --rows rows to Parquet in pieces and run the dask path on "
                         "read_parquet with a local cluster (time and peak memory)")
    ap.add_argument("--parquet-dir", default=os.path.join(tempfile.gettempdir(),
                                                          "dpsum-parquet"))
    ap.add_argument("--piece", type=int, default=10**6,
                    help="rows per Parquet file (and per partition)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--worker-memory", default="7GiB",
                    help="memory limit of each dask worker (they spill beyond it)")
    args = ap.parse_args()
    if args.parquet:
        run_parquet(args)
        return
    if args.pipelinedp:
        compare_pipelinedp(args)
        return
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
    lines = ["job,seconds,ratio,million_rows_per_second"]
    for name, t in best.items():
        print(f"{name:<30} {t:8.3f} {t / ref:7.2f} {args.rows / t / 1e6:8.2f}")
        lines.append(f"{name},{t:.4g},{t / ref:.3g},{args.rows / t / 1e6:.4g}")
    if args.csv:
        with open(args.csv, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    print(f"groups released by discovery: {released} of {args.groups}; "
          f"target ratio <= 3")


if __name__ == "__main__":
    main()
