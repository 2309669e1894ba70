"""Privacy accounting: neighbouring relations and sensitivity, the Gaussian mechanism's
calibration, the discrete Gaussian's privacy, and composition (basic, advanced, exact
Gaussian, GDP, zCDP, mixed), and Poisson-subsampled Gaussian steps (DP-SGD).
"""

from __future__ import annotations

from dpsum.privacy.calibration import (
    MAX_CALIBRATION_EPSILON,
    analytic_sigma,
    classic_sigma,
    gaussian_delta,
    gaussian_epsilon,
)
from dpsum.privacy.composition import (
    MAX_OUTCOMES,
    ComposedGuarantee,
    PrivacyStep,
    advanced_composition,
    approximate_step,
    basic_composition,
    bounded_range_step,
    compose,
    compose_gaussian_multipliers,
    gaussian_composition_delta,
    gaussian_composition_epsilon,
    gaussian_profile,
    gaussian_step,
    gdp_compose,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    gdp_multiplier,
    mixed_delta,
    mixed_epsilon,
    mixed_gaussian_multiplier,
    pure_step,
    split_gaussian_multiplier,
    subsampled_gaussian_step,
    zcdp_compose,
    zcdp_delta,
    zcdp_epsilon,
    zcdp_gaussian_multiplier,
    zcdp_rho,
    zcdp_rho_bounded_range,
    zcdp_rho_gaussian,
    zcdp_rho_pure,
)
from dpsum.privacy.discrete import (
    discrete_gaussian_delta,
    discrete_gaussian_delta_exact_1d,
    discrete_gaussian_sigma,
)
from dpsum.privacy.neighbouring import (
    Neighbouring,
    clipped_sum_sensitivity,
    group_privacy,
)
from dpsum.privacy.subsampling import (
    ComposedPLD,
    PrivacyLossDistribution,
    subsampled_gaussian_delta,
    subsampled_gaussian_epsilon,
    subsampled_gaussian_pld,
    subsampled_gaussian_rdp,
    subsampled_gaussian_rdp_epsilon,
)

__all__ = [
    "ComposedGuarantee",
    "Neighbouring",
    "PrivacyStep",
    "advanced_composition",
    "analytic_sigma",
    "approximate_step",
    "basic_composition",
    "bounded_range_step",
    "classic_sigma",
    "clipped_sum_sensitivity",
    "compose",
    "discrete_gaussian_sigma",
    "gaussian_composition_epsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_step",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "group_privacy",
    "mixed_epsilon",
    "mixed_gaussian_multiplier",
    "pure_step",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_epsilon",
    "subsampled_gaussian_pld",
    "subsampled_gaussian_rdp_epsilon",
    "subsampled_gaussian_step",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_gaussian_multiplier",
    "zcdp_rho",
]
