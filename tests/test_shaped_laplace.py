"""The shaped Laplace mechanism (book, chapter "Laplace or Gaussian?"):
privacy by the exact likelihood ratio on worst-case neighbours, the error
2 (sum_j Delta_j^(2/3))^3 / epsilon^2 by simulation (5 standard errors), its
optimality among per-coordinate Laplace scales, clamping, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dpsum.mechanisms import laplace_mechanism, shaped_laplace_mechanism

Z = 5.0  # standard errors allowed in a Monte Carlo check


def _scales(widths, eps):
    rel = shaped_laplace_mechanism(np.zeros((1, len(widths))), epsilon=eps, widths=widths, rng=0)
    return rel.noise_std / np.sqrt(2.0)


def _log_ratio(y, a, a_prime, t):
    """ln p(y | sum a) - ln p(y | sum a') for independent Laplace noise of scales t."""
    return np.sum((np.abs(y - a_prime) - np.abs(y - a)) / t, axis=-1)


@pytest.mark.parametrize("widths", [[1.0], [3.0, 1.0, 0.5, 0.25], list(1 / np.arange(1, 13)),
                                    list(2.0 ** -np.arange(1, 21)), [1e-3, 1e3, 7.0]])
@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_privacy_loss_is_at_most_epsilon_and_attained(widths, eps):
    w = np.array(widths)
    t = _scales(w, eps)
    # worst-case neighbours: one row at the corner -w/2 replaced by the corner +w/2
    rng = np.random.default_rng(1)
    rows = rng.uniform(-w / 2, w / 2, size=(5, w.size))
    X, X_prime = rows.copy(), rows.copy()
    X[0], X_prime[0] = -w / 2, w / 2
    a, a_prime = X.sum(axis=0), X_prime.sum(axis=0)
    assert np.allclose(np.abs(a - a_prime), w, rtol=1e-12)
    # the loss is piecewise linear in each coordinate: its extremes are at the
    # breakpoints and beyond; test those and random outputs
    ys = [a_prime - 10 * t, a - 10 * t, a + 10 * t, a_prime + 10 * t, a, a_prime,
          *(a + t * rng.laplace(size=(2000, w.size)))]
    losses = np.array([_log_ratio(np.asarray(y), a, a_prime, t) for y in ys])
    assert losses.max() <= eps * (1 + 1e-12)
    assert abs(max(abs(losses.max()), abs(losses.min())) - eps) <= 1e-12 * eps  # tight
    # the scales: t_j proportional to Delta_j^(1/3), sum_j Delta_j / t_j = epsilon
    assert np.sum(w / t) == pytest.approx(eps, rel=1e-12)
    assert np.ptp(t / w ** (1 / 3)) <= 1e-12 * np.max(t / w ** (1 / 3))


@pytest.mark.parametrize("widths", [[3.0, 1.0, 0.5, 0.25], list(1 / np.arange(1, 9))])
def test_error_matches_the_closed_form_by_simulation(widths):
    w, eps, R = np.array(widths), 0.7, 4000
    rng = np.random.default_rng(7)
    X = rng.uniform(-w, w, size=(30, w.size))            # some values clamped
    target = np.clip(X, -w / 2, w / 2).sum(axis=0)
    est = np.array([shaped_laplace_mechanism(X, epsilon=eps, widths=w, rng=rng).estimate
                    for _ in range(R)])
    sq = np.sum((est - target) ** 2, axis=1)
    closed = 2 * np.sum(w ** (2 / 3)) ** 3 / eps**2
    t = _scales(w, eps)
    se = np.sqrt(20 * np.sum(t**4) / R)                  # Var ||eta||^2 = sum 20 t_j^4
    assert abs(sq.mean() - closed) < Z * se
    assert shaped_laplace_mechanism(X, epsilon=eps, widths=w, rng=0).expected_squared_error \
        == pytest.approx(closed, rel=1e-12)


def test_error_is_optimal_and_at_most_equal_scales():
    rng = np.random.default_rng(3)
    for d in (1, 2, 5, 40):
        w = rng.uniform(0.01, 3.0, size=d)
        eps = 1.3
        shaped = 2 * np.sum(w ** (2 / 3)) ** 3 / eps**2
        equal = 2 * d * np.sum(w) ** 2 / eps**2          # Laplace, L1 sensitivity ||w||_1
        assert shaped <= equal * (1 + 1e-12)
        for _ in range(50):                              # any other eps-DP scales do worse
            t = rng.uniform(0.1, 2.0, size=d)
            t *= np.sum(w / t) / eps                     # rescaled so sum w_j / t_j = eps
            assert 2 * np.sum(t**2) >= shaped * (1 - 1e-12)
    cube = np.full(6, 0.5)
    assert 2 * np.sum(cube ** (2 / 3)) ** 3 == pytest.approx(2 * 6 * np.sum(cube) ** 2, rel=1e-12)
    lap = laplace_mechanism(np.zeros(6), epsilon=1.0, sensitivity=float(cube.sum()), rng=0)
    sh = shaped_laplace_mechanism(np.zeros((2, 6)), epsilon=1.0, widths=cube, rng=0)
    assert sh.expected_squared_error == pytest.approx(lap.expected_squared_error, rel=1e-12)


def test_release_record_and_clamping():
    w = np.array([1.0, 8.0])
    X = np.array([[0.2, 5.0], [-0.1, 0.3]])
    r = shaped_laplace_mechanism(X, epsilon=1.0, widths=w, rng=11)
    assert r.mechanism == "shaped laplace" and r.delta == 0.0 and r.epsilon == 1.0
    assert r.neighbouring.value == "replace"
    assert np.allclose(r.noise_std / np.sqrt(2), [5.0, 10.0], rtol=1e-12)
    assert np.allclose(r.noise_std, r.sigma_opt * r.sensitivity / r.scaling, rtol=1e-12)
    clamped = np.clip(X, -w / 2, w / 2)
    same = shaped_laplace_mechanism(clamped, epsilon=1.0, widths=w, rng=11)
    assert np.array_equal(r.estimate, same.estimate)
    assert np.array_equal(X, [[0.2, 5.0], [-0.1, 0.3]])  # input not modified


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(epsilon=0.0, widths=[1.0, 1.0]), ValueError, "epsilon"),
    (dict(epsilon=1.0, widths=[1.0]), ValueError, "widths"),
    (dict(epsilon=1.0, widths=[1.0, -1.0]), ValueError, "widths"),
    (dict(epsilon=1.0, widths=[1.0, np.nan]), ValueError, "widths"),
    (dict(epsilon="1", widths=[1.0, 1.0]), TypeError, "epsilon"),
])
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        shaped_laplace_mechanism(np.zeros((3, 2)), rng=0, **kwargs)


# ------------------------------------ the accumulator, the grid path, the mean

def test_shaped_laplace_takes_the_grid_path_and_the_mean():
    from fractions import Fraction

    from dpsum.release import accumulator as A
    gen = np.random.default_rng(8)
    widths = np.array([2.0, 8.0, 0.3])
    X = gen.uniform(-1.5, 1.5, size=(500, 3)) * widths
    sec = shaped_laplace_mechanism(X, epsilon=0.7, widths=widths, rng=3, secure=True)
    assert sec.secure and sec.delta == 0.0
    # the integer sensitivity over the discrete Laplace scales: at most epsilon, exactly
    acc = A.shaped_laplace_accumulator(widths, epsilon=0.7, secure=True)
    G = acc._clamp.G
    D = [int(Fraction(float(w)) / Fraction(2) ** int(g)) for w, g in zip(widths, G)]
    loss = sum(Fraction(Dj) / s for Dj, s in zip(D, acc._grid_scales))
    assert loss <= Fraction(0.7)
    # every value is on its coordinate's grid
    for v, g in zip(sec.estimate, G):
        assert (Fraction(float(v)) / Fraction(2) ** int(g)).denominator == 1
    mean = shaped_laplace_mechanism(X, epsilon=0.7, widths=widths, rng=3, statistic="mean")
    total = shaped_laplace_mechanism(X, epsilon=0.7, widths=widths, rng=3)
    np.testing.assert_allclose(mean.estimate, total.estimate / 500, rtol=1e-15)
    np.testing.assert_allclose(mean.noise_std, total.noise_std / 500, rtol=1e-15)
    # the accumulator releases the in-memory release, bit for bit
    parts = A.shaped_laplace_accumulator(widths, epsilon=0.7)
    merged = parts.update(X[:123]).merge(parts.update(X[123:]))
    assert np.array_equal(merged.release(rng=3).estimate, total.estimate)
    with pytest.raises(ValueError, match="statistic"):
        shaped_laplace_mechanism(X, epsilon=0.7, widths=widths, rng=3, statistic="median")
