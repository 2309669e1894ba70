"""Where benchmarks write the data the chapters read (``book/data``), and how.

Imported by the benchmark scripts (run as ``python benchmarks/<name>.py``, which
puts this folder on ``sys.path``). Floats are written with ``repr`` so that a
chapter reading the file gets the measured value to the last digit.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "book" / "data"


def write_rows(name: str, rows: list[dict]) -> None:
    """Write ``rows`` (dicts with the same keys) to ``book/data/<name>``."""
    DATA.mkdir(parents=True, exist_ok=True)
    with open(DATA / name, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (repr(float(v)) if isinstance(v, (float, np.floating)) else v)
                             for k, v in r.items()})
    print(f"wrote book/data/{name} ({len(rows)} rows)")
