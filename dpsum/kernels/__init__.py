"""The private kernels: the floating-point clipping kernel (rounding charged to the
sensitivity) and the exact grid kernel. They read the data; nothing here adds noise.
"""

from __future__ import annotations

from dpsum.kernels.clipping import (
    PairwiseSum,
    accumulate_clipped,
    clamped_sum,
    clipped_sum,
    sum_rounding_bound,
)
from dpsum.kernels.grid import (
    GRID_CHARGE,
    accumulate_grid,
    grid_clamped_sum,
    grid_clipped_sum,
    grid_exponent,
    make_grid_plan,
    round_to_grid,
)

__all__ = [
    "GRID_CHARGE",
    "PairwiseSum",
    "accumulate_clipped",
    "accumulate_grid",
    "clamped_sum",
    "clipped_sum",
    "grid_clamped_sum",
    "grid_clipped_sum",
    "grid_exponent",
    "make_grid_plan",
    "round_to_grid",
    "sum_rounding_bound",
]
