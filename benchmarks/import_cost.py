"""The cost of ``import dpsum``, as ratios measured in the same run.

Time: ``import dpsum`` against ``import numpy, scipy.special`` (what dpsum
cannot avoid loading). Memory: the peak resident size of a process that ran
``import dpsum`` against one that ran ``import numpy``, reported as the
difference in MB. Each figure is the median of 11 fresh processes (python -c);
the time excludes the interpreter's own start-up (measured around the import
statement). Issue 27's targets: time ratio at most 1.2, memory at most 40 MB
over numpy.

Run: ``.venv/bin/python benchmarks/import_cost.py``
"""

from __future__ import annotations

import statistics
import subprocess
import sys

RUNS = 11

_PROBE = """
import resource, time
t0 = time.perf_counter()
{stmt}
t1 = time.perf_counter()
import sys
heavy = [m for m in ("scipy.stats", "scipy.optimize", "scipy.interpolate", "pandas", "dask")
         if m in sys.modules]
print(t1 - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, ",".join(heavy))
"""


def measure(stmt: str) -> tuple[float, float, str]:
    """Median import time (s) and peak RSS (MB) of ``stmt`` over RUNS fresh processes."""
    times, rss, heavy = [], [], ""
    for _ in range(RUNS):
        out = subprocess.run([sys.executable, "-c", _PROBE.format(stmt=stmt)],
                             capture_output=True, text=True, check=True).stdout.split()
        times.append(float(out[0]))
        rss.append(float(out[1]) / 1024.0)          # ru_maxrss is in KiB on Linux
        heavy = out[2] if len(out) > 2 else ""
    return statistics.median(times), statistics.median(rss), heavy


def main() -> None:
    base_t, _, _ = measure("import numpy, scipy.special")
    _, base_m, _ = measure("import numpy")
    t, m, heavy = measure("import dpsum")
    print(f"import dpsum: {t * 1000:.0f} ms, {m:.0f} MB peak RSS (medians of {RUNS} processes)")
    print(f"time   / (import numpy, scipy.special): {t / base_t:.2f}  (target <= 1.2)")
    print(f"memory - (import numpy): {m - base_m:+.1f} MB  (ratio {m / base_m:.2f}; "
          "target <= 40 MB)")
    print(f"heavy modules loaded by import dpsum: {heavy or 'none'}")


if __name__ == "__main__":
    main()
