"""Checking privacy empirically: audit statistics, worst-case neighbouring pairs, the audit
runner and the precision attack on floating-point outputs.
"""

from __future__ import annotations

from dpsum.audit.pairs import (
    add_remove_pair,
    binary_output_laws,
    binary_pair,
    clipped_pair,
    elliptical_pair,
    gaussian_data_pair,
    replace_one_pair,
    statistic_pair,
    worst_binary_pair,
)
from dpsum.audit.precision import (
    precision_epsilon_lower_bound,
    precision_event,
)
from dpsum.audit.runner import (
    BATCHED_SAMPLERS,
    AuditResult,
    AuditSimulation,
    batched_gaussian_release,
    discrete_law_release,
    epsilon_lower_bound,
    refused_attributes,
    simulate_audits,
)
from dpsum.audit.statistics import (
    audit_power,
    clopper_pearson_lower,
    clopper_pearson_upper,
    discrete_audit_power,
    epsilon_from_counts,
    pair_delta,
    pair_epsilon,
    two_point_rejection_probability,
)

__all__ = [
    "AuditResult",
    "AuditSimulation",
    "audit_power",
    "binary_pair",
    "clipped_pair",
    "clopper_pearson_lower",
    "discrete_audit_power",
    "elliptical_pair",
    "epsilon_from_counts",
    "epsilon_lower_bound",
    "gaussian_data_pair",
    "precision_epsilon_lower_bound",
    "simulate_audits",
    "worst_binary_pair",
]
