"""The dask path on data that does not fit in a worker: speed against dask's own sum (issue 17).

A 10^7 x 100 float64 dataset (8 GB) is written to disk as an uncompressed
Zarr array (chunks of 50,000 rows, 40 MB) by the workers of a 2-worker
``dask.distributed.LocalCluster`` (one thread each, 2 GB memory limit each).
Then, on the same cluster and in the same run:

- the reference: ``Z.sum(axis=0).compute()``, dask's own column sum;
- Algorithm 3 (``gaussian_data_mechanism``, p_C = 1/n: almost no row clipped);
- the clipping baseline (``clipped_gaussian_mechanism``) with C at the median
  row norm: half the rows clipped, the kernel's slow path.

Each is timed best of ``REPEATS``, interleaved (after one warm-up pass that
brings the file into the page cache), and reported as a ratio to the sum
(target: at most 1.3), with its throughput in rows per second. Peak memory
per worker (``VmHWM`` of /proc/self/status) is read after one pass of each job alone on
freshly restarted workers. The dataset is deleted at the end.

Run: ``flock /tmp/dpsum-heavy.lock .venv/bin/python benchmarks/dask.py [DIR]``
(DIR defaults to /work/tmp; it needs 8 GB free).
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import sys
import tempfile
import time

# This file is named dask.py: when it runs as a script its own directory comes
# first on sys.path and would shadow the dask package. Drop that entry.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import dpsum  # noqa: E402

N, D, CHUNK = 10**7, 100, 50_000
REPEATS = 3
EPS, DELTA = 1.0, 1e-6
WORKER_MEMORY = "2GB"
STDS = np.linspace(0.2, 3.0, D)


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB: VmHWM on Linux (ru_maxrss would
    report the peak of the process that spawned the worker)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_dataset(path: str) -> None:
    gen = da.random.default_rng(2024)
    X = gen.standard_normal(size=(N, D), chunks=(CHUNK, D)) * STDS
    X.to_zarr(path, overwrite=True, compressors=None)


def main(base: str) -> None:
    free = shutil.disk_usage(base).free
    if free < 2 * N * D * 8:
        raise SystemExit(f"{base} has {free / 1e9:.1f} GB free; need {2 * N * D * 8 / 1e9:.0f}")
    workdir = tempfile.mkdtemp(prefix="dpsum-dask-bench-", dir=base)
    path = os.path.join(workdir, "rows.zarr")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           memory_limit=WORKER_MEMORY, dashboard_address=None)
    client = Client(cluster)
    try:
        t0 = time.perf_counter()
        write_dataset(path)
        print(f"wrote {N} x {D} float64 ({N * D * 8 / 1e9:.0f} GB) to Zarr in "
              f"{time.perf_counter() - t0:.0f} s")
        Z = da.from_zarr(path)
        median_norm = math.sqrt(float(np.sum(STDS ** 2)))   # E||x||^2 = sum sigma_j^2

        jobs = {
            "dask sum(axis=0)": lambda: Z.sum(axis=0).compute(),
            "Algorithm 3 (p_C = 1/n)": lambda: dpsum.gaussian_data_mechanism(
                Z, epsilon=EPS, delta=DELTA, stds=STDS, rng=1, center=0),
            "clipping baseline (half clipped)": lambda: dpsum.clipped_gaussian_mechanism(
                Z, epsilon=EPS, delta=DELTA, clip_norm=median_norm, rng=1),
        }
        jobs["dask sum(axis=0)"]()                        # warm the page cache
        best = dict.fromkeys(jobs, math.inf)
        for _ in range(REPEATS):
            for name, job in jobs.items():
                t = time.perf_counter()
                job()
                best[name] = min(best[name], time.perf_counter() - t)
        peaks = {}
        for name, job in jobs.items():
            client.restart()
            job()
            peaks[name] = max(client.run(peak_rss_mb).values())

        base_t = best["dask sum(axis=0)"]
        print(f"\n{'job':34s} {'best s':>7s} {'ratio':>6s} {'rows/s':>10s} "
              f"{'peak MB/worker':>15s}")
        for name in jobs:
            print(f"{name:34s} {best[name]:7.2f} {best[name] / base_t:6.2f} "
                  f"{N / best[name]:10.3g} {peaks[name]:15.0f}")
        print(f"\n2 workers x 1 thread, memory limit {WORKER_MEMORY} each, chunks {CHUNK} x {D}; "
              f"best of {REPEATS}, interleaved; target ratio <= 1.3")
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/tmp")
