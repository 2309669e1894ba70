"""The public design of a release: scaling vectors, the exact clip radius, and the
set-up of the Gaussian-data mechanism. Pure functions of public inputs.
"""

from __future__ import annotations

from dpsum.design.clip_radius import (
    CLIP_RADIUS_MARGIN,
    clip_radius,
)
from dpsum.design.gaussian_data import (
    GaussianDataSetup,
    gaussian_data_setup,
)
from dpsum.design.scaling import (
    Scaling,
    elliptical_scaling,
    error_optimal_scaling,
    gaussian_data_scaling,
    power_scaling,
    resolve_scaling,
    tilted_scaling,
    whitening_scaling,
)

__all__ = [
    "Scaling",
    "GaussianDataSetup",
    "clip_radius",
    "elliptical_scaling",
    "error_optimal_scaling",
    "gaussian_data_scaling",
    "gaussian_data_setup",
]
