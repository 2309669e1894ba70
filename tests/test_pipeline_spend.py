"""The pipeline spends at most its stated budget on every path.

The path (coordinate or whole-vector center, scaled or isotropic clipping,
the box) is chosen from private outputs (the count, the decision count, the
spread), so the release is rho-zCDP only if *every* path spends at most rho:
a maximum over paths, or a path accounted in another currency (the box's old
exact composition of an (epsilon, delta) remainder spent up to 1.17 rho),
is not a bound for the mixture. Each path is forced here (the seams
``_center_mode``, ``prefer_scaled``, ``_box_wins``, ``VECTOR_STOP`` and the
bias check's ``_prefer_box``, its veto's ``_vetoes`` and ``_signed_exceeds`` of
:mod:`dpsum.pipeline.mean`) and the zCDP of the steps that ran is summed
exactly (Fractions of the recorded floats: ``1/(2 s^2)`` per Gaussian step,
``epsilon^2/8`` per bounded-range step) and compared with the stated rho.
Two paths are accounted in ``(epsilon, delta)`` instead, each by a bound
that covers the whole mixture: the box known from public ``n``
(``check_exact_box``), and the box chosen by the first count alone, whose
bound takes every other path at its zCDP (``check_branch_box``).
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from _releases import exact_spend
from dpsum.pipeline import mean as M
from dpsum.privacy import analytic_sigma, gdp_delta, zcdp_delta, zcdp_rho

BUDGETS = ([{"epsilon": e, "delta": d} for e in (0.1, 0.3, 1.0, 3.0) for d in (1e-6, 1e-9)]
           + [{"rho": r} for r in (1e-3, 0.05, 0.5, 5.0)])
RELATIONS = ("replace", "add-remove")
SIZES = ((1, 1), (30, 3), (400, 8))

#: path -> (scaling, forced center mode, prefer scaled, box wins, stop at once
#: [, the bias check prefers the box[, the veto holds]]; the check is forced
#: to clipping and the veto to let it switch unless the path says otherwise)
PATHS = {
    "coordinate, scaled": ("scaled", None, None, None, None),
    "coordinate, isotropic": ("isotropic", None, None, None, None),
    "adaptive coordinate, scaled": ("adaptive", "coordinate", True, None, None),
    "adaptive coordinate, isotropic": ("adaptive", "coordinate", False, None, None),
    "vector, all moves, scaled": ("adaptive", "vector", True, False, False),
    "vector, one move, isotropic": ("adaptive", "vector", False, False, True),
    "vector, then the box": ("adaptive", "vector", None, True, None),
    # the box at the midpoint, clipping around the center after the first move
    "vector, the box overruled after a move": ("adaptive", "vector", True, "overruled", None),
    "box": ("adaptive", "box", None, None, None),
    "coordinate, then the bias check's box": ("adaptive", "coordinate", True, None, None,
                                              True),
    "vector, then the bias check's box": ("adaptive", "vector", False, False, True, True),
    "coordinate, the bias check's box vetoed": ("adaptive", "coordinate", True, None, None,
                                                True, True),
}


def stated_rho(budget: dict) -> Fraction:
    if "rho" in budget:
        return Fraction(budget["rho"])
    return Fraction(float(zcdp_rho(budget["epsilon"], budget["delta"])))


def _force(monkeypatch, mode, prefer, box, stop, check=False, veto=False) -> None:
    monkeypatch.setattr(M, "_prefer_box", lambda *a: check)
    monkeypatch.setattr(M, "_vetoes", lambda *a: veto)
    monkeypatch.setattr(M, "_signed_exceeds", lambda *a: False)
    if mode is not None:
        monkeypatch.setattr(M, "_center_mode", lambda *a: mode)
    if prefer is not None:
        monkeypatch.setattr(M, "prefer_scaled", lambda *a: prefer)
    if box == "overruled":            # each release asks twice: box, then clipping
        monkeypatch.setattr(M, "PROBE_COST", 1.0)
        answers = itertools.cycle([True, False])
        monkeypatch.setattr(M, "_box_wins", lambda *a: next(answers))
    elif box is not None:
        monkeypatch.setattr(M, "_box_wins", lambda *a: box)
    if stop is not None:
        monkeypatch.setattr(M, "VECTOR_STOP", 0.0 if stop else np.inf)


def check_branch_box(r, budget: dict, relation: str) -> None:
    """The box chosen by the first count alone (``_calibrate_after_decision``):
    only for a one-off ``(epsilon, delta)`` budget under replace-one on the
    float path, after a Gaussian count and nothing else. The release is
    ``(epsilon, delta)``-DP by the branch bound with every other path at most
    the stated rho less the count's, in zCDP; recomputed here by Gauss-Hermite
    quadrature of the privacy loss (the package bounds it on bins). And the
    box is stronger than zCDP would allow it (its point)."""
    assert relation == "replace" and "epsilon" in budget and not r.secure
    assert r.strategy == "box" and [st.name for st in r.steps][0] == "decision"
    assert {st.kind for st in r.steps} == {"gaussian"}
    eps, dlt = budget["epsilon"], budget["delta"]
    head, tail = r.steps[0], r.steps[1:]
    mu = 1.0 / head.noise_multiplier
    mu_b = math.sqrt(sum(st.count / st.noise_multiplier ** 2 for st in tail))
    other = float(stated_rho(budget)) - 1.0 / (2.0 * head.noise_multiplier ** 2)
    x, w = np.polynomial.hermite_e.hermegauss(120)
    w = w / w.sum()
    quad = 0.0
    for xi, wi in zip(x, w):
        t = eps - (0.5 * mu * mu + mu * xi)
        quad += wi * (1.0 if t <= 0 else max(gdp_delta(mu_b, t), zcdp_delta(other, t)))
    assert quad <= dlt and r.guarantee.delta <= dlt
    assert quad >= r.guarantee.delta * (1 - 2e-3)
    assert r.guarantee.epsilon == eps
    assert mu_b * mu_b > 2 * other * 1.01


def check_exact_box(r, budget: dict, relation: str) -> None:
    """The public box path's exact calibration (``_calibrate_exactly``): only
    for a one-off ``(epsilon, delta)`` budget under replace-one on the float
    path, with Gaussian steps only, which compose exactly into one Gaussian
    of multiplier at least the analytic one of ``(epsilon, delta)`` (and
    within 1e-9 of it: the budget is spent)."""
    assert relation == "replace" and "epsilon" in budget and not r.secure
    assert r.strategy == "box" and {st.kind for st in r.steps} == {"gaussian"}
    inverse = sum(st.count / Fraction(st.noise_multiplier) ** 2 for st in r.steps)
    s = Fraction(analytic_sigma(budget["epsilon"], budget["delta"]))
    assert inverse <= 1 / s ** 2
    assert inverse >= (1 - Fraction(1, 10 ** 9)) / s ** 2
    eps = budget["epsilon"]
    assert eps * (1 - 1e-6) <= r.guarantee.epsilon <= eps * (1 + 1e-9)
    assert r.guarantee.delta <= budget["delta"]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_path_spends_at_most_the_stated_rho(path, monkeypatch):
    scaling, mode, prefer, box, stop, *check = PATHS[path]
    _force(monkeypatch, mode, prefer, box, stop, *check)
    seen, branch = set(), 0
    for k, (budget, relation, (n, d)) in enumerate(
            itertools.product(BUDGETS, RELATIONS, SIZES)):
        X = np.random.default_rng(k).normal(0.0, 1.0, size=(n, d))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = M.private_mean(X, lower=-8.0, upper=8.0, neighbouring=relation,
                               scaling=scaling, rng=k, diagnostics=k % 3 != 0,
                               secure=k % 5 == 0, **budget)
        seen.add(r.strategy)
        if r.guarantee is not None and r.guarantee.method == "branch":
            check_branch_box(r, budget, relation)
            branch += 1
            continue
        if r.calibration == "analytic":
            check_exact_box(r, budget, relation)
            continue
        spent, stated = exact_spend(r.steps), stated_rho(budget)
        assert spent <= stated, (path, budget, relation, n, d, float(spent / stated))
        # and not much less: the shares are spent, up to the margin
        assert spent >= stated * (1 - Fraction(1, 10 ** 9)), (path, budget, relation, n, d)
        assert r.rho == pytest.approx(float(stated), rel=1e-9)
        if "epsilon" in budget:
            assert r.guarantee.epsilon <= budget["epsilon"] * (1 + 1e-9)
            assert r.guarantee.delta <= budget["delta"]
    want = {
        "coordinate, scaled": {"coordinate center, scaled"},
        "coordinate, isotropic": {"coordinate center, isotropic"},
        "adaptive coordinate, scaled": {"coordinate center, scaled"},
        "adaptive coordinate, isotropic": {"coordinate center, isotropic"},
        # the split itself falls back to the box when the radii would not be
        # reliable after scaling the preparation down (small n or rho)
        "vector, all moves, scaled": {"vector center, scaled", "vector center, isotropic",
                                      "box"},
        "vector, one move, isotropic": {"vector center, isotropic", "box"},
        "vector, then the box": {"box"},
        "vector, the box overruled after a move": {"vector center, scaled",
                                                   "vector center, isotropic", "box"},
        "box": {"box"},
        "coordinate, then the bias check's box": {"box (bias check)"},
        "vector, then the bias check's box": {"box (bias check)", "box"},
        # (the box without a veto where clipping's noise alone loses to it)
        "coordinate, the bias check's box vetoed": {"coordinate center, scaled",
                                                    "box (bias check)"},
    }[path]
    # the forced path ran (every strategy it can end in but the split's own box)
    assert seen <= want and (want - {"box"} or {"box"}) <= seen, (path, seen)
    # the box after the first count alone takes the branch bound wherever it may
    assert (branch > 0) == (path == "vector, then the box"), (path, branch)


@pytest.mark.parametrize("relation", RELATIONS)
def test_user_budgets_spend_at_most_the_stated_rho(relation):
    shares = {"center": 0.1, "clip": 0.05, "radius": 0.05, "scales": 0.1, "spread": 0.05}
    if relation == "add-remove":
        shares["count"] = 0.01
    for k, budget in enumerate(BUDGETS):
        X = np.random.default_rng(k).normal(size=(200, 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = M.private_sum(X, lower=-8.0, upper=8.0, neighbouring=relation,
                              budget=shares, rng=k, **budget)
        assert exact_spend(r.steps) <= stated_rho(budget)


def test_the_box_path_no_longer_overspends_at_the_reported_budget():
    # the example: epsilon = 0.3, delta = 1e-6 on the box spent 1.166 rho
    # when the box followed a private count; there it spends at most rho, and
    # where public n chose it, its (epsilon, delta) is exact
    X = np.random.default_rng(0).normal(size=(40, 8))
    budget = {"epsilon": 0.3, "delta": 1e-6}
    for relation in RELATIONS:
        with pytest.warns(UserWarning, match="too few rows"):
            r = M.private_mean(X, lower=-10.0, upper=10.0, rng=1, neighbouring=relation,
                               **budget)
        assert r.strategy == "box"
        if relation == "replace":
            check_exact_box(r, budget, relation)
        else:
            assert exact_spend(r.steps) <= stated_rho(budget)


def test_the_public_box_is_calibrated_exactly_only_when_nothing_private_chose_it():
    """The box known from public ``n`` (too few rows for this budget) under
    replace-one, with a one-off ``(epsilon, delta)``: the release is the
    Elliptical Gaussian mechanism on the box with its diagnostics, the same
    noise up to the spend margin. A session, a ``rho`` budget, ``secure=True`` or
    add-remove keep the zCDP calibration (strictly more noise)."""
    from dpsum import Session, elliptical_gaussian_mechanism
    X = np.random.default_rng(3).uniform(0.0, 16.0, size=(60, 64))
    kw = dict(lower=0.0, upper=16.0, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = M.private_mean(X, epsilon=0.25, delta=1e-5, **kw)
        egm = elliptical_gaussian_mechanism(X, epsilon=0.25, delta=1e-5, statistic="mean",
                                            **kw)
        others = [M.private_mean(X, epsilon=0.25, delta=1e-5,
                                 session=Session(epsilon=1.0, delta=1e-4), **kw),
                  M.private_mean(X, rho=float(zcdp_rho(0.25, 1e-5)), **kw),
                  M.private_mean(X, epsilon=0.25, delta=1e-5, secure=True, **kw),
                  M.private_mean(X, epsilon=0.25, delta=1e-5, neighbouring="add-remove",
                                 **kw)]
    assert exact.strategy == "box" and exact.calibration == "analytic"
    # equal up to the pipeline's spend margin (2^-40 of the budget)
    assert exact.sigma_opt == pytest.approx(egm.sigma_opt, rel=1e-11)
    np.testing.assert_allclose(exact.noise_std, egm.noise_std, rtol=1e-11)
    for r in others:
        assert r.strategy == "box" and r.calibration != "analytic"
        assert r.sigma_opt > exact.sigma_opt * 1.05
