"""Power and size of the privacy audit as run (chapter "Checking privacy empirically").

:func:`dpsum.audit.audit_power` gives the exact power of one threshold test
at a fixed threshold: an oracle that knows the best event. The audit as run
chooses its thresholds on a pilot sample, and the pilot's noise costs power.
These experiments measure the power of the whole procedure, pilot included,
with :func:`dpsum.audit.simulate_audits` (independent audits, fresh
randomness each), next to the oracle power, for every violation the chapter
names and for several (main run, pilot) sizes; and the size of the audit
(its false-alarm rate) at a large ``beta`` on an exactly tight mechanism.

Rows of ``book/data/audit_power.csv`` (:func:`power_rows`): per (case, main
run size, pilot size), the number of audits, how many proved the violation,
the rate with a two-sided 95% Clopper-Pearson interval, and the oracle power
of the best single test. Rows of ``book/data/audit_size.csv``
(:func:`size_rows`): randomized response on one user (likelihood ratio
exactly ``e^epsilon``), audited at its true epsilon with ``beta = 0.25``.
The audit's error probability is the book's ``beta``; dpsum's argument
for it is named ``alpha``.

The Gaussian mechanisms run the real dpsum code, batched with
:func:`dpsum.audit.batched_gaussian_release`. The binary mechanisms are
sampled from their exact output laws on the audited pair
(:func:`dpsum.audit.binary_output_laws`), because the power of an audit
depends on a mechanism only through those laws.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy import optimize, special, stats

import dpsum
from dpsum import audit

__all__ = ["BETA", "BINOMIAL_USERS", "Case", "D", "DELTA", "EPS", "EPS_DETECT", "PLANS",
           "SEED", "SENS", "binomial_broken_coin", "case", "gaussian_oracle",
           "gaussian_release", "merge_rows", "power_rows", "size_rows", "solve_coin",
           "threshold_broken"]

Row = dict[str, Any]
Laws = tuple[np.ndarray, np.ndarray]

SEED = 8
EPS, DELTA, BETA = 1.0, 1e-3, 1e-3   # the claim under audit and the audit's error probability
EPS_DETECT = 1.6                      # the violation every audit should catch
SENS, D = 2.0, 4                      # the Gaussian mechanism's sensitivity and dimension
BINOMIAL_USERS = 800


# ----------------------------------------------------------- the violations

def solve_coin(laws: Callable[[float], Laws], lo: float, hi: float,
               target: float = EPS_DETECT) -> float:
    """The coin (noise or sampling probability) whose pair of output laws has
    exact epsilon ``target`` at ``DELTA``."""
    def gap(c: float) -> float:
        return float(audit.pair_epsilon(*laws(c), DELTA)) - target

    root: float = optimize.brentq(gap, lo, hi, xtol=1e-14, rtol=1e-12)
    return root


def binomial_broken_coin() -> float:
    """Noise probability of the binomial mechanism on 800 users whose exact
    epsilon at DELTA is 1.6 (every pair of counts is the same)."""
    def laws(p: float) -> Laws:
        return audit.binary_output_laws("binomial", BINOMIAL_USERS, 0, epsilon=EPS,
                                        delta=DELTA, p=p)

    return solve_coin(laws, 1e-3, 0.45)


def threshold_broken(max_ones: int = 60) -> tuple[float, int]:
    """Sampling probability of sample-and-threshold (threshold 3 + ln(1/DELTA))
    whose exact epsilon at DELTA, on its worst pair, is 1.6; and that pair's
    number of ones."""
    def worst(p: float) -> tuple[int, float]:
        return audit.worst_binary_pair("sample and threshold", max_ones + 1, epsilon=EPS,
                                       delta=DELTA, p=p, max_ones=max_ones)

    p: float = optimize.brentq(lambda p: worst(p)[1] - EPS_DETECT, 0.15, 0.9, xtol=1e-10)
    return p, worst(p)[0]


def gaussian_release(eps_true: float) -> Callable[..., Any]:
    """The real Gaussian mechanism calibrated for ``eps_true`` (batched)."""
    def release(v: Any, rng: np.random.Generator) -> Any:
        return dpsum.gaussian_mechanism(v, epsilon=eps_true, delta=DELTA, sensitivity=SENS,
                                        rng=rng)

    return audit.batched_gaussian_release(release)


def gaussian_oracle(eps_true: float, n: int, epsilon: float = EPS) -> float:
    """Best single-test power against the Gaussian mechanism calibrated for
    ``eps_true``: standardised outputs N(0, 1) and N(1/s, 1)."""
    s = dpsum.analytic_sigma(eps_true, DELTA)
    t = np.linspace(-2.0, 6.0, 321)
    return float(np.max(audit.audit_power(stats.norm.sf(t - 1 / s), stats.norm.sf(t), n,
                                          epsilon=epsilon, delta=DELTA, alpha=BETA)))


@dataclass(frozen=True)
class Case:
    """One audited violation: what is released, on which pair, and its oracle."""

    name: str
    label: str
    release: Callable[..., Any]
    pair: tuple[Any, Any]
    delta: float
    oracle: Callable[[int], float]  # n -> power of the best single test


def case(name: str) -> Case:
    """The audited violation called ``name`` (a key of :data:`PLANS`)."""
    if name == "gaussian-1.6":
        X, Y = audit.statistic_pair(SENS, D)
        return Case(name, "Gaussian mechanisms, true epsilon 1.6",
                    gaussian_release(EPS_DETECT), (X, Y), DELTA,
                    lambda n: gaussian_oracle(EPS_DETECT, n))
    laws: Laws
    if name == "rr-1.6":
        keep = float(special.expit(EPS_DETECT))
        laws = (np.array([1 - keep, keep]), np.array([keep, 1 - keep]))
        label = "randomized response, coin of epsilon 1.6 (1 user)"
        delta = 0.0
    elif name == "binomial-1.6":
        p_bin = binomial_broken_coin()
        laws = audit.binary_output_laws("binomial", BINOMIAL_USERS, 0, epsilon=EPS,
                                        delta=DELTA, p=p_bin)
        label = f"binomial noise, p = {p_bin:.4g} (800 users, exact epsilon 1.6)"
        delta = DELTA
    elif name == "threshold-1.6":
        p_st, ones = threshold_broken()
        laws = audit.binary_output_laws("sample and threshold", ones + 1, ones, epsilon=EPS,
                                        delta=DELTA, p=p_st)
        label = (f"sample-and-threshold, p = {p_st:.4g} ({ones + 1} vs {ones} ones, "
                 f"exact epsilon 1.6)")
        delta = DELTA
    else:
        raise ValueError(f"name must be one of {sorted(PLANS)}, got {name!r}")

    def oracle(n: int) -> float:
        return float(audit.discrete_audit_power(*laws, n, epsilon=EPS, delta=delta,
                                                alpha=BETA))

    return Case(name, label, audit.discrete_law_release(*laws), (1, 0), delta, oracle)


#: (main run, pilot) sizes simulated per case; the first is the size the book
#: used before this measurement (pilot n // 5 or 5,000), the last the size it
#: uses now (pilot as large as the main run)
PLANS: dict[str, list[tuple[int, int]]] = {
    "gaussian-1.6": [(50_000, 10_000), (50_000, 50_000)],
    "rr-1.6": [(500, 50), (500, 500)],
    "binomial-1.6": [(130_000, 5_000), (130_000, 130_000), (200_000, 200_000)],
    "threshold-1.6": [(170_000, 5_000), (250_000, 250_000)],
}


def power_rows(names: Iterable[str], runs: int, *, verbose: bool = False) -> list[Row]:
    """The rows of ``audit_power.csv`` for the cases ``names``, ``runs`` audits each."""
    rows: list[Row] = []
    for name in names:
        i = list(PLANS).index(name)  # the seed depends on the case, not on which cases run
        c = case(name)
        for j, (n, m) in enumerate(PLANS[name]):
            sim = audit.simulate_audits(c.release, *c.pair, epsilon=EPS, delta=c.delta,
                                        n_samples=n, n_pilot=m, runs=runs, alpha=BETA,
                                        batched=True, rng=np.random.default_rng([SEED, i, j]))
            lo, hi = sim.interval(0.95)
            rows.append({"case": name, "label": c.label, "n_samples": n,
                         "n_pilot": sim.n_pilot, "runs": sim.runs,
                         "rejections": sim.rejections, "rate": sim.rate, "ci_low": lo,
                         "ci_high": hi, "oracle_power": c.oracle(n)})
            if verbose:
                r = rows[-1]
                print(f"{name:14s} n = {n:>9,d} pilot = {sim.n_pilot:>9,d}: "
                      f"{r['rejections']}/{r['runs']} = {r['rate']:.3f} "
                      f"[{lo:.3f}, {hi:.3f}], oracle {r['oracle_power']:.4f}", flush=True)
    return rows


def size_rows(runs: int, *, verbose: bool = False) -> list[Row]:
    """The row of ``audit_size.csv``: the false-alarm rate over ``runs`` audits."""
    eps, beta, n = EPS, 0.25, 2_000
    keep = float(special.expit(eps))
    release = audit.discrete_law_release(np.array([1 - keep, keep]),
                                         np.array([keep, 1 - keep]))
    sim = audit.simulate_audits(release, 1, 0, epsilon=eps, delta=0.0, n_samples=n, runs=runs,
                                alpha=beta, batched=True,
                                rng=np.random.default_rng([SEED, 99]))
    exact = audit.two_point_rejection_probability(keep, 1 - keep, n, epsilon=eps, delta=0.0,
                                                  alpha=beta)
    lo, hi = sim.interval(0.95)
    tol = int(stats.binom.ppf(1 - 1e-3, runs, beta))
    if verbose:
        print(f"size at beta = {beta}: {sim.rejections}/{runs} = {sim.rate:.3f} "
              f"[{lo:.3f}, {hi:.3f}]; exact false-alarm probability {exact:.4f}; "
              f"binomial 0.999 quantile at beta: {tol}")
    return [{"case": "rr-tight", "beta": beta, "epsilon": eps, "n_samples": n,
             "n_pilot": sim.n_pilot, "runs": runs, "rejections": sim.rejections,
             "rate": sim.rate, "ci_low": lo, "ci_high": hi, "exact_size": exact,
             "tolerance_0999": tol}]


def merge_rows(rows: Sequence[Row], old: Sequence[Row]) -> list[Row]:
    """``rows`` plus the ``old`` rows whose case was not rerun, in the order of
    :data:`PLANS` (then the size case)."""
    rerun = {r["case"] for r in rows}
    order = list(PLANS) + ["rr-tight"]
    kept = [dict(r) for r in old if r["case"] not in rerun]
    return sorted(kept + [dict(r) for r in rows], key=lambda r: order.index(r["case"]))
