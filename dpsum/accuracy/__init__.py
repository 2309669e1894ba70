"""What a release's error is: closed-form expected errors, the clipping loss, total-error
statements with their probability, and planning before the release.
"""

from __future__ import annotations

from dpsum.accuracy.expected import (
    clipped_noise_error,
    elliptical_improvement_ratio,
    elliptical_noise_error,
    gaussian_data_clipping_error,
    gaussian_data_error,
    gaussian_sum_error,
    isotropic_noise_error,
)
from dpsum.accuracy.statements import (
    ErrorBound,
    gaussian_data_error_bound,
    plan_d,
    plan_epsilon,
    plan_n,
    release_error_bound,
)
from dpsum.design.clipping_loss import clipping_loss_moment

__all__ = [
    "ErrorBound",
    "clipped_noise_error",
    "clipping_loss_moment",
    "elliptical_noise_error",
    "gaussian_data_clipping_error",
    "gaussian_data_error",
    "gaussian_data_error_bound",
    "gaussian_sum_error",
    "plan_d",
    "plan_epsilon",
    "plan_n",
    "release_error_bound",
]
