"""Memory held by the clip-radius cache at d = 10^6 (issue 18).

The clip radius of Algorithm 3 is memoised, since simulations and audits ask
for the same quantile again and again. This script makes 40 calls of
``dpsum.clip_radius`` with d = 10^6 standard deviations (a few
distinct values, so each quantile is fast) and 40 different clip
probabilities, so that every call adds a cache entry, and reports with
:mod:`tracemalloc` how much memory is still allocated after the calls, i.e.
what the cache holds. It then clears the cache and reports again.

Run: ``.venv/bin/python benchmarks/clip_radius_cache.py``. To measure an
older version of the package, put its source first on ``PYTHONPATH``.
"""

from __future__ import annotations

import gc
import importlib
import time
import tracemalloc

import numpy as np

import dpsum

# the module (the attribute dpsum.design.clip_radius is the function)
radius_module = importlib.import_module("dpsum.design.clip_radius")

D = 10**6
CALLS = 40


def _clear_cache() -> None:
    radius_module._RADIUS_CACHE.clear()


def main() -> None:
    stds = np.repeat([4.0, 2.0, 1.0, 0.5], D // 4)
    probabilities = np.geomspace(1e-9, 1e-3, CALLS)
    _clear_cache()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    radii = [dpsum.clip_radius(stds, float(p)) for p in probabilities]
    elapsed = time.perf_counter() - t0
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    t1 = time.perf_counter()
    again = [dpsum.clip_radius(stds, float(p)) for p in probabilities]
    cached = time.perf_counter() - t1
    assert again == radii
    _clear_cache()
    gc.collect()
    after_clear = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    print(f"dpsum {dpsum.__version__} from {dpsum.__file__}")
    print(f"d = {D}, {CALLS} calls with distinct clip probabilities")
    print(f"memory held after the calls: {held / 2**20:9.2f} MiB")
    print(f"memory held after clearing:  {after_clear / 2**20:9.2f} MiB")
    print(f"time of the 40 calls: {elapsed:.2f} s; of the 40 repeated (cached) calls: "
          f"{cached:.2f} s")


if __name__ == "__main__":
    main()
