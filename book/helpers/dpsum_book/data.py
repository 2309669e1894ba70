"""Readers and the writer for the book's data files, ``book/data/*.csv``.

The chapters read these files (``read_columns`` for plotting, ``read_rows``
for tables); the experiments of :mod:`dpsum_book.evaluation` and
:mod:`dpsum_book.audit_power` produce their rows, and the benchmark scripts
write them with :func:`write_csv` only when run with ``--write``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DATA", "compare_with_file", "read_columns", "read_rows", "write_csv"]

#: ``book/data``
DATA = Path(__file__).resolve().parents[2] / "data"


def _path(name: str, data: Path | None) -> Path:
    if not isinstance(name, str) or not name.endswith(".csv") or "/" in name or "\\" in name:
        raise ValueError(f"name must be the file name of a CSV file in book/data "
                         f"(e.g. 'zipf_gains.csv'), got {name!r}")
    return (DATA if data is None else Path(data)) / name


def read_rows(name: str, *, data: Path | None = None) -> list[dict[str, str]]:
    """The rows of ``book/data/<name>`` as dicts of strings.

    Lines starting with ``#`` before the header (attribution notes) are skipped.

    Parameters
    ----------
    name : str
        File name, e.g. ``"audit_power.csv"``.
    data : Path, optional
        Another directory (tests); default ``book/data``.

    Returns
    -------
    list of dict
    """
    text = _path(name, data).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("".join(lines))))


def read_columns(name: str, *, data: Path | None = None) -> dict[str, np.ndarray]:
    """``book/data/<name>`` as a dict of columns.

    A column whose every value parses as a number is a float array; any
    other column stays an array of strings.

    Parameters
    ----------
    name : str
        File name, e.g. ``"zipf_gains.csv"``.
    data : Path, optional
        Another directory (tests); default ``book/data``.

    Returns
    -------
    dict of str to numpy.ndarray
    """
    rows = read_rows(name, data=data)
    if not rows:
        raise ValueError(f"name: {name!r} has a header but no rows")
    out: dict[str, np.ndarray] = {}
    for key in rows[0]:
        values = [r[key] for r in rows]
        try:
            out[key] = np.array([float(v) for v in values])
        except ValueError:
            out[key] = np.array(values)
    return out


def _cell(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_csv(name: str, rows: Sequence[Mapping[str, Any]], *, data: Path | None = None) -> Path:
    """Write ``rows`` to ``book/data/<name>``; floats keep every digit (``repr``).

    Parameters
    ----------
    name : str
        File name, e.g. ``"zipf_gains.csv"``.
    rows : sequence of mapping
        One mapping per row, all with the keys of the first.
    data : Path, optional
        Another directory (tests); default ``book/data``.

    Returns
    -------
    Path
        The file written.
    """
    path = _path(name, data)
    if len(rows) == 0:
        raise ValueError("rows must hold at least one row")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _cell(v) for k, v in r.items()})
    return path


def compare_with_file(name: str, rows: Sequence[Mapping[str, Any]], *,
                      data: Path | None = None) -> str:
    """How far ``rows`` are from the stored ``book/data/<name>``: one line of text.

    The largest relative difference over the numeric cells, or why the two
    cannot be compared (no file, other columns, another number of rows).
    """
    path = _path(name, data)
    if not path.exists():
        return f"{name}: no stored file"
    stored = read_rows(name, data=data)
    if len(stored) != len(rows):
        return f"{name}: {len(rows)} rows, the stored file has {len(stored)}"
    if list(stored[0]) != list(rows[0]):
        return f"{name}: other columns than the stored file"
    worst, differ = 0.0, 0
    for old, new in zip(stored, rows):
        for key, value in new.items():
            try:
                a, b = float(old[key]), float(value)
            except (TypeError, ValueError):
                differ += str(old[key]) != str(value)
                continue
            if a == b or (math.isnan(a) and math.isnan(b)):
                continue
            worst = max(worst, abs(a - b) / max(abs(a), abs(b)))
    text = f"{name}: largest relative difference from the stored file {worst:.2g}"
    return text + (f"; {differ} text cells differ" if differ else "")
