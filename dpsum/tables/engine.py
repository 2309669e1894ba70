"""Per-group sums of a dask DataFrame: bounded and summed where the data lives.

A unit's kept rows depend on that unit's rows only (and the public key), so
once the table is shuffled by unit (every unit's rows in one partition) each
partition is bounded on its own, exactly as the whole table would be. Each
partition returns its groups' exact integer sums, unit counts and truncated
units, a few integers per group; the client adds them (integers: exact in any
order) and draws the noise once. The release is therefore the in-memory one
bit for bit, whatever the number of partitions or workers.

dask is optional (``pip install "dpsum[dask]"`` and ``dask[dataframe]``);
this module imports it only when a dask DataFrame is released.
"""

from __future__ import annotations

import sys
from typing import Any

from dpsum import _validation as V
from dpsum.tables._sums import _statistics
from dpsum.tables.units import ContributionBounds, _Table, table_structure

__all__ = ["is_dask_frame", "dask_structure", "dask_statistics"]


def is_dask_frame(X: Any) -> bool:
    """Whether ``X`` is a :class:`dask.dataframe.DataFrame` (without importing
    dask: if ``dask.dataframe`` was never imported, ``X`` cannot be one)."""
    module = sys.modules.get("dask.dataframe")
    return module is not None and isinstance(X, module.DataFrame)


def _is_label(value: Any) -> bool:
    import numpy as np
    return isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_))


def dask_structure(X: Any, privacy_unit: Any, by: Any, columns: Any) -> _Table:
    """The structural checks of :func:`dpsum.tables.units.table_structure`
    on the frame's metadata (nothing is computed)."""
    if not _is_label(privacy_unit):
        raise TypeError("privacy_unit must name a column of a dask DataFrame X (arrays of "
                        f"ids are not aligned with its partitions), got {V.describe(privacy_unit)}")
    if by is not None and not (_is_label(by) or isinstance(by, (list, tuple))):
        raise TypeError("by must name column(s) of a dask DataFrame X, got "
                        f"{V.describe(by)}")
    return table_structure(X._meta, privacy_unit, by, columns)


def _partition(part: Any, privacy_unit: Any, by: Any, columns: Any, listed: list | None,
               bounds: ContributionBounds, key: bytes, C: float) -> tuple[dict, int]:
    """One partition's statistics: ``({group: (sums, count)}, truncated units)``."""
    table = table_structure(part, privacy_unit, by, columns)
    if table.n == 0:
        return {}, 0
    b, sums, _, counts = _statistics(table, listed, bounds, key, C)
    return ({g: (s, int(c)) for g, s, c in zip(b.groups, sums, counts)},
            int(b.truncated_units))


def dask_statistics(X: Any, table: _Table, privacy_unit: Any, by: Any, columns: Any,
                    listed: list | None, bounds: ContributionBounds, key: bytes,
                    C: float) -> tuple[list, list, Any, int]:
    """The pre-noise statistics of a dask DataFrame: ``(labels, sums, counts,
    truncated units)`` as :func:`dpsum.tables._sums._statistics` gives them
    for the same table in memory. **Private**."""
    import dask
    import numpy as np
    assert table.columns is not None                 # a frame's value columns
    by_cols = [] if by is None else ([by] if _is_label(by) else list(by))
    cols = [privacy_unit, *by_cols, *table.columns]
    shuffled = X[cols].shuffle(on=privacy_unit)
    parts = [dask.delayed(_partition)(p, privacy_unit, by, list(table.columns), listed,
                                      bounds, key, C) for p in shuffled.to_delayed()]
    results = dask.compute(*parts)
    d = table.d
    totals: dict = {}
    truncated = 0
    for stats, trunc in results:
        truncated += trunc
        for g, (s, c) in stats.items():
            acc = totals.setdefault(g, ([0] * d, 0))
            totals[g] = ([a + b for a, b in zip(acc[0], s)], acc[1] + c)
    if listed is not None:
        labels = list(listed)
    else:
        try:
            labels = sorted(totals)
        except TypeError:
            raise TypeError("by mixes kinds of group keys (integers and strings, say) across "
                            "partitions: use one kind") from None
    sums = [totals.get(g, ([0] * d, 0))[0] for g in labels]
    counts = np.array([totals.get(g, ([0] * d, 0))[1] for g in labels], dtype=np.int64)
    return labels, sums, counts, truncated
