"""The release layer: the records every mechanism returns, the intervals and balls for
the noise they added, the discrete noise of the grid path, and the one accumulator that
clips, sums and adds noise.
"""

from __future__ import annotations

from dpsum.release.accumulator import (
    Accumulator,
    accumulator_for,
    clipped_gaussian_accumulator,
    elliptical_gaussian_accumulator,
    gaussian_data_accumulator,
)
from dpsum.release.discrete_noise import (
    grid_gaussian_noise,
    secure_gaussian,
    secure_laplace,
)
from dpsum.release.noise import (
    PIPELINE_COUNT_SHARE,
    ConfidenceBall,
    Intervals,
    grid_noise_law,
    noise_coordinate_quantile,
    noise_norm_quantile,
    norm_noise_law,
    pipeline_intervals,
    pipeline_noise_law,
    pipeline_radius,
    sidak,
    two_sided_z,
)
from dpsum.release.records import (
    DIAGNOSTICS_SHARE,
    BudgetSplit,
    Calibration,
    Mechanism,
    PipelineRelease,
    PublicInputWarning,
    Release,
    confidence_ball,
    confidence_intervals,
    data_intervals,
    require_gaussian_noise,
)

__all__ = [
    "Intervals",
    "PublicInputWarning",
    "data_intervals",
    "Accumulator",
    "BudgetSplit",
    "Calibration",
    "ConfidenceBall",
    "Mechanism",
    "PipelineRelease",
    "Release",
    "accumulator_for",
    "clipped_gaussian_accumulator",
    "confidence_ball",
    "confidence_intervals",
    "elliptical_gaussian_accumulator",
    "gaussian_data_accumulator",
    "noise_norm_quantile",
    "secure_gaussian",
    "secure_laplace",
]
