"""Empirical privacy audits of every mechanism in dpsum (book chapter 8).

Every audit runs the real dpsum mechanism on a worst-case pair of
neighbouring datasets and asserts the outcome of
:func:`dpsum.audit.epsilon_lower_bound` at ``alpha = 1e-3``:

* a correct mechanism **passes**: the lower bound is at most the claimed
  epsilon. A false alarm has probability at most ``alpha`` by construction
  (and much less in practice, since the audits are not tight);
* a deliberately broken variant, built here in the test, is **caught**: the
  lower bound exceeds the claimed epsilon.

Sample sizes (releases per dataset; the pilot run adds 20% for the
Gaussian mechanisms, and 50 or 5,000 for the binary ones, whose
one-dimensional discrete outputs leave the pilot few thresholds to choose
from) are chosen to give every audit the same power: the best threshold test
at that size catches, with probability at least 99%, a variant of the
mechanism whose *exact* epsilon at the audited delta is ``EPS_DETECT = 1.6``
while it claims epsilon = 1 (for the Gaussian mechanisms, the one calibrated
for epsilon = 1.6; for the others, the variant whose coin gives exact
epsilon 1.6 on the audited pair). :func:`test_sample_sizes_have_the_same_power`
computes these powers exactly with :func:`dpsum.audit.audit_power`.

=======================================  ========  ==================
mechanism (audited pair)                 releases  exact power vs 1.6
=======================================  ========  ==================
Gaussian family (worst-case pairs)         50,000  0.997
randomized response (1 user, delta = 0)       500  0.993
additive binomial noise (800 users)       130,000  0.990
sample-and-threshold (11 vs 10 ones)      170,000  0.993
=======================================  ========  ==================

Every Gaussian-noise mechanism, on its worst-case pair, reduces after the
projection to the same one-dimensional problem: two normals whose means
differ by ``1 / sigma_opt`` noise standard deviations. So one sample size
gives them all the same power. The binary mechanisms spend their delta on
rare events, whose probabilities must be estimated to within about delta,
hence their larger sample sizes. (The classic calibration is audited at
epsilon = 0.9, where Theorem 2 applies; the correct sample-and-threshold
almost never releases a count on its pair, which is the point: a variant
with a larger sampling probability would.) The Gaussian releases run batched through
:func:`dpsum.audit.batched_gaussian_release` (which calls the real mechanism
once per batch; :func:`test_batched_release_is_bitwise_the_real_mechanism`
checks that the outputs are bitwise those of one call per release); the
binary mechanisms are called once per release.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from dpsum import binary
from dpsum.audit import (
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
from dpsum.calibration import analytic_sigma
from dpsum.pairs import (
    binary_pair,
    clipped_pair,
    elliptical_pair,
    gaussian_data_pair,
    statistic_pair,
)
from dpsum.mechanisms import (
    clipped_gaussian_mechanism,
    elliptical_gaussian_mechanism,
    gaussian_data_mechanism,
    gaussian_mechanism,
)
from dpsum.scaling import elliptical_scaling

EPS, DELTA, ALPHA = 1.0, 1e-3, 1e-3
EPS_DETECT = 1.6          # the violation every audit must catch with 99% probability
N_GAUSS = 50_000
N_RR = 500
N_BINOMIAL, BINOMIAL_USERS = 130_000, 800
N_SAMPLE_THRESHOLD, ST_ONES = 170_000, 10

D = 4
SENS = 2.0
BOUNDS = np.array([4.0, 1.0, 0.25, 2.0])
STDS = np.array([3.0, 1.0, 0.3, 0.1])
CENTER = np.array([1.0, -2.0, 0.5, 0.0])
EXPLICIT_SCALING = np.array([0.5, 1.0, 2.0, 4.0])
CLIP = 1.5


def _audit(release, pair, n, seed, *, delta=DELTA, batched=True, n_pilot=None):
    X, Y = pair
    if batched:
        release = batched_gaussian_release(release)
    return epsilon_lower_bound(release, X, Y, delta=delta, n_samples=n, rng=seed,
                               alpha=ALPHA, batched=batched, n_pilot=n_pilot)


# ------------------------------------------------- the mechanisms and their pairs

def _gaussian(calibration, epsilon):
    def release(v, rng):
        return gaussian_mechanism(v, epsilon=epsilon, delta=DELTA, sensitivity=SENS,
                                  calibration=calibration, rng=rng)
    return release


def _elliptical(X, rng):
    return elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, widths=BOUNDS, rng=rng)


def _gaussian_data(scaling, neighbouring, clip_probability):
    def release(X, rng):
        return gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=STDS, center=CENTER,
                                       scaling=scaling, neighbouring=neighbouring,
                                       clip_probability=clip_probability, rng=rng)
    return release


def _clipped(neighbouring):
    def release(X, rng):
        return clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=CLIP,
                                          neighbouring=neighbouring, rng=rng)
    return release


def _gd_case(scaling, neighbouring):
    p = None if neighbouring == "replace" else 0.05
    n = 4 if neighbouring == "replace" else 3
    pair = gaussian_data_pair(STDS, center=CENTER, scaling=scaling, clip_probability=p,
                              neighbouring=neighbouring, n=n)
    return _gaussian_data(scaling, neighbouring, p), pair, EPS


GAUSSIAN_CASES = {
    "gaussian-analytic": (_gaussian("analytic", EPS), statistic_pair(SENS, D), EPS),
    # Theorem 2 needs epsilon < 1
    "gaussian-classic": (_gaussian("classic", 0.9), statistic_pair(SENS, D), 0.9),
    "elliptical": (_elliptical, elliptical_pair(BOUNDS, n=3), EPS),
    "clipped-replace": (_clipped("replace"), clipped_pair(D, CLIP, "replace", n=3), EPS),
    "clipped-add-remove": (_clipped("add-remove"), clipped_pair(D, CLIP, "add-remove", n=3), EPS),
}
for _s_name, _s in (("optimal", "optimal"), ("none", "none"), ("explicit", EXPLICIT_SCALING)):
    for _rel in ("replace", "add-remove"):
        GAUSSIAN_CASES[f"gaussian-data-{_s_name}-{_rel}"] = _gd_case(_s, _rel)


def _rr(bits, rng):
    return binary.randomized_response(bits, epsilon=EPS, rng=rng)


def _binomial(bits, rng):
    return binary.binomial_noise_mechanism(bits, epsilon=EPS, delta=DELTA, rng=rng)


def _sample_threshold(bits, rng):
    return binary.sample_and_threshold(bits, epsilon=EPS, delta=DELTA, rng=rng)


BINARY_CASES = {
    # randomized response claims pure DP: audited with delta = 0
    "randomized-response": (_rr, binary_pair(1), N_RR, 0.0),
    "binomial-noise": (_binomial, binary_pair(BINOMIAL_USERS, BINOMIAL_USERS // 2),
                       N_BINOMIAL, DELTA),
    "sample-and-threshold": (_sample_threshold, binary_pair(ST_ONES + 1, ST_ONES),
                             N_SAMPLE_THRESHOLD, DELTA),
}


# ------------------------------------------------------ every mechanism passes

@pytest.mark.parametrize("name", sorted(GAUSSIAN_CASES))
def test_gaussian_mechanisms_pass(name):
    release, pair, eps = GAUSSIAN_CASES[name]
    res = _audit(release, pair, N_GAUSS, seed=sorted(GAUSSIAN_CASES).index(name))
    assert isinstance(res, AuditResult)
    assert res.n_samples == N_GAUSS and res.n_pilot == N_GAUSS // 5
    assert res.epsilon_lower_bound <= eps, (name, res)
    # the pair is tight, so the audit sees a real privacy loss: with 50,000
    # releases the bound of a correct Gaussian mechanism at epsilon = 1 is
    # about 0.65, and by audit_power the best single test falls below
    # 0.2 epsilon with probability < 1e-12 (also for classic at 0.9)
    assert res.epsilon_lower_bound > 0.2 * eps, (name, res)


# the two unbatched audits with 10^5 releases per dataset are the slowest
# tests of the suite (marked slow; make test runs them)
_SLOW_BINARY = ("binomial-noise", "sample-and-threshold")


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow)
                                  if name in _SLOW_BINARY else name
                                  for name in sorted(BINARY_CASES)])
def test_binary_mechanisms_pass(name):
    release, pair, n, delta = BINARY_CASES[name]
    res = _audit(release, pair, n, seed=100 + sorted(BINARY_CASES).index(name),
                 delta=delta, batched=False, n_pilot=min(n // 10, 5_000))
    assert res.epsilon_lower_bound <= EPS, (name, res)
    if name == "randomized-response":
        # one randomized bit: the ratio is exactly e, so the bound is well above 0
        assert res.epsilon_lower_bound > 0.3


# ------------------------------------------------- broken variants are caught

def test_halved_noise_is_caught_in_every_run_without_false_alarm():
    """The acceptance test of the issue: 50,000 releases per side at
    epsilon = 1, delta = 1e-3. Halving the noise of the Gaussian vector sum is
    caught with probability above 1 - 1e-12 per run (exact single-test power
    by audit_power), so every one of the runs must catch it. The correct
    mechanism raises a false alarm with probability at most alpha per run; we
    allow the binomial 1 - 1e-6 quantile of false alarms in the runs."""
    runs = 60
    broken = batched_gaussian_release(
        lambda v, rng: gaussian_mechanism(v, epsilon=EPS, delta=DELTA, sensitivity=SENS / 2,
                                          rng=rng))
    correct = batched_gaussian_release(_gaussian("analytic", EPS))
    X, Y = statistic_pair(SENS, D)
    caught = false_alarms = 0
    lowest_broken = np.inf
    for seed in range(runs):
        rb = epsilon_lower_bound(broken, X, Y, delta=DELTA, n_samples=N_GAUSS, rng=seed,
                                 batched=True).epsilon_lower_bound
        rc = epsilon_lower_bound(correct, X, Y, delta=DELTA, n_samples=N_GAUSS,
                                 rng=10_000 + seed, batched=True).epsilon_lower_bound
        caught += rb > EPS
        false_alarms += rc > EPS
        lowest_broken = min(lowest_broken, rb)
    assert caught == runs, (caught, lowest_broken)
    assert false_alarms <= stats.binom.ppf(1 - 1e-6, runs, ALPHA)


def test_replace_one_calibrated_with_C_instead_of_2C_is_caught():
    """Noise calibrated to the add-remove sensitivity C under replace-one:
    the noise is half what the replace-one pair needs."""
    X, Y = clipped_pair(D, CLIP, "replace", n=3)
    res = _audit(_clipped("add-remove"), (X, Y), N_GAUSS, seed=201)
    assert res.epsilon_lower_bound > EPS, res
    # the same bug in Algorithm 3 (no center, so its add-remove sensitivity is C)
    p = 0.25
    gd = lambda Z, rng: gaussian_data_mechanism(  # noqa: E731
        Z, epsilon=EPS, delta=DELTA, stds=STDS, clip_probability=p,
        neighbouring="add-remove", rng=rng)
    pair = gaussian_data_pair(STDS, clip_probability=p, neighbouring="replace", n=4)
    res = _audit(gd, pair, N_GAUSS, seed=202)
    assert res.epsilon_lower_bound > EPS, res


def test_skipped_clipping_is_caught():
    """Noise for clipped rows (sensitivity 2C) on a sum that was never clipped:
    the record of norm 100 C moves the sum by 200 C."""
    X, Y = clipped_pair(D, CLIP, "replace", n=3)
    unclipped = lambda Z, rng: gaussian_mechanism(  # noqa: E731
        Z.sum(axis=0), epsilon=EPS, delta=DELTA, sensitivity=2 * CLIP, rng=rng)
    res = _audit(unclipped, (X, Y), 5_000, seed=203)
    # the two output laws barely overlap: no release of one dataset lands in
    # the event, the bound is ln(p_lo / q_hi) with q_hi = 1 - (alpha/4)^(1/n)
    assert res.epsilon_lower_bound > 5 * EPS, res


def test_inverted_elliptical_scaling_is_caught():
    """Algorithm 2 with sigma_j = sigma_opt Delta_j b_j instead of
    sigma_opt Delta_j / b_j: the narrow coordinates get the least noise, and
    the corner pair moves the sum by sqrt(sum_j 1 / b_j^2) > d noise units."""
    sigma_opt = analytic_sigma(EPS, DELTA)
    b = elliptical_scaling(BOUNDS)

    def inverted(X, rng):
        total = np.clip(X, -BOUNDS / 2, BOUNDS / 2).sum(axis=0)
        return total + rng.normal(0.0, 1.0, size=X.shape[1]) * (sigma_opt * BOUNDS * b)

    res = _audit(inverted, elliptical_pair(BOUNDS, n=3), 5_000, seed=204)
    assert res.epsilon_lower_bound > EPS, res
    # the worst coordinate: smallest noise relative to its width
    j = int(np.argmin(sigma_opt * BOUNDS * b / BOUNDS))
    res = _audit(inverted, elliptical_pair(BOUNDS, n=3, coordinates=[j]), 5_000, seed=205)
    assert res.epsilon_lower_bound > EPS, res


def test_randomized_response_with_the_wrong_coin_is_caught():
    """Randomized response that keeps the bit with probability e^2 / (1 + e^2)
    while claiming epsilon = 1 (the claim is pure DP: delta = 0)."""
    wrong = lambda bits, rng: binary.randomized_response(bits, epsilon=2 * EPS, rng=rng)  # noqa: E731
    res = _audit(wrong, binary_pair(1), N_RR, seed=206, delta=0.0, batched=False,
                 n_pilot=N_RR // 10)
    assert res.epsilon_lower_bound > EPS, res


# ----------------------------------------------------------- sample sizes

def _binomial_laws(n_users, p):
    z = stats.binom.pmf(np.arange(n_users + 1), n_users, p)
    return np.concatenate([[0.0], z]), np.concatenate([z, [0.0]])


def _threshold_laws(k, p):
    """Output laws of sample-and-threshold for k + 1 and k ones."""
    t = math.ceil(binary.sample_threshold_tau(DELTA))
    c = np.arange(k + 2)
    laws = []
    for ones in (k + 1, k):
        pmf = stats.binom.pmf(c, ones, p)
        out = np.where(c >= t, pmf, 0.0)
        out[0] = pmf[c < t].sum()
        laws.append(out)
    return laws


def _solve_coin(laws, lo, hi):
    """The coin whose laws have exact epsilon EPS_DETECT at DELTA."""
    f = lambda lp: math.log(pair_delta(*laws(math.exp(lp)), EPS_DETECT)) - math.log(DELTA)  # noqa: E731
    return math.exp(optimize.brentq(f, math.log(lo), math.log(hi), xtol=1e-12))


def test_sample_sizes_have_the_same_power():
    """Each audit catches, with probability >= 99%, a variant of its
    mechanism whose exact epsilon is 1.6 (exact power of the best threshold
    test, via audit_power)."""
    # Gaussian: the mechanism calibrated for epsilon = 1.6; standardised
    # outputs are N(0, 1) and N(1/sigma, 1)
    sigma = analytic_sigma(EPS_DETECT, DELTA)
    t = np.linspace(0.0, 5.0, 51)
    power = audit_power(stats.norm.sf(t - 1 / sigma), stats.norm.sf(t), N_GAUSS,
                        epsilon=EPS, delta=DELTA)
    assert 0.99 <= power.max() < 0.9999, power.max()

    # randomized response at epsilon 1.6 on one bit (pure DP, delta = 0)
    keep = special.expit(EPS_DETECT)
    P = np.array([1 - keep, keep])
    assert 0.99 <= discrete_audit_power(P, P[::-1], N_RR, epsilon=EPS, delta=0.0) < 0.9999

    # binomial noise with the coin that gives exact epsilon 1.6; cross-checked
    # against dpsum.binary's exact privacy profile
    p = _solve_coin(lambda p: _binomial_laws(BINOMIAL_USERS, p), 1e-4, 0.5)
    assert binary.binomial_privacy_delta(BINOMIAL_USERS, p, EPS_DETECT) == pytest.approx(
        DELTA, rel=1e-6)
    laws = _binomial_laws(BINOMIAL_USERS, p)
    assert 0.99 <= discrete_audit_power(*laws, N_BINOMIAL, epsilon=EPS, delta=DELTA) < 0.9999

    # sample-and-threshold: the sampling probability that gives exact
    # epsilon 1.6 on the audited pair (11 against 10 ones)
    p = _solve_coin(lambda p: _threshold_laws(ST_ONES, p), 0.1, 0.79)
    laws = _threshold_laws(ST_ONES, p)
    assert 0.99 <= discrete_audit_power(*laws, N_SAMPLE_THRESHOLD, epsilon=EPS,
                                        delta=DELTA) < 0.9999

    # the mechanisms as calibrated are far more private than they claim on
    # these pairs: exact delta at epsilon = 1 far below 1e-3
    real_bin = _binomial_laws(BINOMIAL_USERS,
                              binary.binomial_noise_probability(BINOMIAL_USERS, EPS, DELTA))
    real_st = _threshold_laws(ST_ONES, binary.sample_threshold_probability(EPS, DELTA))
    assert pair_delta(*real_bin, EPS) < 1e-30
    assert pair_delta(*real_st, EPS) < 1e-6


def test_pair_delta_matches_the_closed_forms():
    # randomized response on one bit: delta(eps') = max(0, q - e^eps' (1 - q))
    keep = special.expit(1.0)
    P = np.array([1 - keep, keep])
    assert pair_delta(P, P[::-1], 1.0) == pytest.approx(0.0, abs=1e-15)
    assert pair_delta(P, P[::-1], 0.5) == pytest.approx(keep - math.exp(0.5) * (1 - keep))
    # binomial noise, against dpsum.binary
    for p, eps in ((0.02, 0.8), (0.3, 0.2)):
        assert pair_delta(*_binomial_laws(200, p), eps) == pytest.approx(
            binary.binomial_privacy_delta(200, p, eps), rel=1e-9, abs=1e-300)


# --------------------------------------------------- the statistics of the bound

@pytest.mark.parametrize("n", [1, 7, 60])
def test_clopper_pearson_bounds_have_exact_coverage(n):
    """For every true p on a fine grid, Pr[p_lo > p] <= level and
    Pr[p_hi < p] <= level, computed exactly over Binomial(n, p)."""
    level = 0.05
    k = np.arange(n + 1)
    lo = clopper_pearson_lower(k, n, level)
    hi = clopper_pearson_upper(k, n, level)
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(hi) > 0)
    assert lo[0] == 0.0 and hi[-1] == 1.0
    for p in np.linspace(0.001, 0.999, 499):
        pmf = stats.binom.pmf(k, n, p)
        assert pmf[lo > p].sum() <= level + 1e-12
        assert pmf[hi < p].sum() <= level + 1e-12
    # the bounds are exact, not merely conservative: at p = lo[k] the miss
    # probability is the level itself
    kk = n // 2 + 1
    assert stats.binom.sf(kk - 1, n, lo[kk]) == pytest.approx(level, rel=1e-9)
    # zero successes: the upper bound is 1 - level^(1/n)
    assert hi[0] == pytest.approx(-math.expm1(math.log(level) / n), rel=1e-12)


def test_epsilon_from_counts():
    n, alpha = 1000, 0.01
    p_lo = clopper_pearson_lower(500, n, alpha / 2)
    q_hi = clopper_pearson_upper(100, n, alpha / 2)
    assert epsilon_from_counts(500, 100, n, delta=0.01, alpha=alpha) == pytest.approx(
        math.log((p_lo - 0.01) / q_hi), rel=1e-12)
    # p_lo <= delta: no evidence
    assert epsilon_from_counts(3, 0, n, delta=0.01, alpha=alpha) == 0.0
    # q = 0 is guarded by the positive upper bound
    assert math.isfinite(epsilon_from_counts(n, 0, n, delta=0.0, alpha=alpha))


def test_false_alarm_rate_is_at_most_alpha_on_an_exactly_tight_mechanism():
    """Randomized response on one bit has exact epsilon: the likelihood ratio
    of the event "output 1" is exactly e^eps, so nothing separates the claim
    from the truth but sampling noise. Over many audits at a large alpha the
    bound exceeds the true epsilon no more often than alpha allows, whereas
    the naive plug-in estimate ln(p_hat / q_hat) exceeds it about half the
    time."""
    eps, alpha, runs, n = 1.0, 0.25, 300, 2000
    keep = special.expit(eps)

    def bit(b, rng, size):
        return (rng.random(size) < (keep if b else 1 - keep)).astype(float)

    rng = np.random.default_rng(301)
    alarms = naive = 0
    for _ in range(runs):
        res = epsilon_lower_bound(bit, 1, 0, delta=0.0, n_samples=n, rng=rng, alpha=alpha,
                                  batched=True)
        alarms += res.epsilon_lower_bound > eps
        a, b = bit(1, rng, n).mean(), bit(0, rng, n).mean()
        naive += math.log(a / b) > eps
    # 1e-6 binomial quantiles: the bound's rate <= alpha, the naive rate ~ 1/2
    assert alarms <= stats.binom.ppf(1 - 1e-6, runs, alpha), alarms
    assert naive >= stats.binom.ppf(1e-6, runs, 0.45), naive


def test_audit_is_valid_with_a_fixed_direction_and_reports_its_test():
    X, Y = statistic_pair(SENS, D)
    release = batched_gaussian_release(_gaussian("analytic", EPS))
    res = epsilon_lower_bound(release, X, Y, delta=DELTA, n_samples=20_000, rng=7,
                              batched=True, direction=[2.0, 0, 0, 0])
    np.testing.assert_array_equal(res.direction, [1.0, 0, 0, 0])
    assert res.epsilon_lower_bound == max(res.test_bounds)
    k1, k2 = res.counts
    first, second = (k1, k2) if res.tail == "upper" else (k2, k1)
    assert res.p_lower == pytest.approx(clopper_pearson_lower(first, 20_000, ALPHA / 4))
    assert res.q_upper == pytest.approx(clopper_pearson_upper(second, 20_000, ALPHA / 4))
    # the unit direction estimated by the pilot points along the change
    res = epsilon_lower_bound(release, X, Y, delta=DELTA, n_samples=20_000, rng=8,
                              batched=True)
    assert abs(res.direction[0]) > 0.95


def test_loop_and_batched_paths_agree():
    """The loop path (one call per release) and the batched path see the same
    numbers from the same seed, so they return the same audit."""
    X, Y = elliptical_pair(BOUNDS, n=2)
    loop = epsilon_lower_bound(_elliptical, X, Y, delta=DELTA, n_samples=400, rng=9)
    batch = epsilon_lower_bound(batched_gaussian_release(_elliptical), X, Y, delta=DELTA,
                                n_samples=400, rng=9, batched=True)
    assert loop.epsilon_lower_bound == batch.epsilon_lower_bound
    assert loop.counts == batch.counts
    np.testing.assert_array_equal(loop.direction, batch.direction)


def test_a_deterministic_release_gets_the_largest_bound_the_sample_allows():
    """No noise at all: the outputs never overlap, and the bound is
    ln((1 - (alpha/4)^(1/n)... ) the largest n releases can show."""
    n = 1000
    res = epsilon_lower_bound(lambda x, rng: np.array([x, 0.0]), 1.0, 0.0, delta=0.0,
                              n_samples=n, rng=1)
    q_hi = -math.expm1(math.log(ALPHA / 4) / n)
    assert res.counts in ((n, 0), (0, n))
    assert res.epsilon_lower_bound == pytest.approx(
        math.log(clopper_pearson_lower(n, n, ALPHA / 4) / q_hi), rel=1e-12)


# ------------------------------------------------------------- batched path

@pytest.mark.parametrize("name", sorted(GAUSSIAN_CASES))
def test_batched_release_is_bitwise_the_real_mechanism(name):
    release, (X, _), _ = GAUSSIAN_CASES[name]
    batched = batched_gaussian_release(release)(X, np.random.default_rng(3), size=5)
    rng = np.random.default_rng(3)
    one_by_one = np.array([release(X, rng).estimate for _ in range(5)])
    np.testing.assert_array_equal(batched, one_by_one.reshape(batched.shape))


def test_batched_release_refuses_other_samplers_and_reductions():
    X = np.ones((3, 2))
    uses_uniform = batched_gaussian_release(lambda x, rng: x.sum(0) + rng.uniform(size=2))
    with pytest.raises(TypeError, match="uniform"):
        uses_uniform(X, 0, size=4)
    with pytest.raises(TypeError, match="binomial"):
        batched_gaussian_release(_rr)(np.array([True]), 0, size=4)
    reduces = batched_gaussian_release(lambda x, rng: np.array([rng.normal(size=3).sum()]))
    with pytest.raises(ValueError, match="broadcast"):
        reduces(X, 0, size=4)


# ---------------------------------------------------------- worst-case pairs

def test_pairs_reach_the_sensitivity_after_clipping():
    sigma_opt = analytic_sigma(EPS, DELTA)
    # clipped baseline: the clipped sums differ by exactly 2C (replace), C (add-remove)
    for rel, sens in (("replace", 2 * CLIP), ("add-remove", CLIP)):
        X, Y = clipped_pair(D, CLIP, rel, n=3)
        assert np.linalg.norm(Y[-1] - X[-1] if rel == "add-remove" else X[0]) == pytest.approx(
            100 * CLIP)
        rx, ry = (clipped_gaussian_mechanism(Z, epsilon=EPS, delta=DELTA, clip_norm=CLIP,
                                             neighbouring=rel, rng=5) for Z in (X, Y))
        assert rx.sensitivity == pytest.approx(sens)
        assert np.linalg.norm(rx.estimate - ry.estimate) == pytest.approx(sens, rel=1e-9)
    # Algorithm 3 and Algorithm 2: with the same seed both datasets get the
    # same noise, so the difference of the estimates is the difference of
    # the (clipped) sums; in noise units it is exactly 1 / sigma_opt
    for name, (release, (X, Y), _) in GAUSSIAN_CASES.items():
        if not (name.startswith("gaussian-data") or name == "elliptical"):
            continue
        rx, ry = release(X, 5), release(Y, 5)
        np.testing.assert_array_equal(rx.noise_std, ry.noise_std)
        shift = np.linalg.norm((rx.estimate - ry.estimate) / rx.noise_std)
        assert shift == pytest.approx(1 / sigma_opt, rel=1e-9), name


# ------------------------------------------------------------------ validation

def test_bad_arguments_raise_clear_errors():
    rel = lambda x, rng: np.array([x + rng.normal()])  # noqa: E731
    ok = dict(delta=DELTA, n_samples=100, rng=0)
    with pytest.raises(TypeError, match="release"):
        epsilon_lower_bound("not callable", 0.0, 1.0, **ok)
    for bad in (-0.1, 1.0, np.nan):
        with pytest.raises(ValueError, match="delta"):
            epsilon_lower_bound(rel, 0.0, 1.0, delta=bad, n_samples=100, rng=0)
    for bad in (0, 5, 2.5):
        with pytest.raises(ValueError, match="n_samples"):
            epsilon_lower_bound(rel, 0.0, 1.0, delta=DELTA, n_samples=bad, rng=0)
    # dpsum's integer rule: a boolean is a TypeError, as for real numbers
    with pytest.raises(TypeError, match="n_samples"):
        epsilon_lower_bound(rel, 0.0, 1.0, delta=DELTA, n_samples=True, rng=0)
    for bad in (0.0, 1.0, -1):
        with pytest.raises(ValueError, match="alpha"):
            epsilon_lower_bound(rel, 0.0, 1.0, alpha=bad, **ok)
    with pytest.raises(ValueError, match="n_pilot"):
        epsilon_lower_bound(rel, 0.0, 1.0, n_pilot=3, **ok)
    with pytest.raises(ValueError, match="direction"):
        epsilon_lower_bound(rel, 0.0, 1.0, direction=[0.0], **ok)
    with pytest.raises(TypeError, match="rng"):
        epsilon_lower_bound(rel, 0.0, 1.0, delta=DELTA, n_samples=100, rng="seed")
    with pytest.raises(ValueError, match="NaN"):
        epsilon_lower_bound(lambda x, rng: np.array([np.nan]), 0.0, 1.0, **ok)
    with pytest.raises(ValueError, match="size"):
        epsilon_lower_bound(lambda x, rng: np.zeros(1 + int(x)), 0, 1, **ok)
    with pytest.raises(ValueError, match="size"):
        epsilon_lower_bound(lambda x, rng, size: np.zeros(3), 0, 1, batched=True, **ok)
    with pytest.raises(TypeError, match="numeric"):
        epsilon_lower_bound(lambda x, rng: "a", 0, 1, **ok)
    with pytest.raises(ValueError, match="k"):
        clopper_pearson_lower(11, 10, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        clopper_pearson_upper(1, 10, 1.5)
    with pytest.raises(ValueError, match="p and q"):
        audit_power(1.5, 0.1, 100, epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        statistic_pair(0.0)
    with pytest.raises(ValueError, match="clip_probability"):
        gaussian_data_pair(STDS, neighbouring="add-remove")
    with pytest.raises(ValueError, match="coordinates"):
        elliptical_pair(BOUNDS, coordinates=[7])
    with pytest.raises(ValueError, match="ones"):
        binary_pair(2, 2)
    with pytest.raises(ValueError, match="same length"):
        pair_delta([0.5, 0.5], [1.0], 1.0)
    with pytest.raises(ValueError, match="probability vector"):
        discrete_audit_power([0.5, 0.6], [0.5, 0.5], 100, epsilon=1.0, delta=0.0)


def test_a_release_with_an_empty_output_is_a_clear_error():
    for batched in (False, True):
        rel = ((lambda x, rng, size: np.zeros((size, 0))) if batched
               else (lambda x, rng: np.zeros(0)))
        with pytest.raises(ValueError, match="empty output"):
            epsilon_lower_bound(rel, 0.0, 1.0, delta=DELTA, n_samples=100, rng=0,
                                batched=batched)
