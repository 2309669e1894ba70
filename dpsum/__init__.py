"""dpsum: differentially private sums and means of vectors.

The companion package of the book *Private Sums of Vectors*. The top level
holds what a reader of the book calls; everything else lives in the
subpackage of its layer, from the bottom up:

- :mod:`dpsum.distributions` — the generalized chi-square; discrete Gaussian and Laplace
- :mod:`dpsum.privacy` — neighbouring relations, calibration, composition
- :mod:`dpsum.design` — scaling vectors, the exact clip radius, public set-ups
- :mod:`dpsum.kernels` — the float and grid clipping kernels (beside design)
- :mod:`dpsum.session` — a budget for a whole analysis, its ledger, planning (beside design)
- :mod:`dpsum.release` — release records, their noise intervals, the accumulator
- :mod:`dpsum.engines` — the accumulator's pass on a dask cluster (extra ``dpsum[dask]``)
- :mod:`dpsum.mechanisms`, :mod:`dpsum.binary`, :mod:`dpsum.pipeline` — the releases
- :mod:`dpsum.accuracy`, :mod:`dpsum.audit`, :mod:`dpsum.bounds` — statements about them
"""

from __future__ import annotations

from dpsum.accuracy import gaussian_data_error_bound, plan_n, release_error_bound
from dpsum.audit import AuditResult, epsilon_lower_bound
from dpsum.binary import (
    BinaryRelease,
    binomial_noise_mechanism,
    randomized_response,
    sample_and_threshold,
)
from dpsum.design import Scaling, clip_radius, gaussian_data_setup
from dpsum.distributions import GeneralizedChiSquare
from dpsum.mechanisms import (
    clipped_gaussian_mechanism,
    elliptical_gaussian_mechanism,
    gaussian_data_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    release_diagnostics,
)
from dpsum.pipeline import private_mean, private_sum
from dpsum.privacy import (
    ComposedGuarantee,
    Neighbouring,
    analytic_sigma,
    approximate_step,
    bounded_range_step,
    classic_sigma,
    compose,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_step,
    pure_step,
)
from dpsum.release import (
    Accumulator,
    PipelineRelease,
    Release,
    clipped_gaussian_accumulator,
    confidence_ball,
    confidence_intervals,
    elliptical_gaussian_accumulator,
    gaussian_data_accumulator,
)
from dpsum.session import Session

__version__ = "0.1.0"

__all__ = [
    "Accumulator",
    "AuditResult",
    "BinaryRelease",
    "ComposedGuarantee",
    "GeneralizedChiSquare",
    "Neighbouring",
    "PipelineRelease",
    "Release",
    "Scaling",
    "analytic_sigma",
    "approximate_step",
    "binomial_noise_mechanism",
    "bounded_range_step",
    "classic_sigma",
    "clip_radius",
    "clipped_gaussian_accumulator",
    "clipped_gaussian_mechanism",
    "compose",
    "confidence_ball",
    "confidence_intervals",
    "elliptical_gaussian_accumulator",
    "elliptical_gaussian_mechanism",
    "epsilon_lower_bound",
    "gaussian_data_accumulator",
    "gaussian_data_error_bound",
    "gaussian_data_mechanism",
    "gaussian_data_setup",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mechanism",
    "gaussian_step",
    "laplace_mechanism",
    "plan_n",
    "private_mean",
    "private_sum",
    "pure_step",
    "randomized_response",
    "release_diagnostics",
    "release_error_bound",
    "sample_and_threshold",
    "Session",
]
