"""dpsum: differentially private sums of vectors.

The companion package of the book *Private Sums of Vectors*. Public names are
re-exported here; each lives in the module of its idea:

- :mod:`dpsum.privacy` — neighbouring relations, sensitivity, composition
- :mod:`dpsum.calibration` — the Gaussian mechanism's noise (Theorems 2 and 3)
- :mod:`dpsum.gchisq` — the generalized chi-square distribution
- :mod:`dpsum.scaling` — scaling vectors (Theorem 4, Lemma 3.1)
- :mod:`dpsum.clipping` — the exact clip radius and the clipped sum
- :mod:`dpsum.gaussian_data` — Algorithm 3's public set-up (scaling, clip radius, sensitivity, noise)
- :mod:`dpsum.mechanisms` — Algorithms 1, 2, 3 and the clipping baseline
- :mod:`dpsum.release` — the release record
- :mod:`dpsum.errors` — closed-form expected errors
- :mod:`dpsum.bounds` — tail bounds on the clip radius (Lemma 3.2, Theorem 5, alternatives)
- :mod:`dpsum.binary` — binary sums: randomized response, binomial noise, sample-and-threshold
- :mod:`dpsum.audit` — empirical lower bounds on epsilon (privacy auditing)
- :mod:`dpsum.pairs` — worst-case neighbouring datasets for the audits
"""

__version__ = "0.1.0"

from .audit import (
    AuditResult,
    audit_power,
    batched_gaussian_release,
    clopper_pearson_lower,
    clopper_pearson_upper,
    discrete_audit_power,
    epsilon_from_counts,
    epsilon_lower_bound,
    pair_delta,
)
from .binary import (
    BinaryMechanism,
    BinaryRelease,
    MAX_EPSILON,
    WARNER_KEEP_PROBABILITY,
    binary_mse,
    binomial_conditions_hold,
    binomial_estimate,
    binomial_min_users,
    binomial_noise_mechanism,
    binomial_noise_probability,
    binomial_privacy_delta,
    binomial_variance,
    randomized_response,
    randomized_response_epsilon,
    randomized_response_estimate,
    randomized_response_keep_probability,
    randomized_response_reports,
    randomized_response_variance,
    sample_and_threshold,
    sample_threshold_bias,
    sample_threshold_conditions_hold,
    sample_threshold_estimate,
    sample_threshold_privacy_delta,
    sample_threshold_probability,
    sample_threshold_release_probability,
    sample_threshold_tau,
    sample_threshold_variance,
)
from .bounds import (
    bernstein_clip_radius,
    bernstein_max_t,
    bernstein_tail_bound,
    bernstein_tail_threshold,
    chebyshev_clip_probability,
    chebyshev_clip_radius,
    extra_bernstein_alpha,
    laurent_massart_clip_radius,
    laurent_massart_threshold,
    theorem5_clip_radius_squared,
    theorem5_condition_holds,
    theorem5_error_bound,
    theorem5_max_log_n,
)
from .calibration import analytic_sigma, classic_sigma, gaussian_delta, gaussian_epsilon
from .clipping import clip_radius, clipped_sum
from .errors import (
    clipped_noise_error,
    elliptical_improvement_ratio,
    elliptical_noise_error,
    gaussian_data_error,
    gaussian_sum_error,
    isotropic_noise_error,
)
from .gchisq import GeneralizedChiSquare
from .gaussian_data import GaussianDataSetup, gaussian_data_setup
from .mechanisms import (
    clipped_gaussian_mechanism,
    elliptical_gaussian_mechanism,
    gaussian_data_mechanism,
    gaussian_mechanism,
    release_diagnostics,
)
from .pairs import (
    add_remove_pair,
    binary_pair,
    clipped_pair,
    elliptical_pair,
    gaussian_data_pair,
    replace_one_pair,
    statistic_pair,
)
from .privacy import (
    Neighbouring,
    advanced_composition,
    basic_composition,
    clipped_sum_sensitivity,
    group_privacy,
)
from .release import Calibration, Mechanism, Release
from .scaling import (
    elliptical_scaling,
    error_optimal_scaling,
    gaussian_data_scaling,
    power_scaling,
    tilted_scaling,
    whitening_scaling,
)

__all__ = [
    "bernstein_clip_radius",
    "bernstein_max_t",
    "bernstein_tail_bound",
    "bernstein_tail_threshold",
    "chebyshev_clip_probability",
    "chebyshev_clip_radius",
    "extra_bernstein_alpha",
    "laurent_massart_clip_radius",
    "laurent_massart_threshold",
    "theorem5_clip_radius_squared",
    "theorem5_condition_holds",
    "theorem5_error_bound",
    "theorem5_max_log_n",
    "AuditResult",
    "audit_power",
    "batched_gaussian_release",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "discrete_audit_power",
    "epsilon_from_counts",
    "epsilon_lower_bound",
    "pair_delta",
    "BinaryMechanism",
    "BinaryRelease",
    "MAX_EPSILON",
    "WARNER_KEEP_PROBABILITY",
    "binary_mse",
    "binomial_conditions_hold",
    "binomial_estimate",
    "binomial_min_users",
    "binomial_noise_mechanism",
    "binomial_noise_probability",
    "binomial_privacy_delta",
    "binomial_variance",
    "randomized_response",
    "randomized_response_epsilon",
    "randomized_response_estimate",
    "randomized_response_keep_probability",
    "randomized_response_reports",
    "randomized_response_variance",
    "sample_and_threshold",
    "sample_threshold_bias",
    "sample_threshold_conditions_hold",
    "sample_threshold_estimate",
    "sample_threshold_privacy_delta",
    "sample_threshold_probability",
    "sample_threshold_release_probability",
    "sample_threshold_tau",
    "sample_threshold_variance",
    "GeneralizedChiSquare",
    "Neighbouring",
    "Release",
    "advanced_composition",
    "analytic_sigma",
    "basic_composition",
    "classic_sigma",
    "clip_radius",
    "clipped_gaussian_mechanism",
    "clipped_noise_error",
    "clipped_sum",
    "clipped_sum_sensitivity",
    "elliptical_gaussian_mechanism",
    "elliptical_improvement_ratio",
    "elliptical_noise_error",
    "elliptical_scaling",
    "error_optimal_scaling",
    "gaussian_data_error",
    "gaussian_data_mechanism",
    "gaussian_data_scaling",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mechanism",
    "gaussian_sum_error",
    "group_privacy",
    "isotropic_noise_error",
    "power_scaling",
    "tilted_scaling",
    "whitening_scaling",
    "Calibration",
    "GaussianDataSetup",
    "Mechanism",
    "gaussian_data_setup",
    "release_diagnostics",
    "add_remove_pair",
    "binary_pair",
    "clipped_pair",
    "elliptical_pair",
    "gaussian_data_pair",
    "replace_one_pair",
    "statistic_pair",
]
