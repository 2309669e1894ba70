"""The distributions the book's releases are made of: the generalized chi-square and the
discrete Gaussian and Laplace distributions (exact samplers).
"""

from __future__ import annotations

from dpsum.distributions.discrete import (
    discrete_gaussian,
    discrete_gaussian_pmf,
    discrete_laplace,
    discrete_laplace_pmf,
    discrete_laplace_std,
)
from dpsum.distributions.gchisq import (
    GeneralizedChiSquare,
)

__all__ = [
    "GeneralizedChiSquare",
    "discrete_gaussian",
    "discrete_laplace",
]
