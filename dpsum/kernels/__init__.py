"""The private kernels: every row clipped (or clamped) and rounded to a public grid,
each row by itself in an order the code fixes, and summed exactly in integers. They
read the data; nothing here adds noise.
"""

from __future__ import annotations

from dpsum.kernels.grid import (
    EXACT_CHARGE,
    GRID_CHARGE,
    clamped_sum,
    clipped_sum,
    grid_clamped_sum,
    grid_clipped_sum,
    grid_exponent,
    grid_rows,
    round_to_grid,
)

__all__ = [
    "clamped_sum",
    "clipped_sum",
    "grid_clamped_sum",
    "grid_clipped_sum",
    "grid_rows",
]
