"""People and groups: privacy units, contribution bounds, per-group private sums and
means of vectors, and private group discovery (the chapter *From rows to people*).

The public surface is four names; the partition-selection threshold
(``dpsum.tables.selection``) and the budget shares
(``dpsum.tables.groups.COUNT_SHARE``, ...) live in their modules.
"""

from __future__ import annotations

from dpsum.tables.groups import GroupRelease, private_group_sums
from dpsum.tables.units import ContributionBounds, bound_contributions

__all__ = [
    "ContributionBounds",
    "GroupRelease",
    "bound_contributions",
    "private_group_sums",
]
