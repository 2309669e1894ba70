"""Corrections of the binary-sums notes (Appendix C1, rows E14-E18 and E41).

Each test checks one statement of the notes that the book corrects, with the
package's own functions where there is one.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from dpsum import binary as B


def test_log10_threshold_misses_delta():
    """E14: with log base 10 in the threshold, the proof's Chernoff bound
    e^(-Theta h(a)), a = Theta (1 - e^-eps) / eps + e^-eps, h(a) = ln a - 1 + 1/a,
    misses delta at epsilon = 1 (1.7e-4 > 1e-6)."""
    delta, eps = 1e-6, 1.0
    theta10 = 3 + math.log10(1 / delta)
    a = theta10 * -math.expm1(-eps) / eps + math.exp(-eps)
    bound = math.exp(-theta10 * (math.log(a) - 1 + 1 / a))
    assert bound > 100 * delta
    assert math.isclose(bound, 1.7e-4, rel_tol=0.05)
    assert math.isclose(float(B.sample_threshold_tau(delta)), 3 + math.log(1 / delta))


def test_count_lemma_needs_the_threshold():
    """E15: P[n_s > Theta E[n_s]] <= delta fails without the threshold:
    epsilon = 0.1, delta = 1e-6, n_1 = 5 gives 0.029."""
    eps, delta, k = 0.1, 1e-6, 5
    theta = float(B.sample_threshold_tau(delta))
    p = eps / theta
    assert theta * k * p == k * eps == 0.5          # the event is n_s >= 1
    prob = stats.binom.sf(0, k, p)
    assert prob > delta
    assert math.isclose(prob, 0.029, rel_tol=0.02)


def test_rewrite_of_the_good_event_is_false():
    """E16: 1 - z x = (1 - z) + (1 - x) fails at z = x = 0."""
    z = x = 0
    assert 1 - z * x != (1 - z) + (1 - x)


def test_sampling_rate_at_most_8_percent_needs_small_delta():
    """E18: p = epsilon / Theta <= 8% at epsilon <= 1 only for delta <= e^-9.5
    (7.5e-5); at delta = 1e-3 and epsilon = 1 it is 10.1%."""
    cutoff = math.exp(-(1 / 0.08 - 3))
    assert math.isclose(cutoff, 7.5e-5, rel_tol=0.01)
    assert float(B.sample_threshold_probability(1.0, cutoff * 0.99)) <= 0.08
    assert float(B.sample_threshold_probability(1.0, cutoff * 1.01)) > 0.08
    assert round(float(B.sample_threshold_probability(1.0, 1e-3)), 3) == 0.101


def test_goodness_of_fit_catches_noise_from_zero_bits():
    """E41: the released law of binomial noise is n_1 + Binomial(n, p) at every
    count; a chi-square test accepts dpsum's release and rejects noise sent
    only by the users whose bit is 0 (a regression of the error on n_1 / n
    could not tell them apart in the mean)."""
    eps, delta, reps = 0.5, 1e-6, 2000
    n = int(B.binomial_min_users(eps, delta))
    p = B.binomial_noise_probability(n, eps, delta)
    edges = np.unique(stats.binom.ppf(np.linspace(0, 1, 26)[1:-1], n, p)).astype(int)
    expected = reps * np.diff(np.concatenate([[0.0], stats.binom.cdf(edges, n, p), [1.0]]))

    def pvalue(noise: np.ndarray) -> float:
        observed = np.bincount(np.searchsorted(edges, noise), minlength=edges.size + 1)
        return float(stats.chi2.sf(np.sum((observed - expected) ** 2 / expected), edges.size))

    rng = np.random.default_rng(20211118)
    k = n // 2
    bits = np.arange(n) < k
    ours = np.array([B.binomial_noise_mechanism(bits, epsilon=eps, delta=delta, rng=rng).output
                     for _ in range(reps)]) - k
    wrong = rng.binomial(n - k, p, size=reps)
    assert pvalue(ours) > 1e-4      # a correct release fails with probability 1e-4
    assert pvalue(wrong) < 1e-12
