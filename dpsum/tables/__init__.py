"""People and groups: privacy units, contribution bounds, per-group private sums and
means of vectors, and private group discovery (the chapter *From rows to people*).
"""

from __future__ import annotations

from dpsum.tables.groups import COUNT_SHARE, TRUNCATION_SHARE, GroupRelease, private_group_sums
from dpsum.tables.selection import (
    SELECTION_DELTA_SHARE,
    selection_delta,
    selection_threshold,
    threshold_for_share,
)
from dpsum.tables.units import ContributionBounds, bound_contributions

__all__ = [
    "COUNT_SHARE",
    "ContributionBounds",
    "GroupRelease",
    "SELECTION_DELTA_SHARE",
    "TRUNCATION_SHARE",
    "bound_contributions",
    "private_group_sums",
    "selection_delta",
    "selection_threshold",
    "threshold_for_share",
]
