"""The private pipeline for data without a public model: private quantiles, center and
scales, then a clipped release (``private_mean``, ``private_sum``, offered at the top
level as ``dpsum.private_mean`` and ``dpsum.private_sum``); the adaptive clip radius of
repeated releases (``adaptive_clip_update``). Every step that reads the data is a pass
(:mod:`dpsum.pipeline.passes`), so the pipeline runs on numpy and dask alike.
"""

from __future__ import annotations

from dpsum.pipeline.adaptive_clipping import ClipUpdate, adaptive_clip_update
from dpsum.pipeline.mean import (
    CENTER_MARGIN,
    MAX_COORDINATE_SHARE,
    RADIUS_MARGIN,
    REGULARIZATION,
    SCALAR_SHARE,
    SCALAR_MARGIN,
    SCALE_MARGIN,
    calibrated_clip_radius,
    default_budget,
    default_clip_probability,
    private_mean,
    private_sum,
    robust_scaling,
)
from dpsum.pipeline.quantiles import (
    MAD_TO_STD,
    check_domain,
    exponential_quantile,
    norm_quantile_law,
    private_center,
    private_norm_quantile,
    private_scales,
    quantile_sensitivity,
    scales_step,
)

__all__ = [
    "ClipUpdate",
    "adaptive_clip_update",
    "calibrated_clip_radius",
    "default_budget",
    "exponential_quantile",
    "private_center",
    "private_norm_quantile",
    "private_scales",
    "robust_scaling",
    "norm_quantile_law",
]
